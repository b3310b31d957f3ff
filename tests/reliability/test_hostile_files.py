"""Hostile files in a notes folder (issue 29 item 5): a FIFO named like a note hung the import
forever; a character device (a twin of /dev/zero) grew the importer to 24 GB until the kernel
killed it. Importers open regular files only and read at most the size limit + 1 bytes; every
other file is skipped with its reason and the rest of the folder imports, in a full sync, in a
watch's sync of the files its events named, and under a real watch.

The timeouts below are guards that turn a regression into a failure instead of a hung suite;
nothing is asserted about how long anything takes. A file that could eat memory is only ever
read in a child process whose address space is capped.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tidemind.importers import files
from tidemind.importers.engine import sync
from tidemind.importers.watch import watch
from tidemind.memory import Memory

ROOT = Path(__file__).resolve().parents[2]
GUARD_S = 120                       # only so that a hang fails the test instead of the whole run
LIMIT = 20_000                      # max_note_bytes for these tests (the default is 2,000,000)

LAYOUT = {   # source -> (where notes go, a normal note, a second one, a note for the watch's sync)
    "obsidian": ("", ("a.md", "Lanterns are lit at dusk.\n"), ("sub/b.md", "# Tides\nThe tide turns at noon.\n"),
                 ("c.md", "Cormorants dry their wings.\n")),
    "logseq": ("pages/", ("pages/a.md", "- Lanterns are lit at dusk.\n"),
               ("journals/2024_01_05.md", "- The tide turns at noon.\n"),
               ("pages/c.md", "- Cormorants dry their wings.\n")),
}


def _release(fifo: Path) -> None:
    """Unblock a reader stuck opening or reading a FIFO (a writer appears, then goes: EOF)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def _guarded(fn, fifos: list[Path]):
    """fn() in a thread; a run still going after GUARD_S fails (its FIFOs released so it ends)."""
    out: dict = {}

    def run():
        try:
            out["result"] = fn()
        except BaseException as exc:          # re-raised in the test's thread
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(GUARD_S)
    if t.is_alive():
        for fifo in fifos:
            _release(fifo)
        t.join(10)
        pytest.fail(f"still running after {GUARD_S} s: blocked on a special file")
    if "error" in out:
        raise out["error"]
    return out["result"]


def _folder(tmp_path: Path, source: str) -> Path:
    root = tmp_path / source
    notes, first, second, _ = LAYOUT[source]
    for rel, text in (first, second):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if source == "logseq":
        (root / "logseq").mkdir()
    return root


def _live(m: Memory) -> str:
    return "\n".join(c for (c,) in m.conn.execute("SELECT content FROM nodes WHERE status='live'"))


