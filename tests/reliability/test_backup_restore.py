"""Backup and restore round trip; bad restores change nothing; a store made by an older
TideMind (commit abd9679, see tests/fixtures/old_store) opens, migrates and keeps everything."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tidemind.errors import InvalidInput, NotFound
from tidemind.importers.engine import sync
from tidemind.memory import Memory
from tidemind.metabolism.scheduler import run_due
from tidemind.store import connect, stream

from ..conftest import cli_json, run_cli

OLD = Path(__file__).resolve().parent.parent / "fixtures" / "old_store"
TABLES = ("nodes", "node_versions", "captures", "tags", "node_tags", "links", "review_items", "derived", "syntheses",
          "audit_log", "node_vectors", "import_batches", "import_units", "migrations")


def state(m: Memory) -> dict:
    return {t: list(m.conn.execute(f"SELECT * FROM {t} ORDER BY 1")) for t in TABLES}


def _rich_store(home: Path, vault: Path) -> Memory:
    m = Memory.open(home)
    for i in range(30):
        m.digest(f"memory {i}: the harbour master logs {i} ships and a note about tides", scope="project:a",
                 session=f"s{i // 5}")
    old = m.digest("The ferry leaves at seven.", scope="project:a")["node_ids"][0]
    m.correct(old, "The ferry leaves at eight.")
    m.archive(m.digest("an archived scratch note", scope="project:a")["node_ids"][0])
    m.forget(m.digest("a secret that was forgotten: heliotrope", scope="project:a")["node_ids"][0])
    m.tag_add(old + 1, "ferries")
    vault.mkdir()
    (vault / "note.md").write_text("---\ntags: [sea]\n---\nThe lighthouse is painted red and white.\n")
    sync(m, "obsidian", vault, "vault:sea")
    m.embed_pending()
    run_due(m, force=True)
    return m


def test_backup_then_restore_brings_back_exactly_that_store(home, tmp_path):
    m = _rich_store(home, tmp_path / "vault")
    before = state(m)
    stream_before = {p.name: p.read_bytes() for p in (home / "stream").glob("*.md")}
    recall_before = [i["id"] for i in m.recall("harbour master ships", scopes=["project:a"], record=False)["items"]]
    backup = m.backup(tmp_path / "b.db")["backup"]
    later = m.digest("written after the backup: the quay was repaved", scope="project:a")["node_ids"][0]
    m.archive(1)
    m.close()

    r = cli_json(home, "restore", backup)
    assert r["doctor"]["ok"], r["doctor"]
    with Memory.open(home) as m2:
        assert state(m2) == before
        assert [i["id"] for i in m2.recall("harbour master ships", scopes=["project:a"], record=False)["items"]] \
            == recall_before
        with pytest.raises(NotFound):
            m2.show(later)
        assert m2.doctor()["ok"]
    # the stream was rebuilt entry for entry (same ids, keys and bodies)
    def bodies(files: dict[str, bytes]) -> dict:
        return {(e.capture_id, e.key): data[e.body_start:e.body_start + e.body_length]
                for data in files.values() for e in stream.parse(data)}

    rebuilt = bodies({p.name: p.read_bytes() for p in (home / "stream").glob("*.md")})
    assert rebuilt == bodies(stream_before)
    # the store that was replaced is kept, with what was written after the backup
    kept = Path(r["kept_previous"])
    with connect(kept / "tidemind.db", readonly=True) as c:
        assert c.execute("SELECT content FROM nodes WHERE id=?", (later,)).fetchone()[0].startswith("written after")


@pytest.mark.parametrize("kind", ["missing", "garbage", "foreign", "newer", "itself"])
def test_a_bad_restore_changes_nothing(home, tmp_path, kind):
    m = Memory.open(home)
    m.digest("a memory that must survive a failed restore", scope="project:a")
    before = state(m)
    target = tmp_path / "candidate.db"
    if kind == "garbage":
        target.write_bytes(b"this is not a database" * 100)
    elif kind == "foreign":
        c = connect(target)
        c.execute("CREATE TABLE recipes(name TEXT)")
        c.close()
    elif kind == "newer":
        m.backup(target)
        c = connect(target)
        c.execute("INSERT INTO migrations(owner, name) VALUES('core', '9999_from_the_future')")
        c.close()
    elif kind == "itself":
        target = home / "tidemind.db"
    with pytest.raises(InvalidInput) as err:
        m.restore(target)
    assert str(err.value) and "\n" not in str(err.value)
    assert state(m) == before
    assert not (home / "backups").exists() or not list((home / "backups").glob("pre-restore-*"))
    m.close()
    proc = run_cli(home, "restore", str(target))
    assert proc.returncode == 1 and len(proc.stderr.decode().strip().splitlines()) == 1


def _load_old_store(home: Path) -> None:
    home.mkdir(parents=True)
    conn = connect(home / "tidemind.db")
    conn.execute("PRAGMA foreign_keys=OFF")          # a dump creates tables in name order
    conn.execute(gzip.decompress((OLD / "store.sql.gz").read_bytes()).decode("utf-8"))
    conn.close()
    shutil.copytree(OLD / "stream", home / "stream")


def test_a_store_from_an_older_schema_migrates_and_keeps_everything(home):
    expected = json.loads((OLD / "expected.json").read_text())
    _load_old_store(home)
    with connect(home / "tidemind.db", readonly=True) as c:
        applied = [f"{o}/{n}" for o, n in c.execute("SELECT owner, name FROM migrations ORDER BY rowid")]
    assert applied == expected["migrations"]                       # really the old schema
    with Memory.open(home) as m:
        now_applied = {f"{o}/{n}" for o, n in m.conn.execute("SELECT owner, name FROM migrations")}
        assert now_applied > set(applied) and "core/0014_derived_history" in now_applied
        assert list((home / "backups").glob("pre-migrate-*.db"))    # backed up before migrating
        ids = expected["ids"]
        for node_id, content in expected["contents"].items():
            row = m.conn.execute("SELECT content FROM nodes WHERE id=?", (int(node_id),)).fetchone()
            assert row[0] == content
        assert m.show(ids["new"])["content"] == "The deploy window is Thursday morning."
        with pytest.raises(NotFound, match="corrected"):
            m.show(ids["old"])
        with pytest.raises(NotFound, match="archived"):
            m.show(ids["archived"])
        with pytest.raises(NotFound, match="forgotten"):
            m.show(ids["forgotten"])
        assert {t["name"]: t["status"] for t in m.tags_of(ids["fact"])}.get("postgres") == "rejected_by_user"
        hit = m.recall("staging database port", scopes=["project:shop"], record=False)
        assert hit["items"] and hit["items"][0]["id"] == ids["fact"]
        assert m.recall("deploy window", scopes=["project:shop"], record=False)["items"][0]["id"] == ids["new"]
        assert m.doctor()["ok"], m.doctor()
        # the new code writes into it and runs every pass over it
        m.digest("a memory written after the upgrade", scope="project:shop")
        m.embed_pending()
        run_due(m, force=True)
        assert m.doctor()["ok"]


def test_two_restores_in_the_same_instant_keep_both_replaced_stores(home, tmp_path):
    import datetime as dt

    frozen = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)
    m = Memory.open(home, clock=lambda: frozen)
    m.digest("first state", scope="project:a")
    first = m.backup(tmp_path / "first.db")["backup"]
    m.digest("second state", scope="project:a")
    kept = [m.restore(first)["kept_previous"], m.restore(first)["kept_previous"]]
    assert len(set(kept)) == 2
    with connect(Path(kept[0]) / "tidemind.db", readonly=True) as c:
        assert c.execute("SELECT count(*) FROM nodes").fetchone()[0] == 2      # the store before the first restore
    m.close()


@pytest.mark.parametrize("damage", ["corrupt", "not-a-database", "newer"])
def test_a_store_that_will_not_open_can_still_be_restored(home, tmp_path, damage):
    with Memory.open(home) as m:
        kept_id = m.digest("a memory worth a backup", scope="project:a")["node_ids"][0]
        backup = m.backup(tmp_path / "good.db")["backup"]
        for i in range(200):
            m.digest(f"written after the backup {i}: " + "filler words " * 30, scope="project:a")
        m.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db = home / "tidemind.db"
    if damage == "corrupt":
        data = bytearray(db.read_bytes())
        for offset in range(8192, len(data) - 4096, 4096):      # trash every page but the first two
            data[offset:offset + 512] = b"\xde\xad\xbe\xef" * 128
        db.write_bytes(bytes(data))
    elif damage == "not-a-database":                             # the header itself is gone
        db.write_bytes(b"\x00" * 100 + db.read_bytes()[100:])
    else:
        c = connect(db)
        c.execute("INSERT INTO migrations(owner, name) VALUES('core', '9999_from_the_future')")
        c.close()
    assert run_cli(home, "stats").returncode != 0 or damage == "corrupt"     # it does not open, or lies
    r = cli_json(home, "restore", backup)
    assert r["doctor"]["ok"], r["doctor"]
    with Memory.open(home) as m:
        assert m.show(kept_id)["content"] == "a memory worth a backup"
        assert m.stats()["nodes"]["live"] == 1
    kept = Path(r["kept_previous"])
    assert (kept / "tidemind.db").exists()                      # the damaged store is kept, as it was
    if damage == "not-a-database":
        assert any("raw files" in n for n in r["notes"]) and (kept / "tidemind.db").read_bytes()[:100] == b"\x00" * 100


def test_a_busy_store_is_not_mistaken_for_a_damaged_one(home, tmp_path):
    from tidemind.config import load_settings
    from tidemind.errors import StoreBusy
    from tidemind.restore import restore

    with Memory.open(home) as m:
        m.digest("the live store", scope="project:a")
        backup = m.backup(tmp_path / "b.db")["backup"]
        m.digest("written after the backup", scope="project:a")
    holder = connect(home / "tidemind.db")
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreBusy):
            restore(load_settings(home, busy_timeout_ms=200), backup, "2026-06-01T00:00:00.000000Z")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Memory.open(home) as m:
        assert m.stats()["nodes"]["live"] == 2                  # nothing was swapped underneath the writer


def _tampered(m: Memory, target: Path, kind: str) -> None:
    """A backup of `m`, then changed the way a damaged or hostile file would be."""
    m.backup(target)
    c = connect(target)
    c.execute("PRAGMA foreign_keys=OFF")
    if kind == "ledger-emptied":
        c.execute("DELETE FROM migrations")
    elif kind == "three-tables":
        keep = {"nodes", "captures", "migrations"}
        for (name,) in list(c.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
                                      " AND sql NOT LIKE 'CREATE VIRTUAL%'")):
            if name not in keep and not name.startswith(("nodes_fts", "vec_bits")):
                c.execute(f'DROP TABLE IF EXISTS "{name}"')
    elif kind == "captures-columns":
        c.execute("ALTER TABLE captures RENAME TO captures_old")
        c.execute("CREATE TABLE captures(id INTEGER PRIMARY KEY, body BLOB)")
        c.execute("DROP TABLE captures_old")
    elif kind == "no-fts":
        c.execute("DROP TABLE nodes_fts")
    elif kind == "backdoor-trigger":
        c.execute("CREATE TABLE shadow(content TEXT)")
        c.execute("CREATE TRIGGER copy_out AFTER INSERT ON nodes BEGIN INSERT INTO shadow VALUES (new.content); END")
    elif kind == "extra-view":
        c.execute("CREATE VIEW peek AS SELECT content FROM nodes")
    elif kind == "changed-trigger":
        name, sql = c.execute("SELECT name, sql FROM sqlite_master WHERE type='trigger' LIMIT 1").fetchone()
        c.execute(f'DROP TRIGGER "{name}"')
        c.execute(sql.replace("BEGIN", "BEGIN SELECT 1;", 1))
    elif kind == "check-loosened":        # the CHECK no longer allows 'forgotten': forget would fail after
        sql = c.execute("SELECT sql FROM sqlite_master WHERE name='nodes'").fetchone()[0]
        c.execute("PRAGMA writable_schema=ON")
        c.execute("UPDATE sqlite_master SET sql=? WHERE name='nodes'",
                  (sql.replace("'superseded','forgotten'", "'superseded'"),))
        c.execute("PRAGMA writable_schema=OFF")
    elif kind == "default-changed":
        sql = c.execute("SELECT sql FROM sqlite_master WHERE name='nodes'").fetchone()[0]
        c.execute("PRAGMA writable_schema=ON")
        c.execute("UPDATE sqlite_master SET sql=? WHERE name='nodes'", (sql.replace("DEFAULT 1.0", "DEFAULT 1e300"),))
        c.execute("PRAGMA writable_schema=OFF")
    elif kind == "text-rewritten":
        c.execute("UPDATE nodes SET content = 'words nobody wrote' WHERE id = 1")
    c.close()


@pytest.mark.parametrize("kind", ["ledger-emptied", "three-tables", "captures-columns", "no-fts", "backdoor-trigger",
                                  "extra-view", "changed-trigger", "check-loosened", "default-changed",
                                  "text-rewritten"])
def test_a_backup_is_checked_whole_in_a_side_file_before_anything_is_replaced(home, tmp_path, kind):
    """`restore` swapped in a backup with its migrations ledger emptied, with 3 tables, with other
    `captures` columns (every command then tracebacked), one without nodes_fts (digest tracebacked
    later), and one carrying a trigger that copied every later memory into a table `forget` never
    touched while doctor said healthy. Each is refused in one line and the store stays as it was."""
    m = Memory.open(home)
    m.digest("a memory that must survive a refused restore", scope="project:a")
    m.embed_pending()
    target = tmp_path / "candidate.db"
    _tampered(m, target, kind)
    before = state(m)
    with pytest.raises(InvalidInput) as err:
        m.restore(target)
    message = str(err.value)
    assert "nothing was restored" in message and "\n" not in message, message
    assert state(m) == before
    assert not list(home.glob("restore-check-*")), "the side file is left behind"
    assert not (home / "backups").exists() or not list((home / "backups").glob("pre-restore-*"))
    m.digest("the store still takes digests after the refusal", scope="project:a")
    assert m.doctor()["ok"]
    m.close()
    proc = run_cli(home, "restore", str(target))
    err_text = proc.stderr.decode()
    assert proc.returncode == 1 and len(err_text.strip().splitlines()) == 1 and "Traceback" not in err_text


def test_doctor_reports_a_trigger_planted_in_the_live_store(home):
    """A store that gained an object this version does not make (here a trigger copying every
    memory out) is not healthy, whatever its rows say."""
    m = Memory.open(home)
    m.digest("an ordinary memory", scope="project:a")
    assert m.doctor()["ok"]
    m.conn.execute("CREATE TABLE shadow(content TEXT)")
    m.conn.execute("CREATE TRIGGER copy_out AFTER INSERT ON nodes BEGIN INSERT INTO shadow VALUES (new.content); END")
    d = m.doctor()
    assert not d["ok"] and any("copy_out" in p for p in d["problems"]), d["problems"]
    m.close()


def test_a_backup_of_an_older_schema_is_migrated_in_the_side_file_and_restored(home, tmp_path):
    """The side-file check migrates first: a backup written by an older version is sound."""
    old_home = tmp_path / "old"
    _load_old_store(old_home)
    expected = json.loads((OLD / "expected.json").read_text())
    with Memory.open(home) as m:
        r = m.restore(old_home / "tidemind.db")
    assert r["doctor"]["ok"], r["doctor"]["problems"]
    with Memory.open(home) as m:
        for node_id, content in expected["contents"].items():
            assert m.conn.execute("SELECT content FROM nodes WHERE id=?", (int(node_id),)).fetchone()[0] == content
