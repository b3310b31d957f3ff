"""Copying a store whole into another of either backend (`tidemind migrate --to`).

Every row of every table the two schemas share is copied with its id (the schemas hold the same
tables and columns: tests/test_store_postgresql.py keeps them so). What each backend keeps for
itself is rebuilt there instead of copied: the full-text index (FTS5's tables, PostgreSQL's
tsvector, both kept by their triggers as the rows arrive: fts.INDEX_COLUMNS) and the vector
indexes (vectors.copy_indexes, from the copied floats). Rows go in references-first order; a
column that references its own table (a node's successor, a synthesis's replacement) is filled
in a second pass. Ids keep their high-water mark where the target keeps one (PostgreSQL's identity
sequences; SQLite's AUTOINCREMENT tables), so a new row never takes the id of a row deleted
before the copy; SQLite's other tables hand out max(id) + 1, there as in any SQLite store.

The caller reads the source in one snapshot and writes the target in one transaction: `copy`
checks, before that transaction commits, that every table holds the source's rows (counted, and
hashed value by value) and that the authored text of nodes and captures hashes the same, and
raises otherwise, so a failed
or partial copy leaves the target as it was. The target must be empty: a copy never merges.
"""
from __future__ import annotations

import apsw

from graphlib import TopologicalSorter

from ..errors import InvalidInput, StorageError
from . import captures, fts, nodes, schema, vectors
from .connection import batches, stream_rows

LEDGER = "migrations"       # each store keeps its own ledger of the migrations its schema had
BATCH = 1000


def _kept_for_itself(table: str, column: str) -> bool:
    return (table, column) in fts.INDEX_COLUMNS


def plan(source, target) -> list[tuple[str, list[str], list[str]]]:
    """(table, columns to copy, columns referencing the table itself), in an order where no row
    is written before a row it references. Refused when the source has a table or column the
    target lacks (a store of another TideMind version: open both with this one first)."""
    ours = {t for t in schema.tables(source) if t != LEDGER and not vectors.is_index_table(t)}
    theirs = {t for t in schema.tables(target) if t != LEDGER and not vectors.is_index_table(t)}
    if ours - theirs:
        raise InvalidInput(f"the target has no table {', '.join(sorted(ours - theirs))}: it was made by another"
                           " version of TideMind")
    references = schema.references(target)
    graph = {t: {ref for table, _, ref in references if table == t and ref != t and ref in ours} for t in ours}
    out = []
    for table in TopologicalSorter(graph).static_order():
        target_columns = set(schema.columns(target, table))
        copied = [c for c in schema.columns(source, table) if not _kept_for_itself(table, c)]
        lost = [c for c in copied if c not in target_columns]
        if lost:
            raise InvalidInput(f"the target's {table} has no column {', '.join(lost)}: it was made by another"
                               " version of TideMind")
        own = [column for t, column, ref in references if t == table and ref == table]
        out.append((table, copied, own))
    return out


def not_empty(target) -> list[str]:
    """The target's tables that already hold rows (a copy is refused into them)."""
    return [t for t in schema.tables(target) if t != LEDGER and not vectors.is_index_table(t)
            and target.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone()]


def _count(conn, table: str) -> int:
    return conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]


# Why a target may refuse rows its source holds, where the two backends' rules differ
REFUSED_HINTS = {
    "tags": (". SQLite tells tag names apart by the case of letters beyond ASCII ('Über', 'über'); a"
             " PostgreSQL server whose collation folds them (a UTF-8 locale) holds them as one tag: rename"
             " one of the two (remove it from its memories and add the other) and copy again"),
}


def copy(source, target, progress=None) -> dict:
    """Copy `source` into the empty `target`, inside the caller's snapshot of the source and its
    transaction on the target. Returns the rows copied per table, the vectors indexed per
    embedder and the authored-text digests both stores share."""
    filled = not_empty(target)
    if filled:
        raise InvalidInput(f"the target store is not empty ({', '.join(filled[:5])} hold rows): a copy goes only"
                           " into an empty store, never merged into another")
    steps = plan(source, target)
    copied: dict[str, int] = {}
    for table, cols, own in steps:
        names = ", ".join(f'"{c}"' for c in cols)
        later = [cols.index(c) for c in own]
        insert = f'INSERT INTO "{table}"({names}) VALUES({", ".join("?" * len(cols))})'
        count = 0
        for chunk in batches(stream_rows(source, f'SELECT {names} FROM "{table}"'), BATCH):
            if later:
                chunk = [tuple(None if i in later else v for i, v in enumerate(row)) for row in chunk]
            try:
                target.executemany(insert, chunk)
            except apsw.ConstraintError as exc:
                raise InvalidInput(f"the target refused a row of {table} ({exc}); nothing was copied"
                                   + REFUSED_HINTS.get(table, "")) from None
            count += len(chunk)
        for column in own:
            key = schema.primary_key(source, table)
            sets = f'UPDATE "{table}" SET "{column}" = ? WHERE ' + " AND ".join(f'"{k}" = ?' for k in key)
            keys = ", ".join(f'"{k}"' for k in key)
            for chunk in batches(stream_rows(source, f'SELECT "{column}", {keys} FROM "{table}"'
                                                     f' WHERE "{column}" IS NOT NULL'), BATCH):
                target.executemany(sets, chunk)
        copied[table] = count
        if progress:
            progress(table, count)
    indexed = vectors.copy_indexes(source, target, BATCH)
    shared = {table for table, _, _ in steps}
    schema.raise_id_high_water(target, {t: n for t, n in schema.id_high_water(source).items() if t in shared})
    return {"rows": copied, "indexed": indexed, **verify(source, target, steps, copied)}


def _rows_digest(conn, table: str, cols: list[str]) -> str:
    """A digest of a table's rows that ignores their order (the two backends sort text by
    different collations): the sum of each row's sha256, with values written the same way
    whichever backend read them (a PostgreSQL boolean is SQLite's 0 or 1)."""
    import hashlib

    names = ", ".join(f'"{c}"' for c in cols)
    total = 0
    for row in stream_rows(conn, f'SELECT {names} FROM "{table}"'):
        text = "\x1f".join("\x00" if v is None else f"b{bytes(v).hex()}" if isinstance(v, (bytes, memoryview))
                           else repr(int(v) if isinstance(v, bool) else v) for v in row)
        total += int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(), "big")
    return f"{total % (1 << 256):064x}"


def verify(source, target, steps: list[tuple[str, list[str], list[str]]], copied: dict[str, int]) -> dict:
    """What makes the copy the same store, checked before the target's transaction commits: each
    table's rows, counted and hashed value by value on both sides (the source as its snapshot
    holds them), and the authored text's digests."""
    problems = []
    for table, cols, _ in steps:
        written = _count(target, table)
        if written != copied[table] or _count(source, table) != copied[table]:
            problems.append(f"{table}: {copied[table]} rows read, {written} written")
        elif _rows_digest(source, table, cols) != _rows_digest(target, table, cols):
            problems.append(f"{table}: the rows' values differ after the copy")
    digests = {}
    for name, module in (("nodes", nodes), ("captures", captures)):
        ours, theirs = module.authored_digest(source), module.authored_digest(target)
        if ours != theirs:
            problems.append(f"{name}: the authored text differs after the copy")
        digests[name] = ours
    if problems:
        raise StorageError("the copy is not the same store, so nothing was written: " + "; ".join(problems))
    return {"authored_sha256": digests}