@pytest.fixture
def opened(monkeypatch):
    """The paths the importer opened with os.open."""
    seen: list[str] = []
    real = os.open

    def spy(path, flags, *args, **kwargs):
        seen.append(os.fspath(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    return seen


@pytest.mark.parametrize("source", ["obsidian", "logseq"])
def test_a_fifo_and_an_oversized_note_are_skipped_with_a_reason_and_the_rest_imports(tmp_path, source, opened):
    root = _folder(tmp_path, source)
    notes, _, _, (new_rel, new_text) = LAYOUT[source]
    fifo, big = root / f"{notes}p.md", root / f"{notes}big.md"
    os.mkfifo(fifo)
    big.write_text("Oversized words. " * (LIMIT // 10))
    fifos = [fifo]
    if source == "logseq":                  # the graph's config is read too (the journal title format)
        os.mkfifo(root / "logseq" / "config.edn")
        fifos.append(root / "logseq" / "config.edn")
    m = Memory.open(tmp_path / "home", max_note_bytes=LIMIT)
    try:
        r = _guarded(lambda: sync(m, source, root, f"{source}:hostile"), fifos)
        skipped = {s["path"]: s["reason"] for s in r["skipped"]}
        assert skipped[f"{notes}p.md"] == "not a regular file (FIFO)"
        assert skipped[f"{notes}big.md"].startswith(f"{big.stat().st_size:,} bytes is larger than the"
                                                    f" {LIMIT:,} bytes limit")
        assert "max_note_bytes" in skipped[f"{notes}big.md"]      # says how to raise it
        assert r["created"] == 2
        live = _live(m)
        assert "Lanterns are lit" in live and "The tide turns" in live and "Oversized" not in live
        assert not {str(f) for f in fifos} & set(opened)           # never opened, not even without blocking
        assert str(big) not in opened                               # its size said no before any open

        # a watch's sync of the files its events named skips them the same way
        (root / new_rel).write_text(new_text)
        r = _guarded(lambda: sync(m, source, root, f"{source}:hostile",
                                  only={f"{notes}p.md", f"{notes}big.md", new_rel}), fifos)
        skipped = {s["path"]: s["reason"] for s in r["skipped"]}
        assert skipped[f"{notes}p.md"] == "not a regular file (FIFO)" and "larger than" in skipped[f"{notes}big.md"]
        assert r["created"] == 1 and "Cormorants" in _live(m)
        assert "Lanterns are lit" in _live(m)                       # what was imported stays
    finally:
        m.close()


CHILD = r"""
import json, os, resource, stat, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))   # a regression fails, not the machine
from tidemind.importers.engine import sync
from tidemind.memory import Memory
source, root, home, notes = sys.argv[1:5]
root = Path(root)
os.mknod(root / f"{notes}z.md", stat.S_IFCHR | 0o600, os.makedev(1, 5))           # /dev/zero's twin
m = Memory.open(home)
r = sync(m, source, root, f"{source}:device")
live = [c for (c,) in m.conn.execute("SELECT content FROM nodes WHERE status='live'")]
# this process's own peak (VmHWM of its memory map): ru_maxrss keeps the parent's peak across
# fork and exec, so it read the size of the pytest process that started this one
peak = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
            if line.startswith("VmHWM:"))
print(json.dumps({"skipped": r["skipped"], "live": live, "maxrss_kb": peak}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
@pytest.mark.parametrize("source", ["obsidian", "logseq"])
def test_a_character_device_is_never_read(tmp_path, source):
    """A device that never ends is skipped by its type: the import's peak memory stays that of an
    import of two small notes (the reviewer's importer grew to 24 GB)."""
    root = _folder(tmp_path, source)
    notes = LAYOUT[source][0]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", CHILD, source, str(root), str(tmp_path / "home"), notes],
                          capture_output=True, text=True, timeout=GUARD_S, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert {s["path"]: s["reason"] for s in out["skipped"]} == {f"{notes}z.md": "not a regular file (character device)"}
    assert any("Lanterns are lit" in c for c in out["live"]) and any("The tide turns" in c for c in out["live"])
    assert out["maxrss_kb"] < 200_000, out["maxrss_kb"]      # (about 27 MB)


def test_a_file_swapped_after_its_type_was_checked_is_not_read_past_the_limit(tmp_path, monkeypatch):
    """The type and size are checked before opening, and again on what was opened: a file made a
    FIFO, a device or a larger file between the two is skipped, and no read ever asks for more
    than the limit + 1 bytes (os.lstat made to lie stands for the swap)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    os.mkfifo(vault / "p.md")
    grown = vault / "grown.md"
    grown.write_text("g" * (3 * LIMIT))
    device = vault / "z.md"
    if os.geteuid() == 0:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    real_lstat, real_read = os.lstat, os.read
    names = {"p.md", "grown.md", "z.md"}

    def lying_lstat(path, *args, **kwargs):
        info = real_lstat(path, *args, **kwargs)
        if Path(path).name in names:        # what the file was when its type was checked: a small note
            return os.stat_result((stat.S_IFREG | 0o644, *tuple(info)[1:6], 10, *tuple(info)[7:10]))
        return info

    asked: list[int] = []

    def counting_read(fd, n):
        asked.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "lstat", lying_lstat)
    monkeypatch.setattr(os, "read", counting_read)
    skipped: list[dict] = []
    assert _guarded(lambda: files.read(vault, "p.md", skipped, LIMIT), [vault / "p.md"]) is None
    assert files.read(vault, "grown.md", skipped, LIMIT) is None
    reasons = {s["path"]: s["reason"] for s in skipped}
    assert reasons["p.md"] == "not a regular file (FIFO)"
    assert reasons["grown.md"].startswith("grew while read past the") and "max_note_bytes" in reasons["grown.md"]
    assert sum(asked) <= LIMIT + 1 and asked                        # only the grown file was read, capped
    if os.geteuid() == 0:
        asked.clear()
        assert files.read(vault, "z.md", skipped, LIMIT) is None
        assert skipped[-1] == {"path": "z.md", "reason": "not a regular file (character device)"} and not asked


def test_a_watch_skips_a_fifo_and_an_oversized_note_says_so_once_and_goes_on(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "First.md").write_text("The first note.")
    m = Memory.open(tmp_path / "home", max_note_bytes=LIMIT)
    messages: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def once(paths):
        with lock:
            return sync(m, "obsidian", vault, "vault:w", only=paths)

    def live(text):
        with lock:
            return m.conn.execute("SELECT count(*) FROM nodes WHERE status='live' AND content LIKE ?",
                                  (f"%{text}%",)).fetchone()[0]

    def wait(predicate):
        deadline = time.monotonic() + GUARD_S
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)
        return False

    t = threading.Thread(target=watch, args=(once, vault), kwargs={"quiet_s": 0.3, "rescan_s": 2.0, "stop": stop,
                                                                   "say": messages.append}, daemon=True)
    t.start()
    try:
        assert wait(lambda: live("The first note") == 1)
        os.mkfifo(vault / "p.md")
        (vault / "big.md").write_text("Oversized words. " * (LIMIT // 10))
        (vault / "Second.md").write_text("A second note appears.")
        assert wait(lambda: live("second note") == 1)
        assert wait(lambda: "tidemind: skipped p.md: not a regular file (FIFO)" in messages
                    and any(msg.startswith("tidemind: skipped big.md: ") for msg in messages))
        time.sleep(3)                                       # a rescan or two: read again, not said again
        assert messages.count("tidemind: skipped p.md: not a regular file (FIFO)") == 1
        assert live("Oversized") == 0
    finally:
        stop.set()
        t.join(timeout=GUARD_S)
        if t.is_alive():
            _release(vault / "p.md")
            t.join(timeout=10)
        m.close()
    assert not t.is_alive()


def test_logseq_config_is_read_only_when_a_regular_file_and_still_through_a_symbolic_link(tmp_path):
    from tidemind.importers.logseq import DEFAULT_TITLE_FORMAT, journal_title_format

    graph, elsewhere = tmp_path / "graph", tmp_path / "dotfiles"
    (graph / "logseq").mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "config.edn").write_text('{:journal/page-title-format "yyyy-MM-dd"}\n')
    os.symlink(elsewhere / "config.edn", graph / "logseq" / "config.edn")      # followed, as it always was
    assert journal_title_format(graph) == "yyyy-MM-dd"
    os.unlink(graph / "logseq" / "config.edn")
    os.mkfifo(graph / "logseq" / "config.edn")
    assert _guarded(lambda: journal_title_format(graph), [graph / "logseq" / "config.edn"]) == DEFAULT_TITLE_FORMAT
