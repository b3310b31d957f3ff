"""Names as people write them in a question: "Caro" or "Carolne" for Caroline, "Jon" in a
conversation between Jon and Gina where the question says "John".

A question's capitalised word that no memory of the scopes holds, that is no month or day, and
that is one edit away from a speaker of those scopes (six letters or more), the start of one
(four letters or more), or a speaker's name with a letter doubled ("Timm") or, inside a name of
five letters or more, dropped ("Mria"), or one edit off a speaker with no vowel left ("Jhn"), or a
four-letter name without its inside "h" ("Jon" for John), is read as that speaker. A changed letter in a shorter name is
another name ("Mary" is not "Mark", "Gino" not "Gina"): an unknown person must still be "I don't
know". A word the memories do hold is read as a speaker only when it is the start of one name and
the memories address someone by it ("Thanks, Mel!"): a nickname learned from the conversation.
Speakers are the "Name:" labels the scope's memories open with, read once per database and scope
and read again when the scope's size, its newest memory or its archived and forgotten count
changes.
On conversations-dev with the names respelled (a short form, a letter dropped or doubled), 13%
of answerable questions abstained before this.
"""
from __future__ import annotations

import re
from typing import Sequence

import apsw

from ..store import fts, nodes, visible
from ..text import STOPWORDS, addresses, speaker
from . import when

_CACHE: dict[tuple[str, str], tuple[tuple, frozenset[str]]] = {}
_ADDRESSED: dict[tuple[str, tuple, str], tuple[tuple, bool]] = {}     # (db, scopes, word) -> (state, verdict)
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_VOWELS = frozenset("aeiouy")
MIN_PREFIX = 4          # "Caro" for Caroline; "Dec" is December, "Jen" anyone
ADDRESS_SAMPLE = 50     # of the memories using a short form, read to see it used as a name
MIN_EDITED = 6          # one letter off only in a long name: "Carolne", "Melannie"; "Mary" is not "Mark"
# words a question capitalises that are no one's name: months and days (and their short forms)
NOT_NAMES = frozenset(when.MONTHS) | frozenset(m[:3] for m in when.MONTHS) | {"sept"} | frozenset(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun".split())


def _state(conn: apsw.Connection, scopes: Sequence[str]) -> tuple:
    """What a cached reading of these scopes' memories is valid for: their sizes, the newest memory
    and their archived and forgotten counts (an archive can leave the first two as they were)."""
    newest = nodes.newest_id(conn)
    return tuple((fts.scope_sizes(conn, [scope])[0], newest, nodes.gone_count(conn, scope)) for scope in scopes)


def speakers(conn: apsw.Connection, scopes: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for scope in scopes:
        state = _state(conn, [scope])
        key = (conn.filename or str(id(conn)), scope)
        cached = _CACHE.get(key)
        if cached is None or cached[0] != state:
            labels = frozenset(label for label in nodes.speaker_labels(conn, scope)
                               if speaker(f"{label}: x") == label)
            _CACHE[key] = cached = (state, labels)
        out |= cached[1]
    return out


def speaker_words(conn: apsw.Connection, scopes: Sequence[str]) -> set[str]:
    """Each word of the scopes' speakers' names, lower-case: not content words of a memory there
    ("Caroline: Wow, Mel, family love is the best!" says nothing of Caroline or Melanie)."""
    return {part.casefold() for label in speakers(conn, scopes) for part in label.split()}


def _one_edit(a: str, b: str) -> bool:
    """a and b differ by one letter dropped, added, changed or two swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def respelled(conn: apsw.Connection, query: str, scopes: Sequence[str]) -> str:
    """The query with each unknown capitalised word that can only be one speaker written as that
    speaker's name."""
    candidates = [w for w in dict.fromkeys(_CAPITALISED.findall(query))]
    if not candidates or not scopes:
        return query
    people = speakers(conn, scopes)
    parts = {p for name in people for p in name.split() if len(p) >= 3}
    unknown = [w for w in candidates if w not in parts]
    if not unknown or not parts:
        return query
    df, _ = fts.document_frequencies(conn, [w.lower() for w in unknown], scopes)
    for word in unknown:
        low = word.lower()
        if low in NOT_NAMES or low in STOPWORDS:
            continue                     # a month or a day: not a misspelt name
        if df.get(low, 0):
            # a word the memories use is theirs, unless they use it as a speaker's short name
            # ("Mel" in "Wow, Mel, that's lovely!"): a nickname learned from the conversation
            matches = {p for p in parts if len(low) < len(p) and p.lower().startswith(low)}
            if len(matches) != 1 or not _addressed(conn, word, scopes):
                continue
        else:
            matches = {p for p in parts if _respelling(low, p.lower())}
        if len(matches) == 1:
            query = re.sub(rf"\b{re.escape(word)}\b", matches.pop(), query)
    return query


def _respelling(typed: str, name: str) -> bool:
    """`typed` is `name` as people mistype or shorten it: one edit off a long name ("Carolne"), the
    start of one ("Caro"), a letter doubled in any ("Timm", "Johnn"), a letter inside a name of
    five letters or more dropped ("Mria"), a name one edit off that left no vowel ("Jhn": no one
    is called that), or the silent "h" inside a four-letter name dropped ("Jon" for John, as
    people write it). Any other changed letter in a short name, or a short name losing another
    letter, is another name ("Gino", "Mary", "Dan" for Dana, "Leo" for Leon)."""
    if len(typed) >= MIN_EDITED and _one_edit(typed, name):
        return True
    if not _VOWELS.intersection(typed) and _one_edit(typed, name):
        return True
    if len(name) == 4 and len(typed) == 3 and "h" in name[1:-1] and name.replace("h", "", 1) == typed \
            and name[0] != "h":
        return True
    if len(typed) >= MIN_PREFIX and name.startswith(typed):
        return True
    if len(typed) == len(name) + 1:
        return any(typed[i] == typed[i + 1] and typed[:i] + typed[i + 1:] == name for i in range(len(typed) - 1))
    if len(typed) == len(name) - 1 and len(name) >= 5:
        # never the first or last letter: "Dan" is no Dana, "Leo" no Leon
        return any(name[:i] + name[i + 1:] == typed for i in range(1, len(name) - 1))
    return False


def _addressed(conn: apsw.Connection, word: str, scopes: Sequence[str]) -> bool:
    """Whether the scopes' memories write `word` capitalised after a comma or a greeting, the way
    one speaker addresses another ("Thanks, Mel!", "Hey Mel")."""
    key = (conn.filename or str(id(conn)), tuple(sorted(scopes)), word)
    state = _state(conn, scopes)
    cached = _ADDRESSED.get(key)
    if cached is None or cached[0] != state:
        where, params = visible("n", scopes)
        found = [i for i, _ in fts.search(conn, fts.match_expression([word]), where, params, ADDRESS_SAMPLE,
                                          scopes=scopes)]
        rows = nodes.get_visible_many(conn, found, scopes, ("id", "content")).values()
        if len(_ADDRESSED) > 4096:
            _ADDRESSED.clear()
        _ADDRESSED[key] = cached = (state, any(addresses(r["content"], word) for r in rows))
    return cached[1]
