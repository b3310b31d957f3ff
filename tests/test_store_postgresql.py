"""The store modules' connection surface over PostgreSQL (issue 27): the helpers every table
module uses (`immediate`, `inserted`, `changed`, `rows`, `scalar`) run unchanged on a psycopg
connection, against the real server the suite starts (tests/pgserver.py)."""
from __future__ import annotations

import apsw
import pytest

from tidemind.store.connection import changed, immediate, inserted, rows, scalar
from tidemind.store.postgresql import Connection, to_psycopg

psycopg = pytest.importorskip("psycopg", reason="the test extra installs psycopg (pyproject.toml)")


def test_placeholders_become_psycopgs_outside_strings_names_and_comments():
    assert to_psycopg("SELECT * FROM t WHERE a = ? AND b LIKE 'x%?' AND c = ?") == \
        "SELECT * FROM t WHERE a = %s AND b LIKE 'x%%?' AND c = %s"
    assert to_psycopg('SELECT "odd?name", 5 % 2 FROM t -- why? \nWHERE x = ?') == \
        'SELECT "odd?name", 5 %% 2 FROM t -- why? \nWHERE x = %s'
    assert to_psycopg("SELECT 'it''s ?' /* a ? here */, ?") == "SELECT 'it''s ?' /* a ? here */, %s"


@pytest.fixture
def conn(postgres_database):
    c = Connection.connect(postgres_database)
    c.execute("CREATE TABLE notes(id bigserial PRIMARY KEY, scope text NOT NULL, body text NOT NULL)")
    yield c
    c.close()


def test_the_connection_helpers_run_unchanged(conn):
    with immediate(conn):
        first = inserted(conn, "INSERT INTO notes(scope, body) VALUES(?, ?)", ("personal", "50% done? yes"))
        second = inserted(conn, "INSERT INTO notes(scope, body) VALUES(?, ?)", ("work", "kiln"))
    assert second == first + 1 and not conn.in_transaction
    assert rows(conn, "SELECT id, body FROM notes WHERE scope = ?", ("personal",)) == [{"id": first, "body": "50% done? yes"}]
    assert scalar(conn, "SELECT count(*) FROM notes") == 2
    assert scalar(conn, "SELECT body FROM notes WHERE id = ?", (999,)) is None
    with immediate(conn):
        assert changed(conn, "UPDATE notes SET body = body || '!' WHERE scope IN (?, ?)", ("personal", "work")) == 2
        assert changed(conn, "DELETE FROM notes WHERE scope = ?", ("nowhere",)) == 0
    conn.executemany("INSERT INTO notes(scope, body) VALUES(?, ?)", [("a", "x"), ("b", "y"), ("c", "z")])
    assert conn.changes() == 3
    assert rows(conn, "UPDATE notes SET scope = scope WHERE false") == []        # no rows, no error
    assert conn.execute("SELECT 1 WHERE false").fetchone() is None


def test_a_failed_transaction_leaves_nothing_written(conn, postgres_database):
    with pytest.raises(RuntimeError):
        with immediate(conn):
            inserted(conn, "INSERT INTO notes(scope, body) VALUES(?, ?)", ("personal", "half-written"))
            raise RuntimeError("the stream file could not be written")
    assert not conn.in_transaction
    other = Connection.connect(postgres_database)          # what another process sees
    try:
        assert scalar(other, "SELECT count(*) FROM notes") == 0
    finally:
        other.close()
    with pytest.raises(apsw.ConstraintError, match="not-null"):          # (as SQLite says it)
        with immediate(conn):
            conn.execute("INSERT INTO notes(scope, body) VALUES(?, NULL)", ("personal",))
    assert not conn.in_transaction and scalar(conn, "SELECT count(*) FROM notes") == 0


def test_a_write_is_seen_by_another_connection_only_when_committed(conn, postgres_database):
    other = Connection.connect(postgres_database)
    try:
        with immediate(conn):
            inserted(conn, "INSERT INTO notes(scope, body) VALUES(?, ?)", ("personal", "pending"))
            assert scalar(other, "SELECT count(*) FROM notes") == 0
        assert scalar(other, "SELECT count(*) FROM notes") == 1
    finally:
        other.close()


