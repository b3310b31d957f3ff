"""The audit log: one row per mutation, written in the mutation's own transaction.

It holds ids, actions and hashes, never authored text; but some details are made from the text
(the tag names a pass proposed), so `forget` scrubs the details of the forgotten node's rows.
"""
from __future__ import annotations

import json

import apsw

from .. import secrets
from .connection import rows

DDL = """
CREATE TABLE audit_log(
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  actor TEXT NOT NULL,               -- 'cli', 'mcp:<tool>', 'daemon:<task>', 'desktop', 'importer:<name>'
  action TEXT NOT NULL,
  node_id INTEGER,
  capture_id INTEGER,
  details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_node ON audit_log(node_id);
"""


def record(conn: apsw.Connection, *, at: str, actor: str, action: str, node_id: int | None = None,
           capture_id: int | None = None, **details) -> None:
    if not conn.in_transaction:
        raise RuntimeError("audit.record must run inside the mutation's transaction")
    details, _ = secrets.mask_tree(details)     # tag names, notes, titles: made from people's words
    conn.execute("INSERT INTO audit_log(at, actor, action, node_id, capture_id, details) VALUES(?,?,?,?,?,?)",
                 (at, actor, action, node_id, capture_id, json.dumps(details, sort_keys=True)))


def latest_id(conn: apsw.Connection) -> int:
    """The newest audit row: every mutation writes one, so a window can tell real changes from a
    search's bookkeeping (hit counts and heat, which write no audit row)."""
    return conn.execute("SELECT coalesce(max(id), 0) FROM audit_log").fetchone()[0]


# detail keys whose values can be made from a memory's words (tag names, titles, notes' tags)
TEXT_KEYS = frozenset({"tag", "tags", "title", "name", "names", "text", "reason",
                       "withdrawn"})      # the tag names a tagging pass took back: made from the words too


def scrub_node(conn: apsw.Connection, node_id: int) -> None:
    """Forget: keep who did what when to the node (ids, hashes, counts), drop the details that
    may be made from its words."""
    for row_id, details in conn.execute("SELECT id, details FROM audit_log WHERE node_id=? AND details != '{}'",
                                        (node_id,)).fetchall():
        kept = {k: v for k, v in json.loads(details).items() if k not in TEXT_KEYS}
        if len(kept) != len(json.loads(details)):
            kept["scrubbed"] = "forget"
            conn.execute("UPDATE audit_log SET details=? WHERE id=?", (json.dumps(kept, sort_keys=True), row_id))


def last_id(conn: apsw.Connection) -> int:
    for (value,) in conn.execute("SELECT coalesce(max(id), 0) FROM audit_log"):
        return value
    return 0


def scrub_named(conn: apsw.Connection, action_prefix: str, name: str) -> None:
    """Forget: audit rows of these actions whose details name `name` keep only what was done."""
    conn.execute("UPDATE audit_log SET details='{\"scrubbed\": \"forget\"}' WHERE action LIKE ? AND"
                 " (json_extract(details, '$.slug') = ? OR json_extract(details, '$.alias') = ?)",
                 (action_prefix + "%", name, name))


def nodes_touched_between(conn: apsw.Connection, after_id: int, upto_id: int,
                          exclude_actor: str | None = None) -> list[int]:
    """Ids of nodes a mutation touched in audit rows (after_id, upto_id] (every mutation writes one)."""
    return [r[0] for r in conn.execute("SELECT DISTINCT node_id FROM audit_log WHERE id > ? AND id <= ?"
                                       " AND node_id IS NOT NULL AND actor IS NOT ?", (after_id, upto_id, exclude_actor))]


def for_node(conn: apsw.Connection, node_id: int) -> list[dict]:
    return rows(conn, "SELECT at, actor, action, details FROM audit_log WHERE node_id=? ORDER BY id", (node_id,))


def after(conn: apsw.Connection, after_id: int, limit: int = 5000) -> list[tuple[str, int | None]]:
    """(action, node id) of the mutations since `after_id`, oldest first: what a window refreshes."""
    return [tuple(r) for r in conn.execute("SELECT action, node_id FROM audit_log WHERE id > ? ORDER BY id LIMIT ?",
                                           (after_id, limit))]
