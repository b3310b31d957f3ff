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


def test_install_service_writes_both_units_with_the_environment_and_uninstall_removes_them(home, tmp_path):
    """A service starts without the shell's environment (issue 28: the unit passed none, so an API
    key or a store set in the shell never reached it): the unit reads service.env in the home,
    made owner-only with the shell's TideMind settings; a key is named, never written."""
    import os
    import stat

    key = "sk-ant-api03-" + "s" * 40
    env = {**os.environ, "TIDEMIND_LLM": "ollama", "TIDEMIND_OLLAMA_HOST": "http://gpu-box:11434",
           "ANTHROPIC_API_KEY": key}
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "--json", "daemon",
                           "install-service", "--dir", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    unit = open(r["written"]["systemd"]).read()
    plist = open(r["written"]["launchd"]).read()
    assert "ExecStart=" in unit and unit.rstrip().endswith("WantedBy=default.target") and " daemon" in unit
    assert "<string>daemon</string>" in plist and str(home) in plist
    env_file = home / "service.env"
    assert f"EnvironmentFile=-{env_file}" in unit and r["written"]["environment"] == str(env_file)
    carried = env_file.read_text()
    assert "TIDEMIND_LLM=ollama" in carried and "TIDEMIND_OLLAMA_HOST=http://gpu-box:11434" in carried
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "<string>http://gpu-box:11434</string>" in plist and str(home / "daemon.log") in plist
    assert key not in carried + unit + plist + proc.stdout                   # a key is named, never written
    assert any("ANTHROPIC_API_KEY" in n for n in r["notes"])
    out = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "--json", "daemon",
                          "uninstall-service", "--dir", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert sorted(json.loads(out.stdout)["removed"]) == sorted([r["written"]["systemd"], r["written"]["launchd"]])
    assert not list(tmp_path.glob("*.service")) and not list(tmp_path.glob("*.plist")) and env_file.exists()


def test_a_backlog_is_worked_off_round_after_round_not_one_batch_per_interval(home):
    """Issue 23: at the daemon's pace link-evaluate confirmed about 110 links a run, one run per
    ten minutes: three conversations took 8.5 hours of daemon time to settle. A task that stops at
    its batch with work left reports `backlog` and is due again at once, and the daemon's next
    round follows without its usual wait. Here the clock never moves: before, the second round
    at the same instant ran nothing."""
    import datetime as dt

    from tidemind.metabolism.scheduler import backlog, run_due
    from tidemind_daemon.runner import BACKLOG_TICK_S, DAEMON_BATCH

    instant = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc)
    with Memory.open(home, clock=lambda: instant) as m:
        for i in range(3 * DAEMON_BATCH + 7):
            m.digest(f"Turn {i}: the harbour crane number {i} lifted container {i * 7} onto the ship Aurora"
                     f" {i % 11} before the tide turned at pier {i % 5}.", scope="project:port", session=f"s{i // 40}")
        rounds = []
        while True:
            reports = run_due(m, batch=DAEMON_BATCH, clock=lambda: instant)
            rounds.append({r["task"]: r for r in reports})
            if not backlog(reports) or len(rounds) > 20:
                break
        assert 3 < len(rounds) <= 20, [sorted(r) for r in rounds]
        assert rounds[1]["link-propose"]["nodes"] == DAEMON_BATCH         # due again at the same instant
        assert m.conn.execute("SELECT count(*) FROM embed_queue").fetchone()[0] == 0
        cursor = m.conn.execute("SELECT cursor FROM task_runs WHERE task='link-propose'").fetchone()[0]
        assert cursor == m.conn.execute("SELECT max(id) FROM nodes").fetchone()[0]      # every memory proposed for
        # and with nothing left, the next round waits for the intervals as before
        assert not any(r.get("backlog") for r in rounds[-1].values())
        assert [r["task"] for r in run_due(m, batch=DAEMON_BATCH, clock=lambda: instant)] == []
    assert BACKLOG_TICK_S < 1


def test_a_model_that_cannot_be_used_leaves_the_daemon_running_its_offline_passes(home):
    """Found by review: llm = "anthropic" with no key in the service's environment (the default:
    TideMind writes no key) made the daemon die at start, restarted every 30 s, no pass ever run."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    env["TIDEMIND_LLM"] = "anthropic"
    subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "digest",
                    "The kiln reached cone six with the new glaze."], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=120)
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "daemon", "--once"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    llm = next(e for e in events if e["event"] == "llm")
    assert llm["provider"] == "none" and "ANTHROPIC_API_KEY" in llm["offline"]
    assert any(e["event"] == "task" and e.get("task") == "embed" and e.get("status") == "ok" for e in events)
    out = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "metabolize", "--task", "annotate"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0 and "running offline" in out.stderr and "ANTHROPIC_API_KEY" in out.stderr
