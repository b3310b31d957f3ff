"""`tidemind migrate --to`: a store copied whole to PostgreSQL and back to a SQLite file (issue 27).

The copy must be the same memory: every table's rows with their ids, the vectors and their
indexes, the stream, what was corrected, archived, forgotten and rejected, and the same answers;
a target holding anything is refused, and a copy that fails leaves nothing behind."""
import json

import pytest

from tidemind.errors import InvalidInput, NotFound, StorageError
from tidemind.memory import Memory
from tidemind.metabolism.scheduler import run_due
from tidemind.store import captures, nodes, schema, transfer, vectors

from .conftest import StepClock, run_cli, stored_anywhere

SECRET = "the vault combination is 31-07-52"


def _lived_in(home) -> dict:
    """A store with a history: several scopes, a correction, an archive, a forget, a person's tag
    and a rejected one, embeddings, and a metabolism pass over it."""
    with Memory.open(home, clock=StepClock()) as m:
        said = [m.digest(text, scope=scope, session="s1")["node_ids"][0] for text, scope in (
            ("The kiln fires to cone 6 for the stoneware glazes.", "studio"),
            ("Glaze recipe: 60 feldspar, 20 silica, 20 whiting.", "studio"),
            ("The payments API listens on port 3000.", "project:shop"),
            ("Deploys go out on Tuesdays after the standup.", "project:shop"),
            (SECRET, "personal"),
            ("The old studio key is under the blue pot.", "studio"))]
        corrected = m.correct(said[2], "The payments API listens on port 8080.")["node_ids"][0]
        m.archive(said[5])
        m.forget(said[4])
        m.tag_add(said[0], "kiln")
        m.tag_reject_everywhere("glaze", "studio")
        m.embed_pending()
        run_due(m, force=True)
        return {"said": said, "corrected": corrected}


def _everything(conn) -> dict[str, int]:
    return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in schema.tables(conn)
            if t != transfer.LEDGER and not vectors.is_index_table(t)}


def test_a_store_goes_to_postgresql_and_back_the_same_memory(tmp_path, postgres_store):
    home = tmp_path / "home"
    story = _lived_in(home)
    with Memory.open(home) as m:
        before = _everything(m.conn)
        digests = (nodes.authored_digest(m.conn), captures.authored_digest(m.conn))
        r = m.migrate_to(postgres_store)
        expected = m.recall("payments API port", scopes=["project:shop"], record=False)["items"]
    assert r["rows"] == {t: n for t, n in before.items()} and r["recall"]["ok"], r["recall"]
    assert sum(r["indexed"].values()) > 0 and r["recall"]["queries"] >= 3
    with Memory.open(home, store=postgres_store) as pg:
        assert _everything(pg.conn) == before
        assert (nodes.authored_digest(pg.conn), captures.authored_digest(pg.conn)) == digests
        got = pg.recall("payments API port", scopes=["project:shop"], record=False)["items"]
        assert [i["id"] for i in got][:1] == [i["id"] for i in expected][:1] == [story["corrected"]]
        # what was corrected, archived, forgotten and rejected stays so
        assert [v["status"] for v in pg.show(story["corrected"], scopes=["project:shop"])["versions"]] == \
            ["superseded", "live"]
        with pytest.raises(NotFound):
            pg.show(story["said"][5], scopes=["studio"])
        assert stored_anywhere(pg.conn, "31-07-52") == []
        assert "glaze" not in {t["name"] for t in pg.tags_of(story["said"][1])}
        assert pg.doctor()["ok"], pg.doctor()["problems"]
        # another machine's home has no stream entry of these: a note there, not a problem
        with Memory.open(tmp_path / "laptop", store=postgres_store) as laptop:
            report = laptop.doctor()
        assert report["ok"] and any("another machine" in n for n in report["notes"]), report
        # a new memory never takes the id of one the store had
        newest = pg.conn.execute("SELECT max(id) FROM nodes").fetchone()[0]
        assert pg.digest("The shop closes at six on Sundays.", scope="studio")["node_ids"][0] > newest
    with Memory.open(home, store=postgres_store) as pg:
        back = pg.migrate_to(str(tmp_path / "back" / "store.db"))
    assert back["recall"]["ok"] and back["stream_entries"] == before["captures"] + 1
    with Memory.open(tmp_path / "back", store=str(tmp_path / "back" / "store.db")) as lite:
        assert lite.doctor()["ok"], lite.doctor()["problems"]
        assert schema.problems(lite.conn) == []
        assert stored_anywhere(lite.conn, "31-07-52") == []
        assert nodes.authored_digest(lite.conn) != digests[0]        # (it has the Sunday memory too)
        assert lite.recall("shop closes Sundays", scopes=["studio"], record=False)["items"]
    assert "31-07-52" not in "".join(p.read_text() for p in (tmp_path / "back" / "store-stream").glob("*.md"))


