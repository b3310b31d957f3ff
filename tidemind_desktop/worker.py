"""Where the window's work runs, so the UI thread never waits on the database.

`Worker`: one thread with its own connection (its own `Memory`) that runs every read and every
decision of the window, in the order they were asked for; the result comes back to the UI
thread through a queued signal. A job given a `key` makes the earlier jobs of that key stale:
a stale job that has not started is skipped and a stale result is dropped (typing a search,
arrowing through results: only the last one is drawn).

`Background`: long jobs (an import, its rollback, a metabolism task) on threads of their own,
each with a connection of its own for the job's length, so a search or a decision never queues
behind them; the store's chunked writes keep their transactions short.
"""
from __future__ import annotations

import sys
import traceback

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from tidemind.errors import TideMindError
from tidemind.memory import Memory

STALE = object()


class _Signals(QObject):
    done = Signal(object, object, object, object)  # job token, key, callback, result (queued to the UI thread)
    progress = Signal(object, object)              # callback, value


def _guarded(fn, *args):
    """A job's failure is a result the window shows, never a dead worker thread."""
    try:
        return fn(*args)
    except TideMindError as exc:
        return {"error": str(exc)}
    except Exception as exc:                       # noqa: BLE001 - reported to the person and on stderr
        traceback.print_exc(file=sys.stderr)
        return {"error": f"{type(exc).__name__}: {exc}"}


class _Run(QRunnable):
    def __init__(self, worker: "Worker", token: int, key, job, on_done):
        super().__init__()
        self.worker, self.token, self.key, self.job, self.on_done = worker, token, key, job, on_done

    def run(self):
        if self.key is not None and self.worker.latest.get(self.key) != self.token:
            result = STALE                         # a newer job of this key was asked for: skip the work
        else:
            result = _guarded(self.job, self.worker.memory())
        self.worker.signals.done.emit(self.token, self.key, self.on_done, result)


class Worker(QObject):
    def __init__(self, settings, actor: str = "person:desktop", parent=None):
        super().__init__(parent)
        self.settings, self.actor = settings, actor
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)             # one connection, used by one thread at a time
        self.signals = _Signals(self)
        self.signals.done.connect(self._deliver)
        self.latest: dict = {}
        self.pending = 0
        self._token = 0
        self._memory: Memory | None = None
        self.closed = False

    def memory(self) -> Memory:
        if self._memory is None:                   # opened on the worker thread, used only there
            self._memory = Memory(self.settings, actor=self.actor)
        return self._memory

    def submit(self, job, on_done, key=None) -> int:
        """Run `job(memory)` on the worker thread; `on_done(result)` runs on the UI thread."""
        self._token += 1
        if self.closed:
            # a signal that fired while the window closed: no job reopens the store after close
            # (one did, on a store the tests had already dropped)
            return self._token
        if key is not None:
            self.latest[key] = self._token
        self.pending += 1
        self.pool.start(_Run(self, self._token, key, job, on_done))
        return self._token

    def _deliver(self, token, key, on_done, result):
        self.pending -= 1
        if result is STALE or (key is not None and self.latest.get(key) != token):
            return                                 # a newer job of this key was asked for: drop this one
        on_done(result)

    def close(self):
        self.closed = True
        self.pool.waitForDone(10000)
        if self._memory is not None:
            self._memory.close()
            self._memory = None


class _Long(QRunnable):
    def __init__(self, runner: "Background", settings, actor, job, on_done, on_progress):
        super().__init__()
        self.runner, self.settings, self.actor = runner, settings, actor
        self.job, self.on_done, self.on_progress = job, on_done, on_progress

    def run(self):
        def report(value):
            if self.on_progress is not None:
                self.runner.signals.progress.emit(self.on_progress, value)

        def work():
            with Memory(self.settings, actor=self.actor) as memory:
                return self.job(memory, report)

        self.runner.signals.done.emit(0, None, self.on_done, _guarded(work))


class Background(QObject):
    def __init__(self, settings, actor: str = "person:desktop", parent=None):
        super().__init__(parent)
        self.settings, self.actor = settings, actor
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(2)             # an import and a metabolism task side by side
        self.signals = _Signals(self)
        self.signals.done.connect(self._deliver)
        self.signals.progress.connect(lambda callback, value: callback(value))
        self.running = 0

    def start(self, job, on_done, on_progress=None, actor: str | None = None) -> None:
        """`job(memory, report)` on a thread of its own; `report(value)` calls `on_progress(value)`
        on the UI thread; `on_done(result)` runs there at the end."""
        self.running += 1
        self.pool.start(_Long(self, self.settings, actor or self.actor, job, on_done, on_progress))

    def _deliver(self, _token, _key, on_done, result):
        self.running -= 1
        on_done(result)

    def close(self):
        self.pool.waitForDone(30000)
