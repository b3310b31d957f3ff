"""Live sync with watchdog: new files and folders, deletions, temp files, a vanished vault."""
import threading
import time

from tidemind.importers.engine import sync
from tidemind.importers.watch import interesting, watch
from tidemind.memory import Memory


def _wait(predicate, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_watch_follows_edits_new_folders_deletes_and_survives_a_vanished_vault(home, tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "First.md").write_text("The first note.")
    m = Memory.open(home)
    messages = []
    stop = threading.Event()
    lock = threading.Lock()

    asked = []

    def once(paths):
        with lock:
            asked.append(paths)
            return sync(m, "obsidian", vault, "vault:w", only=paths)

    def live(text):
        with lock:
            return m.conn.execute("SELECT count(*) FROM nodes WHERE status='live' AND content LIKE ?",
                                  (f"%{text}%",)).fetchone()[0]

    t = threading.Thread(target=watch, args=(once, vault), kwargs={"quiet_s": 0.3, "rescan_s": 3600, "stop": stop,
                                                                   "say": messages.append}, daemon=True)
    t.start()
    try:
        assert _wait(lambda: live("The first note") == 1)
        (vault / "Second.md").write_text("A second note appears.")
        assert _wait(lambda: live("second note") == 1)
        assert asked[0] is None and {"Second.md"} in asked          # a file event reads that file only
        (vault / "Deep" / "Deeper").mkdir(parents=True)
        (vault / "Deep" / "Deeper" / "Nested.md").write_text("Nested in a brand new folder.")
        assert _wait(lambda: live("brand new folder") == 1)
        (vault / ".Second.md.swp").write_text("editor swap file")
        (vault / "Second.md").unlink()
        assert _wait(lambda: live("second note") == 0)
        assert live("editor swap") == 0
        moved = tmp_path / "moved-away"
        vault.rename(moved)
        assert _wait(lambda: any("is gone" in msg for msg in messages))
        moved.rename(vault)
        assert _wait(lambda: any("is back" in msg for msg in messages))
    finally:
        stop.set()
        t.join(timeout=10)
        m.close()
    assert not t.is_alive() and any("stopped watching" in msg for msg in messages)


def test_temp_and_hidden_files_are_not_interesting(tmp_path):
    for name, expected in (("Note.md", True), (".Note.md.swp", False), ("Note.md~", False), ("x.tmp", False),
                           (".obsidian/workspace.json", False), ("#Note.md#", False)):
        assert interesting(str(tmp_path / name), tmp_path) is expected, name
