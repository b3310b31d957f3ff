"""`tidemind restore BACKUP`: replace a store by a backup, even when the store will not open.

The usual reasons to restore are a damaged database or one a newer TideMind wrote, and neither
opens through `Memory.open` (migrations refuse the one, SQLite the other). So this works on the
files: the backup is checked first (readable, intact, a TideMind store, not newer than this
code), then copied into a side file, migrated and checked whole (`_validated_copy`), and nothing
changes until it passes. Then:

1. the current database is kept under backups/pre-restore-<time>/: through SQLite's backup API
   when it reads, else as raw files (database, -wal, -shm);
2. the backup is copied in with the backup API under the write lock (another process waits,
   then sees the restored store); a database too damaged to take it is replaced as a file;
3. the stream files are rebuilt from the restored captures under the stream lock (the replaced
   ones join the kept copy, so a digest acknowledged meanwhile keeps its text);
4. an older schema is migrated.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import apsw

from . import memory as _memory  # noqa: F401  (registers every owner's migrations)
from .config import Settings
from .errors import InvalidInput, StoreBusy
from .store import backup_to, captures, connect, fts, integrity, migrations, scalar, stream


def _check(source: Path) -> apsw.Connection:
    try:
        src = connect(source, readonly=True)
    except apsw.Error as exc:
        raise InvalidInput(f"cannot open {source} as a database: {exc}") from None
    try:
        intact = [r[0] for r in src.execute("PRAGMA integrity_check")] == ["ok"]
        is_store = scalar(src, "SELECT count(*) FROM sqlite_master WHERE name IN ('nodes', 'captures',"
                               " 'migrations')") == 3
    except apsw.Error as exc:
        src.close()
        raise InvalidInput(f"{source} is not a readable database: {exc}") from None
    problem = None if intact else f"{source} fails SQLite's integrity check; nothing was restored"
    if problem is None and not is_store:
        problem = f"{source} is not a TideMind store; nothing was restored"
    newer = migrations.unknown(src) if problem is None else []
    if newer:
        problem = f"{source} was written by a newer TideMind ({', '.join(newer[:3])}); upgrade before restoring it"
    if problem:
        src.close()
        raise InvalidInput(problem)
    return src


def _validated_copy(settings: Settings, src: apsw.Connection, source: Path, now: str) -> tuple[Path, apsw.Connection]:
    """A copy of the backup in a side file, migrated to this version and checked whole: schema
    exactly what this version makes (tables, columns, indexes, triggers, views: nothing extra),
    SQLite's integrity check, the full-text and vector indexes consistent, authored text equal to
    its hashes. Only a copy that passes replaces anything; else the side file goes and the store
    is as it was. (A backup with its migrations ledger emptied, missing tables, other columns, or
    a trigger copying every new memory elsewhere was swapped in before anything looked.)"""
    stamp = now.replace(":", "").replace("-", "").replace(".", "")
    side = settings.home / f"restore-check-{stamp}-{os.getpid()}.db"
    settings.home.mkdir(parents=True, exist_ok=True)
    problem = None
    conn = None
    try:
        backup_to(src, side)
        conn = connect(side, settings.busy_timeout_ms)
        try:
            migrations.migrate(conn)
        except apsw.Error as exc:
            problem = f"its schema does not migrate to this version's ({exc})"
        if problem is None:
            found = integrity.check(conn)[1]
            if found:
                more = f" and {len(found) - 1} more" if len(found) > 1 else ""
                problem = f"{found[0]}{more}"
    except BaseException:
        if conn is not None:
            conn.close()
        _remove(side)
        raise
    if problem:
        conn.close()
        _remove(side)
        raise InvalidInput(f"{source} is not a sound TideMind store ({problem}); nothing was restored")
    return side, conn


def _remove(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal", "-waiting"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _keep_dir(settings: Settings, now: str) -> Path:
    stamp = now.replace(":", "").replace("-", "").replace(".", "")
    keep = settings.home / "backups" / f"pre-restore-{stamp}"
    n = 0
    while True:                  # never reuse a folder: two restores in a row keep both stores
        try:
            keep.mkdir(parents=True)
            return keep
        except FileExistsError:
            n += 1
            keep = keep.with_name(f"pre-restore-{stamp}-{n}")


def _replace_file(db: Path, src: apsw.Connection, keep: Path) -> None:
    """Put a fresh copy of the backup where the database is. The old -wal/-shm would be applied
    to the new file, so they are moved aside (into `keep`) first, and moved back if the
    replacement fails."""
    db.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(f"{db}.restoring")
    fresh.unlink(missing_ok=True)
    backup_to(src, fresh)
    moved = []
    try:
        for suffix in ("-wal", "-shm"):
            side = Path(f"{db}{suffix}")
            if side.exists():
                os.replace(side, keep / f"tidemind.db{suffix}.aside")
                moved.append(suffix)
        os.replace(fresh, db)
    except OSError:
        for suffix in moved:
            os.replace(keep / f"tidemind.db{suffix}.aside", Path(f"{db}{suffix}"))
        fresh.unlink(missing_ok=True)
        raise


def restore(settings: Settings, path, now: str, live: apsw.Connection | None = None) -> dict:
    """`live`: an open connection to the store (a Memory's); else the files are opened here."""
    source = Path(path).expanduser().resolve()
    if settings.store_location.path is None:
        raise InvalidInput(f"the store {settings.store_location} is a database server: its own tools restore it"
                           " (pg_restore), or a backup file fills an empty database with `tidemind --store"
                           " BACKUP.db migrate --to <its URL>`")
    db = settings.db_path
    if not source.is_file():
        raise InvalidInput(f"no backup file at {source}")
    if source == db.resolve():
        raise InvalidInput("the backup to restore is the live database itself")
    checked = _check(source)
    try:
        side, src = _validated_copy(settings, checked, source, now)
    finally:
        checked.close()
    notes: list[str] = []
    own = live is None
    damaged = (apsw.CorruptError, apsw.NotADBError, apsw.ReadOnlyError)   # ReadOnly: a page-size change in WAL
    try:
        keep = _keep_dir(settings, now)
        if live is None and db.exists():
            try:
                live = connect(db, settings.busy_timeout_ms)
                live.execute("SELECT count(*) FROM sqlite_master").fetchall()
            except damaged as exc:
                notes.append(f"the current database does not open ({exc}); kept as raw files")
                if live is not None:
                    live.close()
                live = None
        kept = False
        if live is not None:
            try:
                backup_to(live, keep / "tidemind.db")
                kept = True
            except damaged as exc:
                notes.append(f"the current database could not be read ({exc}); kept as raw files")
        if not kept:
            for suffix in ("", "-wal", "-shm"):
                if Path(f"{db}{suffix}").exists():
                    shutil.copy2(f"{db}{suffix}", keep / f"tidemind.db{suffix}")
        copied = False
        if live is not None:
            try:
                with live.backup("main", src, "main") as job:
                    while not job.done:
                        job.step(256)
                copied = True
                fts.counts_replaced(live)       # what this connection kept of the old counts is gone
            except damaged as exc:
                if not own:       # a Memory's connection would go on reading the replaced file
                    raise InvalidInput(f"the open store could not take the backup ({exc}); close TideMind and run"
                                       " `tidemind restore` from the command line (it replaces the file)") from None
                notes.append(f"the current database could not take the backup ({exc}); replaced as a file")
        if not copied:
            if live is not None:
                live.close()
            live = None
            _replace_file(db, src, keep)
            live = connect(db, settings.busy_timeout_ms)
            own = True
    except (apsw.BusyError, apsw.LockedError):
        if own and live is not None:
            live.close()
        raise StoreBusy("the store stayed locked by another writer; nothing was restored (try again)") from None
    except BaseException:
        if own and live is not None:
            live.close()
        raise
    finally:
        src.close()
        _remove(side)
    try:
        # the stream first (its columns exist in every schema), so a failing migration leaves a
        # consistent store that the next open migrates
        written = stream.rebuild(settings.stream_dir, lambda: captures.for_stream(live), keep / "stream")
        applied = migrations.migrate(live)
    finally:
        if own:
            live.close()
    return {"restored": str(source), "kept_previous": str(keep), "migrated": applied, "stream_entries": written,
            "notes": notes}
