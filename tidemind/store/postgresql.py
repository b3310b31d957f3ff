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

The schema is each table module's `PG_DDL`, applied as one baseline migration per owner
(store/migrations.py); `COMPAT_DDL` below gives PostgreSQL the few SQLite functions the table
modules' SQL calls, so a statement that differs only by a function name is written once.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import re
from typing import Iterable, Iterator, Mapping, Sequence

import apsw

from ..errors import InvalidInput, StorageError
from . import vectors
from .connection import immediate, scalar

WRITER_LOCK = 0x7446_7772        # the advisory lock every write transaction holds (Connection._begin_writing)
_STREAMS = itertools.count(1)     # names of server-side cursors, unique per process

# a single-quoted string, a double-quoted name, a line comment, a block comment, or the two
# characters that mean something to psycopg's format
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\?|%|(?<!:):[A-Za-z_]\w*",
                     re.DOTALL)


def to_psycopg(sql: str) -> str:
    """SQLite's `?` and `:name` placeholders as psycopg's `%s` and `%(name)s`; a `%` of the SQL
    itself doubled."""
    def one(found: re.Match) -> str:
        token = found.group(0)
        if token == "?":
            return "%s"
        if token[0] == ":":
            return f"%({token[1:]})s"
        if token == "%":
            return "%%"
        return token.replace("%", "%%") if token[0] in "'\"" else token
    return _TOKENS.sub(one, sql)


# SQLite's functions under their SQLite names, where PostgreSQL has the same thing by another name
COMPAT_DDL = """
CREATE FUNCTION instr(haystack text, needle text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN strpos(haystack, needle);
CREATE FUNCTION group_concat_step(acc text, value anyelement, sep text) RETURNS text LANGUAGE sql IMMUTABLE
  AS 'SELECT CASE WHEN value IS NULL THEN acc WHEN acc IS NULL THEN value::text ELSE acc || sep || value::text END';
CREATE FUNCTION group_concat_step(acc text, value anyelement) RETURNS text LANGUAGE sql IMMUTABLE
  AS 'SELECT group_concat_step(acc, value, '','')';
CREATE AGGREGATE group_concat(anyelement, text) (SFUNC = group_concat_step, STYPE = text);
CREATE AGGREGATE group_concat(anyelement) (SFUNC = group_concat_step, STYPE = text);
-- the lists of ids the SQL walks (a synthesis's members): SQLite's json_each's `value` column
CREATE FUNCTION json_each(doc text) RETURNS TABLE(value bigint) LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS 'SELECT e::bigint FROM jsonb_array_elements_text(doc::jsonb) AS e';
CREATE FUNCTION json_extract(doc text, path text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN (doc::jsonb) #>> string_to_array(substr(path, 3), '.');
"""

