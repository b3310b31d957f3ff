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

from ..clarify.detect import MONTHS, PERSON_VERBS, WEEKDAYS, expansions_for
from ..text import STOPWORDS

# after a two-word name: what a person (or a person's thing) does, so "Alex Chen's phone",
# "Alex Chen leads" qualify "Alex", and "Standup Monday" does not qualify "Standup"
_NAME_FOLLOWERS = PERSON_VERBS | frozenset("is was are were has had runs ran works worked lives lived leads led "
                                           "designs handles".split())

_TOKEN = re.compile(r"[^\W\d_][\w'’\-]*")
_MODIFIER = re.compile(r"[a-z][a-z0-9\-]+")
MAX_GROUPS = 4


_WORD_AT = re.compile(r"[^\W\d_][\w'\-]*")


def _is_name(w: str) -> bool:
    return 2 <= len(w) <= 21 and w.isalpha() and w[0].isupper() and w[1:].islower()


class _Read:
    """An item's texts, scanned with str.find around the query's words: recall runs this on
    every answer, and a regex per query word would be compiled afresh for most queries."""

    def __init__(self, item: dict):
        self.item = item
        self.content = item["content"].replace("’", "'")
        self.low = _fold(self.content)
        self.answers = [(c["term"], c["answer"]) for c in item.get("clarified", [])]
        self.folded = self.low + " " + " ".join(a for _, a in self.answers).lower()


def _occurrences(text: str, low: str, word: str):
    """End offsets of `word` (case-insensitive, whole word, "'s" allowed after it) in `text`."""
    n, pos = len(word), 0
    while (i := low.find(word, pos)) >= 0:
        pos = i + 1
        if i > 0 and (low[i - 1].isalnum() or low[i - 1] in "'-"):
            continue
        end = i + n
        if low.startswith("'s", end):
            end += 2
        if end == len(low) or not (low[end].isalnum() or low[end] in "'-"):
            yield i, end


