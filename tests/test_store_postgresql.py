"""The store modules' connection surface over PostgreSQL (issue 27): the helpers every table
module uses (`immediate`, `inserted`, `changed`, `rows`, `scalar`) run unchanged on a psycopg
connection, against the real server the suite starts (tests/pgserver.py)."""
from __future__ import annotations

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
    with pytest.raises(psycopg.errors.NotNullViolation):
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
