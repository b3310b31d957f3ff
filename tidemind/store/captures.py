"""Captures: the raw input of one digest, whole, append-only (only `forget` redacts it)."""
from __future__ import annotations

import apsw

from .. import secrets
from .connection import inserted, rows

DDL = """
CREATE TABLE captures(
  id INTEGER PRIMARY KEY,
  content TEXT,                      -- NULL once forgotten
  content_hash TEXT NOT NULL,        -- sha256 of the stored text; survives forget as the tombstone
  scope TEXT NOT NULL,
  source_tool TEXT,
  session TEXT,
  recorded_at TEXT NOT NULL,
  stream_file TEXT,                  -- name of the dated stream file holding the raw entry
  stream_key TEXT,                   -- random key of that entry (capture ids can be reused after a rollback)
  forgotten_at TEXT
);
"""


def insert(conn: apsw.Connection, *, content: str, content_hash: str, scope: str, source_tool: str | None,
           session: str | None, recorded_at: str, stream_file: str, stream_key: str) -> int:
    secrets.require_masked(content, "the captures table")      # the stream file is written from it too
    # the host names these; an id is no place for a key, but nothing stops one being put there
    source_tool, session = secrets.mask_optional(source_tool), secrets.mask_optional(session)
    return inserted(
        conn,
        "INSERT INTO captures(content, content_hash, scope, source_tool, session, recorded_at, stream_file, stream_key)"
        " VALUES(?,?,?,?,?,?,?,?)",
        (content, content_hash, scope, source_tool, session, recorded_at, stream_file, stream_key))


def get(conn: apsw.Connection, capture_id: int) -> dict | None:
    found = rows(conn, "SELECT * FROM captures WHERE id=?", (capture_id,))
    return found[0] if found else None


def redact(conn: apsw.Connection, capture_id: int, at: str) -> None:
    conn.execute("UPDATE captures SET content=NULL, forgotten_at=? WHERE id=?", (at, capture_id))


def for_stream(conn: apsw.Connection) -> list[dict]:
    """Everything a stream entry is made of, for every capture that has one."""
    return rows(conn, "SELECT id, content, content_hash, scope, source_tool, session, recorded_at, stream_file,"
                      " stream_key FROM captures WHERE stream_file IS NOT NULL")


def all_with_stream(conn: apsw.Connection) -> list[dict]:
    return rows(conn, "SELECT id, stream_file, stream_key, content_hash, forgotten_at FROM captures")


def count(conn: apsw.Connection, scopes=None) -> int:
    if not scopes:
        return next(iter(conn.execute("SELECT count(*) FROM captures")))[0]
    marks = ",".join("?" * len(scopes))
    return next(iter(conn.execute(f"SELECT count(*) FROM captures WHERE scope IN ({marks})", list(scopes))))[0]
