"""Tags and their assignment to nodes, each assignment with a status.

`rejected_by_user` is a tombstone: it is never deleted by a pass and nothing re-proposes it;
only an explicit `unreject` lifts it.
"""
from __future__ import annotations

from typing import Sequence

import apsw

from .. import secrets

from .connection import rows
from .visibility import visible

DDL = """
CREATE TABLE tags(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE COLLATE NOCASE
);
CREATE TABLE node_tags(
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  tag_id INTEGER NOT NULL REFERENCES tags(id),
  status TEXT NOT NULL CHECK(status IN ('proposed','confirmed','rejected_by_user')),
  source TEXT NOT NULL,                 -- who proposed or set it
  confidence REAL,
  created_at TEXT NOT NULL,
  decided_at TEXT,
  PRIMARY KEY(node_id, tag_id)
);
CREATE INDEX node_tags_tag ON node_tags(tag_id, status);
"""

# A rejection remembers what it replaced, so undo restores exactly that (a person's own imported
# tag once vanished when its rejection was undone: unreject deleted the row).
PRIOR_DDL = """
ALTER TABLE node_tags ADD COLUMN prior_status TEXT;
ALTER TABLE node_tags ADD COLUMN prior_source TEXT;
ALTER TABLE node_tags ADD COLUMN prior_confidence REAL;
"""
# ... and when the replaced assignment was decided (undo left the rejection's time on a person's tag)
PRIOR_DECIDED_DDL = """
ALTER TABLE node_tags ADD COLUMN prior_decided_at TEXT;
"""

# "Never this tag here": a person's rejection of a tag name for a whole scope. No pass proposes
# the name in that scope again (`assign` refuses), and the proposals it already had there are
# rejected with the state before remembered (source EVERYWHERE), so lifting it restores them.
# A person's own tag of that name stays: the rejection is about what passes invent.
SCOPE_TOMBSTONES_DDL = """
CREATE TABLE tag_tombstones(
  scope TEXT NOT NULL,
  tag_id INTEGER NOT NULL REFERENCES tags(id),
  created_at TEXT NOT NULL,
  by TEXT NOT NULL,
  PRIMARY KEY(scope, tag_id)
);
"""
EVERYWHERE = "person:everywhere"

SERVED = ("proposed", "confirmed")   # statuses a tag filter matches; rejected ones never do


def tag_id(conn: apsw.Connection, name: str) -> int:
    """The tag's row, made on first use. A name comes from a person, a note's frontmatter or a
    model: masked, so a tag never holds a key."""
    name, _ = secrets.mask(name)
    conn.execute("INSERT INTO tags(name) VALUES(?) ON CONFLICT(name) DO NOTHING", (name,))
    return next(iter(conn.execute("SELECT id FROM tags WHERE name=?", (name,))))[0]


def assign(conn: apsw.Connection, node_id: int, name: str, *, status: str, source: str, at: str,
           confidence: float | None = None) -> bool:
    """Add or upgrade an assignment. Never overrides a person's rejection. Returns True if written."""
    tid = tag_id(conn, name)
    current = [r[0] for r in conn.execute("SELECT status FROM node_tags WHERE node_id=? AND tag_id=?", (node_id, tid))]
    if current and (current[0] == "rejected_by_user" or (current[0] == "confirmed" and status == "proposed")):
        return False
    if status == "proposed" and conn.execute(
            "SELECT 1 FROM tag_tombstones t JOIN nodes n ON n.scope = t.scope WHERE n.id=? AND t.tag_id=?",
            (node_id, tid)).fetchone():
        return False                          # a person said "never this tag here"
    conn.execute("INSERT INTO node_tags(node_id, tag_id, status, source, confidence, created_at) VALUES(?,?,?,?,?,?)"
                 " ON CONFLICT(node_id, tag_id) DO UPDATE SET status=excluded.status, source=excluded.source,"
                 " confidence=excluded.confidence, decided_at=excluded.created_at",
                 (node_id, tid, status, source, confidence, at))
    return True