_CROSS_JOIN_ON = re.compile(r"\bCROSS JOIN\b(?=[^;]*?\bON\b)", re.IGNORECASE)


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

    dialect = "postgresql"
    filename = ""          # no database file: no `-waiting` file to announce writers on
    system_errno = 0

    def __init__(self, connection):
        import psycopg

        if not isinstance(connection, psycopg.Connection):
            raise TypeError("a psycopg connection is needed")
        connection.autocommit = True
        connection.adapters.register_loader("numeric", _number_loader())
        for kind, dumper in _loose_dumpers().items():
            connection.adapters.register_dumper(kind, dumper)
        self._pg = connection
        self._changes = 0
        self._heard = 0          # change notices received (data_version)
        connection.add_notify_handler(self._notice)

    @classmethod
    def connect(cls, conninfo: str) -> "Connection":
        import psycopg

        return cls(psycopg.connect(conninfo, autocommit=True))

    def execute(self, sql: str, params: Sequence = ()) -> Cursor:
        if sql.strip().upper() == "BEGIN IMMEDIATE":
            return self._begin_writing()
        if sql.strip().upper() == "BEGIN":
            # SQLite's deferred transaction reads one snapshot throughout (PostgreSQL's default,
            # READ COMMITTED, would take a new one per statement)
            sql = "BEGIN ISOLATION LEVEL REPEATABLE READ"
        # SQLite reads `CROSS JOIN ... ON` as an inner join whose order the planner keeps; in
        # PostgreSQL a CROSS JOIN takes no ON, and its planner orders joins itself
        sql = _CROSS_JOIN_ON.sub("JOIN", sql)
        params = dict(params) if isinstance(params, Mapping) else tuple(params)
        with _busy_as_sqlite():
            # without parameters the text goes as it is (a script of several statements: DDL)
            cursor = self._pg.execute(to_psycopg(sql), params) if params else self._pg.execute(sql)
        self._changes = max(cursor.rowcount, 0) if cursor.description is None else 0
        return Cursor(cursor)

    def _begin_writing(self) -> Cursor:
        """SQLite's BEGIN IMMEDIATE: a write transaction that holds the store's one writer lock
        from its start (a transaction-level advisory lock), waiting for it no longer than the
        lock timeout. Writers on a server queue as SQLite's do, so two of them never deadlock
        half-way through (a concurrent import and desktop archived the same memory in opposite
        orders: PostgreSQL aborted one); readers never wait for them."""
        with _busy_as_sqlite():
            self._pg.execute("BEGIN")
            try:
                cursor = self._pg.execute(f"SELECT pg_advisory_xact_lock({WRITER_LOCK})")
            except BaseException:
                self._pg.execute("ROLLBACK")
                raise
        return Cursor(cursor)

    def executemany(self, sql: str, seq: Iterable[Sequence]) -> None:
        with self._pg.cursor() as cursor, _busy_as_sqlite():
            cursor.executemany(to_psycopg(sql), [tuple(p) for p in seq])
            self._changes = max(cursor.rowcount, 0)

    def stream(self, sql: str, params: Sequence = (), size: int = 2000) -> Iterator[tuple]:
        """A query's rows read `size` at a time through a server-side cursor, so a table of a
        million rows is never held whole in memory (inside a transaction the caller opened).
        Declared by hand: psycopg's named cursors pass the batch size as a parameter, which the
        loose integer dumper this connection needs sends as text, and FETCH wants a literal."""
        name = f"tidemind_stream_{next(_STREAMS)}"
        own = not self.in_transaction           # (outside one, a transaction of its own for the cursor)
        with _busy_as_sqlite():
            if own:
                self._pg.execute("BEGIN READ ONLY")
            # (parameters always, even none: to_psycopg doubled each literal '%', which only a
            # statement with parameters reads back as one)
            self._pg.execute(f"DECLARE {name} NO SCROLL CURSOR FOR {to_psycopg(sql)}", tuple(params))
        try:
            while True:
                with _busy_as_sqlite():
                    batch = self._pg.execute(f"FETCH FORWARD {int(size)} FROM {name}").fetchall()
                if not batch:
                    return
                yield from batch
        finally:
            if self.in_transaction:
                with contextlib.suppress(Exception):
                    self._pg.execute("ROLLBACK" if own else f"CLOSE {name}")

    def _notice(self, notify) -> None:
        if notify.pid != self._pg.info.backend_pid:      # (as SQLite's: another connection's commits)
            self._heard += 1

    def listen_for_changes(self) -> None:
        self._pg.execute(f"LISTEN {CHANGES_CHANNEL}")

    def data_version(self) -> int:
        """SQLite's PRAGMA data_version for a server: a number that moves once another connection
        (here or on another machine) has committed a change. PostgreSQL delivers a NOTIFY only
        after the writer's commit, so a reader that sees the number move reads the new rows. The
        notices that reached the socket are read without a round trip (a recall asks five times);
        one still on its way is read at the next look, a few milliseconds later at most."""
        if not self.in_transaction:
            conn = self._pg.pgconn
            conn.consume_input()
            while (notice := conn.notifies()) is not None:
                if notice.be_pid != conn.backend_pid:
                    self._heard += 1
        return self._heard

    def setbusytimeout(self, milliseconds: int) -> None:
        """How long a statement waits for another writer's locks (SQLite's busy timeout)."""
        self.execute(f"SET lock_timeout = {int(milliseconds)}")

    def changes(self) -> int:
        """Rows the last INSERT, UPDATE or DELETE changed (apsw's `changes`)."""
        return self._changes

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self._pg.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self._pg.close()


