"""The one definition of "live and in scope". Every read path builds its WHERE clause here.

Without `as_of` a node is visible when its status is `live` and its scope is one the caller
may read. `as_of` answers for either clock:
  - valid clock: the fact held at T   (valid_from <= T < valid_to)
  - recorded clock: the store held it at T (recorded_at <= T < superseded_at).
  An as-of read is the only way a `superseded` node is ever seen, and it comes back flagged
  `superseded_by`: on the valid clock while its fact held (a dated correction closes the old
  fact's valid_to at its own start; an undated one at the old start: the old fact never held).
Archived and forgotten nodes are never visible, whatever the clock, and neither are the earlier
versions of a memory that was archived or forgotten. A unit awaiting
clarification (`held_until` in the future) is not visible either, on any clock; its hold lapses
by itself at that time, read against the real time of the read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..errors import ScopeDenied
from ..timeutil import system_clock, to_iso


@dataclass(frozen=True)
class AsOf:
    valid: str | None = None      # canonical ISO timestamps (tidemind.timeutil)
    recorded: str | None = None

    @property
    def active(self) -> bool:
        return bool(self.valid or self.recorded)


def unheld(alias: str, now: str | None = None) -> tuple[str, list]:
    """SQL fragment: the node is not awaiting clarification (no hold, or its hold has lapsed).
    Part of `visible`; the metabolism also uses it alone, so no pass builds a title, a link or a
    crystal from words that are not searchable yet."""
    return f"({alias}.held_until IS NULL OR {alias}.held_until <= ?)", [now or to_iso(system_clock())]


HELD = ("hide", "only", "include")


def visible(alias: str, scopes: Sequence[str], as_of: AsOf | None = None, now: str | None = None,
            held: str = "hide") -> tuple[str, list]:
    """SQL fragment (no leading AND) and its parameters for nodes aliased `alias`. `held`: every
    read hides units awaiting clarification ("hide"); an abstention names the ones that match
    ("only", by id, never by their words), and the list of questions shows them ("include")."""
    if held not in HELD:
        raise ValueError(held)
    if not scopes:
        raise ScopeDenied("no readable scope given")
    a = alias
    params: list = list(scopes)
    marks = ",".join("?" * len(scopes))
    clauses = [f"{a}.scope IN ({marks})"]
    if as_of is not None and as_of.active:
        # a superseded version answers for its own time: on the recorded clock while it was the
        # current version, on the valid clock while its fact held (supersede closes valid_to)
        clauses.append(f"{a}.status IN ('live','superseded')")
        if as_of.recorded:
            clauses.append(f"{a}.recorded_at <= ? AND ({a}.superseded_at IS NULL OR {a}.superseded_at > ?)")
            params += [as_of.recorded, as_of.recorded]
        # an earlier version is hidden once the memory it became (by correction or merge) was
        # archived or forgotten: archive hides the whole memory, on every clock
        clauses.append(f"({a}.status = 'live' OR NOT EXISTS (WITH RECURSIVE later(id) AS (SELECT {a}.superseded_by"
                       " UNION SELECT x.superseded_by FROM nodes x JOIN later ON x.id = later.id"
                       " WHERE x.superseded_by IS NOT NULL)"
                       " SELECT 1 FROM later JOIN nodes h ON h.id = later.id WHERE h.status IN ('archived','forgotten')))")
    else:
        clauses.append(f"{a}.status = 'live'")
    if as_of is not None and as_of.valid:
        clauses.append(f"{a}.valid_from <= ? AND ({a}.valid_to IS NULL OR {a}.valid_to > ?)")
        params += [as_of.valid, as_of.valid]
    if held != "include":
        hold, hold_params = unheld(a, now)
        clauses.append(f"NOT {hold}" if held == "only" else hold)
        params += hold_params
    return " AND ".join(clauses), params


def archived(alias: str, scopes: Sequence[str]) -> tuple[str, list]:
    """SQL fragment for what a person archived in these scopes. Never served to an agent or a
    search: only a person's list of what they hid (to find it again and restore it) reads it."""
    if not scopes:
        raise ScopeDenied("no readable scope given")
    return f"{alias}.scope IN ({','.join('?' * len(scopes))}) AND {alias}.status = 'archived'", list(scopes)
