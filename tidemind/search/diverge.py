"""Iterative recall: when the memories that ground an answer are about different things.

Two memories can both answer "what is Alex's phone number" and be about two people. Picking
one would be a silent guess, so recall returns one question with the candidate groups instead,
and a follow-up with the chosen group (`choose`) answers for that group only.

A query word splits the grounding memories when they qualify it differently and the query
does not: a name's second word ("Alex Chen" / "Alex Rivera", including a person's answer to a
clarifying question about a bare "Alex"), an acronym's expansion ("PT (physical therapy)" / "PT
(Pacific time)"), or the word before a two-word phrase of the query ("the billing staging
database" / "the search staging database"). Only grounding memories count (context rides along
with its seed), each qualifier must be held by at least one of them, and memories that all say
the same thing never split: nothing is asked unless the candidates truly diverge.
"""
from __future__ import annotations

import re
from typing import Sequence

from ..clarify.detect import expansions_for
from ..text import STOPWORDS

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9'\-]*")
MAX_GROUPS = 4


def _name_qualifiers(word: str, item: dict, query_words: set[str]) -> set[str]:
    pattern = re.compile(rf"(?i:\b{re.escape(word)}) ([A-Z][a-z]{{1,20}})\b")
    found = {m.group(1) for m in pattern.finditer(item["content"])}
    for c in item.get("clarified", []):       # "Alex" answered "Alex Rivera" (or just "Rivera")
        if c["term"].lower() == word.lower():
            rest = re.sub(rf"(?i)^\s*{re.escape(word)}\b", "", c["answer"]).split()
            if rest and rest[0][:1].isupper():
                found.add(rest[0].strip(".,;:!?"))
        else:
            found |= {m.group(1) for m in pattern.finditer(c["answer"])}
    return {f"{word.capitalize()} {q}" for q in found if q.lower() not in STOPWORDS and q.lower() not in query_words}


def _acronym_qualifiers(word: str, item: dict) -> set[str]:
    acronym = word.upper()
    if not 2 <= len(acronym) <= 5 or not re.search(rf"\b{acronym}\b", item["content"]):
        return set()
    found = set(expansions_for(acronym, [item["content"]]))
    found |= {" ".join(c["answer"].lower().split()) for c in item.get("clarified", []) if c["term"] == acronym}
    return {f"{acronym} ({e})" for e in found}


def _phrase_qualifiers(phrase: tuple[str, str], item: dict, query_words: set[str]) -> set[str]:
    pattern = re.compile(rf"(?i)\b([a-z][a-z0-9\-]+) {re.escape(phrase[0])} {re.escape(phrase[1])}")
    return {f"{m.group(1).lower()} {phrase[0]} {phrase[1]}" for m in pattern.finditer(item["content"])
            if m.group(1).lower() not in STOPWORDS and m.group(1).lower() not in query_words}


def candidate_groups(query: str, items: Sequence[dict], grounded: Sequence[int]) -> dict | None:
    """One question and its groups when the grounding memories diverge; None otherwise."""
    grounding = [i for i in items if i["id"] in set(grounded)
                 and not any(f.startswith("via:contradicts") for f in i.get("flags", []))]
    if len(grounding) < 2:
        return None
    tokens = [re.sub(r"'s$", "", w) for w in _TOKEN.findall(query)]          # "Alex's" asks about Alex
    words = list(dict.fromkeys(w for w in tokens if len(w) > 1 and w.lower() not in STOPWORDS))
    query_words = {w.lower() for w in words}
    readers = []
    for w in words:
        readers.append((w, lambda item, w=w: _name_qualifiers(w, item, query_words) | _acronym_qualifiers(w, item)))
    for a, b in zip(words, words[1:]):
        readers.append((f"{a} {b}", lambda item, p=(a.lower(), b.lower()): _phrase_qualifiers(p, item, query_words)))
    for term, read in readers:
        groups: dict[str, list[int]] = {}
        unqualified = []
        for item in grounding:
            qualifiers = read(item)
            if len(qualifiers) == 1:
                groups.setdefault(next(iter(qualifiers)), []).append(item["id"])
            elif not qualifiers:
                unqualified.append(item["id"])
            # an item naming several (a memory about both Alexes) belongs to no single group
        if len(groups) < 2:
            continue
        choices = sorted(groups, key=lambda g: (min(_rank(items, i) for i in groups[g]), g))[:MAX_GROUPS]
        question = f"Which {term} do you mean: " + (", ".join(choices[:-1]) + " or " + choices[-1]) + "?"
        return {"term": term, "question": question,
                "groups": [{"choice": c, "ids": groups[c]} for c in choices],
                "unqualified": unqualified}
    return None


def _rank(items: Sequence[dict], node_id: int) -> int:
    return next(n for n, i in enumerate(items) if i["id"] == node_id)


def choose(clarify: dict | None, choice: str) -> tuple[dict, set[int]]:
    """The chosen group (by its text, case-insensitively, or a unique part of it) and the ids of
    the groups not chosen."""
    from ..errors import InvalidInput

    if not clarify:
        raise InvalidInput("nothing to choose: this query's memories do not diverge (ask without choose)")
    wanted = " ".join(choice.lower().split())
    exact = [g for g in clarify["groups"] if g["choice"].lower() == wanted]
    partial = [g for g in clarify["groups"] if wanted and wanted in g["choice"].lower()]
    picked = exact or partial
    if len(picked) != 1:
        raise InvalidInput(f"choose one of: {', '.join(g['choice'] for g in clarify['groups'])} (got {choice!r})")
    others = {i for g in clarify["groups"] if g is not picked[0] for i in g["ids"]}
    return picked[0], others
