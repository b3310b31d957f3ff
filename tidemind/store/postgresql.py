"""PostgreSQL under the connection surface the store modules use (issue 27, the backend seam).

The table modules of `store/` talk to a connection through a few calls: `execute` (iterate,
`fetchall`, `fetchone`, `getdescription`), `executemany`, `changes`, `in_transaction`, `filename`,
`system_errno`, and `connection.immediate` for every read-then-write. This module gives a psycopg
connection that surface, so those helpers (`immediate`, `inserted`, `changed`, `rows`, `scalar`)
run unchanged on PostgreSQL:

- `?` placeholders become psycopg's `%s` (and a literal `%` becomes `%%`), outside quoted strings,
  quoted names and comments;
- `BEGIN IMMEDIATE` is SQLite's "take the write lock now"; PostgreSQL locks rows as they are
  written, and a read-then-write that must not race takes its rows `FOR UPDATE` in the table
  module's PostgreSQL text;
- the connection runs in autocommit mode, so a statement outside `immediate` stands alone, as it
  does in SQLite.

Not registered as a backend yet: the table modules still speak SQLite's dialect (`INSERT OR
IGNORE`, FTS5, sqlite-vec, `json_each`). They are taught PostgreSQL's family by family, and the
backend is registered once `Memory` runs on it whole.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

import apsw

# a single-quoted string, a double-quoted name, a line comment, a block comment, or the two
# characters that mean something to psycopg's format
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\?|%", re.DOTALL)


def to_psycopg(sql: str) -> str:
    """SQLite's `?` placeholders as psycopg's `%s`; a `%` of the SQL itself doubled."""
    def one(found: re.Match) -> str:
        token = found.group(0)
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        return token.replace("%", "%%") if token[0] in "'\"" else token
    return _TOKENS.sub(one, sql)


class Cursor:
    """The rows of one statement, read as the store modules read an apsw cursor."""

    def __init__(self, cursor):
        self._cursor = cursor

    def __iter__(self):
        if self._cursor.description is None:
            return iter(())
        return iter(self._cursor)

    def fetchall(self) -> list[tuple]:
        return [] if self._cursor.description is None else self._cursor.fetchall()

    def fetchone(self) -> tuple | None:
        return None if self._cursor.description is None else self._cursor.fetchone()

    def getdescription(self) -> list[tuple[str, object]]:
        if self._cursor.description is None:
            raise apsw.ExecutionCompleteError("the statement returned no rows")
        return [(column.name, column.type_code) for column in self._cursor.description]


class Connection:
    """A psycopg connection with the store modules' connection surface."""

    filename = ""          # no database file: no `-waiting` file to announce writers on
    system_errno = 0

    def __init__(self, connection):
        import psycopg

        if not isinstance(connection, psycopg.Connection):
            raise TypeError("a psycopg connection is needed")
        connection.autocommit = True
        self._pg = connection
        self._changes = 0

    @classmethod
    def connect(cls, conninfo: str) -> "Connection":
        import psycopg

        return cls(psycopg.connect(conninfo, autocommit=True))

    def execute(self, sql: str, params: Sequence = ()) -> Cursor:
        if sql.strip().upper() == "BEGIN IMMEDIATE":
            sql = "BEGIN"
        cursor = self._pg.execute(to_psycopg(sql), tuple(params))
        self._changes = max(cursor.rowcount, 0) if cursor.description is None else 0
        return Cursor(cursor)

    def executemany(self, sql: str, seq: Iterable[Sequence]) -> None:
        with self._pg.cursor() as cursor:
            cursor.executemany(to_psycopg(sql), [tuple(p) for p in seq])
            self._changes = max(cursor.rowcount, 0)

    def changes(self) -> int:
        """Rows the last INSERT, UPDATE or DELETE changed (apsw's `changes`)."""
        return self._changes

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self._pg.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self._pg.close()
