"""The one way to open the database.

Every connection: WAL, a busy timeout, foreign keys on, secure_delete on (so `forget` leaves
no bytes in free pages), sqlite-vec loaded. `immediate(conn)` is the transaction to use
whenever a transaction reads and then writes: a deferred one fails with SQLITE_BUSY_SNAPSHOT
under concurrent writers and the busy timeout cannot help it (research/dependencies.md §4).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterable, Iterator

import errno
import importlib.util
import itertools
import os

import apsw

from ..errors import StorageError, StoreBusy, describe_os_error

# What the disk says when it is full, read-only or not ours: one line naming the path and the errno
# (a traceback on the CLI, "Error executing tool" with no reason on MCP, before)
DISK_ERRORS = (apsw.FullError, apsw.ReadOnlyError, apsw.CantOpenError, apsw.IOError, apsw.PermissionsError)
DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG}


def storage_error(exc: BaseException, path, system_errno: int = 0) -> StorageError | None:
    """The StorageError to raise for `exc` met on the store at `path`, or None when it is not the
    disk's doing. SQLite reports the OS error apart (`system_errno`); SQLITE_FULL without one is
    the disk (or the page limit) being full."""
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, OSError):
        return StorageError(describe_os_error(exc, path)) if exc.errno in DISK_ERRNOS else None
    if not isinstance(exc, DISK_ERRORS):
        return None
    number = system_errno if system_errno in DISK_ERRNOS else 0
    if not number and isinstance(exc, apsw.FullError):
        number = errno.ENOSPC
    if not number:                 # read-only, cannot open, I/O: the disk's doing only if the folder refuses
        problem = unwritable(Path(path).parent)
        if problem is None:
            return None            # (e.g. a damaged file: its own error says more)
        number = problem.errno
    return StorageError(describe_os_error(OSError(number, os.strerror(number)), path))


def unwritable(folder: Path) -> OSError | None:
    """Why nothing can be written in `folder` (the OSError of trying), or None when something can."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".tidemind-probe-"):
            return None
    except OSError as exc:
        return OSError(exc.errno, exc.strerror, str(folder))     # (the folder, not the probe's random name)


PAGE_CACHE_KIB = 32 * 1024


def connect(path: Path | str, busy_timeout_ms: int = 10_000, readonly: bool = False) -> apsw.Connection:
    """A connection with TideMind's settings. `readonly` opens the file for reading only; when the
    folder cannot hold the WAL's shared-memory file (a read-only home, a read-only mount) SQLite
    cannot open a WAL database that way, and it is opened immutable: nothing can change it there."""
    if readonly:
        conn = _open_read_only(Path(path))
    else:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
    try:
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
        # SQLite's own default keeps 2 MB of pages: at 100,000 memories a recall then re-reads
        # most of its full-text and row pages from the OS (p50 24.1/19.8 ms against 21.8/18.7 with
        # 32 MB, two runs of 300 queries). Pages are cached only as they are read: a small store
        # never grows it.
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
    except DISK_ERRORS as exc:
        problem = storage_error(exc, path, conn.system_errno)
        conn.close()
        if problem is None:
            raise
        raise problem from None
    return conn


