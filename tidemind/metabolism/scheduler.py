"""Runs metabolism tasks: due ones in order, each under a lease in the database.

`run_task` takes the task's lease (BEGIN IMMEDIATE; only when free or expired), runs one
bounded batch, records status, counts and error, and releases the lease. A second process
asking for a leased task gets `status: busy` and runs nothing.

Degrade, never fail: when a model service (the LLM, the embedder) cannot be reached, the task
that called it stops with `status: waiting` (what it finished before stays), the service's state
is recorded with a time to try again (exponential backoff: 30 s, 1 min, 2 min ... 30 min), and
until then no task calls it: a task that waits for it is not run, and any other task that asks
the model stops at its first call (`llm.Watched`). Nothing is written in the model's name while
it is away, and no offline stand-in passes for its answers. A forced run (`tidemind metabolize`,
a person asking now) tries the service again at once. `tidemind doctor` shows the state.
"""
from __future__ import annotations

import datetime as dt
import os
import socket
import time
from typing import Sequence

from ..errors import ProviderUnavailable
from ..llm import Waiting, Watched
from ..memory import Memory
from ..store import immediate, provider_state, task_runs
from ..timeutil import Clock, from_iso, system_clock, to_iso
from . import Task, TaskContext, load_all

ORDER = ("embed", "annotate", "link-propose", "link-evaluate", "dedup", "contradict", "crystallize", "temporal",
         "lessons", "reconsolidate", "fingerprint", "decay")
LEASE_SECONDS = 180          # a crashed holder on another machine blocks its task at most this long
HEARTBEAT_SECONDS = 30       # a running task renews its lease this often (between items)
BACKOFF_FIRST_S = 30         # the first wait for an unreachable model service; doubled each failure
BACKOFF_MAX_S = 1800


def backoff_seconds(failures: int) -> int:
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** max(0, failures - 1))


def _outage(memory: Memory, exc: ProviderUnavailable, now: str) -> str:
    """Record a failed attempt on the service; returns when to try it again."""
    provider, kind = exc.provider or "unknown", exc.kind or "unknown"
    with immediate(memory.conn):
        tries = provider_state.failures(memory.conn, provider) + 1
        retry_at = to_iso(from_iso(now) + dt.timedelta(seconds=backoff_seconds(tries)))
        provider_state.failed(memory.conn, provider, kind, str(exc), now, retry_at)
    return retry_at


def _heard(memory: Memory, provider: str, kind: str, now: str) -> None:
    """The service answered: its backoff starts over. Written when the state changes, and to
    refresh `last_ok_at` at most once a minute (not on every call of a busy pass)."""
    row = provider_state.get(memory.conn, provider)
    if row and row["state"] == "ok" and row["last_ok_at"] and \
            (from_iso(now) - from_iso(row["last_ok_at"])).total_seconds() < 60:
        return
    with immediate(memory.conn):
        provider_state.answered(memory.conn, provider, kind, now)


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
             llm=None, stopping=lambda: False, redo: frozenset = frozenset(),
             if_finished: str | None | object = task_runs.ANY_FINISH) -> dict:
    """Run one bounded batch of `task` under its lease. `if_finished`: the last finish the caller
    saw when it judged the task due; when another process has finished the task since, it is
    not run again on that stale judgement."""
    now = to_iso(clock())
    until = to_iso(from_iso(now) + dt.timedelta(seconds=LEASE_SECONDS))
    if task.needs_llm and llm is None:
        return {"task": task.name, "status": "skipped", "why": "needs an LLM and none is configured"}
    if not task_runs.acquire(memory.conn, task.name, owner, now, until, if_finished):
        run = task_runs.state(memory.conn).get(task.name, {})
        if (if_finished is not task_runs.ANY_FINISH and run.get("last_finished") != if_finished
                and run.get("lease_owner") is None):
            return {"task": task.name, "status": "busy", "why": "another process ran this task since this round began"}
        dead = run.get("lease_owner")
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
                      stopping=stopping_or_lease_lost, redo=redo)
    started = time.perf_counter()
    status, error, report = "ok", None, {}
    answered_before = llm.answered if isinstance(llm, Watched) else 0
    try:
        report = task.run(ctx)
    except ProviderUnavailable as exc:     # a model service is away: wait for it, do not stand in for it
        status, error = "waiting", str(exc)
        report = {"waiting_for": exc.provider or "unknown", "provider_kind": exc.kind or "unknown"}
        if isinstance(exc, Waiting):
            report["retry_at"] = llm.retry_at if isinstance(llm, Watched) else None
        else:
            report["retry_at"] = _outage(memory, exc, to_iso(clock()))
    except Exception as exc:        # a failing task is recorded and the others still run
        status, error = "error", f"{type(exc).__name__}: {exc}"
    finally:
        task_runs.release(memory.conn, task.name, owner, to_iso(clock()), status, report, error,
                          finished=status != "waiting")
    if isinstance(llm, Watched) and llm.answered > answered_before:
        _heard(memory, llm.name, "llm", to_iso(clock()))
    if task.name == "embed" and status == "ok" and report.get("embedded"):
        _heard(memory, report.get("embedder") or memory.embedder.name, "embedder", to_iso(clock()))
    return {"task": task.name, "status": status, "seconds": round(time.perf_counter() - started, 3),
            **({"error": error} if error else {}), **report}


