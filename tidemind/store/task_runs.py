"""Task state for the metabolism scheduler: last run, status, counts, error, a cursor, and a lease.

A lease is taken only when free or expired, so two processes (two daemons, a daemon and
`tidemind metabolize`, daemons of several machines on one server store) never run the same task
at once; and, when the taker says when it saw the task last finish, only if nobody finished it
since (a round reads every task's state first: a task another daemon ran meanwhile is not run
again on that stale reading).

On SQLite a lease is taken in a BEGIN IMMEDIATE transaction. On PostgreSQL (issue 27) it is one
statement that locks the task's row `FOR UPDATE SKIP LOCKED`, outside the store's writer lock:
a daemon asking for a task another is taking this instant is told "busy" at once, and none waits
behind an import holding the writer lock to learn that.
"""
from __future__ import annotations

import json

import apsw

from .connection import changed, dialect, immediate, rows

DDL = """
CREATE TABLE task_runs(
  task TEXT PRIMARY KEY,
  last_started TEXT,
  last_finished TEXT,
  status TEXT,                         -- 'ok' | 'error' | 'skipped' | 'waiting' (for a model service)
  counts TEXT NOT NULL DEFAULT '{}',
  error TEXT,
  cursor INTEGER NOT NULL DEFAULT 0,   -- highest node id a cursor-driven task has processed
  lease_owner TEXT,
  lease_until TEXT
);
"""

# The same tables on PostgreSQL (the baseline a PostgreSQL store starts from: store/migrations.py)
PG_DDL = """
CREATE TABLE task_runs(
  task TEXT PRIMARY KEY,
  last_started TEXT,
  last_finished TEXT,
  status TEXT,                         -- 'ok' | 'error' | 'skipped' | 'waiting' (for a model service)
  counts TEXT NOT NULL DEFAULT '{}',
  error TEXT,
  cursor BIGINT NOT NULL DEFAULT 0,   -- highest node id a cursor-driven task has processed
  lease_owner TEXT,
  lease_until TEXT
);
"""


ANY_FINISH = object()     # acquire's `if_finished` when the taker does not mind who ran the task last

_TAKEABLE = ("(lease_owner IS NULL OR lease_until IS NULL OR lease_until < ? OR lease_owner = ?)"
             " AND (? OR last_finished IS NOT DISTINCT FROM ?)")


def acquire(conn: apsw.Connection, task: str, owner: str, now: str, until: str,
            if_finished: str | None | object = ANY_FINISH) -> bool:
    """Take the task's lease when it is free or expired (or ours), and, given `if_finished`, only
    while the task's last finish is still that one (None: never finished)."""
    anyone = if_finished is ANY_FINISH
    seen = None if anyone else if_finished
    if dialect(conn) == "postgresql":
        conn.execute("INSERT INTO task_runs(task) VALUES(?) ON CONFLICT(task) DO NOTHING", (task,))
        return changed(conn, "UPDATE task_runs SET lease_owner=?, lease_until=?, last_started=? WHERE task ="
                             f" (SELECT task FROM task_runs WHERE task=? AND {_TAKEABLE} FOR UPDATE SKIP LOCKED)",
                             (owner, until, now, task, now, owner, anyone, seen)) == 1
    with immediate(conn):
        conn.execute("INSERT INTO task_runs(task) VALUES(?) ON CONFLICT(task) DO NOTHING", (task,))
        return changed(conn, f"UPDATE task_runs SET lease_owner=?, lease_until=?, last_started=? WHERE task=? AND {_TAKEABLE}",
                             (owner, until, now, task, now, owner, anyone, seen)) == 1


def latest_finish(conn: apsw.Connection) -> str | None:
    return conn.execute("SELECT max(last_finished) FROM task_runs").fetchone()[0]


def holder(conn: apsw.Connection, task: str) -> str | None:
    for (owner,) in conn.execute("SELECT lease_owner FROM task_runs WHERE task=?", (task,)):
        return owner
    return None


def take_over(conn: apsw.Connection, task: str, dead_owner: str, owner: str, now: str, until: str) -> bool:
    """Take a lease from a holder known to be dead; only if that holder still has it."""
    with immediate(conn):
        return changed(conn, "UPDATE task_runs SET lease_owner=?, lease_until=?, last_started=? WHERE task=? AND lease_owner=?",
                             (owner, until, now, task, dead_owner)) == 1


def renew(conn: apsw.Connection, task: str, owner: str, until: str) -> bool:
    """Extend a lease we still hold; False when it was lost (expired and taken by another process)."""
    with immediate(conn):
        return changed(conn, "UPDATE task_runs SET lease_until=? WHERE task=? AND lease_owner=?", (until, task, owner)) == 1


def release(conn: apsw.Connection, task: str, owner: str, now: str, status: str, counts: dict,
            error: str | None, finished: bool = True) -> None:
    """`finished=False` (a task waiting for a model service): its last finish stays, so it is due
    again as soon as the service's backoff allows, not an interval later."""
    with immediate(conn):
        conn.execute("UPDATE task_runs SET lease_owner=NULL, lease_until=NULL,"
                     " last_finished=CASE WHEN ? THEN ? ELSE last_finished END, status=?, counts=?,"
                     " error=? WHERE task=? AND lease_owner=?",
                     (finished, now, status, json.dumps(counts, sort_keys=True), error, task, owner))


def state(conn: apsw.Connection) -> dict[str, dict]:
    out = {}
    for r in rows(conn, "SELECT * FROM task_runs"):
        r["counts"] = json.loads(r["counts"] or "{}")
        out[r["task"]] = r
    return out


def get_cursor(conn: apsw.Connection, task: str) -> int:
    for (value,) in conn.execute("SELECT cursor FROM task_runs WHERE task=?", (task,)):
        return value
    return 0


def set_cursor(conn: apsw.Connection, task: str, value: int) -> None:
    conn.execute("INSERT INTO task_runs(task, cursor) VALUES(?, ?) ON CONFLICT(task) DO UPDATE SET cursor=excluded.cursor",
                 (task, value))
