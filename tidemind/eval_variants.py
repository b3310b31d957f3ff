"""Variants of an evaluation set, made at run time from the set itself: the same conversations
and questions in another shape, to stress what was tuned on the original (issue 24).

- `chat`: each turn becomes one message per sentence, ten seconds apart ("many short messages a
  day", the shape recall lost on), every message keeping its turn's id, so a question's evidence
  is found when any message of the turn is;
- `dates`: a date a question names is written in another common form (07.05.2023, 05/07/2023,
  2023-05-07, "May 7th", "the 7th of May"), one form a question, in turn;
- `names`: a speaker's name in a question is written as people write it: a short form, or one
  letter dropped or doubled, one spelling a question, in turn;
- `listener`: a question about what one of two speakers said names the other, the person it was
  said to ("When did Melanie's friend go to the support group?").

Nothing here is tuned on held-back data, and nothing of the set is copied: the variant is built
from the files each run and scored by the same evaluation.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import Callable

from .errors import InvalidInput
from .metabolism.extract import sentences
from .search import when
from .text import speaker
from .timeutil import from_iso

MONTHS = [m.capitalize() for m in when.MONTHS]


def _pick(key: str, n: int) -> int:
    """A stable choice among n for this key (the same question gets the same form every run)."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % n


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


DATE_FORMS: list[Callable[[dt.date], str]] = [
    lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}",
    lambda d: d.isoformat(),
    lambda d: f"{MONTHS[d.month - 1]} {_ordinal(d.day)}",
    lambda d: f"the {_ordinal(d.day)} of {MONTHS[d.month - 1]}",
]


def dates(memories: list[dict], queries: list[dict]) -> tuple[list[dict], list[dict], int]:
    out, changed = [], 0
    for q in queries:
        found = when.window(q["query"])
        if found is not None and found.kind == "day" and found.said and found.side == "on":
            form = DATE_FORMS[_pick(str(q.get("id")), len(DATE_FORMS))]
            q = {**q, "query": q["query"].replace(found.said, form(found.day), 1)}
            changed += 1
        out.append(q)
    return memories, out, changed


def _respell(name: str, key: str) -> str:
    choice = _pick(key, 3)
    if choice == 0 and len(name) >= 6:
        return name[:4]                                     # a short form: "Caroline" -> "Caro"
    middle = 1 + _pick(key + "/at", max(len(name) - 2, 1))
    if choice == 1 or len(name) < 4:
        return name[:middle] + name[middle] + name[middle:]   # a letter doubled: "Melannie"
    return name[:middle] + name[middle + 1:]                  # a letter dropped: "Carolne"


def names(memories: list[dict], queries: list[dict]) -> tuple[list[dict], list[dict], int]:
    speakers: dict[str, set[str]] = {}
    for mem in memories:
        who = speaker(mem.get("text") or "")
        if who:
            speakers.setdefault(mem.get("scope") or "", set()).add(who)
    out, changed = [], 0
    for q in queries:
        text = q["query"]
        for who in sorted((w for w in speakers.get(q.get("scope") or "", ()) if w.isalpha()), key=len, reverse=True):
            if re.search(rf"\b{re.escape(who)}\b", text):
                text = re.sub(rf"\b{re.escape(who)}\b", _respell(who, f"{q.get('id')}/{who}"), text)
        if text != q["query"]:
            changed += 1
        out.append({**q, "query": text})
    return memories, out, changed


def listener(memories: list[dict], queries: list[dict]) -> tuple[list[dict], list[dict], int]:
    """A question about what one of two speakers said names the other, the one it was said to:
    "When did Caroline go to the support group?" (Caroline told Melanie) becomes "When did
    Melanie's friend go to the support group?". Only questions naming one speaker whose every
    evidence turn that speaker said, in a conversation of two."""
    speakers: dict[str, set[str]] = {}
    said_by: dict[str, str] = {}
    for mem in memories:
        who = speaker(mem.get("text") or "")
        if who:
            speakers.setdefault(mem.get("scope") or "", set()).add(who)
            said_by[str(mem.get("id"))] = who
    out, changed = [], 0
    for q in queries:
        people = speakers.get(q.get("scope") or "", set())
        named = [w for w in people if re.search(rf"\b{re.escape(w)}\b", q["query"])]
        evidence = [said_by.get(str(e)) for e in q.get("evidence") or []]
        if len(people) == 2 and len(named) == 1 and evidence and all(e == named[0] for e in evidence):
            other = next(iter(people - set(named)))
            text = re.sub(rf"\b{re.escape(named[0])}\b", f"{other}'s friend", q["query"])
            out.append({**q, "query": text})
            changed += 1
        else:
            out.append(q)
    return memories, out, changed


def chat(memories: list[dict], queries: list[dict]) -> tuple[list[dict], list[dict], int]:
    out, changed = [], 0
    turn_in_session: dict[object, int] = {}
    for n, mem in enumerate(memories):
        group = mem.get("session") or ("memory", n)           # a memory with no session is its own
        index = turn_in_session[group] = turn_in_session.get(group, -1) + 1
        text = mem.get("text") or ""
        who = speaker(text)
        said = text[len(who) + 1:].strip() if who else text
        parts = sentences(said) or [said]
        start = _parse(mem.get("valid_at"))
        if len(parts) > 1:
            changed += 1
        for k, part in enumerate(parts):
            message = {**mem, "text": f"{who}: {part}" if who else part}
            if start is not None:        # turns half a minute apart, their messages ten seconds apart
                message["valid_at"] = (start + dt.timedelta(seconds=30 * index + 10 * k)).isoformat()
            out.append(message)
    return out, queries, changed


def _parse(value) -> dt.datetime | None:
    try:
        return from_iso(str(value)) if value else None
    except ValueError:
        return None


VARIANTS: dict[str, Callable] = {"chat": chat, "dates": dates, "names": names, "listener": listener}


def apply(name: str, memories: list[dict], queries: list[dict]) -> tuple[list[dict], list[dict], dict]:
    if name not in VARIANTS:
        raise InvalidInput(f"no variant {name!r}; the variants are {', '.join(sorted(VARIANTS))}")
    memories, queries, changed = VARIANTS[name](memories, queries)
    unit = "turns split into messages" if name == "chat" else "questions rewritten"
    return memories, queries, {"variant": name, "changed": changed, "what": unit}