def reject(conn: apsw.Connection, node_id: int, name: str, at: str) -> None:
    """A tombstone on this node. What it replaces (a proposal, a person's own tag) is kept beside
    it; rejecting twice keeps the first rejection's memory of the state before."""
    tid = tag_id(conn, name)
    conn.execute("INSERT INTO node_tags(node_id, tag_id, status, source, created_at, decided_at)"
                 " VALUES(?,?,'rejected_by_user','person',?,?) ON CONFLICT(node_id, tag_id)"
                 " DO UPDATE SET prior_status=CASE WHEN status='rejected_by_user' THEN prior_status ELSE status END,"
                 " prior_source=CASE WHEN status='rejected_by_user' THEN prior_source ELSE source END,"
                 " prior_confidence=CASE WHEN status='rejected_by_user' THEN prior_confidence ELSE confidence END,"
                 " prior_decided_at=CASE WHEN status='rejected_by_user' THEN prior_decided_at ELSE decided_at END,"
                 " status='rejected_by_user', source='person', confidence=NULL, decided_at=excluded.decided_at",
                 (node_id, tid, at, at))


def unreject(conn: apsw.Connection, node_id: int, name: str) -> bool:
    """Undo a rejection: the assignment it replaced comes back as it was (status, source,
    confidence); a rejection of a tag the node never had leaves nothing."""
    found = rows(conn, "SELECT nt.tag_id, nt.prior_status, nt.prior_source, nt.prior_confidence, nt.prior_decided_at"
                       " FROM node_tags nt"
                       " JOIN tags t ON t.id = nt.tag_id WHERE nt.node_id=? AND t.name=? AND nt.status='rejected_by_user'",
                 (node_id, name))
    if not found:
        return False
    row = found[0]
    if row["prior_status"] is None:
        conn.execute("DELETE FROM node_tags WHERE node_id=? AND tag_id=?", (node_id, row["tag_id"]))
    else:
        conn.execute("UPDATE node_tags SET status=?, source=?, confidence=?, decided_at=?, prior_status=NULL,"
                     " prior_source=NULL, prior_confidence=NULL, prior_decided_at=NULL WHERE node_id=? AND tag_id=?",
                     (row["prior_status"], row["prior_source"], row["prior_confidence"], row["prior_decided_at"],
                      node_id, row["tag_id"]))
    return True


def reject_everywhere(conn: apsw.Connection, name: str, scope: str, at: str, by: str) -> list[int]:
    """The scope-wide tombstone; the scope's live proposals of the name are rejected with their
    state remembered. Returns the nodes whose proposal it rejected."""
    tid = tag_id(conn, name)
    conn.execute("INSERT INTO tag_tombstones(scope, tag_id, created_at, by) VALUES(?,?,?,?)"
                 " ON CONFLICT(scope, tag_id) DO NOTHING", (scope, tid, at, by))
    touched = [r[0] for r in conn.execute(
        "SELECT nt.node_id FROM node_tags nt JOIN nodes n ON n.id = nt.node_id WHERE nt.tag_id=? AND n.scope=?"
        " AND nt.status='proposed' ORDER BY nt.node_id", (tid, scope))]
    marks = ",".join("?" * len(touched))
    if touched:
        conn.execute(f"UPDATE node_tags SET prior_status=status, prior_source=source, prior_confidence=confidence,"
                     f" prior_decided_at=decided_at, status='rejected_by_user', source=?, confidence=NULL, decided_at=? WHERE tag_id=?"
                     f" AND node_id IN ({marks})", [EVERYWHERE, at, tid, *touched])
    return touched


def unreject_everywhere(conn: apsw.Connection, name: str, scope: str) -> list[int] | None:
    """Lift the tombstone and put back exactly the proposals it rejected (None: there was none)."""
    found = conn.execute("SELECT t.tag_id FROM tag_tombstones t JOIN tags g ON g.id = t.tag_id WHERE t.scope=?"
                         " AND g.name=?", (scope, name)).fetchone()
    if found is None:
        return None
    tid = found[0]
    conn.execute("DELETE FROM tag_tombstones WHERE scope=? AND tag_id=?", (scope, tid))
    restored = [r[0] for r in conn.execute(
        "SELECT nt.node_id FROM node_tags nt JOIN nodes n ON n.id = nt.node_id WHERE nt.tag_id=? AND n.scope=?"
        " AND nt.status='rejected_by_user' AND nt.source=? ORDER BY nt.node_id", (tid, scope, EVERYWHERE))]
    for node_id in restored:
        unreject(conn, node_id, name)
    return restored


