"""`tidemind rederive [--task T] [--since DATE]`: redo derived fields and syntheses with the
model, once it is configured and reachable.

What a fallback wrote is labelled with the generator that really ran (an offline one), so it is
known and can be redone: the syntheses of crystallize, temporal and lessons made offline (or by a
retired offline generator) since DATE are recomputed with the model and replace the offline
ones (the review item follows); annotations made while the model was configured but did not
answer (annotate marks those rows `+offline-fallback`) are made due again and annotate runs until
nothing is due. A model's own output is never replaced by an offline one: without a model, only
syntheses of a retired offline generator (the old templates) are redone.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import Conflict, InvalidInput
from ..llm import Watched, load_strategy
from ..memory import Memory
from ..store import audit, derived, immediate, provider_state, syntheses
from ..timeutil import Clock, parse_iso, system_clock, to_iso
from . import load_all
from .scheduler import owner_id, run_task
from .synthesize import OFFLINE, RETIRED

TASKS = ("annotate", "crystallize", "temporal", "lessons")
KINDS = {"crystallize": ("crystal",), "temporal": ("daily", "weekly"), "lessons": ("lesson",)}
ROUNDS = 1000            # bound on task runs per rederive (each is one bounded batch)


def _offline(generator: str) -> bool:
    return generator in RETIRED or generator.endswith(f"/{OFFLINE}")


def rederive(memory: Memory, tasks: Sequence[str] = (), since: str | None = None, llm=None,
             clock: Clock = system_clock) -> dict:
    unknown = set(tasks) - set(TASKS)
    if unknown:
        raise InvalidInput(f"rederive knows the tasks {', '.join(TASKS)} (not {', '.join(sorted(unknown))})")
    since = parse_iso(since) if since else None
    now = to_iso(clock())
    if llm is not None:
        known = provider_state.get(memory.conn, llm.name)
        if known and known["state"] == "unreachable" and known["retry_at"] and known["retry_at"] > now:
            raise Conflict(f"{llm.name} is unreachable ({known['last_error']}); rederive redoes with the model,"
                           f" so run it when the model is back (the metabolism tries again at {known['retry_at']})")
    watched = Watched(llm) if llm is not None else None
    owner = owner_id()
    out = {}
    for name in tasks or TASKS:
        if name == "annotate":
            out[name] = _annotate(memory, since, watched, owner, clock)
        else:
            out[name] = _syntheses(memory, name, since, watched, owner, clock)
        if watched is not None and watched.outage is not None:
            out[name]["stopped"] = f"{watched.name} became unreachable: {watched.outage}"
            break
    return {"since": since, "llm": llm.name if llm is not None else None, "tasks": out}


def _run(memory, name, watched, owner, clock, redo=frozenset(), work_key=""):
    """Run the task batch after batch until it does nothing more (or waits, or is busy)."""
    task = load_all()[name]
    done, last = 0, {}
    for _ in range(ROUNDS):
        last = run_task(memory, task, owner, clock, llm=watched, redo=redo)
        step = last.get(work_key, 0) if last["status"] == "ok" else 0
        done += step
        if not step:
            break
    return done, last


def _annotate(memory, since, watched, owner, clock) -> dict:
    if watched is None:
        return {"redone": 0, "note": "no model configured: offline annotations are already the current ones"}
    strategy = load_strategy("annotate", memory.settings.home)
    generator = f"annotate/{watched.name}/annotate@{strategy.version}"
    now = to_iso(clock())
    with immediate(memory.conn):
        nodes = derived.fallback_nodes(memory.conn, since)
        derived.release(memory.conn, nodes, "title", now)
        if nodes:
            audit.record(memory.conn, at=now, actor="rederive", action="rederive_due", task="annotate",
                         nodes=nodes[:200], count=len(nodes))
    done, last = _run(memory, "annotate", watched, owner, clock, work_key="annotated")
    return {"fallbacks_made_due": len(nodes), "annotated": done, "status": last.get("status"),
            "generator": generator}


def _syntheses(memory, name, since, watched, owner, clock) -> dict:
    rows = syntheses.current_since(memory.conn, KINDS[name], since)
    # with a model: what an offline generator wrote; without one: only the retired templates
    redo = frozenset(r["id"] for r in rows if (_offline(r["generator"]) if watched is not None
                                               else r["generator"] in RETIRED))
    if not redo:
        return {"candidates": 0, "redone": 0}
    key = {"crystallize": "crystals", "temporal": "digests", "lessons": "lessons"}[name]
    done, last = _run(memory, name, watched, owner, clock, redo=redo, work_key=key)
    still = [r for r in syntheses.current_since(memory.conn, KINDS[name], since) if r["id"] in redo]
    return {"candidates": len(redo), "redone": len(redo) - len(still), "status": last.get("status")}
