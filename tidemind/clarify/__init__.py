"""Clarification: ambiguity as a handled state instead of a silent guess.

At capture (`on_capture`, inside the digest's transaction) each unit is read by `detect`:
relative dates are anchored to the moment the words were written (a derived field, `anchors`,
searchable and regenerable); a genuinely ambiguous date, name or acronym may hold the unit out
of every read with one concrete question. The hold is bounded (`hold_hours`, after which the
unit is searchable anyway) and skippable; an answer goes to the clarified layer (append-only,
above derived, below authored) and becomes part of what the unit means for search. The
authored text is never touched.

Settings (`[clarify]` in config.toml or "clarify" in config.json):
  ask = "ambiguous" (default) | "never"     never: anchors only, no questions, no holds
  hold_hours = 72                            how long a question may keep a unit out of search
  kinds = ["date", "referent", "acronym"]    which kinds of question may be asked
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ..errors import Conflict, InvalidInput, NotFound
from ..store import audit, clarifications, derived, immediate, migrations, nodes, vectors
from ..timeutil import from_iso, system_clock, to_iso
from . import detect

if TYPE_CHECKING:
    from ..memory import Memory

GENERATOR = "clarify:capture-time"
KINDS = ("date", "referent", "acronym")
MAX_ANSWER_CHARS = 500


@dataclass(frozen=True)
class Policy:
    ask: bool = True
    hold_hours: float = 72.0
    kinds: tuple[str, ...] = KINDS


def policy(settings) -> Policy:
    raw = settings.extra.get("clarify", {}) or {}
    if not isinstance(raw, dict):
        raise InvalidInput("setting clarify must be a table (ask, hold_hours, kinds)")
    ask = raw.get("ask", "ambiguous")
    if ask not in ("ambiguous", "never"):
        raise InvalidInput(f"setting clarify.ask must be \"ambiguous\" or \"never\", got {ask!r}")
    try:
        hold = float(raw.get("hold_hours", 72))
    except (TypeError, ValueError):
        raise InvalidInput(f"setting clarify.hold_hours must be a number, got {raw.get('hold_hours')!r}") from None
    if not 0 < hold <= 24 * 365:
        raise InvalidInput("setting clarify.hold_hours must be between 0 and 8760")
    kinds = tuple(raw.get("kinds", KINDS))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise InvalidInput(f"setting clarify.kinds: unknown kind {unknown[0]!r} (known: {', '.join(KINDS)})")
    return Policy(ask == "ambiguous", hold, kinds)


class ScopeLexicon:
    """What one scope's visible units say names and acronyms mean (the `referents` table);
    the capture being read is left out, so a unit never vouches for itself."""

    def __init__(self, conn, scope: str, exclude_capture: int | None):
        self.conn, self.scope, self.exclude = conn, scope, exclude_capture
        self._memo: dict[tuple[str, str], list[str]] = {}

    def _lookup(self, kind: str, word: str) -> list[str]:
        key = (kind, word)
        if key not in self._memo:
            self._memo[key] = clarifications.readings_for(self.conn, self.scope, kind, word, self.exclude)
        return self._memo[key]

    def names(self, first: str) -> list[str]:
        return self._lookup("name", first)

    def expansions(self, acronym: str) -> list[str]:
        return self._lookup("acronym", acronym)


def index_unit(conn, node_id: int, scope: str, text: str) -> None:
    """Add a unit's names and acronym expansions to its scope's lexicon (every write path)."""
    clarifications.index_readings(conn, node_id, scope, detect.readings(text))


def _backfill_referents(conn) -> None:
    """Migration: create the lexicon and read every unit already stored into it."""
    conn.execute(clarifications.REFERENTS_DDL)
    for node_id, scope, content in nodes.unforgotten_texts(conn):
        index_unit(conn, node_id, scope, content)


migrations.register("clarify", [("0001_referents", _backfill_referents)])


def on_capture(m: "Memory", *, capture_id: int, scope: str, body: str, units: Sequence[tuple[int, int, int]],
               anchor: str, now: str) -> list[dict]:
    """Anchors and at most one question per unit, inside the digest's transaction.
    `units` are (node_id, start, end) in `body`; `anchor` is when the words were written."""
    rules = policy(m.settings)
    lexicon = ScopeLexicon(m.conn, scope, capture_id)

    day = from_iso(anchor).date()
    hold_until = to_iso(from_iso(now) + dt.timedelta(hours=rules.hold_hours))
    asked = []
    for node_id, start, end in units:
        unit = body[start:end]
        index_unit(m.conn, node_id, scope, unit)
        dates = detect.relative_dates(unit, day)
        refs = detect.references(unit, body, body[:start], lexicon)
        anchors = dates.anchors + refs.anchors
        if anchors:
            derived.put(m.conn, node_id, "anchors", "\n".join(anchors), GENERATOR, now)
        if not rules.ask:
            continue
        wanted = [a for a in dates.ambiguities + refs.ambiguities if a.kind in rules.kinds]
        if not wanted:
            continue
        first = wanted[0]           # one concrete question: the rest would be an interrogation
        question_id = clarifications.ask(m.conn, node_id=node_id, scope=scope, kind=first.kind, term=first.term,
                                         question=first.question, options=first.options, at=now,
                                         hold_until=hold_until)
        audit.record(m.conn, at=now, actor=m.actor, action="clarify_ask", node_id=node_id, question_id=question_id,
                     kind=first.kind)
        asked.append({"question_id": question_id, "node_id": node_id, "kind": first.kind, "term": first.term,
                      "question": first.question, "options": first.options, "hold_until": hold_until})
    return asked


def _question(m: "Memory", ref: int, by_node: bool) -> dict:
    """The open question for `ref` (a question id, or a node id when `by_node`) in a writable scope."""
    if isinstance(ref, bool) or not isinstance(ref, int) or ref <= 0:
        raise InvalidInput(f"{'node' if by_node else 'question'} must be a positive whole number, got {ref!r}")
    q = clarifications.open_for_node(m.conn, ref) if by_node else clarifications.get(m.conn, ref)
    if q is None or (m.writable is not None and q["scope"] not in m.writable):
        what = f"open question about node {ref}" if by_node else f"question {ref}"
        raise NotFound(f"no {what} in a scope writable here (list them with `tidemind clarify`)")
    if q["state"] != "open":
        raise Conflict(f"question {q['id']} is already {q['state']}")
    node = nodes.get_any(m.conn, q["node_id"])
    if node is None or node["status"] != "live":
        raise Conflict(f"question {q['id']} is about node {q['node_id']}, which is {node and node['status']}")
    return q


def answer(m: "Memory", ref: int, text, by_node: bool = False) -> dict:
    """Append the person's answer to the clarified layer; the unit becomes searchable with it."""
    body, warnings = m._clean_content(text)
    if len(body) > MAX_ANSWER_CHARS:
        raise InvalidInput(f"an answer is at most {MAX_ANSWER_CHARS} characters (this one is {len(body):,});"
                           " a longer explanation is a memory of its own: digest it")
    body = " ".join(body.split())
    now = m.now()
    with immediate(m.conn):
        q = _question(m, ref, by_node)
        clarified_id = clarifications.append(m.conn, node_id=q["node_id"], question_id=q["id"], term=q["term"],
                                             answer=body, actor=m.actor, at=now)
        clarifications.close(m.conn, q["id"], "answered", now)
        vectors.enqueue(m.conn, q["node_id"], now)      # the vector reads the clarification too
        audit.record(m.conn, at=now, actor=m.actor, action="clarify_answer", node_id=q["node_id"],
                     question_id=q["id"], clarified_id=clarified_id)
    return {"question_id": q["id"], "node_id": q["node_id"], "state": "answered", "clarified": f"{q['term']}: {body}",
            "warnings": warnings, "done": f"node {q['node_id']} is searchable, read as {q['term']}: {body}"}


def skip(m: "Memory", ref: int, by_node: bool = False) -> dict:
    """Leave the unit as written, searchable now."""
    now = m.now()
    with immediate(m.conn):
        q = _question(m, ref, by_node)
        clarifications.close(m.conn, q["id"], "skipped", now)
        audit.record(m.conn, at=now, actor=m.actor, action="clarify_skip", node_id=q["node_id"], question_id=q["id"])
    return {"question_id": q["id"], "node_id": q["node_id"], "state": "skipped",
            "done": f"node {q['node_id']} is searchable as written"}


def listing(m: "Memory", scopes: Sequence[str], state: str | None = "open", limit: int = 200) -> list[dict]:
    if state not in (None, "open", "answered", "skipped", "closed"):
        raise InvalidInput(f"state is one of open, answered, skipped, closed (got {state!r})")
    now = to_iso(system_clock())      # the predicate reads holds against the real time, so does this
    out = clarifications.listing(m.conn, scopes, state, limit)
    for q in out:
        q["held"] = q["state"] == "open" and q["hold_until"] > now
    return out
