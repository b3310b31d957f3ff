"""Named migrations, recorded in a table, in sets per owner.

Each owner (the core store, later an importer) registers an ordered list of (name, sql); `sql`
may instead be a function of the connection, for a migration that must compute rows (a backfill
by Python code), which runs in the same transaction as its ledger entry.
`migrate` applies the missing ones in one BEGIN IMMEDIATE transaction per migration and,
when the database already held data, backs the file up first.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import apsw

from .connection import dialect, immediate, scalar

Migration = tuple[str, "str | Callable[[apsw.Connection], None]"]
# dialect -> owner -> migrations. A PostgreSQL store starts from a baseline (the schema the SQLite
# migrations have reached when PostgreSQL came in) instead of replaying SQLite's history, so each
# owner registers one list per dialect; a later change of schema is a migration in both lists.
_REGISTRY: dict[str, dict[str, list[Migration]]] = {"sqlite": {}, "postgresql": {}}

LEDGER = {"sqlite": """
CREATE TABLE IF NOT EXISTS migrations(
  owner TEXT NOT NULL,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  PRIMARY KEY(owner, name)
);
""", "postgresql": """
CREATE TABLE IF NOT EXISTS migrations(
  owner TEXT NOT NULL,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL DEFAULT (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  PRIMARY KEY(owner, name)
);
"""}
# any constant: the key of the advisory lock PostgreSQL migrations take, so two processes opening
# a new database at once do not both create its tables
_PG_MIGRATION_LOCK = 0x7446_6D69


def register(owner: str, migrations: list[Migration], postgresql: list[Migration] | None = None) -> None:
    """`postgresql`: the owner's migrations for a PostgreSQL store (its baseline first)."""
    _REGISTRY["sqlite"][owner] = list(migrations)
    if postgresql is not None:
        _REGISTRY["postgresql"][owner] = list(postgresql)


def unregister(owner: str) -> None:
    """Forget an owner's migrations in every dialect (an owner that was registered for a while)."""
    for owners in _REGISTRY.values():
        owners.pop(owner, None)


def registered(conn) -> dict[str, list[Migration]]:
    """Owner → migrations, for this connection's dialect."""
    return dict(_REGISTRY[dialect(conn)])


def _has_ledger(conn) -> bool:
    if dialect(conn) == "postgresql":
        return bool(scalar(conn, "SELECT to_regclass('migrations') IS NOT NULL"))
    return bool(scalar(conn, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='migrations'"))


def without_schema(conn) -> list[str]:
    """Owners with tables in SQLite that have no schema for this connection's dialect yet."""
    return sorted(set(_REGISTRY["sqlite"]) - set(_REGISTRY[dialect(conn)]))


def pending(conn: apsw.Connection, create: bool = True) -> list[tuple[str, str, object]]:
    """The registered migrations this database has not had (`create`: make the ledger when it
    has none; a read-only connection reads it only)."""
    if create:
        if dialect(conn) == "postgresql" and not _has_ledger(conn):
            # two processes opening a new store at once: one makes the ledger, the other waits
            with immediate(conn):
                conn.execute("SELECT pg_advisory_xact_lock(?)", (_PG_MIGRATION_LOCK,))
                conn.execute(LEDGER["postgresql"])
        else:
            conn.execute(LEDGER[dialect(conn)])
        done = {(o, n) for o, n in conn.execute("SELECT owner, name FROM migrations")}
    elif _has_ledger(conn):
        done = {(o, n) for o, n in conn.execute("SELECT owner, name FROM migrations")}
    else:
        done = set()
    return [(owner, name, sql) for owner, items in _REGISTRY[dialect(conn)].items()
            for name, sql in items if (owner, name) not in done]


def unknown(conn: apsw.Connection) -> list[str]:
    """Migrations recorded in this database that this code does not know: it was written by a
    newer TideMind (owners this process has not registered are not judged)."""
    if not _has_ledger(conn):
        return []
    registry = _REGISTRY[dialect(conn)]
    known = {(o, n) for o, items in registry.items() for n, _ in items}
    return [f"{o}/{n}" for o, n in conn.execute("SELECT owner, name FROM migrations")
            if o in registry and (o, n) not in known]


def migrate(conn: apsw.Connection, backup: Callable[[Path], None] | None = None,
            backup_dir: Path | None = None) -> list[str]:
    todo = pending(conn)
    if not todo:
        return []
    had_data = scalar(conn, "SELECT count(*) FROM migrations") > 0
    if had_data and backup is not None and backup_dir is not None:
        backup_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        backup(backup_dir / f"pre-migrate-{stamp}.db")
    applied = []
    for owner, name, sql in todo:
        with immediate(conn):
            if dialect(conn) == "postgresql":
                conn.execute("SELECT pg_advisory_xact_lock(?)", (_PG_MIGRATION_LOCK,))
            # another process may have applied it while we waited for the lock
            if scalar(conn, "SELECT 1 FROM migrations WHERE owner=? AND name=?", (owner, name)):
                continue
            if callable(sql):
                sql(conn)
            else:
                conn.execute(sql)
            conn.execute("INSERT INTO migrations(owner, name) VALUES(?, ?)", (owner, name))
        applied.append(f"{owner}/{name}")
    return applied