def is_due(state: dict, task: Task, now: str) -> bool:
    """Due when its interval has passed since it last finished, or at once when it last stopped
    at its batch with work left (`backlog` in its report): a freshly imported store settles in
    minutes of daemon time, not in hours of one batch per interval."""
    run = state.get(task.name, {})
    last = run.get("last_finished")
    if not last or (run.get("counts") or {}).get("backlog"):
        return True
    return (from_iso(now) - from_iso(last)).total_seconds() >= task.interval_s


def backlog(reports: list[dict]) -> bool:
    """Whether any task of a round stopped at its batch with work left."""
    return any(r.get("backlog") for r in reports if r.get("status") == "ok")


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
    watched = None
    if llm is not None:
        known = provider_state.get(memory.conn, llm.name)
        away = (not force and known is not None and known["state"] == "unreachable" and known["retry_at"]
                and known["retry_at"] > now)
        watched = Watched(llm, known["retry_at"] if away else None, known["last_error"] if away else None)
    reports = []
    for task in tasks:
        if stopping():
            break
        if not (force or is_due(state, task, now)):
            continue
        waited = _still_waiting(memory, state.get(task.name), now) if not force else None
        if waited is not None:
            reports.append({"task": task.name, "status": "waiting", **waited})
            continue
        seen = task_runs.ANY_FINISH if force else state.get(task.name, {}).get("last_finished")
        reports.append(run_task(memory, task, owner, clock, batch, watched, stopping, if_finished=seen))
        if watched is not None and watched.outage is not None and not watched.retry_at:
            # the model failed during this task: the rest of this round does not call it again
            known = provider_state.get(memory.conn, watched.name)
            watched.retry_at = known["retry_at"] if known else now
            watched.last_error = str(watched.outage)
    return reports


def _still_waiting(memory: Memory, run: dict | None, now: str) -> dict | None:
    """A task that stopped for an unreachable service is not run again before the service's
    backoff runs out (then it is the retry)."""
    if not run or run.get("status") != "waiting":
        return None
    provider = (run.get("counts") or {}).get("waiting_for")
    known = provider_state.get(memory.conn, provider) if provider else None
    if known is None or known["state"] != "unreachable" or not known["retry_at"] or known["retry_at"] <= now:
        return None
    return {"waiting_for": provider, "retry_at": known["retry_at"],
            "why": f"{provider} is unreachable ({known['last_error']}); next try at {known['retry_at']}"}
