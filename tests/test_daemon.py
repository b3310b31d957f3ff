"""The daemon as a process: single instance, clean shutdown on SIGTERM, --once, service files."""
import json
import signal
import subprocess
import sys
import time

from tidemind.memory import Memory

from .conftest import ROOT


def _daemon(home, *extra):
    return subprocess.Popen([sys.executable, "-m", "tidemind.cli", "--home", str(home), "daemon", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)


def _wait_for(proc, event, timeout=30):
    deadline = time.time() + timeout
    lines = []
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        try:
            if json.loads(line).get("event") == event:
                return lines
        except ValueError:
            pass
    raise AssertionError(f"no {event!r} in {lines}")


def test_one_daemon_runs_the_second_says_so_and_sigterm_stops_it(home):
    with Memory.open(home) as m:
        for i in range(50):
            m.digest(f"memory {i} for the daemon to metabolise about boats and harbours")
    first = _daemon(home, "--tick", "0.2")
    try:
        _wait_for(first, "started")
        second = _daemon(home, "--tick", "0.2")
        out, err = second.communicate(timeout=30)
        assert second.returncode == 3 and "already running" in err
        _wait_for(first, "task")                 # it is working
        start = time.monotonic()
        first.send_signal(signal.SIGTERM)
        try:
            first.wait(timeout=10)
        except subprocess.TimeoutExpired:
            first.send_signal(signal.SIGUSR1)          # the daemon dumps its threads' stacks
            time.sleep(1)
            first.kill()
            raise AssertionError("daemon ignored SIGTERM:\n" + first.stderr.read()[-6000:])
        took = time.monotonic() - start
        assert took < 5 and first.returncode == 0, (took, first.returncode, first.stderr.read()[-2000:])
    finally:
        if first.poll() is None:
            first.kill()
    with Memory.open(home) as m:
        ran = {t for (t,) in m.conn.execute("SELECT task FROM task_runs WHERE status='ok'")}
        assert {"embed", "annotate"} <= ran
        assert m.doctor()["ok"]


def test_once_runs_what_is_due_and_exits(home):
    with Memory.open(home) as m:
        m.digest("a memory for a single pass")
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "daemon", "--once"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0
    events = [json.loads(l)["event"] for l in proc.stderr.splitlines() if l.startswith("{")]
    assert events[0] == "started" and events[-1] == "stopped" and "task" in events
    again = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "daemon", "--once"],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert [json.loads(l)["event"] for l in again.stderr.splitlines() if l.startswith("{")].count("task") == 0


def test_install_service_writes_both_units(home, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "--json", "daemon",
                           "install-service", "--dir", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    unit = open(r["written"]["systemd"]).read()
    plist = open(r["written"]["launchd"]).read()
    assert "ExecStart=" in unit and unit.rstrip().endswith("WantedBy=default.target") and " daemon" in unit
    assert "<string>daemon</string>" in plist and str(home) in plist
