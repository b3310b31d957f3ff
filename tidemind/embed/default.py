"""The default embedder: no network, no model download, deterministic.

A text's vector (256 dims, unit length) is an IDF-weighted sum, over its content words, of
three parts:

1. the word's own *index vector*: a sparse random ±1 vector (6 non-zeros) derived from a hash
   of the word — exact word overlap, as in a bag of words;
2. hashed character 3- and 4-grams of the word (`<deploy>` → `<de`, `dep`, ...), so spelling
   variants and inflections (`deploy`/`deployed`/`deployment`, `colour`/`color`) land close;
3. the word's *context vector*, learned by random indexing from the store's own text: the sum
   of the index vectors of the words that appear within ±4 positions of it in stored memories.
   Words used in the same company ("postgres", "database", "migration") get similar context
   vectors, so a query can meet a memory that shares none of its words. Every context vector
   also carries the company of the most frequent words, a direction all of them share; it is
   projected out (the running sum of all context vectors is kept for that), otherwise any two
   memories look alike (mean document-to-document cosine 0.67 before, 0.24 after, on the bench
   corpus) and sign-quantised search loses most of its precision.

The corpus statistics (document frequency and context vector per word) live in `embed_terms`,
keyed by a 64-bit hash of the word, never the word itself, so `forget` can subtract a text's
contribution exactly (the model is a sum) and no forgotten word is left behind as a key.
Vectors made earlier use the statistics of their time; the name carries the version so a
change of recipe re-embeds everything.
"""
from __future__ import annotations

import hashlib
import math
from functools import lru_cache
from typing import Sequence

import apsw
import numpy as np

from ..store.connection import scalar
from ..text import content_words
from . import normalise, register

DIM = 256
NONZERO = 6
WINDOW = 4
NGRAM_WEIGHT = 1.2
CONTEXT_WEIGHT = 0.6
MIN_DOCS_FOR_IDF = 20

from .schema import DDL  # noqa: F401  (tables of this embedder; registered there)


def _digest(feature: str) -> bytes:
    return hashlib.blake2b(feature.encode("utf-8"), digest_size=16).digest()


def term_id(word: str) -> int:
    return int.from_bytes(_digest("w:" + word)[:8], "little", signed=True)