def tombstones(conn: apsw.Connection, scopes: Sequence[str]) -> list[dict]:
    marks = ",".join("?" * len(scopes))
    return rows(conn, f"SELECT t.scope, g.name, t.created_at, t.by FROM tag_tombstones t JOIN tags g ON g.id = t.tag_id"
                      f" WHERE t.scope IN ({marks}) ORDER BY t.scope, g.name", list(scopes))


def scope_names(conn: apsw.Connection, scope: str) -> list[dict]:
    """Every tag name used on the scope's memories (any status but forgotten ones'), with how
    many carry it in each status: what a tagging pass reuses, prefers (confirmed) and avoids
    (rejected again and again)."""
    return rows(conn, "SELECT t.name, nt.status, count(*) AS count FROM node_tags nt JOIN tags t ON t.id = nt.tag_id"
                      " JOIN nodes n ON n.id = nt.node_id WHERE n.scope = ? AND n.status != 'forgotten'"
                      " GROUP BY t.name, nt.status", (scope,))


def withdraw_proposals(conn: apsw.Connection, node_id: int, sources: Sequence[str], keep: Sequence[str]) -> list[str]:
    """Drop the node's proposals made by `sources` whose name is not in `keep` (a tagging pass
    replacing its own earlier guesses; a person's decisions and other passes' rows stay).
    Returns the names withdrawn."""
    if not sources:
        return []
    marks = ",".join("?" * len(sources))
    kept = {_nocase(n) for n in keep}
    found = [(tid, name) for tid, name in conn.execute(
        f"SELECT nt.tag_id, t.name FROM node_tags nt JOIN tags t ON t.id = nt.tag_id WHERE nt.node_id = ?"
        f" AND nt.status = 'proposed' AND nt.source IN ({marks})", (node_id, *sources)) if _nocase(name) not in kept]
    for tid, _ in found:
        conn.execute("DELETE FROM node_tags WHERE node_id = ? AND tag_id = ?", (node_id, tid))
    return sorted(name for _, name in found)


def listing(conn: apsw.Connection, scopes: Sequence[str], status: str | None = None, limit: int = 500) -> list[dict]:
    """Tag names with how many visible memories carry them in each status (a review queue of
    proposed names: one decision for a name instead of one per memory)."""
    pred, params = visible("n", scopes)
    where = " AND nt.status = ?" if status else ""
    return rows(conn, f"SELECT t.name, nt.status, count(*) AS count, min(n.id) AS example FROM node_tags nt"
                      f" JOIN tags t ON t.id = nt.tag_id JOIN nodes n ON n.id = nt.node_id WHERE {pred}{where}"
                      f" GROUP BY t.name, nt.status ORDER BY count DESC, t.name LIMIT ?",
                [*params, *([status] if status else []), limit])


def confirmed_in_scope(conn: apsw.Connection, scope: str) -> list[tuple[int, str, str]]:
    """(node id, tag name, day of its valid_from) of every confirmed tag on the scope's visible
    memories (which work a person says a memory belongs to, and when)."""
    pred, params = visible("n", [scope])
    return [tuple(r) for r in conn.execute(
        "SELECT nt.node_id, t.name, substr(n.valid_from, 1, 10) FROM node_tags nt JOIN tags t ON t.id = nt.tag_id"
        f" JOIN nodes n ON n.id = nt.node_id WHERE nt.status = 'confirmed' AND {pred} ORDER BY nt.node_id", params)]