@contextlib.contextmanager
def _busy_as_sqlite():
    """Another writer held the rows too long (lock_timeout), or two writers deadlocked: raised as
    SQLite's BusyError, which every caller already answers ("the store is busy; try again")."""
    import psycopg

    try:
        yield
    except (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected,
            psycopg.errors.SerializationFailure) as exc:
        raise apsw.BusyError(_first_line(exc)) from exc
    except psycopg.errors.IntegrityError as exc:
        # a unique key, a reference, a CHECK: SQLite's ConstraintError, which callers answer
        raise apsw.ConstraintError(_first_line(exc)) from None
    except psycopg.DataError as exc:
        # a value PostgreSQL cannot hold (a NUL in text, a number out of range): the caller's
        # input, said in one line; the transaction around it rolls back as for any refusal
        raise InvalidInput(f"the database server refused a value: {_first_line(exc)}") from None


@functools.lru_cache(maxsize=1)
def _loose_dumpers() -> dict:
    """Whole numbers (and booleans, as SQLite stores them: 1 and 0) sent untyped, so PostgreSQL
    reads each as what its place in the statement needs, as SQLite does: `text_column = ?` with
    an id compares text (a JSON field), `LIMIT ?` takes a bigint. psycopg would send int8, and
    `text = bigint` is an error."""
    from psycopg.adapt import Dumper

    class LooseInt(Dumper):
        oid = 0

        def dump(self, obj) -> bytes:
            return str(int(obj)).encode()
    return {int: LooseInt, bool: LooseInt}


@functools.lru_cache(maxsize=1)
def _number_loader():
    from psycopg.adapt import Loader

    class NumberLoader(Loader):
        """numeric as SQLite gives it: sum() and avg() of integers are numeric in PostgreSQL, and
        the store modules count with them (an int when whole, else a float; never Decimal)."""

        def load(self, data) -> int | float:
            text = bytes(data).decode()
            try:
                return int(text)
            except ValueError:
                return float(text)
    return NumberLoader



