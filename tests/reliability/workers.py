"""Workloads for the reliability suites, run as child processes:

    python -m tests.reliability.workers KIND HOME SEED [VAULT]

Each prints one JSON line per acknowledged operation, after the call returned (committed), and
flushes it, so the parent knows exactly what was acknowledged when it kills the child. They run
until killed.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from tidemind.memory import Memory

WORDS = ["kites", "wind", "tomatoes", "irrigation", "lighthouse", "harbour", "ledger", "compiler", "sourdough",
         "glacier", "violin", "orbit", "granite", "lantern", "meadow", "pepper"]
SCOPE = "project:crash"


def ack(**fields) -> None:
    print(json.dumps(fields), flush=True)


def digests(m: Memory, rng: random.Random, seed: int) -> None:
    i = 0
    while True:
        i += 1
        if rng.random() < 0.3:      # several facts: several units of one capture, in one transaction
            text = "\n".join(f"- fact {seed}-{i}-{j} about {rng.choice(WORDS)} and {rng.choice(WORDS)}" for j in range(3))
        else:
            text = f"memory {seed}-{i}: the {rng.choice(WORDS)} needs {rng.choice(WORDS)}"
        r = m.digest(text, scope=SCOPE, session=f"s{seed}")
        ack(op="digest", ids=r["node_ids"], text=text)


def corrections(m: Memory, rng: random.Random, seed: int) -> None:
    i = 0
    while True:
        i += 1
        text = f"the build server of team {seed}-{i} listens on port {1000 + i}"
        node = m.digest(text, scope=SCOPE)["node_ids"][0]
        ack(op="digest", ids=[node], text=text)
        fixed = f"correction: the build server of team {seed}-{i} listens on port {5000 + i}"
        r = m.correct(node, fixed)
        ack(op="correct", old=node, new=r["node_ids"][0], text=fixed)


def imports(m: Memory, rng: random.Random, seed: int, vault: Path) -> None:
    from tidemind.importers.engine import sync

    k = 0
    while True:
        k += 1
        notes = sorted(vault.glob("*.md"))
        roll = rng.random()
        if roll < 0.5 or len(notes) < 3:
            (vault / f"note-{seed}-{k}.md").write_text(f"Note {k} says the lighthouse logged {rng.randint(0, 10**6)} ships.\n")
        elif roll < 0.8:
            rng.choice(notes).write_text(f"Edited in round {k}: the harbour counted {rng.randint(0, 10**6)} boats.\n")
        else:
            rng.choice(notes).unlink()
        r = sync(m, "obsidian", vault, "vault:crash")
        ack(op="import", batch=r["batch"])


def metabolism(m: Memory, rng: random.Random, seed: int) -> None:
    from tidemind.metabolism.scheduler import ordered_tasks, owner_id, run_task

    n = 0
    while True:
        n += 1
        for task in ordered_tasks():
            if not task.needs_llm:
                r = run_task(m, task, owner_id(), batch=40)
                ack(op="task", task=task.name, status=r["status"])
        for j in range(5):
            text = f"round {seed}-{n}-{j}: the {rng.choice(WORDS)} and the {rng.choice(WORDS)} by the {rng.choice(WORDS)}"
            ack(op="digest", ids=m.digest(text, scope=SCOPE, session=f"m{seed}")["node_ids"], text=text)


KINDS = {"digests": digests, "corrections": corrections, "imports": imports, "metabolism": metabolism}


if __name__ == "__main__":
    kind, home, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Memory.open(home) as memory:
        extra = [Path(sys.argv[4])] if kind == "imports" else []
        KINDS[kind](memory, random.Random(seed), seed, *extra)