def _fold(text: str) -> str:
    """Lower case, one character for one ("İ" lowers to two), so offsets hold in both."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _after(text: str, word: str) -> set[str]:
    """Second words of `word`'s two-word names in `text`, where the name is used as a person's."""
    text = text.replace("’", "'")
    low, out = _fold(text), set()
    for _, end in _occurrences(text, low, word.lower()):
        if text.startswith(" ", end) and (m := _WORD_AT.match(text, end + 1)):
            second = m.group(0)
            following = _WORD_AT.match(text, m.end() + 1) if text.startswith(" ", m.end()) else None
            if second.endswith("'s") or (following and following.group(0).lower() in _NAME_FOLLOWERS):
                out.add(second.removesuffix("'s"))
    return out


def _name_qualifiers(word: str, read: _Read, query_words: set[str]) -> set[str]:
    found = {q for q in _after(read.content, word) if _is_name(q)}
    for term, answer in read.answers:       # "Alex" answered "Alex Rivera" (or just "Rivera")
        if term.lower() == word.lower():    # the first name-like word that is not the term itself
            names = [w.strip(".,;:!?'") for w in answer.replace("’", "'").split()]
            names = [w.removesuffix("'s") for w in names if w.lower() != word.lower()]
            first = next((w for w in names if _is_name(w)), None)
            if first:
                found.add(first)
        else:
            found |= {q for q in _after(answer, word) if _is_name(q)}
    return {f"{word.capitalize()} {q}" for q in found if q.lower() not in STOPWORDS and q.lower() not in query_words
            and q.lower() not in WEEKDAYS and q.lower() not in MONTHS}


def _acronym_qualifiers(word: str, read: _Read) -> set[str]:
    acronym = word.upper()
    if not 2 <= len(acronym) <= 5 or acronym not in read.content:
        return set()
    found = set(expansions_for(acronym, [read.content]))
    found |= {" ".join(answer.lower().split()) for term, answer in read.answers if term == acronym}
    return {f"{acronym} ({e})" for e in found}


# Words before a phrase that say which one of a kind, not which thing: ordinals, quantities, taste
# and size ("my first video game", "a big tournament", "her favorite novels"), and verbs ("made
# vegan ice cream"). Measured on real conversations: these made recall ask "which video game do you
# mean: first, regional, big or fourth?" on 3% of ordinary questions.
_NOT_QUALIFIERS = frozenset("""
first second third fourth fifth sixth seventh eighth ninth tenth last next previous final another other others
different same whole own new old big bigger biggest small smaller little large huge great good better best bad
worse worst nice cool amazing awesome favorite favourite fave real true whole entire main major minor several few
many much more most every each some any such one two three four five six seven eight nine ten lots lot kind sort
type make made makes love loved loves take took takes use used uses get got gets have had has see saw sees try
tried want wanted like liked enjoy enjoyed start started play played watch watched read using making having
getting taking doing going trying loving eating playing watching reading seeing buying bringing sharing
""".split())
# (not "-ing" or "-er": "billing", "marketing", "server" name things; the verbs among them are listed above)
_ADJECTIVE_ENDINGS = ("ed", "al", "ous", "ful", "ive", "ic", "able", "ible", "less", "ish", "est", "ly")
# a phrase about time ("last year", "years ago", "trip last") is not a thing that can be two things
_TIME_WORDS = frozenset("""
year years week weeks weekend weekends month months day days ago today tonight yesterday tomorrow morning evening
night nights hour hours minute minutes time times last next recently
""".split())
PHRASE_GROUPS = 2       # two different things called the same, not a list of kinds


def _phrase_qualifiers(phrase: tuple[str, str], read: _Read, query_words: set[str]) -> set[str]:
    if phrase[0] in _TIME_WORDS or phrase[1] in _TIME_WORDS:
        return set()
    out = set()
    for start, _ in _occurrences(read.content, read.low, f"{phrase[0]} {phrase[1]}"):
        if start < 2 or read.low[start - 1] != " ":
            continue
        before = read.low.rfind(" ", 0, start - 1)
        modifier = read.low[before + 1:start - 1]
        opening = not read.low[:before + 1].strip() or read.low[:before + 1].rstrip()[-1] in ".!?:;\n"
        # a sentence's first word is likely a verb ("Snapshot staging database nightly")
        if not opening and _MODIFIER.fullmatch(modifier) and modifier not in STOPWORDS \
                and modifier not in query_words and modifier not in _NOT_QUALIFIERS \
                and not (len(modifier) > 4 and modifier.endswith(_ADJECTIVE_ENDINGS)):
            out.add(f"{modifier} {phrase[0]} {phrase[1]}")
    return out


def divergences(query: str, items: Sequence[dict], grounded: Sequence[int]) -> list[dict]:
    """Every query word (or two-word phrase) that splits the grounding memories, first the one
    asked about."""
    out: list[dict] = []
    grounding = [i for i in items if i["id"] in set(grounded)
                 and not any(f.startswith("via:contradicts") for f in i.get("flags", []))]
    if len(grounding) < 2:
        return out
    tokens = [re.sub(r"['’]s$", "", w) for w in _TOKEN.findall(query)]          # "Alex's" asks about Alex
    words = list(dict.fromkeys(w for w in tokens if len(w) > 1 and w.lower() not in STOPWORDS))
    query_words = {w.lower() for w in words}
    # a word can only split the answer if at least two grounding memories contain it (a cheap
    # substring test first: most answers share no such word and are never tokenised)
    reads = [_Read(i) for i in grounding]
    shared = [w for w in words if sum(w.lower() in r.folded for r in reads) >= 2]
    readers = [(w, lambda r, w=w: _name_qualifiers(w, r, query_words) | _acronym_qualifiers(w, r)) for w in shared]
    for a, b in zip(words, words[1:]):
        if a in shared and b in shared:
            readers.append((f"{a} {b}", lambda r, p=(a.lower(), b.lower()): _phrase_qualifiers(p, r, query_words)))
    for term, read in readers:
        phrase = " " in term
        groups: dict[str, list[int]] = {}
        unqualified = []
        for r in reads:
            qualifiers = read(r)
            if len(qualifiers) == 1:
                groups.setdefault(next(iter(qualifiers)), []).append(r.item["id"])
            elif not qualifiers:
                unqualified.append(r.item["id"])
            # an item naming several (a memory about both Alexes) belongs to no single group
        if len(groups) < 2 or (phrase and len(groups) > PHRASE_GROUPS):
            continue
        choices = sorted(groups, key=lambda g: (min(_rank(items, i) for i in groups[g]), g))[:MAX_GROUPS]
        question = f"Which {term} do you mean: " + (", ".join(choices[:-1]) + " or " + choices[-1]) + "?"
        out.append({"term": term, "question": question,
                    "groups": [{"choice": c, "ids": groups[c]} for c in choices],
                    "unqualified": unqualified})
    return out


def _rank(items: Sequence[dict], node_id: int) -> int:
    return next(n for n, i in enumerate(items) if i["id"] == node_id)


def choose(found: list[dict], choice: str) -> tuple[dict, set[int]]:
    """The chosen group (by its text, case-insensitively, or a unique part of it) among every
    divergence of the answer (the follow-up reads more memories than the question did, so the
    word asked about need not come first any more), and the ids of its divergence's other groups."""
    from ..errors import InvalidInput

    if not found:
        raise InvalidInput("nothing to choose: this query's memories do not diverge (ask without choose)")
    wanted = " ".join(choice.lower().split())
    for exact in (True, False):
        picked = [(d, g) for d in found for g in d["groups"]
                  if (g["choice"].lower() == wanted if exact else wanted and wanted in g["choice"].lower())]
        if len(picked) == 1:
            divergence, group = picked[0]
            return group, {i for g in divergence["groups"] if g is not group for i in g["ids"]} - set(group["ids"])
        if picked:
            break
    choices = [g["choice"] for d in found for g in d["groups"]]
    raise InvalidInput(f"choose one of: {', '.join(choices)} (got {choice!r})")


def about_another(item: dict, chosen: dict, found: list[dict]) -> bool:
    """Whether a served item names another group's choice and not the chosen one ("Alex Chen
    likes green tea" once the person said they mean Alex Rivera): it leaves with that group."""
    from ..text import has_phrase

    divergence = next((d for d in found if chosen in d["groups"]), None)
    if divergence is None or has_phrase(item["content"], chosen["choice"], ignore_case=True):
        return False
    return any(has_phrase(item["content"], g["choice"], ignore_case=True)
               for g in divergence["groups"] if g is not chosen)
