"""Real processes: concurrent writers and a writer SIGKILLed mid-stream."""
import os
import signal
import subprocess
import sys
import textwrap
import time

from tidemind.memory import Memory

from .conftest import ROOT

WRITER = textwrap.dedent("""
    import sys
    from tidemind.memory import Memory
    home, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    m = Memory.open(home)
    for i in range(count):
        r = m.digest(f"writer {tag} memory {i} about concurrent sqlite writes", session=f"w{tag}")
        print(r["node_ids"][0], i, flush=True)     # acknowledged
""")


def _spawn(home, tag, count):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(home), str(tag), str(count)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)


def test_four_processes_250_digests_each(home):
    Memory.open(home).close()                     # migrations done once, before the race
    procs = [_spawn(home, t, 250) for t in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert len(out.splitlines()) == 250
    with Memory.open(home) as m:
        assert m.stats()["nodes"]["live"] == 1000
        assert m.stats()["captures"] == 1000
        assert m.doctor()["ok"]


def test_sigkill_loses_nothing_acknowledged(home):
    Memory.open(home).close()
    proc = _spawn(home, "k", 100000)
    acked = []
    deadline = time.time() + 60
    while len(acked) < 150 and time.time() < deadline:
        line = proc.stdout.readline()
        if line:
            acked.append(tuple(int(x) for x in line.split()))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(acked) >= 150
    with Memory.open(home) as m:
        for node_id, i in acked:
            assert m.show(node_id)["content"] == f"writer k memory {i} about concurrent sqlite writes"
        report = m.doctor()
        assert report["ok"], report


def test_locked_database_waits_then_fails_clearly(home):
    from tidemind.config import load_settings
    from tidemind.errors import StoreBusy
    from tidemind.store import connect

    Memory.open(home).close()
    holder = connect(home / "tidemind.db")
    holder.execute("BEGIN IMMEDIATE")
    try:
        m = Memory(load_settings(home, busy_timeout_ms=300))
        start = time.monotonic()
        try:
            m.digest("this write cannot get the lock")
            raise AssertionError("digest should have failed")
        except StoreBusy as exc:
            assert "locked" in str(exc)
        assert time.monotonic() - start >= 0.25            # it waited before giving up
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert m.stats()["captures"] == 0                    # nothing half-written
    assert not list((home / "stream").glob("*.md")) if (home / "stream").exists() else True
    assert m.digest("now it works")["node_ids"]
    m.close()
