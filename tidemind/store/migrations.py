"""Named migrations, recorded in a table, in sets per owner.

Each owner (the core store, later an importer) registers an ordered list of (name, sql); `sql`
may instead be a function of the connection, for a migration that must compute rows (a backfill
by Python code), which runs in the same transaction as its ledger entry.
`migrate` applies the missing ones in one BEGIN IMMEDIATE transaction per migration and,
when the database already held data, backs the file up first.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import apsw

from .connection import immediate, scalar

Migration = tuple[str, "str | Callable[[apsw.Connection], None]"]
_REGISTRY: dict[str, list[Migration]] = {}

LEDGER = """
CREATE TABLE IF NOT EXISTS migrations(
  owner TEXT NOT NULL,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  PRIMARY KEY(owner, name)
);
"""


def register(owner: str, migrations: list[Migration]) -> None:
    _REGISTRY[owner] = list(migrations)


def pending(conn: apsw.Connection, create: bool = True) -> list[tuple[str, str, object]]:
    """The registered migrations this database has not had (`create`: make the ledger when it
    has none; a read-only connection reads it only)."""
    if create:
        conn.execute(LEDGER)
        done = {(o, n) for o, n in conn.execute("SELECT owner, name FROM migrations")}
    elif scalar(conn, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='migrations'"):
        done = {(o, n) for o, n in conn.execute("SELECT owner, name FROM migrations")}
    else:
        done = set()
    return [(owner, name, sql) for owner, items in _REGISTRY.items()
            for name, sql in items if (owner, name) not in done]


def unknown(conn: apsw.Connection) -> list[str]:
    """Migrations recorded in this database that this code does not know: it was written by a
    newer TideMind (owners this process has not registered are not judged)."""
    if not scalar(conn, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='migrations'"):
        return []
    known = {(o, n) for o, items in _REGISTRY.items() for n, _ in items}
    return [f"{o}/{n}" for o, n in conn.execute("SELECT owner, name FROM migrations")
            if o in _REGISTRY and (o, n) not in known]


def migrate(conn: apsw.Connection, backup: Callable[[Path], None] | None = None,
            backup_dir: Path | None = None) -> list[str]:
    todo = pending(conn)
    if not todo:
        return []
    had_data = scalar(conn, "SELECT count(*) FROM migrations") > 0
    if had_data and backup is not None and backup_dir is not None:
        backup_dir.mkdir(parents=True, exist_ok=True)
        stamp = scalar(conn, "SELECT strftime('%Y%m%dT%H%M%S','now')")
        backup(backup_dir / f"pre-migrate-{stamp}.db")
    applied = []
    for owner, name, sql in todo:
        with immediate(conn):
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
