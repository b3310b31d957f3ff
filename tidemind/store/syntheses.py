"""Syntheses: derived text about several nodes (crystals, daily/weekly digests, lessons).

Each cites its member ids, records its generator, and is served only as derived: labelled
`unreviewed` until a person approves it. A synthesis citing a forgotten node loses its text.
"""
from __future__ import annotations

import json
from typing import Sequence

import apsw

from .. import secrets
from .connection import rows

DDL = """
CREATE TABLE syntheses(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,                   -- 'crystal' | 'daily' | 'weekly' | 'lesson'
  scope TEXT NOT NULL,
  period TEXT,                          -- '2026-11-29' or '2026-W48' for temporal digests
  members TEXT NOT NULL,                -- JSON list of the node ids it cites
  text TEXT NOT NULL,
  generator TEXT NOT NULL,
  created_at TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'unreviewed' CHECK(status IN ('unreviewed','approved','rejected','withdrawn')),
  digest TEXT NOT NULL UNIQUE           -- the same synthesis of the same members is made once
);
CREATE INDEX syntheses_scope ON syntheses(scope, kind, status);
"""


def add(conn: apsw.Connection, *, kind: str, scope: str, members: Sequence[int], text: str, generator: str,
        at: str, digest: str, period: str | None = None) -> int | None:
    # a synthesis quotes review payloads and model output, and prepare serves it to every session
    text, _ = secrets.mask(text)
    conn.execute("INSERT OR IGNORE INTO syntheses(kind, scope, period, members, text, generator, created_at, digest)"
                 " VALUES(?,?,?,?,?,?,?,?)", (kind, scope, period, json.dumps(sorted(members)), text, generator, at,
                                              digest))
    return conn.last_insert_rowid() if conn.changes() else None


def failure_lesson_digest(scope: str, said: str) -> str:
    """The identity of the lesson made from a repeated tool failure: one per scope and error text."""
    from ..text import sha256

    return sha256(f"lesson:failure:{scope}:{said}")


def remask_texts(conn: apsw.Connection) -> int:
    """Mask the texts stored before `add` masked them (a migration); returns how many changed."""
    changed = 0
    for synthesis_id, text in conn.execute("SELECT id, text FROM syntheses").fetchall():
        masked, kinds = secrets.mask(text)
        if kinds:
            conn.execute("UPDATE syntheses SET text=? WHERE id=?", (masked, synthesis_id))
            changed += 1
    return changed


def rename_digest(conn: apsw.Connection, old: str, new: str) -> None:
    """The text a synthesis is keyed by changed (masked): keep it recognised, so it is not made twice."""
    conn.execute("UPDATE OR IGNORE syntheses SET digest=? WHERE digest=?", (new, old))


def exists(conn: apsw.Connection, digest: str) -> bool:
    return any(conn.execute("SELECT 1 FROM syntheses WHERE digest=?", (digest,)))


def periods_done(conn: apsw.Connection, kind: str, scope: str) -> set[str]:
    return {p for (p,) in conn.execute("SELECT period FROM syntheses WHERE kind=? AND scope=?", (kind, scope))}


def set_status(conn: apsw.Connection, synthesis_id: int, status: str) -> None:
    conn.execute("UPDATE syntheses SET status=? WHERE id=?", (status, synthesis_id))


def served(conn: apsw.Connection, scopes: Sequence[str], kinds: Sequence[str], limit: int = 20) -> list[dict]:
    """Approved and unreviewed syntheses of these kinds in the scopes, newest first (members not yet checked)."""
    s_marks, k_marks = ",".join("?" * len(scopes)), ",".join("?" * len(kinds))
    found = rows(conn, f"SELECT * FROM syntheses WHERE scope IN ({s_marks}) AND kind IN ({k_marks})"
                       f" AND status IN ('approved','unreviewed') ORDER BY (status='approved') DESC, id DESC LIMIT ?",
                 [*scopes, *kinds, limit])
    for r in found:
        r["members"] = json.loads(r["members"])
    return found


def citing(conn: apsw.Connection, node_ids: Sequence[int]) -> list[int]:
    """Syntheses whose members include one of these nodes."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    return [i for (i,) in conn.execute(f"SELECT DISTINCT s.id FROM syntheses s, json_each(s.members) m"
                                       f" WHERE m.value IN ({marks}) ORDER BY s.id", list(node_ids))]


def withdraw_citing(conn: apsw.Connection, node_id: int) -> int:
    """Forget: a synthesis that cites the node may quote it; its text goes, its row stays."""
    conn.execute("UPDATE syntheses SET text='[withdrawn: it cited a forgotten memory]', status='withdrawn'"
                 " WHERE EXISTS (SELECT 1 FROM json_each(syntheses.members) WHERE value = ?)", (node_id,))
    return conn.changes()


def get(conn: apsw.Connection, synthesis_id: int) -> dict | None:
    found = rows(conn, "SELECT * FROM syntheses WHERE id=?", (synthesis_id,))
    if found:
        found[0]["members"] = json.loads(found[0]["members"])
    return found[0] if found else None
