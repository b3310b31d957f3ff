"""The store seam (issue 27): one setting names where the store is, a registry of backends opens
it. SQLite is the default and the only backend of this version; any other store is refused in one
line before anything is created, and its password is never echoed."""
import json
from pathlib import Path

import pytest

from tidemind.config import load_settings
from tidemind.errors import InvalidInput, StorageError
from tidemind.memory import Memory
from tidemind.store import backend

from .conftest import run_cli


def test_the_default_store_is_the_homes_sqlite_file(home):
    location = load_settings(home).store_location
    assert (location.scheme, location.path) == ("sqlite", home.resolve() / "tidemind.db")


@pytest.mark.parametrize("written", ["elsewhere.db", "sqlite:///{tmp}/elsewhere.db", "{tmp}/elsewhere.db"])
def test_a_sqlite_store_anywhere_holds_the_memories(home, tmp_path, written):
    store = written.format(tmp=tmp_path)
    with Memory.open(home, store=store) as m:
        node = m.digest("The staging database listens on port 5433.")["node_ids"][0]
    expected = (home / "elsewhere.db") if written == "elsewhere.db" else tmp_path / "elsewhere.db"
    assert expected.resolve().is_file() and not (home / "tidemind.db").exists()
    with Memory.open(home, store=store) as m:                  # opened again: the same memory
        assert m.show(node)["content"] == "The staging database listens on port 5433."


def test_the_cli_the_environment_and_the_config_name_the_same_store(home, tmp_path, monkeypatch):
    target = tmp_path / "shared" / "memory.db"
    proc = run_cli(home, "--store", str(target), "--json", "digest", "Backups run nightly at 02:00.")
    assert proc.returncode == 0, proc.stderr.decode()
    assert target.is_file() and not (home / "tidemind.db").exists()
    monkeypatch.setenv("TIDEMIND_STORE", f"sqlite://{target}")
    assert load_settings(home).db_path == target
    monkeypatch.delenv("TIDEMIND_STORE")
    assert load_settings(home).db_path != target
    (home / "config.json").write_text(json.dumps({"store": str(target)}))
    with Memory.open(home) as m:
        assert [h["content"] for h in m.recall("nightly backups")["items"]][:1] == ["Backups run nightly at 02:00."]


@pytest.mark.parametrize("store, says, error", [
    ("mysql://tm:s3cret-pw@db.example/memory", "no backend for mysql://", InvalidInput),
    # a server that cannot be reached (nothing listens on port 1)
    ("postgresql://tm:s3cret-pw@127.0.0.1:1/memory", "cannot open the PostgreSQL store postgresql://127.0.0.1",
     StorageError),
    ("postgres://tm:s3cret-pw@127.0.0.1:1/memory", "cannot open the PostgreSQL store", StorageError),
    # unescaped, a password's '/' or '#' moved part of it into the port or the path of the message,
    # or ended in a traceback that quoted it (found by review)
    ("postgresql://admin:s3cret-pw/xyz@127.0.0.1:1/memory", "cannot open the PostgreSQL store", StorageError),
    ("postgresql://u:s3cret-pw#x@127.0.0.1:1/memory", "cannot open the PostgreSQL store", StorageError),
    ("postgresql://u:s3cret-pw@db[.example/memory", "cannot open the PostgreSQL store", StorageError),
    ("postgresql://u:s3cret-pw@127.0.0.1:1/memory?sslmode=s3cret-pw-mode", "cannot open the PostgreSQL store",
     StorageError),
    # a space in the password made libpq refuse the URL and quote its own reading of it, which
    # `urlsplit` read otherwise (a '[' it cannot parse; '/', '#', '?' cut the password short)
    *[(f"postgresql://alice:{pw}@127.0.0.1:1/memory", "cannot open the PostgreSQL store", StorageError)
      for pw in ("Pa[s3cret wd9", "pa/s3cret wd9", "pa#s3cret wd9", "pa?s3cret wd9", "pa]s3cret wd9",
                 "pa s3cret%wd9")],
    ("postgresql://alice:pas3cret\twd9@127.0.0.1:1/memory", "printable characters", InvalidInput),
])
def test_a_store_that_cannot_be_opened_is_refused_in_one_line_and_nothing_is_made(home, store, says, error):
    with pytest.raises(error, match=says) as caught:
        Memory.open(home, store=store)
    assert "s3cret" not in str(caught.value) and "wd9" not in str(caught.value)     # a password is never shown
    assert not home.exists()                                     # not even the home
    proc = run_cli(home, "--store", store, "stats", check_json=False)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and says in err and "s3cret" not in err and "wd9" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_backend_plugs_in_by_its_scheme(home, tmp_path):
    """A third backend registers its schemes and is what `Memory` opens (here one that keeps its
    SQLite file under another name, standing in for a server)."""
    opened = []

    class Elsewhere(backend.SQLiteBackend):
        schemes = ("elsewhere",)

        def open(self, location, busy_timeout_ms):
            opened.append(location.target)
            return super().open(backend.Location("sqlite", str(tmp_path / "served.db")), busy_timeout_ms)

    backend.register(Elsewhere())
    try:
        with Memory.open(home, store="elsewhere://box/memory") as m:
            m.digest("Served from elsewhere.")
        assert opened == ["elsewhere://box/memory"] and (tmp_path / "served.db").is_file()
        assert "elsewhere" in backend.schemes()
    finally:
        backend._BACKENDS.pop("elsewhere", None)


