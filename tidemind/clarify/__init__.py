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
  timezone = "Europe/Lisbon"                 where the person lives, for "tomorrow" (default: this
                                             machine's); a valid_at with its own offset wins
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ..errors import Conflict, InvalidInput, NotFound, check_id
from ..store import audit, clarifications, derived, fts, immediate, migrations, nodes, vectors
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
    timezone: dt.tzinfo | None = None      # None: this machine's local time


def policy(settings) -> Policy:
    raw = settings.extra.get("clarify", {}) or {}
    if not isinstance(raw, dict):
        raise InvalidInput("setting clarify must be a table (ask, hold_hours, kinds)")
    ask = raw.get("ask", "ambiguous")
    if ask not in ("ambiguous", "never"):
        raise InvalidInput(f"setting clarify.ask must be \"ambiguous\" or \"never\", got {ask!r}")
    hold = raw.get("hold_hours", 72)
    if isinstance(hold, bool) or not isinstance(hold, (int, float)):      # float("1_0") was 10, True was 1 hour
        raise InvalidInput(f"setting clarify.hold_hours must be a number, got {hold!r}")
    if not 0 < hold <= 24 * 365:
        raise InvalidInput("setting clarify.hold_hours must be between 0 and 8760")
    kinds = raw.get("kinds", KINDS)
    if not isinstance(kinds, (list, tuple)) or not all(isinstance(k, str) for k in kinds):
        raise InvalidInput(f"setting clarify.kinds must be a list of kinds ({', '.join(KINDS)}), got {kinds!r}")
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise InvalidInput(f"setting clarify.kinds: unknown kind {unknown[0]!r} (known: {', '.join(KINDS)})")
    zone = raw.get("timezone")
    tz = None
    if zone is not None:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            tz = ZoneInfo(str(zone))
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidInput(f"setting clarify.timezone: unknown time zone {zone!r} (e.g. \"Europe/Lisbon\")") from None
    return Policy(ask == "ambiguous", hold, kinds, tz)


def writer_day(anchor: str, written: str | None, rules: Policy) -> dt.date:
    """The calendar day the words were written on, where they were written: a `valid_at` date
    as given; a `valid_at` time with a non-UTC offset in that offset (the writer's own clock);
    any other time (UTC, as agents send it; no offset; the capture time) in the configured (or
    this machine's) time zone."""
    raw = (written or "").strip()
    if len(raw) == 10:
        return dt.date.fromisoformat(raw)
    if raw:
        moment = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        offset = moment.utcoffset()
        if offset is not None and offset != dt.timedelta(0):
            return moment.date()
    return from_iso(anchor).astimezone(rules.timezone).date()


class ScopeLexicon:
    """What one scope's visible units say names and acronyms mean (the `referents` table);
    the capture being read is left out, so a unit never vouches for itself."""

    def __init__(self, conn, scope: str, exclude_capture: int | None):
        self.conn, self.scope, self.exclude = conn, scope, exclude_capture
        self._memo: dict[tuple[str, str], tuple[list[str], set[int], dict[str, int]]] = {}
        self.used: set[int] = set()       # units whose readings were consulted since the last reset

    def _lookup(self, kind: str, word: str) -> list[str]:
        key = (kind, word)
        if key not in self._memo:
            self._memo[key] = clarifications.readings_for(self.conn, self.scope, kind, word, self.exclude)
        readings, sources, _ = self._memo[key]
        self.used |= sources
        return readings

    def names(self, first: str) -> list[str]:
        """Readings of a first name, when at least one comes from a person's doing ("Alex Chen
        said"): "Claude Code is configured" and "Claude Desktop has ..." are not two people."""
        strong = self._lookup("person", first)
        weak = self._lookup("name", first)
        if weak and len(strong) < 2:
            # a second word found nowhere but in this name is a surname ("Alex Rivera is the
            # designer"); one the scope also uses alone is a product's ("Claude Code", "the code")
            counts = self._memo[("name", first)][2]
            df, _ = fts.document_frequencies(self.conn, [w.lower() for w in weak], [self.scope])
            strong = strong + [w for w in weak if df.get(w.lower(), 0) <= counts[w]]
        if not strong:
            return []
        return list(dict.fromkeys(strong + weak))

    def expansions(self, acronym: str) -> list[str]:
        """What an acronym stands for here; once a person has answered what it means in this
        scope, that answer wins (asking again at every mention would be an interrogation)."""
        answered = self._lookup("answered_acronym", acronym)
        return answered[:1] if answered else self._lookup("acronym", acronym)


def index_unit(conn, node_id: int, scope: str, text: str) -> None:
    """Add a unit's names and acronym expansions to its scope's lexicon (every write path)."""
    clarifications.index_readings(conn, node_id, scope, detect.readings(text))


def _backfill_referents(conn) -> None:
    """Migration: create the lexicon and read every unit already stored into it."""
    conn.execute(clarifications.REFERENTS_DDL)
    _reread_referents(conn)


def _reread_referents(conn) -> None:
    """Migration: read every stored unit into the lexicon again (how names are read changed)."""
    clarifications.clear_referents(conn)
    for node_id, scope, content in nodes.unforgotten_texts(conn):
        index_unit(conn, node_id, scope, content)


migrations.register("clarify", [("0001_referents", _backfill_referents),
                                 ("0002_sources", clarifications.SOURCES_DDL),
                                 ("0003_person_readings", _reread_referents)],
                    postgresql=[("pg0001_baseline", clarifications.PG_REFERENTS_DDL)])


def on_capture(m: "Memory", *, capture_id: int, scope: str, body: str, units: Sequence[tuple[int, int, int]],
               anchor: str, now: str, rules: Policy | None = None, written: str | None = None) -> list[dict]:
    """Anchors and at most one question per unit, inside the digest's transaction.
    `units` are (node_id, start, end) in `body`; `anchor` is when the words were written
    (canonical UTC), `written` the caller's own form of it (valid_at), if any."""
    rules = rules or policy(m.settings)
    lexicon = ScopeLexicon(m.conn, scope, capture_id)

    day = writer_day(anchor, written, rules)
    hold_until = to_iso(from_iso(now) + dt.timedelta(hours=rules.hold_hours))
    asked = []
    earlier: list[int] = []
    for node_id, start, end in units:
        dates, refs = _read_unit(m, lexicon, node_id, scope, body, start, end, day, earlier, now)
        earlier.append(node_id)
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


def after_forget(m: "Memory", dependents: Sequence[int], readings: Sequence[tuple[str, str, str]], now: str,
                 text: str = "") -> None:
    """Inside forget's transaction: other units' questions and anchors that copied the
    forgotten unit's words lose them (a name or acronym question's text and options; an
    "ACRONYM = expansion" anchor line; the earlier versions of the anchors go too, since they
    held the same words). Date anchors and date questions never quote another unit."""
    copied = {f"{word} = {reading}" for kind, word, reading in readings if kind in ("acronym", "answered_acronym")}
    for node_id in dependents:
        clarifications.withdraw_quotes(m.conn, node_id, readings, now, text)
        current = derived.for_node(m.conn, node_id).get("anchors")
        if current and any(line in copied for line in current["value"].splitlines()):
            kept = [line for line in current["value"].splitlines() if line not in copied]
            derived.drop_field(m.conn, node_id, "anchors")
            if kept:
                derived.put(m.conn, node_id, "anchors", "\n".join(kept), current["generator"], now)


_ACRONYM_ANCHOR = re.compile(r"^[A-Z][A-Z0-9&]{1,7} = ")


def refresh_acronym_anchors(m: "Memory", node_ids: Sequence[int], now: str) -> int:
    """Re-read the acronym anchors ("CR = change request") of these units from the scope's lexicon
    as it is now: when the unit that taught an expansion is archived or corrected, the copy of its
    words in the others goes (the lexicon reads visible units only), and when it comes back, so
    does the anchor. Date anchors, read from the unit's own words and time, are kept. Returns how
    many units' anchors changed."""
    changed = 0
    for row in nodes.get_any_many(m.conn, node_ids):
        if row["status"] != "live":
            continue
        current = derived.for_node(m.conn, row["id"]).get("anchors")
        kept = [line for line in (current["value"].splitlines() if current else []) if not _ACRONYM_ANCHOR.match(line)]
        lexicon = ScopeLexicon(m.conn, row["scope"], row["capture_id"])
        found = detect.references(row["content"], row["content"], "", lexicon).anchors
        lines = kept + [a for a in found if a not in kept]
        if lines == (current["value"].splitlines() if current else []):
            continue
        derived.drop_field(m.conn, row["id"], "anchors")
        if lines:
            derived.put(m.conn, row["id"], "anchors", "\n".join(lines), GENERATOR, now)
        changed += 1
    return changed


def _read_unit(m: "Memory", lexicon: ScopeLexicon, node_id: int, scope: str, body: str, start: int, end: int,
               day: dt.date, earlier: Sequence[int], now: str) -> tuple[detect.Findings, detect.Findings]:
    """Index a unit's names, read its dates and references, and store its anchors."""
    unit = body[start:end]
    index_unit(m.conn, node_id, scope, unit)
    dates = detect.relative_dates(unit, day)
    lexicon.used = set()
    refs = detect.references(unit, body, body[:start], lexicon)
    if refs.anchors or refs.ambiguities:
        # their words may come from other units (options, expansions) and from the units before
        # this one in the capture (a pronoun's candidates): forget must reach those copies
        clarifications.record_sources(m.conn, node_id, lexicon.used | set(earlier))
    anchors = dates.anchors + refs.anchors
    if anchors:
        derived.put(m.conn, node_id, "anchors", "\n".join(anchors), GENERATOR, now)
    return dates, refs


def read_without_asking(m: "Memory", rules: Policy, *, node_id: int, scope: str, text: str, anchor: str,
                        now: str, written: str | None = None) -> None:
    """Anchors only (its own dates, known expansions), never a question: for a correction
    (holding it back would serve neither it nor the version it replaced) and for an imported
    note whose source dates it (a journal page's day, a `date:` in its frontmatter); a vault
    import that asked would become an interrogation."""
    lexicon = ScopeLexicon(m.conn, scope, None)
    _read_unit(m, lexicon, node_id, scope, text, 0, len(text), writer_day(anchor, written, rules), [], now)


def _question(m: "Memory", ref: int, by_node: bool, reanswer: bool = False) -> dict:
    """The open question for `ref` (a question id, or a node id when `by_node`) in a writable
    scope; with `reanswer`, an answered one too (a person putting a wrong answer right)."""
    ref = check_id(ref, "node" if by_node else "question")
    q = clarifications.open_for_node(m.conn, ref) if by_node else clarifications.get(m.conn, ref)
    if q is None and by_node and reanswer:
        q = clarifications.last_for_node(m.conn, ref, "answered")
    if q is None or (m.writable is not None and q["scope"] not in m.writable):
        what = f"question about node {ref}" if by_node else f"question {ref}"
        raise NotFound(f"no open {what} in a scope writable here (open ones are listed by brain_prepare and"
                       " `tidemind clarify`)")
    if q["state"] != "open" and not (reanswer and q["state"] == "answered"):
        raise Conflict(f"question {q['id']} (about node {q['node_id']}) is {q['state']}"
                       + ("" if q["state"] != "answered" else
                          f", read as {q['term']}: {clarifications.latest_answer(m.conn, q['id'])}"))
    node = nodes.get_any(m.conn, q["node_id"])
    if node is None or node["status"] != "live":
        raise Conflict(f"question {q['id']} is about node {q['node_id']}, which is {node and node['status']}")
    return q


def _matching_option(q: dict, answer: str) -> str | None:
    """The one suggested option an answer means: the option itself, or the only option whose
    distinctive words it contains ("Rivera", "11 December", "pull request")."""
    low = answer.lower()
    hits = []
    for option in q["options"]:
        if option.lower() in low or low in option.lower():
            hits.append(option)
            continue
        words = [w for w in re.findall(r"[^\W_]+", option.lower()) if w not in q["term"].lower().split()
                 and w not in ("weekend", "of", *detect.WEEKDAYS)]
        if words and all(re.search(rf"\b{re.escape(w)}\b", low) for w in words[:2]):
            hits.append(option)
    return hits[0] if len(set(hits)) == 1 else None


def answer(m: "Memory", ref: int, text, by_node: bool = False) -> dict:
    """Append the person's answer to the clarified layer; the unit becomes searchable with it.
    Answering an answered question again appends a new answer that replaces the earlier one in
    search (the earlier row stays: the layer is append-only)."""
    body, warnings = m._clean_content(text)
    if len(body) > MAX_ANSWER_CHARS:
        raise InvalidInput(f"an answer is at most {MAX_ANSWER_CHARS} characters (this one is {len(body):,});"
                           " a longer explanation is a memory of its own: digest it")
    body = " ".join(body.split())
    now = m.now()
    with immediate(m.conn):
        q = _question(m, ref, by_node, reanswer=True)
        again = q["state"] == "answered"
        meant = _matching_option(q, body)
        if q["options"] and meant is None:
            warnings.append(f"the answer matches none of the suggestions ({', '.join(q['options'])}); it is kept as"
                            " written. Answer again to change it.")
        clarified_id = clarifications.append(m.conn, node_id=q["node_id"], question_id=q["id"], term=q["term"],
                                             answer=body, actor=m.actor, at=now)
        if not again:
            clarifications.close(m.conn, q["id"], "answered", now)
        if meant and q["kind"] == "date":              # "Friday 11 December" finds it by its date too
            _add_anchor(m, q["node_id"], f"{q['term']} = {meant}", now)
        if q["kind"] == "acronym":                     # what it means in this scope, from now on
            clarifications.index_readings(m.conn, q["node_id"], q["scope"],
                                          [("answered_acronym", q["term"], (meant or body).lower())])
        vectors.enqueue(m.conn, q["node_id"], now)      # the vector reads the clarification too
        audit.record(m.conn, at=now, actor=m.actor, action="clarify_answer", node_id=q["node_id"],
                     question_id=q["id"], clarified_id=clarified_id)
    done = (f"node {q['node_id']} is searchable, read as {q['term']}: {body}" if not again else
            f"node {q['node_id']} is now read as {q['term']}: {body} (the earlier answer stays in its history)")
    return {"question_id": q["id"], "node_id": q["node_id"], "state": "answered", "clarified": f"{q['term']}: {body}",
            "warnings": warnings, "done": done}


def _add_anchor(m: "Memory", node_id: int, line: str, now: str) -> None:
    current = derived.for_node(m.conn, node_id).get("anchors")
    lines = current["value"].splitlines() if current else []
    if line not in lines:
        derived.put(m.conn, node_id, "anchors", "\n".join([*lines, line]), GENERATOR, now)


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
        q["answer"] = clarifications.latest_answer(m.conn, q["id"]) if q["state"] == "answered" else None
    return out