def nodes_tagged_with(conn: apsw.Connection, name: str, scope: str) -> dict[int, list[str]]:
    """Live nodes of a scope carrying a confirmed tag `name`, each with all its confirmed tags."""
    pred, params = visible("n", [scope])
    out: dict[int, list[str]] = {}
    for node_id, tag in conn.execute(
            "SELECT nt.node_id, t2.name FROM node_tags nt JOIN tags t ON t.id = nt.tag_id"
            " JOIN nodes n ON n.id = nt.node_id JOIN node_tags nt2 ON nt2.node_id = nt.node_id"
            " JOIN tags t2 ON t2.id = nt2.tag_id WHERE t.name = ? AND nt.status = 'confirmed'"
            f" AND nt2.status = 'confirmed' AND {pred}", [name, *params]):
        out.setdefault(node_id, []).append(tag)
    return out


def forget_node(conn: apsw.Connection, node_id: int) -> None:
    """Forget: drop the node's assignments, and any tag name no other node carries (a proposed
    name is made from the node's own words, so it would keep them)."""
    tag_ids = [r[0] for r in conn.execute("SELECT tag_id FROM node_tags WHERE node_id=?", (node_id,))]
    conn.execute("DELETE FROM node_tags WHERE node_id=?", (node_id,))
    for tid in tag_ids:
        conn.execute("DELETE FROM tags WHERE id=? AND NOT EXISTS (SELECT 1 FROM node_tags WHERE tag_id=?)"
                     " AND NOT EXISTS (SELECT 1 FROM tag_tombstones WHERE tag_id=?)", (tid, tid, tid))


