"""What the metabolism last saw of each model service (an LLM, an embedder): reachable or not,
since when, the last error, and when the scheduler will try it again (exponential backoff).
The scheduler writes it; `tidemind doctor` reads it."""
from __future__ import annotations

import apsw

from .. import secrets
from .connection import rows

DDL = """
CREATE TABLE provider_state(
  provider TEXT PRIMARY KEY,             -- 'anthropic/claude-haiku-4-5', 'ollama/nomic-embed-text', ...
  kind TEXT NOT NULL,                    -- 'llm' | 'embedder'
  state TEXT NOT NULL CHECK(state IN ('ok','unreachable')),
  failures INTEGER NOT NULL DEFAULT 0,   -- consecutive failed attempts (the backoff's exponent)
  last_error TEXT,
  last_failure_at TEXT,
  last_ok_at TEXT,
  retry_at TEXT                          -- no task calls it again before this (unless a person forces a run)
);
"""

# The same tables on PostgreSQL (the baseline a PostgreSQL store starts from: store/migrations.py)
PG_DDL = """
CREATE TABLE provider_state(
  provider TEXT PRIMARY KEY,             -- 'anthropic/claude-haiku-4-5', 'ollama/nomic-embed-text', ...
  kind TEXT NOT NULL,                    -- 'llm' | 'embedder'
  state TEXT NOT NULL CHECK(state IN ('ok','unreachable')),
  failures BIGINT NOT NULL DEFAULT 0,   -- consecutive failed attempts (the backoff's exponent)
  last_error TEXT,
  last_failure_at TEXT,
  last_ok_at TEXT,
  retry_at TEXT                          -- no task calls it again before this (unless a person forces a run)
);
"""


def get(conn: apsw.Connection, provider: str) -> dict | None:
    found = rows(conn, "SELECT * FROM provider_state WHERE provider=?", (provider,))
    return found[0] if found else None


def everything(conn: apsw.Connection) -> list[dict]:
    return rows(conn, "SELECT * FROM provider_state ORDER BY kind, provider")


def failed(conn: apsw.Connection, provider: str, kind: str, error: str, at: str, retry_at: str) -> None:
    """One more failed attempt (inside the caller's transaction). A provider's error can echo
    the request, key and all: masked."""
    error, _ = secrets.mask(error[:500])
    conn.execute("INSERT INTO provider_state(provider, kind, state, failures, last_error, last_failure_at, retry_at)"
                 " VALUES(?,?,'unreachable',1,?,?,?) ON CONFLICT(provider) DO UPDATE SET state='unreachable',"
                 " failures=failures+1, last_error=excluded.last_error, last_failure_at=excluded.last_failure_at,"
                 " retry_at=excluded.retry_at", (provider, kind, error, at, retry_at))


def failures(conn: apsw.Connection, provider: str) -> int:
    row = get(conn, provider)
    return row["failures"] if row else 0


def answered(conn: apsw.Connection, provider: str, kind: str, at: str) -> None:
    """It answered: the backoff starts over (the last error is kept, for doctor's history)."""
    conn.execute("INSERT INTO provider_state(provider, kind, state, last_ok_at) VALUES(?,?,'ok',?)"
                 " ON CONFLICT(provider) DO UPDATE SET state='ok', failures=0, retry_at=NULL,"
                 " last_ok_at=excluded.last_ok_at", (provider, kind, at))