def test_task_leases_on_postgresql_one_taker_among_many(postgres_database):
    """Several daemons on one database never run a task twice: eight connections take the same
    lease at once, exactly one gets it; it is renewed, released, taken over from a dead holder,
    with the SQL of store/task_runs.py unchanged."""
    import threading

    from tidemind.store import task_runs

    setup = Connection.connect(postgres_database)
    setup.execute(task_runs.DDL)
    takers = [Connection.connect(postgres_database) for _ in range(8)]
    start, won = threading.Barrier(len(takers)), []

    def take(n: int) -> None:
        start.wait()
        if task_runs.acquire(takers[n], "annotate", f"daemon-{n}", "2026-12-02T10:00:00Z", "2026-12-02T10:05:00Z"):
            won.append(n)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(len(takers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(won) == 1, won
        holder = f"daemon-{won[0]}"
        assert task_runs.holder(setup, "annotate") == holder
        assert task_runs.renew(setup, "annotate", holder, "2026-12-02T10:10:00Z")
        assert not task_runs.acquire(setup, "annotate", "late", "2026-12-02T10:06:00Z", "2026-12-02T10:11:00Z")
        assert task_runs.take_over(setup, "annotate", holder, "heir", "2026-12-02T10:07:00Z", "2026-12-02T10:12:00Z")
        task_runs.release(setup, "annotate", "heir", "2026-12-02T10:08:00Z", "ok", {"tagged": 3}, None)
        state = task_runs.state(setup)["annotate"]
        assert state["lease_owner"] is None and state["counts"] == {"tagged": 3} and state["status"] == "ok"
        assert task_runs.latest_finish(setup) == "2026-12-02T10:08:00Z"
        task_runs.set_cursor(setup, "link-propose", 41)
        task_runs.set_cursor(setup, "link-propose", 42)
        assert task_runs.get_cursor(setup, "link-propose") == 42 and task_runs.get_cursor(setup, "none") == 0
    finally:
        for c in (setup, *takers):
            c.close()


def test_a_lease_is_taken_beside_a_long_writer_and_a_row_being_taken_is_skipped(postgres_database):
    """Leases on a server store are `FOR UPDATE SKIP LOCKED`, outside the writer lock: a daemon
    takes a task while an import holds the writer lock (here with a lock timeout of ten minutes:
    waiting behind it would fail the test by its timeout, not by a margin), and a task another
    daemon is taking this instant is answered "busy" at once, not after the other commits."""
    from tidemind.store import task_runs

    setup, importer, daemon, other = (Connection.connect(postgres_database) for _ in range(4))
    try:
        setup.execute(task_runs.DDL)
        for c in (importer, daemon, other):
            c.setbusytimeout(600_000)
        importer.execute("BEGIN IMMEDIATE")                       # holds the store's writer lock
        assert task_runs.acquire(daemon, "embed", "daemon-a", "2026-12-03T10:00:00Z", "2026-12-03T10:03:00Z")
        other.execute("INSERT INTO task_runs(task) VALUES('annotate')")
        other.execute("BEGIN")
        other.execute("SELECT task FROM task_runs WHERE task = 'annotate' FOR UPDATE")   # mid-take
        assert not task_runs.acquire(daemon, "annotate", "daemon-a", "2026-12-03T10:00:00Z", "2026-12-03T10:03:00Z")
        other.execute("ROLLBACK")
        importer.execute("ROLLBACK")
        assert task_runs.acquire(daemon, "annotate", "daemon-a", "2026-12-03T10:00:00Z", "2026-12-03T10:03:00Z")
        # a task finished by someone else since the taker looked is not taken on that reading
        task_runs.release(daemon, "annotate", "daemon-a", "2026-12-03T10:01:00Z", "ok", {}, None)
        assert not task_runs.acquire(other, "annotate", "daemon-b", "2026-12-03T10:02:00Z", "2026-12-03T10:05:00Z",
                                     if_finished=None)
        assert task_runs.acquire(other, "annotate", "daemon-b", "2026-12-03T10:02:00Z", "2026-12-03T10:05:00Z",
                                 if_finished="2026-12-03T10:01:00Z")
    finally:
        for c in (setup, importer, daemon, other):
            c.close()


def test_every_table_sqlite_has_postgresql_has_with_the_same_columns(postgres_store, tmp_path):
    """A schema change made in SQLite's migrations and not in the PostgreSQL baseline's (or the
    other way round) fails here: the two stores hold the same tables and columns, but for the
    index column each backend's full-text search keeps."""
    from tidemind.memory import Memory
    from tidemind.store.connection import rows

    with Memory.open(tmp_path / "lite") as lite:
        lite.embed_pending()                  # (no vector index table yet on either side)
        sqlite_tables = {t: {c["name"] for c in rows(lite.conn, f'PRAGMA table_info("{t}")')}
                         for (t,) in lite.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql"
                                                       " NOT LIKE 'CREATE VIRTUAL%' AND name NOT LIKE 'nodes_fts%'"
                                                       " AND name NOT LIKE 'sqlite_%'")}
    with Memory.open(tmp_path / "server", store=postgres_store) as server:
        pg_tables: dict[str, set[str]] = {}
        for table, column in server.conn.execute("SELECT table_name, column_name FROM information_schema.columns"
                                                 " WHERE table_schema = current_schema()"):
            pg_tables.setdefault(table, set()).add(column)
    assert set(sqlite_tables) == set(pg_tables)
    only_sqlite = {"nodes": {"scope_key"}}            # FTS5's scope token
    only_pg = {"nodes": {"search_vector"}}            # the tsvector PostgreSQL searches
    for table in sqlite_tables:
        assert sqlite_tables[table] - only_sqlite.get(table, set()) == \
            pg_tables[table] - only_pg.get(table, set()), table


def test_a_memory_on_postgresql_is_there_for_the_next_process_and_a_backup_says_how(postgres_store, tmp_path):
    from tests.conftest import run_cli

    from tidemind.errors import InvalidInput
    from tidemind.memory import Memory

    with Memory.open(tmp_path / "a", store=postgres_store) as m:
        kept = m.digest("The glaze recipe: 60 feldspar, 20 silica, 20 whiting.", scope="studio")["node_ids"][0]
        assert m.stats()["db_bytes"] > 0
    # another machine's process: its own home, the same database
    proc = run_cli(tmp_path / "b", "--json", "--store", postgres_store, "recall", "glaze recipe feldspar",
                   "--scope", "studio")
    assert proc.returncode == 0, proc.stderr.decode()
    import json

    assert [i["id"] for i in json.loads(proc.stdout)["items"]][:1] == [kept]
    with Memory.open(tmp_path / "c", store=postgres_store) as m:
        with pytest.raises(InvalidInput, match="pg_dump"):
            m.backup(tmp_path / "copy.db")
        assert not (tmp_path / "copy.db").exists()


def test_another_machines_write_moves_data_version_and_what_a_reader_kept_is_read_again(postgres_store, tmp_path):
    """Issue 27: a desktop or server on another machine notices a commit (the desktop polls
    `data_version`), and the word frequencies a connection keeps between recalls are read again
    after it, as SQLite's data_version makes them; a connection's own recall moves nothing."""
    import time

    from tidemind.memory import Memory
    from tidemind.store import fts

    with Memory.open(tmp_path / "a", store=postgres_store) as a, Memory.open(tmp_path / "b", store=postgres_store) as b:
        a.digest("The glaze recipe: 60 feldspar, 20 silica, 20 whiting.", scope="studio")
        a.digest("The kiln fires to cone 6.", scope="studio")
        b.recall("glaze recipe", scopes=["studio"], record=True)
        seen = b.data_version()
        assert b.data_version() == seen                       # its own recall (and heat) moved nothing
        kept = fts.stem_frequencies(b.conn, ["glaze"], ["studio"])
        assert kept == ({"glaze": 1}, 2)
        for n in range(3):
            a.digest(f"Glaze test tile {n} came out crawling.", scope="studio")
        deadline = time.monotonic() + 60                      # (a condition, not a margin: a loaded machine)
        while b.data_version() == seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert b.data_version() != seen
        assert fts.stem_frequencies(b.conn, ["glaze"], ["studio"]) == ({"glaze": 4}, 5)


def test_the_bench_measures_a_server_store_beside_sqlite_in_one_run(postgres_store, tmp_path):
    """`tidemind --store postgresql://… bench`: the same corpus on both, one table; a store that
    holds anything is not filled with a bench's memories."""
    import json

    from tests.conftest import run_cli

    from tidemind.memory import Memory

    proc = run_cli(tmp_path / "home", "--json", "--store", postgres_store, "bench", "--nodes", "300", "--queries", "8",
                   "--digests", "8", "--no-mcp")
    assert proc.returncode == 0, proc.stderr.decode()
    runs = json.loads(proc.stdout)["side_by_side"]
    assert set(runs) == {"sqlite", "postgresql"}
    for run in runs.values():
        assert run["nodes"] == 300 and run["recall_ms"]["n"] == 8 and run["digest_ms"]["n"] == 8
        assert run["fts_floor_ms"]["n"] and run["vec_floor_ms"]["n"]
    # filled by copying the SQLite store (the default): the same memories under the same ids
    assert runs["postgresql"].get("filled_by_copy") and not runs["sqlite"].get("filled_by_copy")
    assert runs["postgresql"]["embedded"] == runs["sqlite"]["embedded"] == 300
    table = run_cli(tmp_path / "home", "--store", postgres_store, "bench", "--nodes", "50", "--no-mcp")
    assert table.returncode != 0 and b"not empty" in table.stderr            # (the first run filled it)
    with Memory.open(tmp_path / "home", store=postgres_store) as m:
        assert m.stats()["nodes"]["live"] == 300 + 8


def test_each_scope_has_its_own_vector_graph_and_a_scoped_search_reads_only_its_own(postgres_store, tmp_path):
    """The bit index on PostgreSQL is partitioned by scope, as sqlite-vec's is: one HNSW graph per
    scope (one graph over every scope, filtered while walked, read on past other scopes' rows:
    10.9 ms against 1.6 ms at 100,000 vectors). A search of one scope plans a scan of that
    scope's partition alone; a scope of any allowed characters gets its partition too."""
    from tidemind.memory import Memory
    from tidemind.store import vectors

    scopes = ["project:kiln", "project:glaze", "team@acme/infra+ops"]
    with Memory.open(tmp_path / "a", store=postgres_store) as m:
        for n in range(30):
            m.digest(f"Firing log {n}: cone {n % 10} reached at hour {n}.", scope=scopes[n % 3])
        m.embed_pending()
        index = f"vec_bits_{m.conn.execute('SELECT id FROM vector_indexes').fetchone()[0]}"
        partitions = {r[0] for r in m.conn.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c"
                                                   " ON c.oid = i.inhrelid WHERE i.inhparent = ?::regclass", (index,))}
        assert len(partitions) == 3 and all(vectors.is_index_table(p) for p in partitions)
        query = m.embedder.embed(["cone reached"])[0]
        plan = "\n".join(r[0] for r in m.conn.execute(
            f"EXPLAIN SELECT node_id FROM {index} WHERE scope IN (?) ORDER BY embedding <~> ?::bit({vectors.HASH_BITS})"
            " LIMIT 48", ("team@acme/infra+ops", vectors._bits(query))))
        touched = {p for p in partitions if p in plan}
        assert len(touched) == 1, plan                       # (a seq scan at this size: the planner's choice)
        for scope in scopes:
            found = vectors.knn_candidates(m.conn, query, [scope], m.embedder.name, 48)
            assert len(found) == 10
            assert {r[0] for r in m.conn.execute("SELECT scope FROM nodes WHERE id = ANY(?)", (found,))} == {scope}
        assert m.recall("cone reached hour", scopes=["team@acme/infra+ops"])["items"]
        assert m.doctor()["ok"]


