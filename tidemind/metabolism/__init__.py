"""The metabolism: background tasks that propose, never overwrite.

Every task has one shape (name, interval, batch size, needs_llm, `run(ctx) -> report`) and may
write only derived rows, tag and link proposals (with a status), review items, heat, and the
audit rows for those. None may touch authored text: `tests/test_metabolism.py` checks every
node's content hash after every task has run repeatedly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, runtime_checkable

from ..memory import Memory


@dataclass
class TaskContext:
    memory: Memory
    now: Callable[[], str]            # injected clock (canonical ISO text)
    llm: object | None = None         # an LLM provider, or None offline
    batch: int | None = None          # overrides the task's batch size
    last_finished: str | None = None  # when this task last finished (None: never)
    stopping: Callable[[], bool] = lambda: False   # tasks check it between items (daemon shutdown)
    redo: frozenset = frozenset()     # ids of derived rows to make again now (`tidemind rederive`)
    notes: list[str] = field(default_factory=list)

    @property
    def conn(self):
        return self.memory.conn


@runtime_checkable
class Task(Protocol):
    name: str
    interval_s: int
    batch_size: int
    needs_llm: bool

    def run(self, ctx: TaskContext) -> dict: ...


TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    TASKS[task.name] = task
    return task


def load_all() -> dict[str, Task]:
    from . import (annotate, contradict, decay, dedup, embed, fingerprint, link_evaluate,  # noqa: F401
                   link_propose, reconsolidate, synthesize)  # each registers itself

    return TASKS