def _open_read_only(path: Path) -> apsw.Connection:
    from urllib.parse import quote

    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    uri = "file:" + quote(str(path.resolve()))
    wal = path.with_name(path.name + "-wal")
    last: BaseException | None = None
    for mode in ("?mode=ro", "?mode=ro&immutable=1"):
        if last is not None and wal.exists() and wal.stat().st_size:
            # immutable reads the main file alone: what the write-ahead log holds would be missing
            raise StorageError(f"{path} has changes in {wal.name} that can only be read where the folder can be"
                               f" written ({last})")
        conn = apsw.Connection(uri + mode, flags=flags)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
            return conn
        except (apsw.CantOpenError, apsw.ReadOnlyError) as exc:     # (no -shm, and none can be made here)
            number = conn.system_errno
            conn.close()
            last = storage_error(exc, path, number) or exc
    raise last


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
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception. Not re-entrant. A disk that
    refuses (full, read-only: the database's or the stream file's) ends it in a StorageError
    naming the path and the errno, after the rollback."""
    try:
        with _announced(conn):
            conn.execute("BEGIN IMMEDIATE")
    except apsw.BusyError:
        raise StoreBusy("the database stayed locked by another writer; try again") from None
    except DISK_ERRORS as exc:
        problem = storage_error(exc, conn.filename, conn.system_errno)
        if problem is None:
            raise
        raise problem from None
    try:
        yield conn
    except BaseException as exc:
        number = conn.system_errno
        _rollback(conn)
        problem = storage_error(exc, conn.filename, number) if isinstance(exc, (apsw.Error, OSError)) else None
        if problem is not None and problem is not exc:
            raise problem from None
        raise
    else:
        try:
            conn.execute("COMMIT")
        except apsw.BusyError:
            _rollback(conn)
            raise StoreBusy("could not commit: the database is locked; nothing was written") from None
        except DISK_ERRORS as exc:
            number = conn.system_errno
            _rollback(conn)
            problem = storage_error(exc, conn.filename, number)
            if problem is None:
                raise
            raise problem from None


@contextlib.contextmanager
def snapshot(conn) -> Iterator:
    """A read transaction: every query inside sees the store as it was at the first one, whatever
    other writers commit meanwhile (a copy of the whole store reads one moment of it)."""
    if dialect(conn) == "postgresql":
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    else:
        conn.execute("BEGIN")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()     # (SQLite's snapshot starts at a read)
    try:
        yield conn
    finally:
        _rollback(conn)


def checkpoint(conn) -> str | None:
    """Move what the write-ahead log holds into the database and empty it (after forget: the old
    text leaves the log). Returns what could not be done, in a sentence, or None."""
    if dialect(conn) != "sqlite":
        conn.execute("VACUUM nodes")      # dead row versions' space is reused; the server's log is its own
        return ("the database server's write-ahead log and archives keep the old rows until they are recycled;"
                " its administrator decides when")
    busy, wal_frames, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy or wal_frames != copied:
        return ("another process is reading the store, so the write-ahead log still holds old pages; they are"
                " overwritten at the next checkpoint")
    return None


def _rollback(conn: apsw.Connection) -> None:
    if conn.in_transaction:        # (SQLite may have rolled back already: a full disk can end the transaction)
        conn.execute("ROLLBACK")


def dialect(conn) -> str:
    """Which SQL the connection speaks: 'sqlite' (apsw) or 'postgresql' (store/postgresql.py).
    A table module whose SQL differs between them asks this, and holds both texts."""
    return getattr(conn, "dialect", "sqlite")


def stream_rows(conn, sql: str, params=()) -> Iterator[tuple]:
    """A query's rows as they are read, never the whole result in memory at once (a copy of a
    store of a million memories): apsw steps the statement; PostgreSQL reads through a
    server-side cursor, inside the transaction the caller opened."""
    if dialect(conn) == "postgresql":
        return conn.stream(sql, params)
    return iter(conn.execute(sql, params))


def authored_digest(conn, sql: str) -> str:
    """sha256 over (id, content, content_hash) rows in the order `sql` gives them, a NULL content
    (forgotten) told apart from an empty one: two stores whose digests match hold the same words
    under the same ids."""
    import hashlib

    digest = hashlib.sha256()
    for row_id, content, content_hash in stream_rows(conn, sql):
        digest.update(f"{row_id}\x00{content_hash}\x00".encode())
        digest.update(content.encode("utf-8") + b"\x01" if content is not None else b"\x02")
    return digest.hexdigest()


def batches(rows: Iterable, size: int) -> Iterator[list]:
    """`rows` in lists of at most `size`, read lazily."""
    rows = iter(rows)
    while chunk := list(itertools.islice(rows, size)):
        yield chunk


def data_version(conn) -> int:
    """A number that moves when another connection has committed a change to the store (what a
    connection keeps between reads is valid while it stands still): SQLite's PRAGMA
    data_version; a server's own signal (store/postgresql.Connection.data_version)."""
    if dialect(conn) == "sqlite":
        return next(iter(conn.execute("PRAGMA data_version")))[0]
    return conn.data_version()


def inserted(conn: apsw.Connection, sql: str, params=()) -> int:
    """Run one INSERT and return the new row's id. `RETURNING id` is SQL both SQLite (3.35+) and
    PostgreSQL speak, where `last_insert_rowid()` is SQLite's alone (the store seam, issue 27).
    The rows are read to the end, so the statement is finished when this returns."""
    found = conn.execute(f"{sql} RETURNING id", params).fetchall()
    return found[0][0]


def changed(conn: apsw.Connection, sql: str, params=()) -> int:
    """Run one INSERT, UPDATE or DELETE and return how many rows it changed (psycopg's rowcount,
    apsw's changes())."""
    conn.execute(sql, params)
    return conn.changes()


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