def test_a_store_made_before_partitions_has_its_vector_index_partitioned_at_open(postgres_store, tmp_path):
    """Migration pg0002: a bit index made as one table (before the partitions) is rebuilt as one
    partition per scope at the next open, every row kept; recall finds the same memories."""
    from tidemind.memory import Memory

    with Memory.open(tmp_path / "a", store=postgres_store) as m:
        for n in range(12):
            m.digest(f"Harbour note {n}: crane {n} serviced on pier {n % 3}.", scope=f"port:{n % 2}")
        m.embed_pending()
        before = sorted(m.conn.execute("SELECT node_id, scope, embedding::text FROM vec_bits_1"))
        expected = [i["id"] for i in m.recall("crane serviced pier", scopes=["port:0"])["items"]]
        # the layout pg0001 made: one table, an HNSW graph over all of it, a scope index
        m.conn.execute("ALTER TABLE vec_bits_1 RENAME TO vec_bits_1_now")
        m.conn.execute("CREATE TABLE vec_bits_1(node_id BIGINT PRIMARY KEY, scope TEXT NOT NULL,"
                       " embedding bit(1024) NOT NULL)")
        m.conn.execute("INSERT INTO vec_bits_1 SELECT * FROM vec_bits_1_now")
        m.conn.execute("DROP TABLE vec_bits_1_now")
        m.conn.execute("CREATE INDEX vec_bits_1_hnsw ON vec_bits_1 USING hnsw (embedding bit_hamming_ops)")
        m.conn.execute("CREATE INDEX vec_bits_1_scope ON vec_bits_1(scope)")
        m.conn.execute("DELETE FROM migrations WHERE name = 'pg0002_vector_index_by_scope'")
    with Memory.open(tmp_path / "b", store=postgres_store) as m:
        assert m.conn.execute("SELECT relkind FROM pg_class WHERE relname = 'vec_bits_1'").fetchone()[0] == "p"
        assert sorted(m.conn.execute("SELECT node_id, scope, embedding::text FROM vec_bits_1")) == before
        assert [i["id"] for i in m.recall("crane serviced pier", scopes=["port:0"])["items"]] == expected
        m.digest("Harbour note 99: a new crane on pier 7.", scope="port:2")
        m.embed_pending()
        assert m.conn.execute("SELECT count(*) FROM vec_bits_1 WHERE scope = 'port:2'").fetchone()[0] == 1
        assert m.doctor()["ok"]


