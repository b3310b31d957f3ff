"""Named migrations: recorded once, applied once, a backup before migrating a used database."""
from tidemind.memory import Memory
from tidemind.store import migrations


def test_migrations_are_recorded_and_not_reapplied(home):
    with Memory.open(home) as m:
        names = {(o, n) for o, n in m.conn.execute("SELECT owner, name FROM migrations")}
        assert ("core", "0001_captures") in names and ("embed-default", "0001_terms") in names
        m.digest("survives reopening")
    with Memory.open(home) as m:
        assert m.stats()["nodes"]["live"] == 1
        assert not list((home / "backups").glob("*.db")) if (home / "backups").exists() else True


def test_new_migration_backs_up_first(home):
    with Memory.open(home) as m:
        m.digest("data worth backing up")
    migrations.register("test-owner", [("0001_extra", "CREATE TABLE extra_test(x INTEGER)")])
    try:
        with Memory.open(home) as m:
            assert m.conn.execute("SELECT count(*) FROM extra_test").fetchone()[0] == 0
        backups = list((home / "backups").glob("pre-migrate-*.db"))
        assert len(backups) == 1
        import apsw
        assert apsw.Connection(str(backups[0])).execute("SELECT count(*) FROM nodes").fetchone()[0] == 1
    finally:
        migrations.unregister("test-owner")


def test_a_store_from_a_newer_tidemind_is_refused_clearly(home):
    import pytest

    from tidemind.errors import InvalidInput

    with Memory.open(home) as m:
        m.digest("written by this version")
        m.conn.execute("INSERT INTO migrations(owner, name) VALUES('core', '9999_from_the_future')")
    with pytest.raises(InvalidInput, match="newer TideMind"):
        Memory.open(home)
    from .conftest import run_cli
    proc = run_cli(home, "stats")
    assert proc.returncode == 1 and "newer TideMind" in proc.stderr.decode()
