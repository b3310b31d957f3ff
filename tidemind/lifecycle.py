"""Which rows carry a memory's words, and what each lifecycle step does with them.

A memory's words are not only in its node: earlier versions and the versions merged into it hold
them, its capture and stream entry, its derived fields, the anchors and questions of other
memories that copied its readings ("CR = change request" learnt from it), review items and
syntheses that quote it, the importer's keys, audit details. `carriers` answers that question once;
`forget`, `archive` and `correct` all start from it, so a new kind of copy is handled in one
place (before, forget walked its own list, and archiving or correcting a memory left the anchors
it taught searchable through other memories).

- forget erases every carrier (the node and its family, their captures' spans and stream
  entries, derived rows, the copies in other memories, review payloads, syntheses, tags, links,
  import keys, audit details) and keeps hash tombstones;
- archive hides the memory (and, through the visibility predicate, its earlier versions on every
  clock) and withdraws the copies other memories carry; unarchive brings them back;
- correct withdraws the copies the replaced version gave (the new version teaches its own).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import apsw

from .store import clarifications, nodes, review, syntheses

if TYPE_CHECKING:
    from .memory import Memory


@dataclass
class Carriers:
    node_id: int
    family: list[dict]                              # the node and every earlier or merged version
    captures: dict[int, list[dict]] = field(default_factory=dict)   # capture id -> family units in it
    copies: dict[int, tuple[list[int], list]] = field(default_factory=dict)  # member -> (units quoting it, readings)
    review_items: list[int] = field(default_factory=list)
    syntheses: list[int] = field(default_factory=list)

    @property
    def quoting(self) -> list[int]:
        """Other memories whose anchors or questions copied words of the family."""
        family = {r["id"] for r in self.family}
        return sorted({d for deps, _ in self.copies.values() for d in deps} - family)


def carriers(conn: apsw.Connection, node_id: int) -> Carriers:
    family = [r for r in nodes.get_any_many(conn, nodes.family_ids(conn, node_id))]
    out = Carriers(node_id, family)
    for row in family:
        if row["capture_id"] is not None:
            out.captures.setdefault(row["capture_id"], []).append(row)
        out.copies[row["id"]] = clarifications.quoted_by_others(conn, row["id"])
    ids = [r["id"] for r in family]
    out.review_items = review.naming(conn, ids)
    out.syntheses = syntheses.citing(conn, ids)
    return out


def withdraw_copies(m: "Memory", found: Carriers, now: str) -> int:
    """Archive and correct: the anchors other memories copied from the family are read again from
    the lexicon as it is now (which no longer has the hidden or replaced words)."""
    from . import clarify

    return clarify.refresh_acronym_anchors(m, found.quoting, now)