def test_a_new_scopes_partition_never_holds_up_a_search_of_another_scope(postgres_store, tmp_path):
    """Found by review: CREATE TABLE ... PARTITION OF locked the whole vector index against
    readers until the writer committed, so a search of scope a waited (and failed at its lock
    timeout) while another connection wrote scope b's first vector. The partition is now made
    apart and attached, which readers pass."""
    import numpy as np

    from tidemind.memory import Memory
    from tidemind.store import immediate, vectors

    with Memory.open(tmp_path / "a", store=postgres_store) as writer, \
            Memory.open(tmp_path / "b", store=postgres_store) as reader:
        writer.digest("The harbour crane lifts containers.", scope="port:a")
        writer.embed_pending()
        new = writer.digest("A first memory of scope b.", scope="port:b")["node_ids"][0]
        query = reader.embedder.embed(["harbour crane"])[0]
        reader.conn.setbusytimeout(2000)
        with immediate(writer.conn):                    # scope b's partition made, not yet committed
            vectors.put(writer.conn, new, "port:b", writer.embedder.name,
                        np.asarray(writer.embedder.embed(["A first memory of scope b."])[0]), writer.now())
            assert vectors.knn_candidates(reader.conn, query, ["port:a"], reader.embedder.name, 10)
        assert vectors.knn_candidates(reader.conn, query, ["port:b"], reader.embedder.name, 10) == [new]
