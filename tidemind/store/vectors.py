"""Vectors: a float table (exact cosine, reranking, as-of queries) and a sqlite-vec bit index.

A `vec0` index per embedder holds one SimHash bit vector per *live* node, partitioned by scope, so a
scoped KNN touches only that scope's rows and costs a fraction of a float scan; the top
candidates are then reranked by exact cosine from the float table. Every vector records the
embedder that made it; a query only meets vectors of its own embedder. The embed queue keeps
embedding off the digest's critical path.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Sequence

import apsw

if TYPE_CHECKING:
    import numpy as np

from .connection import changed, inserted, scalar

DDL = """
CREATE TABLE node_vectors(
  node_id INTEGER PRIMARY KEY REFERENCES nodes(id),
  embedder TEXT NOT NULL,
  dim INTEGER NOT NULL,
  vec BLOB NOT NULL,                   -- float32, unit length
  created_at TEXT NOT NULL
);
CREATE INDEX node_vectors_embedder ON node_vectors(embedder);
CREATE TABLE embed_queue(
  node_id INTEGER PRIMARY KEY REFERENCES nodes(id),
  enqueued_at TEXT NOT NULL
);
-- one vec0 bit index per embedder: a metadata filter on the embedder inside the KNN cost ~13 ms
-- at 100k rows against ~1 ms for the partition alone, so the embedder picks the table instead
CREATE TABLE vector_indexes(
  id INTEGER PRIMARY KEY,
  embedder TEXT NOT NULL UNIQUE,
  dim INTEGER NOT NULL
);
"""


# SimHash: the bit index stores the signs of HASH_BITS fixed random projections of a vector, so
# Hamming distance estimates the angle whatever the embedder's width. On the bench corpus
# (default embedder, 20k nodes) recall@10 of bits+rerank against an exact scan was 0.64 with the
# 256 raw signs and k=120, 0.90 with 1,024 projected bits and k=48; sqlite-vec's KNN time grows
# with k far more than with the width (100k rows: 256 bits k=120 15 ms, 1,024 bits k=48 12 ms).
HASH_BITS = 1024


# Switching embedders re-embeds in the background while the old vectors keep serving, so a node
# may hold one vector per embedder for a while (the old ones are retired once the new embedder
# covers every live node).
PER_EMBEDDER_DDL = """
CREATE TABLE node_vectors_new(
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  embedder TEXT NOT NULL,
  dim INTEGER NOT NULL,
  vec BLOB NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(node_id, embedder)
);
INSERT INTO node_vectors_new SELECT node_id, embedder, dim, vec, created_at FROM node_vectors;
DROP TABLE node_vectors;
ALTER TABLE node_vectors_new RENAME TO node_vectors;
CREATE INDEX node_vectors_embedder ON node_vectors(embedder);
"""


@functools.lru_cache(maxsize=8)
def _projection(dim: int) -> np.ndarray:
    # fixed seed: the same dimension always gets the same hyperplanes (rebuildable index layer)
    import numpy as np

    return np.random.default_rng(20261130 + dim).standard_normal((dim, HASH_BITS)).astype(np.float32)


def _hash_input(vec: np.ndarray) -> bytes:
    """Float32 projections whose signs vec_quantize_binary turns into the stored bits."""
    import numpy as np

    vec = np.asarray(vec, dtype=np.float32)
    return (vec @ _projection(vec.shape[0])).astype(np.float32).tobytes()


def _index_for(conn: apsw.Connection, embedder: str) -> tuple[str, int] | None:
    for index_id, dim in conn.execute("SELECT id, dim FROM vector_indexes WHERE embedder=?", (embedder,)):
        return f"vec_bits_{index_id}", dim
    return None


def ensure_index(conn: apsw.Connection, embedder: str, dim: int) -> str:
    found = _index_for(conn, embedder)
    if found and found[1] == dim:
        return found[0]
    if found:   # same embedder name, new width (model swapped): the index layer is rebuilt
        conn.execute(f"DROP TABLE IF EXISTS {found[0]}")
        conn.execute("DELETE FROM vector_indexes WHERE embedder=?", (embedder,))
    name = f"vec_bits_{inserted(conn, 'INSERT INTO vector_indexes(embedder, dim) VALUES(?, ?)', (embedder, dim))}"
    conn.execute(f"CREATE VIRTUAL TABLE {name} USING vec0("
                 f"node_id INTEGER PRIMARY KEY, scope TEXT PARTITION KEY, embedding bit[{HASH_BITS}])")
    return name


def _indexes(conn: apsw.Connection) -> list[str]:
    return [f"vec_bits_{i}" for (i,) in conn.execute("SELECT id FROM vector_indexes")]


def enqueue(conn: apsw.Connection, node_id: int, at: str) -> None:
    conn.execute("INSERT OR IGNORE INTO embed_queue(node_id, enqueued_at) VALUES(?,?)", (node_id, at))


def queued(conn: apsw.Connection, limit: int) -> list[tuple[int, str, str]]:
    """(node_id, text, scope) of queued nodes that are still live; dead ones are dropped from the queue."""
    # driven by the (short) queue, probing nodes by key: the join the other way round scanned all
    # of nodes (~25 ms at 100k, inside the write lock an MCP digest then waited for)
    conn.execute("DELETE FROM embed_queue WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = embed_queue.node_id"
                 " AND n.status = 'live')")
    # CROSS JOIN keeps the queue as the outer loop (the planner otherwise scans all of nodes)
    # the text embedded is what the unit means: its authored words and a person's clarifications
    return list(conn.execute("SELECT n.id, n.content || CASE WHEN n.clarified_text != '' THEN char(10) ||"
                             " n.clarified_text ELSE '' END, n.scope FROM embed_queue q CROSS JOIN nodes n"
                             " ON n.id = q.node_id ORDER BY q.node_id LIMIT ?", (limit,)))


def queue_length(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> int:
    if not scopes:
        return scalar(conn, "SELECT count(*) FROM embed_queue")
    marks = ",".join("?" * len(scopes))
    return scalar(conn, f"SELECT count(*) FROM embed_queue q CROSS JOIN nodes n ON n.id = q.node_id"
                        f" WHERE n.scope IN ({marks})", list(scopes))


def enqueue_stale(conn: apsw.Connection, embedder: str, at: str) -> int:
    """Queue live nodes with no vector of this embedder (none at all, or another embedder's)."""
    return changed(conn, "INSERT OR IGNORE INTO embed_queue(node_id, enqueued_at) SELECT n.id, ? FROM nodes n"
                         " WHERE n.status='live' AND NOT EXISTS (SELECT 1 FROM node_vectors v WHERE v.node_id = n.id"
                         " AND v.embedder = ?)", (at, embedder))


def coverage(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> dict[str, int]:
    """How many live nodes (of `scopes`, else all) each embedder has a vector for."""
    where, params = "", []
    if scopes:
        where, params = f" AND n.scope IN ({','.join('?' * len(scopes))})", list(scopes)
    return dict(conn.execute(f"SELECT v.embedder, count(*) FROM node_vectors v JOIN nodes n ON n.id = v.node_id"
                             f" WHERE n.status = 'live'{where} GROUP BY v.embedder", params))


def embedders(conn: apsw.Connection) -> list[str]:
    """The embedders that have an index: one row each, cheap enough to ask on every recall."""
    return [name for (name,) in conn.execute("SELECT embedder FROM vector_indexes ORDER BY id")]


def live_count(conn: apsw.Connection) -> int:
    return scalar(conn, "SELECT count(*) FROM nodes WHERE status = 'live'")


def retire(conn: apsw.Connection, keep: str) -> list[str]:
    """Drop every other embedder's vectors and bit index (the configured one covers all)."""
    gone = [name for (name,) in conn.execute("SELECT DISTINCT embedder FROM node_vectors WHERE embedder != ?", (keep,))]
    gone += [name for (name,) in conn.execute("SELECT embedder FROM vector_indexes WHERE embedder != ?", (keep,))
             if name not in gone]
    for name in gone:
        found = _index_for(conn, name)
        conn.execute("DELETE FROM node_vectors WHERE embedder = ?", (name,))
        if found is not None:
            conn.execute(f"DROP TABLE IF EXISTS {found[0]}")
            conn.execute("DELETE FROM vector_indexes WHERE embedder = ?", (name,))
    return gone


def put(conn: apsw.Connection, node_id: int, scope: str, embedder: str, vec: np.ndarray, at: str) -> None:
    import numpy as np

    vec = np.asarray(vec, dtype=np.float32)
    conn.execute("INSERT INTO node_vectors(node_id, embedder, dim, vec, created_at) VALUES(?,?,?,?,?)"
                 " ON CONFLICT(node_id, embedder) DO UPDATE SET dim=excluded.dim, vec=excluded.vec,"
                 " created_at=excluded.created_at", (node_id, embedder, vec.shape[0], vec.tobytes(), at))
    index = ensure_index(conn, embedder, vec.shape[0])
    conn.execute(f"DELETE FROM {index} WHERE node_id=?", (node_id,))      # (another embedder's stays)
    conn.execute(f"INSERT INTO {index}(node_id, scope, embedding) VALUES(?,?,vec_quantize_binary(?))",
                 (node_id, scope, _hash_input(vec)))
    conn.execute("DELETE FROM embed_queue WHERE node_id=?", (node_id,))


def drop_from_index(conn: apsw.Connection, node_id: int) -> None:
    """Leave the KNN index (superseded nodes: their floats stay for as-of queries)."""
    for name in _indexes(conn):
        conn.execute(f"DELETE FROM {name} WHERE node_id=?", (node_id,))


def drop(conn: apsw.Connection, node_id: int) -> None:
    """Archive / forget: no vector of the node remains anywhere."""
    drop_from_index(conn, node_id)
    conn.execute("DELETE FROM node_vectors WHERE node_id=?", (node_id,))
    conn.execute("DELETE FROM embed_queue WHERE node_id=?", (node_id,))


def knn_candidates(conn: apsw.Connection, query: np.ndarray, scopes: Sequence[str], embedder: str,
                   k: int) -> list[int]:
    """Bare sqlite-vec KNN over the bit index: candidate ids by Hamming distance (no predicate)."""
    found = _index_for(conn, embedder)
    if found is None or found[1] != query.shape[0]:
        return []
    marks = ",".join("?" * len(scopes))
    sql = (f"SELECT node_id FROM {found[0]} WHERE embedding MATCH vec_quantize_binary(?) AND k = ?"
           f" AND scope IN ({marks})")
    return [r[0] for r in conn.execute(sql, [_hash_input(query), min(k, 4096), *scopes])]


def rerank(conn: apsw.Connection, query: np.ndarray, ids: Sequence[int], where: str, params: Sequence,
           embedder: str) -> list[tuple[int, float]]:
    """Exact cosine for candidate ids that pass `where` (predicate on alias n), best first."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    got = list(conn.execute(f"SELECT v.node_id, v.vec FROM node_vectors v JOIN nodes n ON n.id = v.node_id"
                            f" WHERE v.node_id IN ({marks}) AND v.embedder = ? AND {where}",
                            [*ids, embedder, *params]))
    return _score(query, got)


def scan(conn: apsw.Connection, query: np.ndarray, where: str, params: Sequence, embedder: str,
         limit: int) -> list[tuple[int, float]]:
    """Exact cosine over every node passing `where`: for narrow filters and as-of queries."""
    got = list(conn.execute(f"SELECT v.node_id, v.vec FROM node_vectors v JOIN nodes n ON n.id = v.node_id"
                            f" WHERE v.embedder = ? AND {where}", [embedder, *params]))
    return _score(query, got)[:limit]


def count_matching(conn: apsw.Connection, where: str, params: Sequence, embedder: str) -> int:
    return scalar(conn, f"SELECT count(*) FROM node_vectors v JOIN nodes n ON n.id = v.node_id"
                        f" WHERE v.embedder = ? AND {where}", [embedder, *params])


def _score(query: np.ndarray, got: list) -> list[tuple[int, float]]:
    if not got:
        return []
    import numpy as np

    q = np.asarray(query, np.float32)
    mat = np.frombuffer(b"".join(b for _, b in got), dtype=np.float32).reshape(len(got), -1)
    if mat.shape[1] != q.shape[0]:
        return []
    sims = mat @ q
    order = np.argsort(-sims, kind="stable")
    return [(got[i][0], float(sims[i])) for i in order]


def integrity_problems(conn: apsw.Connection) -> list[str]:
    problems = []
    dead = scalar(conn, "SELECT count(*) FROM node_vectors v JOIN nodes n ON n.id=v.node_id"
                        " WHERE n.status IN ('archived','forgotten')")
    if dead:
        problems.append(f"vectors: {dead} archived or forgotten node(s) still have a float vector")
    for name in _indexes(conn):
        stray = scalar(conn, f"SELECT count(*) FROM {name} x LEFT JOIN nodes n ON n.id = x.node_id"
                             f" WHERE n.id IS NULL OR n.status != 'live'")
        if stray:
            problems.append(f"vectors: {stray} row(s) in {name} for nodes that are not live")
        mismatch = scalar(conn, f"SELECT count(*) FROM {name} x JOIN nodes n ON n.id = x.node_id"
                                f" WHERE n.scope != x.scope")
        if mismatch:
            problems.append(f"vectors: {mismatch} row(s) in {name} in the wrong scope partition")
    return problems


def embedded_after(conn: apsw.Connection, after_id: int, embedder: str, limit: int) -> list[tuple[int, str, "np.ndarray"]]:
    """(node id, scope, vector) of live nodes with id > after_id, in id order, stopping before
    the first live node that has no vector of this embedder yet (so a cursor never skips it)."""
    import numpy as np

    out = []
    for node_id, scope, blob in conn.execute(
            "SELECT n.id, n.scope, v.vec FROM nodes n LEFT JOIN node_vectors v ON v.node_id = n.id AND v.embedder = ?"
            " WHERE n.id > ? AND n.status = 'live' ORDER BY n.id LIMIT ?", (embedder, after_id, limit)):
        if blob is None:
            break
        out.append((node_id, scope, np.frombuffer(blob, np.float32)))
    return out


def floats(conn: apsw.Connection, node_ids: Sequence[int], embedder: str) -> dict[int, "np.ndarray"]:
    import numpy as np

    if not node_ids:
        return {}
    marks = ",".join("?" * len(node_ids))
    return {i: np.frombuffer(b, np.float32) for i, b in conn.execute(
        f"SELECT node_id, vec FROM node_vectors WHERE embedder = ? AND node_id IN ({marks})", [embedder, *node_ids])}
