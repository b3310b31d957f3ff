"""What a store's schema must be: exactly what this version's migrations make, nothing extra.

A database file is code as well as data: a trigger or a view inside it runs on every write of
whoever opens it. A backup carrying `CREATE TRIGGER … AFTER INSERT ON nodes … INSERT INTO
shadow` was restored and then copied every later memory where `forget` never looked. So a
store's objects are compared with a reference: an empty database migrated by this code, with
one vector index made the way `vectors.ensure_index` makes them (those tables exist once per
embedder). Tables are compared by their columns (an older store migrated forward may spell the
same columns in another order of ALTERs); indexes, triggers and views by their SQL.
`restore` refuses a backup that differs; `doctor` reports a live store that differs.
"""
from __future__ import annotations

import functools
import re

import apsw

from . import migrations, vectors
from .connection import connect, dialect

_REFERENCE_INDEX = "vec_bits_1"


def _normal_sql(sql: str | None) -> str | None:
    return None if sql is None else re.sub(r"\s+", " ", sql).strip().rstrip(";")


def _objects(conn: apsw.Connection) -> dict[tuple[str, str], object]:
    """(type, name) → what must match: a table's columns, another object's SQL. SQLite's own
    bookkeeping tables (sqlite_stat1 after ANALYZE, sqlite_sequence) come and go with use."""
    found: dict[tuple[str, str], object] = {}
    for kind, name, table, sql in list(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")):
        if name.startswith("sqlite_") and kind == "table":
            continue
        if kind == "table" and not (sql or "").upper().startswith("CREATE VIRTUAL TABLE"):
            columns = tuple(sorted((r[1], (r[2] or "").upper(), r[3], r[5])
                                   for r in conn.execute(f'PRAGMA table_xinfo("{name}")')))
            found[(kind, name)] = (table, (columns, _table_parts(sql)))
        else:
            found[(kind, name)] = (table, _normal_sql(sql))
    return found


def _table_parts(sql: str | None) -> frozenset[str]:
    """A CREATE TABLE's column definitions and constraints as a set: CHECKs, DEFAULTs, foreign
    keys and collations count (a backup whose `nodes` CHECK forbade 'forgotten' passed a check of
    column names and types, and then no memory could be forgotten), while the order ALTER TABLE
    ADD COLUMN appended them in does not (an older store migrated forward)."""
    sql = re.sub(r"--[^\n]*", " ", sql or "")       # comments (a migration's notes) first: they hold quotes
    start, end = sql.find("("), sql.rfind(")")
    if start < 0 or end < start:
        return frozenset({_normal_sql(sql) or ""})
    parts, depth, current, quote = [], 0, [], None
    for ch in sql[start + 1:end]:
        if quote:
            current.append(ch)
            quote = None if ch == quote else quote
            continue
        if ch in "'\"`[":
            quote = "]" if ch == "[" else ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    parts.append(sql[end + 1:])                      # WITHOUT ROWID, STRICT
    return frozenset(p for p in (_normal_sql(part) for part in parts) if p)


@functools.lru_cache(maxsize=1)
def _reference() -> tuple[dict[tuple[str, str], object], dict[tuple[str, str], object]]:
    """(fixed objects, objects of one vector index named vec_bits_1)."""
    conn = connect(":memory:")
    try:
        migrations.migrate(conn)
        before = _objects(conn)
        vectors.ensure_index(conn, "schema-reference", vectors.HASH_BITS)
        per_index = {key: value for key, value in _objects(conn).items() if key not in before}
    finally:
        conn.close()
    return before, per_index


def _renamed(value: object, index: str) -> object:
    table, rest = value
    rest = rest.replace(_REFERENCE_INDEX, index) if isinstance(rest, str) else rest
    return table.replace(_REFERENCE_INDEX, index), rest


def problems(conn: apsw.Connection) -> list[str]:
    """What differs between this store's schema and the one this code makes, one line each;
    empty when they are the same. Call it on a migrated store."""
    fixed, per_index = _reference()
    expected = dict(fixed)
    indexes = [f"vec_bits_{i}" for (i,) in conn.execute("SELECT id FROM vector_indexes")] \
        if ("table", "vector_indexes") in _objects_names(conn) else []
    for index in indexes:
        for (kind, name), value in per_index.items():
            expected[(kind, name.replace(_REFERENCE_INDEX, index))] = _renamed(value, index)
    found = _objects(conn)
    out = []
    for key in sorted(set(found) - set(expected)):
        out.append(f"schema: unexpected {key[0]} {key[1]!r}")
    for key in sorted(set(expected) - set(found)):
        out.append(f"schema: missing {key[0]} {key[1]!r}")
    for key in sorted(set(expected) & set(found)):
        if expected[key] != found[key]:
            out.append(f"schema: {key[0]} {key[1]!r} differs from what this version makes")
    return out


def _objects_names(conn: apsw.Connection) -> set[tuple[str, str]]:
    return {(k, n) for k, n in conn.execute("SELECT type, name FROM sqlite_master")}


def own_tables(conn) -> set[str]:
    """The tables this version's migrations make for this connection's dialect."""
    return set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", "".join(
        sql for items in migrations.registered(conn).values() for _, sql in items if isinstance(sql, str))))