def test_a_store_setting_must_be_text(home):
    home.mkdir(parents=True)
    (home / "config.json").write_text(json.dumps({"store": 5}))
    with pytest.raises(InvalidInput, match="setting store must be text"):
        load_settings(home)


def test_inserted_ids_and_changed_rows_come_from_sql_both_backends_speak(mem):
    """`RETURNING id` and a changed-row count instead of SQLite's last_insert_rowid(): the
    statement is finished when `inserted` returns (the transaction commits), and the id is the
    row's own even when a trigger inserted other rows first (the FTS index of nodes)."""
    from tidemind.store import immediate
    from tidemind.store.connection import changed, inserted

    with immediate(mem.conn):
        first = inserted(mem.conn, "INSERT INTO tags(name) VALUES(?)", ("alpha",))
        second = inserted(mem.conn, "INSERT INTO tags(name) VALUES(?)", ("beta",))
        assert changed(mem.conn, "UPDATE tags SET name = upper(name) WHERE id IN (?, ?)", (first, second)) == 2
        assert changed(mem.conn, "DELETE FROM tags WHERE name = ?", ("nothing",)) == 0
    assert second == first + 1
    assert dict(mem.conn.execute("SELECT id, name FROM tags WHERE id IN (?, ?)", (first, second))) == \
        {first: "ALPHA", second: "BETA"}
    node = mem.digest("The staging database listens on port 5433.")["node_ids"][0]
    assert mem.show(node)["content"] == "The staging database listens on port 5433."


def test_a_hook_never_hands_the_model_a_store_password(home):
    """The session-start hook puts a store's error into the model's context: without the password."""
    home.mkdir(parents=True)
    (home / "config.json").write_text(json.dumps({"store": "postgresql://admin:s3cret-pw/xyz@db.example/memory"}))
    proc = run_cli(home, "hook", "session-start", "--host", "claude-code", stdin=b"{}", check_json=False)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert "s3cret" not in out and "Traceback" not in out, out


def test_paths_are_read_as_people_write_them_and_the_stream_goes_with_the_store(home, tmp_path):
    """Found by review: `--store ./x.db` landed in the home (a backup to ./x.db landed in the
    current folder), sqlite:///~/x.db and sqlite:///C:/x.db were read as other paths, installed
    hooks and services never learnt the store, and two homes on one store kept two streams."""
    from tidemind.store.backend import locate

    assert locate("sqlite:///~/tm.db", home).path == Path("~/tm.db").expanduser().resolve()
    assert str(locate("sqlite:///C:/data/tm.db", home).path).endswith("C:/data/tm.db")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "--store", "./here.db", "--json",
                           "digest", "Backups run nightly at 02:00."], capture_output=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (tmp_path / "here.db").is_file() and (tmp_path / "here-stream").is_dir()
    assert not (home / "tidemind.db").exists() and not (home / "stream").exists()
    other_home = tmp_path / "other-home"
    proc = run_cli(other_home, "--store", str(tmp_path / "here.db"), "--json", "doctor")
    assert proc.returncode == 0 and json.loads(proc.stdout)["checks"]["stream"] == "ok"      # one stream
    for command in (["install-hooks", "--host", "claude-code", "--dry-run"], ["daemon", "install-service"]):
        proc = run_cli(home, "--store", str(tmp_path / "here.db"), *command, check_json=False)
        assert proc.returncode == 1 and "set `store` in the home's config.toml" in proc.stderr.decode()
