"""`tidemind daemon`: run due metabolism tasks until told to stop.

- one instance per home: an exclusive lock on `daemon.lock` (a second daemon says so, exits 3);
- leases in the database keep it from running a task that `tidemind metabolize` is running;
- catch-up after sleep: due-ness comes from each task's last finish, so a long sleep runs each
  due task once, not once per missed interval;
- SIGTERM / SIGINT: the current batch finishes (batches are small) and the process exits,
  within 5 seconds;
- structured logs: one JSON object per line on stderr.
"""
from __future__ import annotations

import faulthandler
import fcntl
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from tidemind.config import load_settings
from tidemind.memory import Memory
from tidemind.metabolism.scheduler import backlog, owner_id, run_due
from tidemind.timeutil import system_clock, to_iso

BACKLOG_TICK_S = 0.5    # between rounds while a task has work left
DAEMON_BATCH = 128      # keeps one task's batch to about a second, so shutdown stays prompt
ALREADY_RUNNING = 3


def log(event: str, **fields) -> None:
    print(json.dumps({"at": to_iso(system_clock()), "event": event, **fields}, ensure_ascii=False),
          file=sys.stderr, flush=True)


class InstanceLock:
    def __init__(self, path: Path):
        self.path = path
        self.handle = None

    def acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a+")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.seek(0)
            self.holder = self.handle.read().strip()
            self.handle.close()
            self.handle = None
            return False
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(str(os.getpid()))
        self.handle.flush()
        return True

    def release(self) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
            self.handle = None


def running(home: Path) -> str | None:
    """The pid of the daemon running for this home, or None: its lock is held (a brief shared
    probe, released at once; a held exclusive lock refuses it)."""
    path = Path(home) / "daemon.lock"
    if not path.exists():
        return None
    with open(path, "r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "?"
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


class StopFlag:
    """Set from a signal handler. Not a threading.Event: Event.set() takes a non-reentrant lock,
    and a signal landing while the main thread holds it inside Event.wait() deadlocks the
    process (seen as a daemon that sometimes ignored SIGTERM)."""

    def __init__(self):
        self._set = False

    def set(self, *_):
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._set and time.monotonic() < deadline:
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))


def run(home: str | None, once: bool = False, tick_s: float = 30.0, stop: StopFlag | None = None) -> int:
    settings = load_settings(home)
    lock = InstanceLock(settings.home / "daemon.lock")
    if not lock.acquire():
        log("already_running", home=str(settings.home), pid=getattr(lock, "holder", "?"))
        print(f"tidemind daemon: another daemon is already running for {settings.home}"
              f" (pid {getattr(lock, 'holder', '?')}); exiting", file=sys.stderr)
        return ALREADY_RUNNING
    stop = stop or StopFlag()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, stop.set)
        faulthandler.register(signal.SIGUSR1)      # `kill -USR1 <pid>` prints every thread's stack
    owner = owner_id()
    log("started", home=str(settings.home), pid=os.getpid(), once=once)
    try:
        memory = Memory(settings, actor="daemon")
        from tidemind.llm import choose_or_offline

        llm, why = choose_or_offline(settings)
        log("llm", provider=getattr(llm, "name", "none"), **({"offline": why} if why else {}))
        try:
            while not stop.is_set():
                reports = run_due(memory, owner=owner, batch=DAEMON_BATCH, stopping=stop.is_set, llm=llm)
                for report in reports:
                    log("task", **report)
                if once:
                    break
                # work left behind (a fresh import): the next round at once, a breath for other writers
                stop.wait(BACKLOG_TICK_S if backlog(reports) else tick_s)
        finally:
            memory.close()
    finally:
        lock.release()
        log("stopped", pid=os.getpid())
    return 0
