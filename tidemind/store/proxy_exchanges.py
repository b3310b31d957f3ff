"""The conversations `tidemind proxy` has stored (issue 26): one row per exchange (a user turn and
the answer to it), linked to the exchange before it, so a conversation's branches form a tree.

An exchange's id is the hash chain of every message up to and including its answer, so the next
request of the same conversation (which carries those messages again) names its parent by
computing the same chain; `pair_sha256` (the question and answer alone) finds the parent of a
client that sends only its last few messages. A conversation edited or forked at some turn gets a
new chain from there on, and its own session: the branch's first exchange names it.

The rows hold ids and hashes, never text: the words are the captures' (verbatim, masked,
versioned, forgettable like any memory), and a turn read back for short-term memory is read
through the captures' visible nodes, so a forgotten or archived turn never comes back this way.
Forgetting a turn takes its exchange out (`forget_capture`): its hashes would confirm a guess.
"""
from __future__ import annotations

from typing import Sequence

import apsw

from . import migrations
from .connection import rows

DDL = """
CREATE TABLE proxy_exchanges(
  id TEXT PRIMARY KEY,                   -- hash chain of the messages up to and including the answer
  parent_id TEXT,                        -- the exchange before it in its conversation (NULL: the first)
  pair_sha256 TEXT NOT NULL,             -- hash of the question and the answer alone
  session TEXT NOT NULL,                 -- the branch: the id of its first exchange
  user_capture_id INTEGER REFERENCES captures(id),
  answer_capture_id INTEGER REFERENCES captures(id),
  model TEXT NOT NULL,
  recorded_at TEXT NOT NULL
);
CREATE INDEX proxy_exchanges_parent ON proxy_exchanges(parent_id);
CREATE INDEX proxy_exchanges_pair ON proxy_exchanges(pair_sha256);
"""

PG_DDL = """
CREATE TABLE proxy_exchanges(
  id TEXT PRIMARY KEY,
  parent_id TEXT,
  pair_sha256 TEXT NOT NULL,
  session TEXT NOT NULL,
  user_capture_id BIGINT REFERENCES captures(id),
  answer_capture_id BIGINT REFERENCES captures(id),
  model TEXT NOT NULL,
  recorded_at TEXT NOT NULL
);
CREATE INDEX proxy_exchanges_parent ON proxy_exchanges(parent_id);
CREATE INDEX proxy_exchanges_pair ON proxy_exchanges(pair_sha256);
"""

migrations.register("proxy_exchanges", [("0001_proxy_exchanges", DDL)], postgresql=[("pg0001_baseline", PG_DDL)])

_COLUMNS = "id, parent_id, pair_sha256, session, user_capture_id, answer_capture_id, model, recorded_at"


def get(conn: apsw.Connection, exchange_id: str) -> dict | None:
    found = rows(conn, f"SELECT {_COLUMNS} FROM proxy_exchanges WHERE id = ?", (exchange_id,))
    return found[0] if found else None


def with_pair(conn: apsw.Connection, pair_sha256: str, limit: int = 20) -> list[dict]:
    """The exchanges with this question and answer, newest first (a client that sent only its
    last turns; the caller checks which one its earlier turns agree with)."""
    return rows(conn, f"SELECT {_COLUMNS} FROM proxy_exchanges WHERE pair_sha256 = ?"
                      " ORDER BY recorded_at DESC, id LIMIT ?", (pair_sha256, limit))


def has_children(conn: apsw.Connection, exchange_id: str) -> bool:
    return conn.execute("SELECT 1 FROM proxy_exchanges WHERE parent_id = ? LIMIT 1", (exchange_id,)).fetchone() is not None


def add(conn: apsw.Connection, *, exchange_id: str, parent_id: str | None, pair_sha256: str, session: str,
        user_capture_id: int | None, answer_capture_id: int | None, model: str, at: str) -> None:
    conn.execute(f"INSERT INTO proxy_exchanges({_COLUMNS}) VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING",
                 (exchange_id, parent_id, pair_sha256, session, user_capture_id, answer_capture_id, model, at))


def ancestors(conn: apsw.Connection, exchange_id: str, limit: int) -> list[dict]:
    """The exchange and those before it on its branch, newest first, at most `limit`."""
    out, seen, current = [], set(), exchange_id
    while current and len(out) < limit and current not in seen:
        seen.add(current)
        row = get(conn, current)
        if row is None:
            break
        out.append(row)
        current = row["parent_id"]
    return out


def forget_capture(conn: apsw.Connection, capture_ids: Sequence[int]) -> None:
    """A forgotten turn's exchange goes (its hashes would confirm a guess of the words); the
    exchanges after it keep their place, their parent now unknown."""
    for capture_id in capture_ids:
        conn.execute("DELETE FROM proxy_exchanges WHERE user_capture_id = ? OR answer_capture_id = ?",
                     (capture_id, capture_id))
