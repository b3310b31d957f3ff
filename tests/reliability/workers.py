"""Workloads for the reliability suites, run as child processes:

    python -m tests.reliability.workers KIND HOME SEED ROUNDS [VAULT]

Each prints one JSON line per acknowledged operation, after the call returned (committed), and
flushes it, so the parent knows exactly what was acknowledged when it kills the child. They run
ROUNDS rounds, or until killed when ROUNDS is 0.
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


def rounds(limit: int):
    i = 0
    while not limit or i < limit:
        i += 1
        yield i


def digests(m: Memory, rng: random.Random, seed: int, limit: int) -> None:
    for i in rounds(limit):
        if rng.random() < 0.3:      # several facts: several units of one capture, in one transaction
            text = "\n".join(f"- fact {seed}-{i}-{j} about {rng.choice(WORDS)} and {rng.choice(WORDS)}" for j in range(3))
        else:
            text = f"memory {seed}-{i}: the {rng.choice(WORDS)} needs {rng.choice(WORDS)}"
        r = m.digest(text, scope=SCOPE, session=f"s{seed}")
        ack(op="digest", ids=r["node_ids"], text=text)


def corrections(m: Memory, rng: random.Random, seed: int, limit: int) -> None:
    for i in rounds(limit):
        text = f"the build server of team {seed}-{i} listens on port {1000 + i}"
        node = m.digest(text, scope=SCOPE)["node_ids"][0]
        ack(op="digest", ids=[node], text=text)
        fixed = f"correction: the build server of team {seed}-{i} listens on port {5000 + i}"
        r = m.correct(node, fixed)
        ack(op="correct", old=node, new=r["node_ids"][0], text=fixed)


def imports(m: Memory, rng: random.Random, seed: int, limit: int, vault: Path) -> None:
    from tidemind.importers.engine import sync

    for k in rounds(limit):
        notes = sorted(vault.glob("*.md"))
        roll = rng.random()
        if roll < 0.5 or len(notes) < 3:
            (vault / f"note-{seed}-{k}.md").write_text(f"Note {k} says the lighthouse logged {rng.randint(0, 10**6)} ships.\n")
        elif roll < 0.8:
            rng.choice(notes).write_text(f"Edited in round {k}: the harbour counted {rng.randint(0, 10**6)} boats.\n")
        else:
            rng.choice(notes).unlink()
        r = sync(m, "obsidian", vault, "vault:crash")
        if r["batch"] is not None:          # (a sync that changed nothing records no batch)
            ack(op="import", batch=r["batch"])


def metabolism(m: Memory, rng: random.Random, seed: int, limit: int) -> None:
    from tidemind.metabolism.scheduler import ordered_tasks, owner_id, run_task

    for n in rounds(limit):
        for task in ordered_tasks():
            if not task.needs_llm:
                r = run_task(m, task, owner_id(), batch=40)
                ack(op="task", task=task.name, status=r["status"])
        for j in range(5):
            text = f"round {seed}-{n}-{j}: the {rng.choice(WORDS)} and the {rng.choice(WORDS)} by the {rng.choice(WORDS)}"
            ack(op="digest", ids=m.digest(text, scope=SCOPE, session=f"m{seed}")["node_ids"], text=text)


def desktop(m: Memory, rng: random.Random, seed: int, limit: int) -> None:
    """What a person does in the desktop app: write, search, tag, reject a tag, archive and bring
    back, correct."""
    for i in rounds(limit):
        text = f"desk note {seed}-{i}: call the {rng.choice(WORDS)} shop about the {rng.choice(WORDS)}"
        node = m.digest(text, scope=SCOPE)["node_ids"][0]
        ack(op="digest", ids=[node], text=text)
        m.recall(f"{rng.choice(WORDS)} shop", scopes=[SCOPE])
        m.tag_add(node, "errand")
        m.tag_decide(node, "errand", reject=True)
        m.archive(node)
        m.unarchive(node)
        if i % 3 == 0:
            fixed = text.replace("call", "email")
            ack(op="correct", old=node, new=m.correct(node, fixed)["node_ids"][0], text=fixed)


KINDS = {"digests": digests, "corrections": corrections, "imports": imports, "metabolism": metabolism,
         "desktop": desktop}


if __name__ == "__main__":
    kind, home, seed, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with Memory.open(home) as memory:
        extra = [Path(sys.argv[5])] if kind == "imports" else []
        KINDS[kind](memory, random.Random(seed), seed, limit, *extra)
