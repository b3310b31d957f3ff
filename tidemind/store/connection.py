"""The one way to open the database.

Every connection: WAL, a busy timeout, foreign keys on, secure_delete on (so `forget` leaves
no bytes in free pages), sqlite-vec loaded. `immediate(conn)` is the transaction to use
whenever a transaction reads and then writes: a deferred one fails with SQLITE_BUSY_SNAPSHOT
under concurrent writers and the busy timeout cannot help it (research/dependencies.md §4).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

import importlib.util
import os

import apsw

from ..errors import StoreBusy


def connect(path: Path | str, busy_timeout_ms: int = 10_000, readonly: bool = False) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    conn = apsw.Connection(str(path), flags=flags)
    conn.setbusytimeout(busy_timeout_ms)
    conn.enable_load_extension(True)
    conn.load_extension(_vec_extension())
    conn.enable_load_extension(False)
    if not readonly:
        _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchall())
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")   # durability of acknowledged digests comes from the fsync'd stream file
    conn.execute("PRAGMA secure_delete=ON")
    conn.execute("PRAGMA temp_store=MEMORY")
    return conn


def _vec_extension() -> str:
    """Path of sqlite-vec's loadable library, found without importing the `sqlite_vec` module
    (which imports numpy: ~100 ms that a hook starting on every prompt should not pay)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the sqlite-vec package is not installed")
    return os.path.normpath(os.path.join(spec.submodule_search_locations[0], "vec0"))


def _retry_busy(fn, attempts: int = 50):
    import time

    for i in range(attempts):
        try:
            return fn()
        except apsw.BusyError:
            if i == attempts - 1:
                raise StoreBusy("the database is locked by another process; try again") from None
            time.sleep(0.05)


# Writers take turns. SQLite's busy handler polls with growing sleeps (up to 100 ms), so a
# bulk writer that commits a chunk and begins the next at once wins the lock nearly every time:
# a probe writing every 0.2 s during an import waited up to 8.2 s although no chunk held the lock
# for more than 0.28 s. So a writer announces that it waits (a shared flock on `<db>-waiting`,
# held from before its BEGIN until the BEGIN returns), and a bulk writer, between its chunks,
# lets every announced writer through first (`yield_to_waiting_writers`).
WAITING_SUFFIX = "-waiting"


def _waiting_fd(conn: apsw.Connection) -> int | None:
    name = conn.filename
    if not name:                          # an in-memory database has no other writers
        return None
    try:
        return os.open(name + WAITING_SUFFIX, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:                       # a read-only folder: no turns to take, writes fail anyway
        return None


@contextlib.contextmanager
def _announced(conn: apsw.Connection) -> Iterator[None]:
    import fcntl

    fd = _waiting_fd(conn)
    if fd is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)    # blocks only for the instant a bulk writer looks
        yield
    finally:
        os.close(fd)                      # (closing releases the lock)


def yield_to_waiting_writers(conn: apsw.Connection, limit_s: float = 5.0) -> float:
    """Between the chunks of a long write: wait until no other writer is waiting to begin (each
    gets the lock before this one begins again). Bounded by `limit_s`, for a writer that waits
    on something else for longer. Returns the seconds waited."""
    import fcntl
    import time

    fd = _waiting_fd(conn)
    if fd is None:
        return 0.0
    start = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return time.monotonic() - start
            except BlockingIOError:
                if time.monotonic() - start > limit_s:
                    return time.monotonic() - start
                time.sleep(0.002)
    finally:
        os.close(fd)


@contextlib.contextmanager
def immediate(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception. Not re-entrant."""
    try:
        with _announced(conn):
            conn.execute("BEGIN IMMEDIATE")
    except apsw.BusyError:
        raise StoreBusy("the database stayed locked by another writer; try again") from None
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        try:
            conn.execute("COMMIT")
        except apsw.BusyError:
            conn.execute("ROLLBACK")
            raise StoreBusy("could not commit: the database is locked; nothing was written") from None


def rows(conn: apsw.Connection, sql: str, params=()) -> list[dict]:
    """Run a query and return rows as dicts (column name -> value)."""
    cur = conn.execute(sql, params)
    out = []
    try:
        names = [d[0] for d in cur.getdescription()]
    except apsw.ExecutionCompleteError:
        return out
    for row in cur:
        out.append(dict(zip(names, row)))
    return out


def scalar(conn: apsw.Connection, sql: str, params=()):
    for row in conn.execute(sql, params):
        return row[0]
    return None