def for_nodes(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {i: [] for i in node_ids}
    if not node_ids:
        return out
    marks = ",".join("?" * len(node_ids))
    for r in rows(conn, f"SELECT nt.node_id, t.name, nt.status, nt.source FROM node_tags nt JOIN tags t"
                        f" ON t.id = nt.tag_id WHERE nt.node_id IN ({marks}) ORDER BY t.name", list(node_ids)):
        out[r["node_id"]].append({"name": r["name"], "status": r["status"], "source": r["source"]})
    return out


def recent_rejections(conn: apsw.Connection, node_id: int, limit: int) -> list[str]:
    """Names a person rejected on this node first, then the most recent rejections anywhere
    (negative examples for a tagging prompt)."""
    names = [n for (n,) in conn.execute(
        "SELECT t.name FROM node_tags nt JOIN tags t ON t.id = nt.tag_id WHERE nt.status = 'rejected_by_user'"
        " ORDER BY (nt.node_id = ?) DESC, nt.decided_at DESC LIMIT ?", (node_id, limit))]
    return list(dict.fromkeys(names))


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _nocase(name: str) -> str:
    """The key SQLite's NOCASE collation compares (ASCII letters folded only), so two filters it
    treats as one name are counted once."""
    return name.translate(_ASCII_LOWER)


def filter_sql(alias: str, names: Sequence[str]) -> tuple[str, list]:
    """Nodes carrying every one of `names` with a served status (applied before ranking). One
    counted subquery whatever the number of names (one EXISTS per name made SQLite refuse the
    statement at ~1,000 names: "Expression tree is too large")."""
    wanted = sorted({_nocase(n): n for n in names}.values())
    if not wanted:
        return "1", []
    marks = ",".join("?" * len(wanted))
    return (f"(SELECT count(DISTINCT nt.tag_id) FROM node_tags nt JOIN tags t ON t.id = nt.tag_id"
            f" WHERE nt.node_id = {alias}.id AND t.name IN ({marks}) AND nt.status IN ('proposed','confirmed')) = ?",
            [*wanted, len(wanted)])


def count_by_status(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> dict[str, int]:
    if not scopes:
        return {s: n for s, n in conn.execute("SELECT status, count(*) FROM node_tags GROUP BY status")}
    marks = ",".join("?" * len(scopes))
    return {s: n for s, n in conn.execute(f"SELECT x.status, count(*) FROM node_tags x JOIN nodes n ON n.id = x.node_id"
                                          f" WHERE n.scope IN ({marks}) GROUP BY x.status", list(scopes))}


def restore_assignment(conn: apsw.Connection, node_id: int, name: str, status: str | None) -> None:
    """Put an assignment back as it was before an import (None: there was none)."""
    if status is None:
        conn.execute("DELETE FROM node_tags WHERE node_id=? AND tag_id=(SELECT id FROM tags WHERE name=?)", (node_id, name))
    else:
        conn.execute("UPDATE node_tags SET status=? WHERE node_id=? AND tag_id=(SELECT id FROM tags WHERE name=?)",
                     (status, node_id, name))


def counts(conn: apsw.Connection, pred: str, params: Sequence, limit: int = 200) -> list[tuple[str, int]]:
    """(name, nodes carrying it) over the nodes `pred` selects (alias n), served statuses only,
    most used first: the tags a person browses by."""
    return [tuple(r) for r in conn.execute(
        f"SELECT t.name, count(*) AS c FROM node_tags nt JOIN tags t ON t.id = nt.tag_id JOIN nodes n ON n.id = nt.node_id"
        f" WHERE nt.status IN ('proposed','confirmed') AND {pred} GROUP BY t.id ORDER BY c DESC, t.name LIMIT ?",
        [*params, int(limit)])]


def served_names(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, list[str]]:
    """Each node's served tag names (confirmed first), for thousands of ids (a graph colours by them)."""
    out: dict[int, list[str]] = {}
    ids = list(node_ids)
    for start in range(0, len(ids), 900):
        chunk = ids[start:start + 900]
        marks = ",".join("?" * len(chunk))
        for node_id, name in conn.execute(
                f"SELECT nt.node_id, t.name FROM node_tags nt JOIN tags t ON t.id = nt.tag_id WHERE nt.node_id IN ({marks})"
                f" AND nt.status IN ('proposed','confirmed') ORDER BY nt.node_id, nt.status = 'proposed', t.name", chunk):
            out.setdefault(node_id, []).append(name)
    return out


def assignment(conn: apsw.Connection, node_id: int, name: str) -> dict | None:
    """The node's assignment of `name` as it is (None: it has none), to be put back by `put_back`."""
    found = rows(conn, "SELECT nt.status, nt.source, nt.confidence, nt.created_at, nt.decided_at, nt.prior_status,"
                       " nt.prior_source, nt.prior_confidence, nt.prior_decided_at"
                       " FROM node_tags nt JOIN tags t ON t.id = nt.tag_id"
                       " WHERE nt.node_id = ? AND t.name = ?", (node_id, name))
    return found[0] if found else None


def put_back(conn: apsw.Connection, node_id: int, name: str, row: dict | None) -> None:
    """Make the assignment exactly `row` again (from `assignment`), or remove it when there was none."""
    tid = tag_id(conn, name)
    if row is None:
        conn.execute("DELETE FROM node_tags WHERE node_id=? AND tag_id=?", (node_id, tid))
        return
    if row["status"] == "proposed" and conn.execute(
            "SELECT 1 FROM tag_tombstones t JOIN nodes n ON n.scope = t.scope WHERE n.id=? AND t.tag_id=?",
            (node_id, tid)).fetchone():
        # "never this tag here" was said since: the proposal comes back withdrawn, remembered as
        # reject_everywhere remembers the ones it withdrew (lifting the tombstone brings it back)
        row = {**row, "status": "rejected_by_user", "source": EVERYWHERE, "confidence": None,
               "prior_status": "proposed", "prior_source": row["source"], "prior_confidence": row["confidence"],
               "prior_decided_at": row["decided_at"]}
    conn.execute("INSERT INTO node_tags(node_id, tag_id, status, source, confidence, created_at, decided_at, prior_status,"
                 " prior_source, prior_confidence, prior_decided_at) VALUES(?,?,?,?,?,?,?,?,?,?,?)"
                 " ON CONFLICT(node_id, tag_id) DO UPDATE SET"
                 " status=excluded.status, source=excluded.source, confidence=excluded.confidence,"
                 " created_at=excluded.created_at, decided_at=excluded.decided_at, prior_status=excluded.prior_status,"
                 " prior_source=excluded.prior_source, prior_confidence=excluded.prior_confidence,"
                 " prior_decided_at=excluded.prior_decided_at",
                 (node_id, tid, row["status"], row["source"], row["confidence"], row["created_at"], row["decided_at"],
                  row["prior_status"], row["prior_source"], row["prior_confidence"], row.get("prior_decided_at")))
