"""Runs metabolism tasks: due ones in order, each under a lease in the database.

`run_task` takes the task's lease (BEGIN IMMEDIATE; only when free or expired), runs one
bounded batch, records status, counts and error, and releases the lease. A second process
asking for a leased task gets `status: busy` and runs nothing.
"""
from __future__ import annotations

import datetime as dt
import os
import socket
import time
from typing import Sequence

from ..memory import Memory
from ..store import task_runs
from ..timeutil import Clock, from_iso, system_clock, to_iso
from . import Task, TaskContext, load_all

ORDER = ("embed", "annotate", "link-propose", "link-evaluate", "dedup", "contradict", "crystallize", "temporal",
         "lessons", "reconsolidate", "fingerprint", "decay")
LEASE_SECONDS = 180          # a crashed holder on another machine blocks its task at most this long
HEARTBEAT_SECONDS = 30       # a running task renews its lease this often (between items)


def _pid_namespace() -> str:
    """Two containers can share a hostname and reuse each other's pids; the pid namespace tells
    them apart (0 where /proc is not there)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def owner_id() -> str:
    return f"{socket.gethostname()}:{_pid_namespace()}:{os.getpid()}"


def _dead_here(owner: str | None) -> bool:
    """True when `owner` is a process on this machine that no longer exists (killed or crashed),
    so its lease need not be waited out. A recycled pid reads as alive: then the lease expires."""
    if not owner or owner.count(":") < 2:
        return False
    rest, _, pid = owner.rpartition(":")
    host, _, namespace = rest.rpartition(":")
    if host != socket.gethostname() or namespace != _pid_namespace() or not (pid.isascii() and pid.isdigit()):
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, ValueError):
        return False
    return False


def ordered_tasks() -> list[Task]:
    tasks = load_all()
    return [tasks[n] for n in ORDER if n in tasks] + [t for n, t in tasks.items() if n not in ORDER]


def run_task(memory: Memory, task: Task, owner: str, clock: Clock = system_clock, batch: int | None = None,
             llm=None, stopping=lambda: False) -> dict:
    now = to_iso(clock())
    until = to_iso(from_iso(now) + dt.timedelta(seconds=LEASE_SECONDS))
    if task.needs_llm and llm is None:
        return {"task": task.name, "status": "skipped", "why": "needs an LLM and none is configured"}
    if not task_runs.acquire(memory.conn, task.name, owner, now, until):
        dead = task_runs.holder(memory.conn, task.name)
        if not (_dead_here(dead) and task_runs.take_over(memory.conn, task.name, dead, owner, now, until)):
            return {"task": task.name, "status": "busy", "why": "another process holds this task's lease"}
    previous = task_runs.state(memory.conn).get(task.name, {}).get("last_finished")
    beat = [time.monotonic()]
    lost = [False]

    def stopping_or_lease_lost() -> bool:
        """Asked by the task between items: renews the lease now and then, and says stop when the
        daemon is shutting down or the lease was lost (never two holders at once)."""
        if stopping() or lost[0]:
            return True
        if time.monotonic() - beat[0] >= HEARTBEAT_SECONDS:
            beat[0] = time.monotonic()
            renewed_until = to_iso(from_iso(to_iso(clock())) + dt.timedelta(seconds=LEASE_SECONDS))
            lost[0] = not task_runs.renew(memory.conn, task.name, owner, renewed_until)
        return lost[0]

    ctx = TaskContext(memory=memory, now=lambda: to_iso(clock()), llm=llm, batch=batch, last_finished=previous,
                      stopping=stopping_or_lease_lost)
    started = time.perf_counter()
    status, error, report = "ok", None, {}
    try:
        report = task.run(ctx)
    except Exception as exc:        # a failing task is recorded and the others still run
        status, error = "error", f"{type(exc).__name__}: {exc}"
    finally:
        task_runs.release(memory.conn, task.name, owner, to_iso(clock()), status, report, error)
    return {"task": task.name, "status": status, "seconds": round(time.perf_counter() - started, 3),
            **({"error": error} if error else {}), **report}


def is_due(state: dict, task: Task, now: str) -> bool:
    last = state.get(task.name, {}).get("last_finished")
    if not last:
        return True
    return (from_iso(now) - from_iso(last)).total_seconds() >= task.interval_s


def run_due(memory: Memory, owner: str | None = None, clock: Clock = system_clock, only: Sequence[str] = (),
            force: bool = False, batch: int | None = None, llm=None, stopping=lambda: False) -> list[dict]:
    owner = owner or owner_id()
    tasks = ordered_tasks()
    if only:
        unknown = set(only) - {t.name for t in tasks}
        if unknown:
            from ..errors import InvalidInput

            raise InvalidInput(f"unknown task(s) {', '.join(sorted(unknown))}; known: {', '.join(t.name for t in tasks)}")
        tasks = [t for t in tasks if t.name in only]
    state = task_runs.state(memory.conn)
    now = to_iso(clock())
    reports = []
    for task in tasks:
        if stopping():
            break
        if force or is_due(state, task, now):
            reports.append(run_task(memory, task, owner, clock, batch, llm, stopping))
    return reports