@lru_cache(maxsize=400_000)
def _index_vector(feature: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    d = _digest(feature)
    positions = tuple(int.from_bytes(d[2 * i:2 * i + 2], "little") % DIM for i in range(NONZERO))
    signs = tuple(1.0 if (d[12 + i // 8] >> (i % 8)) & 1 else -1.0 for i in range(NONZERO))
    return positions, signs


def _dense(feature: str) -> np.ndarray:
    vec = np.zeros(DIM, dtype=np.float32)
    pos, sgn = _index_vector(feature)
    np.add.at(vec, list(pos), list(sgn))
    return vec


@lru_cache(maxsize=200_000)
def _surface(word: str) -> np.ndarray:
    """Index vector of the word plus its character n-grams (no learned part)."""
    vec = _dense("w:" + word)
    padded = f"<{word}>"
    grams = [padded[i:i + n] for n in (3, 4) for i in range(len(padded) - n + 1)] if len(word) > 2 else []
    if grams:
        acc = np.zeros(DIM, dtype=np.float32)
        for g in grams:
            acc += _dense("g:" + g)
        vec = vec + NGRAM_WEIGHT * acc / math.sqrt(len(grams))
    vec.setflags(write=False)
    return vec


@lru_cache(maxsize=200_000)
def _word_index(word: str) -> np.ndarray:
    v = _dense("w:" + word)
    v.setflags(write=False)
    return v


class DefaultEmbedder:
    name = "default/ri-v2"
    dim = DIM
    learns_from_store = True      # its cosines mean little until the store holds enough text

    def __init__(self, conn: apsw.Connection | None = None):
        self.conn = conn

    # -- learning ---------------------------------------------------------------------------------
    def observe(self, conn: apsw.Connection, items: Sequence[tuple[int, str]]) -> None:
        """Count the texts of nodes not yet observed."""
        ids = [i for i, _ in items]
        seen = {r[0] for r in _chunked(conn, "SELECT node_id FROM embed_observed WHERE node_id IN ({})", ids)}
        fresh = [(i, t) for i, t in items if i not in seen]
        if fresh:
            conn.executemany("INSERT INTO embed_observed(node_id) VALUES(?)", [(i,) for i, _ in fresh])
            self._count(conn, [t for _, t in fresh], +1)

    def unobserve(self, conn: apsw.Connection, node_ids: Sequence[int]) -> None:
        """Subtract the counts of observed nodes (their text must still be in `nodes`)."""
        got = list(_chunked(conn, "SELECT o.node_id, n.content FROM embed_observed o JOIN nodes n ON n.id = o.node_id"
                                  " WHERE o.node_id IN ({})", list(node_ids)))
        if got:
            conn.executemany("DELETE FROM embed_observed WHERE node_id=?", [(i,) for i, _ in got])
            self._count(conn, [t for _, t in got], -1)

    def _count(self, conn: apsw.Connection, texts: Sequence[str], sign: int) -> None:
        """Add (sign=+1) or subtract (sign=-1) the texts' document frequencies and co-occurrences."""
        df: dict[int, int] = {}
        ctx: dict[int, np.ndarray] = {}
        for text in texts:
            toks = content_words(text)
            if not toks:
                continue
            for w in set(toks):
                tid = term_id(w)
                df[tid] = df.get(tid, 0) + 1
            idx = np.stack([_word_index(w) for w in toks])
            csum = np.vstack([np.zeros((1, DIM), np.float32), np.cumsum(idx, axis=0)])
            n = len(toks)
            lo = np.clip(np.arange(n) - WINDOW, 0, n)
            hi = np.clip(np.arange(n) + WINDOW + 1, 0, n)
            windows = csum[hi] - csum[lo] - idx
            for w, row in zip(toks, windows):
                tid = term_id(w)
                if tid in ctx:
                    ctx[tid] += row
                else:
                    ctx[tid] = row.copy()
        if not df:
            return
        existing = {tid: (d, blob) for tid, d, blob in _chunked_select(conn, list(df))}
        updates = []
        for tid, count in df.items():
            old_df, blob = existing.get(tid, (0, None))
            vec = np.frombuffer(blob, np.float32).copy() if blob else np.zeros(DIM, np.float32)
            vec += sign * ctx.get(tid, 0)
            updates.append((tid, max(0, old_df + sign * count), vec.tobytes()))
        conn.executemany("INSERT INTO embed_terms(term_id, df, ctx) VALUES(?,?,?) ON CONFLICT(term_id)"
                         " DO UPDATE SET df=excluded.df, ctx=excluded.ctx", updates)
        total = sum(ctx.values(), np.zeros(DIM, np.float32)) * sign
        for (blob,) in conn.execute("SELECT vec FROM embed_common WHERE id = 1"):
            total = total + np.frombuffer(blob, np.float32)
        conn.execute("INSERT INTO embed_common(id, vec) VALUES(1, ?) ON CONFLICT(id) DO UPDATE SET vec = excluded.vec",
                     (total.astype(np.float32).tobytes(),))
        gone = [(u[0],) for u in updates if u[1] == 0]
        if gone:
            conn.executemany("DELETE FROM embed_terms WHERE term_id=?", gone)
        docs = sum(1 for t in texts if content_words(t))
        conn.execute("INSERT INTO embed_stats(key, value) VALUES('docs', ?) ON CONFLICT(key)"
                     " DO UPDATE SET value = CASE WHEN embed_stats.value + ? < 0 THEN 0 ELSE embed_stats.value + ? END",
                     (max(0, sign * docs), sign * docs, sign * docs))

    # -- embedding --------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        token_lists = [content_words(t) for t in texts]
        vocab = sorted({w for toks in token_lists for w in toks})
        stats = self._stats(vocab)
        n_docs = stats.pop(None, (0, None))[0]
        common = self._common_direction()
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, toks in enumerate(token_lists):
            if not toks:
                continue
            counts: dict[str, int] = {}
            for w in toks:
                counts[w] = counts.get(w, 0) + 1
            for w, tf in counts.items():
                df, ctx = stats.get(w, (0, None))
                idf = math.log((n_docs + 1) / (df + 0.5)) if n_docs >= MIN_DOCS_FOR_IDF else 1.0
                weight = (1.0 + math.log(tf)) * max(idf, 0.1)
                part = _surface(w)
                if ctx is not None:
                    if common is not None:
                        ctx = ctx - float(ctx @ common) * common
                    norm = float(np.linalg.norm(ctx))
                    if norm > 0:
                        part = part + CONTEXT_WEIGHT * math.sqrt(NONZERO) * ctx / norm
                out[row] += weight * part
        return normalise(out)

    def _common_direction(self) -> np.ndarray | None:
        if self.conn is None:
            return None
        for (blob,) in self.conn.execute("SELECT vec FROM embed_common WHERE id = 1"):
            total = np.frombuffer(blob, np.float32)
            norm = float(np.linalg.norm(total))
            return total / norm if norm > 0 else None
        return None

    def _stats(self, vocab: list[str]) -> dict:
        if self.conn is None or not vocab:
            return {None: (0, None)}
        by_id = {term_id(w): w for w in vocab}
        stats: dict = {by_id[tid]: (df, np.frombuffer(blob, np.float32) if blob else None)
                       for tid, df, blob in _chunked_select(self.conn, list(by_id))}
        stats[None] = (scalar(self.conn, "SELECT value FROM embed_stats WHERE key='docs'") or 0, None)
        return stats


def _chunked(conn: apsw.Connection, sql: str, ids: list[int], size: int = 500):
    for i in range(0, len(ids), size):
        chunk = ids[i:i + size]
        yield from conn.execute(sql.format(",".join("?" * len(chunk))), chunk)


def _chunked_select(conn: apsw.Connection, ids: list[int]):
    return _chunked(conn, "SELECT term_id, df, ctx FROM embed_terms WHERE term_id IN ({})", ids)


def _factory(settings, conn):
    return DefaultEmbedder(conn)


_factory.learner = DefaultEmbedder   # it keeps corpus statistics: forget must reach them
register("default", _factory)