def missing_tables(conn) -> list[str]:
    """On a backend other than SQLite: the tables this version's baseline makes that the database
    lacks (what the checks after this one read)."""
    expected = own_tables(conn)
    found = {name for (name,) in conn.execute("SELECT table_name FROM information_schema.tables"
                                              " WHERE table_schema = current_schema()")}
    return [f"schema: missing table {name!r}" for name in sorted(expected - found)]


# -- The catalogue, read the same way on either backend (store/transfer.py copies by it) ---------------
def tables(conn) -> list[str]:
    """The store's tables that hold rows of its own: no SQLite bookkeeping, and no virtual table or
    the tables it keeps underneath (full-text and vector index internals are rebuilt, not copied)."""
    if dialect(conn) == "postgresql":
        return sorted(name for (name,) in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            " AND table_type = 'BASE TABLE'"))
    found = list(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    virtual = [name for name, sql in found if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")]
    return sorted(name for name, sql in found if name not in virtual and not name.startswith("sqlite_")
                  and not any(name.startswith(f"{v}_") for v in virtual))


def columns(conn, table: str) -> list[str]:
    """A table's stored columns, in order (a generated column is computed, never written)."""
    if dialect(conn) == "postgresql":
        return [name for (name,) in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = ? AND is_generated = 'NEVER' ORDER BY ordinal_position", (table,))]
    return [r[1] for r in conn.execute(f'PRAGMA table_xinfo("{table}")') if r[6] == 0]


def primary_key(conn, table: str) -> list[str]:
    if dialect(conn) == "postgresql":
        return [name for (name,) in conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
            " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = CAST(? AS regclass) AND i.indisprimary"
            " ORDER BY array_position(i.indkey, a.attnum)", (table,))]
    return [r[1] for r in sorted((r for r in conn.execute(f'PRAGMA table_info("{table}")') if r[5]),
                                 key=lambda r: r[5])]


def references(conn) -> list[tuple[str, str, str]]:
    """Every foreign key as (table, column, referenced table)."""
    if dialect(conn) == "postgresql":
        return [tuple(r) for r in conn.execute(
            "SELECT t.relname, a.attname, r.relname FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid"
            " JOIN pg_class r ON r.oid = c.confrelid JOIN pg_namespace s ON s.oid = c.connamespace"
            " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]"
            " WHERE c.contype = 'f' AND s.nspname = current_schema()")]
    return [(table, r[3], r[2]) for table in tables(conn) for r in conn.execute(f'PRAGMA foreign_key_list("{table}")')]


def _identity_columns(conn) -> list[tuple[str, str]]:
    """PostgreSQL: (table, column) of each identity column (the ids a sequence hands out)."""
    return list(conn.execute("SELECT table_name, column_name FROM information_schema.columns"
                             " WHERE table_schema = current_schema() AND is_identity = 'YES'"))


def id_high_water(conn) -> dict[str, int]:
    """The highest id each table has ever handed out, where the store remembers more than the
    rows it still has (SQLite's AUTOINCREMENT, PostgreSQL's identity sequences): a copy that
    forgot it would hand a deleted row's id to a new one."""
    if dialect(conn) == "postgresql":
        marks = {}
        for table, column in _identity_columns(conn):
            last = conn.execute("SELECT pg_sequence_last_value(CAST(pg_get_serial_sequence(?, ?) AS regclass))",
                                (table, column)).fetchone()[0]
            if last:
                marks[table] = int(last)
        return marks
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        return {}
    return {name: int(seq) for name, seq in conn.execute("SELECT name, seq FROM sqlite_sequence")}


def raise_id_high_water(conn, marks: dict[str, int]) -> None:
    """After rows were written with their ids: the next id of each table is above both its rows
    and `marks` (id_high_water of the store they came from)."""
    if dialect(conn) == "postgresql":
        for table, column in _identity_columns(conn):
            top = max(marks.get(table, 0), conn.execute(f'SELECT coalesce(max("{column}"), 0) FROM "{table}"'
                                                        ).fetchone()[0])
            conn.execute("SELECT setval(CAST(pg_get_serial_sequence(?, ?) AS regclass), ?, ?)",
                         (table, column, max(top, 1), top > 0))
        return
    autoincrement = {name for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
                     if "AUTOINCREMENT" in (sql or "").upper()}
    for table in sorted(autoincrement & set(marks)):
        if conn.execute("SELECT 1 FROM sqlite_sequence WHERE name = ?", (table,)).fetchone():
            conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (marks[table], table))
        else:
            conn.execute("INSERT INTO sqlite_sequence(name, seq) VALUES(?, ?)", (table, marks[table]))