class PostgreSQLBackend:
    """A PostgreSQL database (15 or newer, with pgvector) named by a postgresql:// URL. Several
    machines' daemons, desktops and servers may share it; its backups are the server's own
    (pg_dump), and `tidemind migrate` copies a store between backends."""
    schemes = ("postgresql",)

    def open(self, location, busy_timeout_ms: int) -> Connection:
        from . import migrations

        conn = self._connect(location, busy_timeout_ms)
        try:
            if not scalar(conn, "SELECT 1 FROM pg_extension WHERE extname = 'vector'"):
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except Exception as exc:
                    raise InvalidInput(f"store {location} needs the pgvector extension, and this user cannot create"
                                       f" it ({_first_line(exc)}); a database owner can: CREATE EXTENSION vector"
                                       ) from None
            foreign = foreign_tables(conn)
            if foreign:
                raise InvalidInput(f"store {location} holds tables of something else ({', '.join(foreign[:5])}):"
                                   " give TideMind a database (or schema) of its own")
            newer = migrations.unknown(conn)
            if newer:
                raise InvalidInput(f"store {location} was written by a newer TideMind ({', '.join(newer[:3])});"
                                   " upgrade TideMind to open it")
            missing = migrations.without_schema(conn)
            if missing:
                raise InvalidInput(f"store {location}: this version has no PostgreSQL tables yet for"
                                   f" {', '.join(missing)}")
            migrations.migrate(conn)
            ensure_change_signal(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def open_read_only(self, location, busy_timeout_ms: int, why: str):
        raise StorageError(f"{why}; the store {location} is a database server, which is not read through the home")

    def size(self, conn, location) -> int:
        return scalar(conn, "SELECT pg_database_size(current_database())")

    def open_reader(self, location, busy_timeout_ms: int, read_only: bool) -> Connection:
        return self._connect(location, busy_timeout_ms)

    def backup(self, conn, target) -> None:
        raise InvalidInput("a PostgreSQL store is backed up by the server (pg_dump), or copied whole to a SQLite"
                           " file with `tidemind migrate --to FILE`")

    @staticmethod
    def _connect(location, busy_timeout_ms: int) -> Connection:
        try:
            import psycopg
        except ImportError:
            raise InvalidInput(f"store {location} is a PostgreSQL database: install TideMind's postgresql extra"
                               " (pip install 'tidemind[postgresql]')") from None
        try:
            conn = Connection.connect(location.target)
        except psycopg.Error as exc:
            raise StorageError(f"cannot open the PostgreSQL store {location}: {_without_secret(_first_line(exc), location.target)}"
                               ) from None
        # a writer waits for another's row locks as long as SQLite's busy timeout lets it
        conn.execute(f"SET lock_timeout = {int(busy_timeout_ms)}")
        # a KNN confined to some scopes reads on through the HNSW graph until it has k rows
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.listen_for_changes()
        return conn


# The change signal (Connection.data_version): a statement-level trigger on each table sends one
# notice per writing transaction (PostgreSQL folds a transaction's identical notices into one) and
# delivers it after the commit. A search's record of its own hits changes nothing anyone caches.
CHANGES_CHANNEL = "tidemind_changes"
CHANGES_DDL = f"""
CREATE OR REPLACE FUNCTION tidemind_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('{CHANGES_CHANNEL}', '');
  RETURN NULL;
END $$;
"""
QUIET_TABLES = ("recall_hits", "migrations")


def ensure_change_signal(conn: Connection) -> None:
    """Every table tells of its changes (tables a later migration or a new embedder's index add
    included): the triggers missing are made, under the migrations' lock."""
    from .migrations import _PG_MIGRATION_LOCK

    quiet = ", ".join(f"'{t}'" for t in QUIET_TABLES)
    missing_sql = ("SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace"
                   f" WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
                   f" AND c.relname NOT IN ({quiet})"
                   " AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid"
                   " AND t.tgname = 'tidemind_changed')")
    from .schema import own_tables

    ours = own_tables(conn)
    if not [t for (t,) in conn.execute(missing_sql).fetchall() if t in ours or vectors.is_index_table(t)]:
        return
    # (the writer lock's transaction reads what committed before it got the lock: a process that
    # made the triggers while this one waited is seen, and OR REPLACE covers the rest)
    with immediate(conn):
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_PG_MIGRATION_LOCK,))
        conn.execute(CHANGES_DDL)
        for (table,) in conn.execute(missing_sql).fetchall():
            if table in ours or vectors.is_index_table(table):
                conn.execute(f'CREATE OR REPLACE TRIGGER tidemind_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE'
                             f' ON "{table}" FOR EACH STATEMENT EXECUTE FUNCTION tidemind_changed()')


def foreign_tables(conn) -> list[str]:
    """Tables of something else in a database without TideMind's ledger (a store URL naming an
    application's database): TideMind must not add its tables, functions and triggers there."""
    # One listing, one snapshot: asking first whether the ledger exists and then listing raced
    # another process making the ledger in between, and its ledger was read as something else's.
    # TideMind makes its ledger before any other table, so a listing holding it is ours.
    names = [t for (t,) in conn.execute("SELECT table_name FROM information_schema.tables"
                                        " WHERE table_schema = current_schema() ORDER BY table_name")]
    return [] if "migrations" in names else names


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _without_secret(message: str, url: str) -> str:
    """An error message with the URL's password (and the URL itself) taken out: libpq quotes a
    connection string it cannot parse."""
    from urllib.parse import urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    message = message.replace(url, "<the store URL>")
    if password:
        message = message.replace(password, "***")
    rest = url.partition("://")[2].rsplit("@", 1)[0] if "@" in url else ""
    message = message.replace(rest, "***") if rest else message
    # libpq quotes what it could not read of the URL in its own reading, which may hold the
    # password cut where urlsplit would not cut it ('unexpected spaces found in "ss wd9@host"'):
    # nothing quoted is shown (the host is named before the message)
    return re.sub(r'"[^"]*"?', '"…"', message)
