"""Which stored unit each parsed unit continues.

A unit continues a stored one, in this order:

1. by name: the same key (an Obsidian heading, a Logseq `id::`);
2. by text: a stored unit of the same note with the same content hash (a block moved within
   its page, or one that came back);
3. by text anywhere: a stored unit of another note whose note no longer holds it (a renamed or
   moved file), or a forgotten unit (it stays forgotten, wherever it moved);
4. by place, for outliner blocks only: between the two nearest units matched above, the
   unmatched stored units and the unmatched parsed ones pair up in order (an edited block).

Inserting, moving or referencing a block never rewrites another block's history: the blocks
around it match by name or text, and only what is left in the same gap pairs by place. What
matches nothing is new; a stored unit nothing continues vanished.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import Unit
from .store import forgotten_key


@dataclass
class Step:
    unit: Unit
    hash: str
    position: int                  # the unit's place in its note
    row: dict | None = None        # the stored unit it continues
    hidden: str | None = None      # or the forgotten one (its hashed key)
    kept_out: str | None = None    # "forgot" / "archived": a person took these words out; not stored


def note_of(key: str) -> str:
    return key.split("#", 1)[0]


def match(units: list[Unit], hashes: list[str], known: dict[str, dict],
          hidden: dict[str, dict]) -> tuple[list[Step], dict[str, dict], set[str]]:
    """(steps in file order, each with its key set; stored units nothing continues; forgotten
    rows nothing continues). `known` holds the stored units of the changed and vanished notes."""
    steps, place = [], {}
    for unit, h in zip(units, hashes):
        place[unit.path] = place.get(unit.path, -1) + 1
        steps.append(Step(unit, h, place[unit.path]))
    taken: set[str] = set()
    named: set[str] = set()
    for s in steps:                                             # 1. by name
        if s.unit.anchor is None:
            continue
        if s.unit.key in named:          # a second block with the same id:: (a copied file): nameless
            s.unit.anchor, s.unit.key = None, ""
            continue
        named.add(s.unit.key)
        if s.unit.key in known:
            s.row = known[s.unit.key]
            taken.add(s.unit.key)
        elif forgotten_key(s.unit.key) in hidden:
            s.hidden = forgotten_key(s.unit.key)
    rows_of: dict[str, list[dict]] = {}
    same_text: dict[tuple[str, str], list[dict]] = {}           # (note, hash) -> its rows, in note order
    for key, row in sorted(known.items(), key=lambda kv: (kv[1].get("position", 0), kv[0])):
        rows_of.setdefault(note_of(key), []).append(row)
        same_text.setdefault((note_of(key), row["content_hash"]), []).append(row)
    # (each step looks up its note's rows of its text, not every row of the note: a page of 20,000
    # blocks took 35 s to sync again after one block was added above them)
    first_open: dict[tuple[str, str], int] = {}                 # rows before it are taken (and stay so)
    for s in _open(steps):                                      # 2. by text, same note
        rows, i = same_text.get((s.unit.path, s.hash), ()), first_open.get((s.unit.path, s.hash), 0)
        while i < len(rows) and rows[i]["unit_key"] in taken:
            i += 1
        first_open[(s.unit.path, s.hash)] = i
        if i < len(rows):
            s.row = rows[i]
            taken.add(rows[i]["unit_key"])
    hidden_by_hash: dict[str, list[str]] = {}
    continued = {s.hidden for s in steps}
    for key, row in sorted(hidden.items()):
        if key not in continued:
            hidden_by_hash.setdefault(row["content_hash"], []).append(key)
    moved_by_hash: dict[str, list[dict]] = {}
    for key, row in sorted(known.items()):
        if key not in taken and row["status"] == "live":
            moved_by_hash.setdefault(row["content_hash"], []).append(row)
    for s in _open(steps):                                      # 3. by text, anywhere
        if hidden_by_hash.get(s.hash):
            s.hidden = hidden_by_hash[s.hash].pop(0)
            continue
        for row in moved_by_hash.get(s.hash, ()):
            if row["unit_key"] not in taken:
                s.row = row
                taken.add(row["unit_key"])
                break
    steps_of: dict[str, list[Step]] = {}
    for s in steps:
        steps_of.setdefault(s.unit.path, []).append(s)
    for path, rows in rows_of.items():                          # 4. by place, outliner blocks
        _pair_by_place(steps_of.get(path, []), rows, taken)
    used = set(known) | taken
    for s in steps:                                             # keys: a name, the continued key, or a slot
        if s.unit.anchor is not None:
            pass
        elif s.row is not None:
            s.unit.key = s.row["unit_key"]
        else:
            base = f"{s.unit.path}#{s.unit.slot or 'b'}"
            key, n = base, 1
            while key in used or forgotten_key(key) in hidden and forgotten_key(key) != s.hidden:
                n += 1
                key = f"{base}.{n}"
            s.unit.key = key
        used.add(s.unit.key)
    vanished = {k: r for k, r in known.items() if k not in taken}
    left_hidden = set(hidden) - {s.hidden for s in steps if s.hidden}
    return steps, vanished, left_hidden


def _open(steps: list[Step]):
    return [s for s in steps if s.row is None and s.hidden is None]


def _pair_by_place(steps: list[Step], rows: list[dict], taken: set[str]) -> None:
    """Between consecutive matched units, unmatched blocks and unmatched stored units of the
    same gap pair up in order; a gap whose ends crossed (blocks moved past each other) pairs
    nothing."""
    rank = {r["unit_key"]: i for i, r in enumerate(rows)}
    # skip[i]: every row from i up to skip[i] is taken (taken rows stay taken), so finding the
    # free rows of a gap does not walk the taken ones again and again (matched units whose
    # places cross made the gaps overlap: quadratic in the rows of the note)
    skip = list(range(len(rows) + 1))

    def first_free(i: int) -> int:
        passed = []
        while i < len(rows) and rows[i]["unit_key"] in taken:
            passed.append(i)
            i = max(skip[i], i + 1)
        for k in passed:
            skip[k] = i
        return i

    gap: list[Step] = []
    low = -1
    for s in [*steps, None]:
        if s is not None and s.row is None and s.hidden is None:
            if s.unit.pairable:
                gap.append(s)
            continue
        if s is not None and (s.row is None or s.row["unit_key"] not in rank):
            continue                  # a forgotten unit, or one moved in from another note: no bound
        high = rank[s.row["unit_key"]] if s is not None else len(rows)
        free = first_free(low + 1) if gap and high > low else high
        for step in gap:              # the gap's blocks and its free rows pair up in order
            if free >= high:
                break
            step.row = rows[free]
            taken.add(rows[free]["unit_key"])
            free = first_free(free + 1)
        gap = []
        if s is not None:
            low = high
