"""Accounting of model calls: one row per call, valid or not (shown by `tidemind stats`)."""
from __future__ import annotations

import apsw

from .. import secrets

DDL = """
CREATE TABLE llm_calls(
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  task TEXT NOT NULL,
  provider TEXT NOT NULL,
  strategy TEXT NOT NULL,
  status TEXT NOT NULL,               -- 'ok' | 'invalid' | 'error'
  reason TEXT,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  ms INTEGER NOT NULL DEFAULT 0
);
"""


def record(conn: apsw.Connection, *, at: str, task: str, provider: str, strategy: str, status: str,
           reason: str | None, input_tokens: int, output_tokens: int, ms: int) -> None:
    reason = secrets.mask_optional(reason)      # a provider's error can echo the request, key and all
    conn.execute("INSERT INTO llm_calls(at, task, provider, strategy, status, reason, input_tokens, output_tokens, ms)"
                 " VALUES(?,?,?,?,?,?,?,?,?)", (at, task, provider, strategy, status, reason, input_tokens,
                                                output_tokens, ms))


def totals(conn: apsw.Connection) -> dict:
    out = {}
    for task, status, calls, tin, tout in conn.execute(
            "SELECT task, status, count(*), sum(input_tokens), sum(output_tokens) FROM llm_calls GROUP BY task, status"):
        entry = out.setdefault(task, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
        entry["calls"] += calls
        entry[status] = calls
        entry["input_tokens"] += tin or 0
        entry["output_tokens"] += tout or 0
    return out