def test_a_copy_between_sqlite_files_answers_in_the_same_order(tmp_path):
    _lived_in(tmp_path / "home")
    with Memory.open(tmp_path / "home") as m:
        r = m.migrate_to(str(tmp_path / "copy.db"))
    assert r["recall"]["ok"] and r["recall"]["same_order"] == r["recall"]["queries"] >= 3
    assert r["recall"]["rule"] == "the same results in the same order"


def test_a_target_that_holds_anything_is_refused_and_left_as_it_was(tmp_path, postgres_store):
    _lived_in(tmp_path / "home")
    with Memory.open(tmp_path / "other", store=postgres_store) as pg:
        pg.digest("Someone else's memory.", scope="theirs")
        theirs = _everything(pg.conn)
    with Memory.open(tmp_path / "home") as m:
        with pytest.raises(InvalidInput, match="not empty"):
            m.migrate_to(postgres_store)
        with pytest.raises(InvalidInput, match="the store itself"):
            m.migrate_to(str(tmp_path / "home" / "tidemind.db"))
        stream_only = tmp_path / "x"
        (stream_only / "copy-stream").mkdir(parents=True)
        (stream_only / "copy-stream" / "2026-01-01.md").write_text("an entry of another store")
        with pytest.raises(InvalidInput, match="stream folder"):
            m.migrate_to(str(stream_only / "copy.db"))
        assert not (stream_only / "copy.db").exists()
    with Memory.open(tmp_path / "other", store=postgres_store) as pg:
        assert _everything(pg.conn) == theirs


def test_a_copy_that_fails_halfway_leaves_no_store_behind(tmp_path, postgres_store, monkeypatch):
    _lived_in(tmp_path / "home")

    def broken(source, target, batch):
        raise StorageError("the disk went away")

    monkeypatch.setattr(vectors, "copy_indexes", broken)       # after every table's rows were written
    with Memory.open(tmp_path / "home") as m:
        with pytest.raises(StorageError, match="disk went away"):
            m.migrate_to(postgres_store)
        with pytest.raises(StorageError, match="disk went away"):
            m.migrate_to(str(tmp_path / "new" / "copy.db"))
    assert list((tmp_path / "new").iterdir()) == []       # (no -wal, -shm or -waiting file either)
    with Memory.open(tmp_path / "other", store=postgres_store) as pg:
        assert not any(_everything(pg.conn).values())


def test_a_copy_whose_rows_do_not_add_up_is_not_committed(tmp_path, monkeypatch):
    _lived_in(tmp_path / "home")
    real = nodes.authored_digest
    calls = []

    def drifting(conn):
        calls.append(conn)
        return real(conn) + ("x" if len(calls) == 2 else "")    # the target's text reads differently

    monkeypatch.setattr(nodes, "authored_digest", drifting)
    with Memory.open(tmp_path / "home") as m:
        with pytest.raises(StorageError, match="authored text differs"):
            m.migrate_to(str(tmp_path / "copy.db"))
    assert not (tmp_path / "copy.db").exists()


def test_the_cli_copies_and_says_what_it_checked(tmp_path, postgres_store):
    _lived_in(tmp_path / "home")
    proc = run_cli(tmp_path / "home", "--json", "migrate", "--to", postgres_store)
    assert proc.returncode == 0, proc.stderr.decode()
    r = json.loads(proc.stdout)
    assert r["to"] == "postgresql://…" or "@" not in r["to"]          # (never the URL's credentials)
    assert r["rows"]["nodes"] > 0 and r["recall"]["ok"]
    again = run_cli(tmp_path / "home", "migrate", "--to", postgres_store)
    assert again.returncode != 0 and b"not empty" in again.stderr


def test_a_backup_file_fills_an_empty_server_store_and_restore_says_so(tmp_path, postgres_store):
    """A server store is not restored over (its server's tools do that); a backup file is a store
    like any other, copied whole into an empty database."""
    story = _lived_in(tmp_path / "home")
    with Memory.open(tmp_path / "home") as m:
        backup = m.backup(str(tmp_path / "saved.db"))["backup"]
    with Memory.open(tmp_path / "home", store=postgres_store) as pg:
        with pytest.raises(InvalidInput, match="pg_restore.*migrate --to"):
            pg.restore(backup)
    with Memory.open(tmp_path / "from-backup", store=backup) as saved:
        assert saved.migrate_to(postgres_store)["recall"]["ok"]
    with Memory.open(tmp_path / "home", store=postgres_store) as pg:
        assert pg.show(story["corrected"], scopes=["project:shop"])["content"] == "The payments API listens on port 8080."


def test_a_database_of_something_else_is_never_touched(tmp_path, postgres_database):
    """Found by review: the target was migrated before it was found not empty, so an application's
    own database got TideMind's tables, functions and a trigger on its tables; a SQLite file
    likewise. Nothing is made now, and the refusal names what is there."""
    import psycopg

    from tidemind.store.connection import connect

    _lived_in(tmp_path / "home")
    with psycopg.connect(postgres_database, autocommit=True) as app:
        app.execute("CREATE TABLE people(name TEXT)")
        app.execute("INSERT INTO people VALUES ('Ada')")
    url = "postgresql://postgres@/{}?host={}&port={}".format(*[
        dict(p.split("=", 1) for p in postgres_database.split())[k] for k in ("dbname", "host", "port")])
    other = tmp_path / "app.db"
    conn = connect(other)
    conn.execute("CREATE TABLE people(name TEXT)")
    conn.close()
    before = other.read_bytes()
    with Memory.open(tmp_path / "home") as m:
        for target in (url, str(other)):
            with pytest.raises(InvalidInput, match="tables of something else .*people"):
                m.migrate_to(target)
    assert other.read_bytes() == before
    with psycopg.connect(postgres_database, autocommit=True) as app:
        assert [t for (t,) in app.execute("SELECT table_name FROM information_schema.tables"
                                          " WHERE table_schema = 'public'")] == ["people"]
        assert app.execute("SELECT count(*) FROM pg_trigger WHERE tgname = 'tidemind_changed'").fetchone()[0] == 0
        assert app.execute("SELECT count(*) FROM pg_proc WHERE proname IN ('instr', 'group_concat')").fetchone()[0] == 0


def test_processes_opening_a_new_server_store_at_once_all_open_it(postgres_database):
    """Found by review: the migrations' ledger was made outside their lock, and the change triggers
    inside a snapshot taken before the lock: of three processes opening a new store at once, some
    failed."""
    import subprocess
    import sys

    from .conftest import ROOT

    params = dict(p.split("=", 1) for p in postgres_database.split())
    url = f"postgresql://postgres@/{params['dbname']}?host={params['host']}&port={params['port']}"
    opener = ("import sys, tempfile; from tidemind.memory import Memory;"
              " Memory.open(tempfile.mkdtemp(), store=sys.argv[1]).close()")
    procs = [subprocess.Popen([sys.executable, "-c", opener, url], cwd=ROOT, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors


def test_a_ledger_made_by_another_process_mid_check_is_never_read_as_something_else(postgres_database):
    """CI found it: the foreign-table check asked whether the ledger existed, then listed the
    tables; another process opening the same new store made its ledger in between, and this one
    refused the store as "holding tables of something else (migrations)". Here the other process
    makes the ledger right after the check's first statement, whatever that statement is."""
    import psycopg

    from tidemind.store.migrations import LEDGER
    from tidemind.store.postgresql import Connection, foreign_tables

    class LedgerAppearsAfterFirstStatement:
        def __init__(self, conn):
            self.conn, self.statements = conn, 0

        def execute(self, *args):
            result = self.conn.execute(*args)
            self.statements += 1
            if self.statements == 1:
                with psycopg.connect(postgres_database, autocommit=True) as other:
                    other.execute(LEDGER["postgresql"])
            return result

    conn = Connection.connect(postgres_database)
    try:
        checked = LedgerAppearsAfterFirstStatement(conn)
        assert foreign_tables(checked) == []
        assert checked.statements >= 1
        # and a database that does hold something else's tables is still refused
        conn.execute("CREATE TABLE people(name TEXT)")
        conn.execute("DROP TABLE migrations")
        assert foreign_tables(conn) == ["people"]
    finally:
        conn.close()


def test_tags_a_unicode_folding_server_holds_as_one_are_refused_in_one_sentence_and_nothing_is_copied(postgres, tmp_path):
    """Found by trying it: SQLite's NOCASE tells 'Über' from 'über' (ASCII case only); a PostgreSQL
    database with a UTF-8 collation (here the builtin C.UTF-8 provider, the default of many
    servers) folds them, and `migrate --to` stopped on a psycopg traceback half-way through the
    tags. Now the copy is refused in one sentence that says what to do, and the target keeps
    nothing."""
    import uuid

    import psycopg

    with Memory.open(tmp_path / "home") as m:
        a = m.digest("Notes on the Über design review.")["node_ids"][0]
        b = m.digest("über is the German word for over.")["node_ids"][0]
        m.tag_add(a, "Über")
        m.tag_add(b, "über")
    name = "u_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER builtin BUILTIN_LOCALE 'C.UTF-8'")
    params = dict(p.split("=", 1) for p in postgres.conninfo.split())
    url = f"postgresql://postgres@/{name}?host={params['host']}&port={params['port']}"
    try:
        proc = run_cli(tmp_path / "home", "migrate", "--to", url)
        err = proc.stderr.decode()
        assert proc.returncode == 1 and "Traceback" not in err, err
        assert "refused a row of tags" in err and "rename one of the two" in err and "nothing was copied" in err
        with psycopg.connect(url) as target:
            assert target.execute("SELECT count(*) FROM nodes").fetchone()[0] == 0
            assert target.execute("SELECT count(*) FROM tags").fetchone()[0] == 0
        with Memory.open(tmp_path / "home") as m:                   # the source as it was
            assert {t["name"] for t in m.show(a)["tags"]} == {"Über"} and {t["name"] for t in m.show(b)["tags"]} == {"über"}
    finally:
        with psycopg.connect(postgres.conninfo, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
