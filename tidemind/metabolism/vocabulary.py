"""A per-scope tag vocabulary: the names and noun phrases a scope keeps coming back to.

Why: offline tags used to be each memory's top keyword bigrams (YAKE), invented per memory from
that memory alone. They were cut from clauses ("database-listens", "server-number"), and on a
store of similar memories the same junk name landed on every one of them. A person tags with a
small vocabulary that is reused: names of people, tools and places, and the phrases a topic is
talked about in. So the offline tagger proposes only what recurs in the memory's scope:

1. Each memory is cut into chunks at punctuation and at words that never belong in a tag
   (`wordlists`: function words, verbs that are rarely nouns, adverbs, interjections, common
   adjectives, numbers, generic nouns such as "time" or "photo"). Inside a chunk, every word,
   every pair of neighbouring words and every run of three capitalised words is a candidate
   (a chunk never crosses a clause, so no candidate is cut mid-clause).
2. Per scope, each candidate's document frequency, and how often it is written capitalised in
   mid-sentence (a name) against in lower case (a word): "Redis runs..." at the start of a
   sentence says nothing, "moved to Redis" does.
3. A memory gets at most three of the candidates it contains that recur in at least two of the
   scope's memories and are not everywhere in it (a name in every memory of a scope tags
   nothing), best first: names a person already confirmed in the scope, then names, phrases and
   single words, each lifted by how often it recurs and how specific it is. A single word must
   have been used as a noun somewhere in the scope (after "the", "two", "in"...: "appreciate"
   and "lucky" never are), and, where the store holds other scopes, be more frequent in this
   one than in the store as a whole ("journey" and "difference" are in every conversation;
   "pottery" is this one's). Candidates sharing a
   word are not both proposed ("sourdough starter" makes "starter" redundant). A name a person
   rejected for the whole scope, or on this memory, is never a candidate; neither is the name
   of a conversation's speaker ("Caroline: ..." on every turn is who spoke, not what about).

The statistics are kept in memory per (database, scope) and brought up to date incrementally
(new memories are added; a memory that left or changed makes them rebuilt), so a pass over 10k
new memories reads each text once. Keys are hashed to keep the table small. Nothing here
writes: the tasks propose through `tags.assign`, which refuses tombstoned names again.
"""
from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from ..store import nodes
from .wordlists import (ADJECTIVES, BREAK, CAPITAL_STOP, DETERMINERS, ED_NOUNS, FUNCTION, HONORIFICS, INTERJECTIONS,
                        LY_NOUNS, MODIFIERS, NUMBER_WORDS, PREPOSITIONS, VERB_FORMS)

MAX_TAGS = 3
MIN_DOCS = 2                 # "recurs": in at least this many memories of the scope
SHARE_FROM = 8               # from this many memories on, a candidate in too large a share tags nothing
MAX_SHARE = {"name": 0.5, "phrase": 0.5, "word": 0.34}
BASE = {"confirmed": 0.9, "name": 0.7, "phrase": 0.65, "word": 0.5}
MIN_LIFT = 1.5               # a single word's share in its scope over its share in the whole store
BACKGROUND_FROM = 100        # memories outside the scope before the store is a background at all
CACHE_SCOPES = 32

_BITS = 20
_MASK = (1 << _BITS) - 1
# gram flags: capitalised mid-sentence, lower case, 2+ words, used as a noun, a clause of its own
CAP, LOW, MULTI, NOUN, ALONE = 1, 2, 4, 8, 16

_STRIP = ".,;:!?()[]{}\"'“”‘’<>*_~`|=#…—–-+&^$%"
_SENTENCE_END = set(".!?:…")
_PLURAL_ES = ("ches", "shes", "sses", "xes", "zes")
_ES_EXCEPTIONS = frozenset("caches niches aches headaches avalanches quiches moustaches mustaches".split())
_SPEAKER_MAX_WORDS = 3
_PHOTO_MARKERS = ("[shares a photo", "[shares an image", "[sends a photo", "[shared a photo")
_ADJECTIVE_ENDINGS = ("ful", "ous", "less")   # "thoughtful", "gorgeous", "homeless": they modify a noun


def singular(word: str) -> str:
    """A crude singular for matching ("pull requests" and "pull request" are one tag); a
    displayed name keeps the surface form it was first proposed with."""
    if len(word) <= 3 or not word.endswith("s"):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(_PLURAL_ES) and word not in _ES_EXCEPTIONS:
        return word[:-2]
    if word.endswith(("ss", "us", "is", "os", "as")):
        return word
    return word[:-1]


def key_of(name: str) -> str:
    """The matching key of a tag name or phrase: lower case, singular words, single spaces
    (`github-actions`, "GitHub Actions" and "github action" are one key)."""
    parts = [p for p in "".join(c if c.isalnum() or c == "_" else " " for c in name.casefold()).split() if p]
    return " ".join(singular(p) for p in parts)


@dataclass
class Doc:
    grams: dict[str, int] = field(default_factory=dict)      # key -> CAP|LOW|MULTI flags
    surface: dict[str, str] = field(default_factory=dict)    # key -> the words as written here
    speaker: str | None = None


def _speaker(line: str) -> tuple[str | None, str]:
    """'Caroline: I went...' -> ('caroline', the line as it was). Up to three capitalised words
    before a colon at the start of a memory; whether that is a speaker is decided per scope (the
    words stay in the text: a note's "Garden:" heading is one of its words)."""
    head, sep, rest = line.partition(":")
    if not sep or not rest.startswith((" ", "\t")):
        return None, line
    words = head.split()
    if not 0 < len(words) <= _SPEAKER_MAX_WORDS or not all(w[:1].isupper() and w.isalpha() for w in words):
        return None, line
    return key_of(head), line


class _Token:
    __slots__ = ("key", "surface", "cap", "low", "modifier", "noun")

    def __init__(self, key: str, surface: str, cap: bool, low: bool, modifier: bool = False):
        self.key, self.surface, self.cap, self.low, self.modifier = key, surface, cap, low, modifier
        self.noun = False           # where only a noun goes: after "the", "two", "in", "new"


def _classify(piece: str, initial: bool, after_determiner: bool) -> _Token | None:
    """A token that may be part of a tag, or None for one that ends a chunk. A modifier ("long",
    "half", "writing" after "my") may open a phrase but is never a tag alone nor ends one."""
    low = piece.casefold()
    if after_determiner and low.endswith("ing") and low in VERB_FORMS:
        return _Token(low, piece, False, not piece[0].isupper(), modifier=True)
    if len(low) < 2 or "'" in low or not piece[0].isalpha():
        return None          # numbers ("9pm", "4.2.1"), contractions, single letters
    if "." in low and min(len(p) for p in low.split(".")) < 2:
        return None          # "e.g", "i.e", "U.S"
    first_upper = piece[0].isupper()
    inner_upper = any(c.isupper() for c in piece[1:])
    shouting = piece.isupper()
    # capitalised in mid-sentence: part of a name ("Aqua World", "New York") unless it is a
    # word that is capitalised for other reasons
    name_like = (first_upper and not initial and not shouting) or (inner_upper and not shouting)
    if low in BREAK:
        # a verb capitalised mid-sentence is a button ("click **Delete** to confirm", "press
        # **Enter**"), not a name: the help vault's tags 'add', 'create', 'enter' were those
        if not name_like or low in CAPITAL_STOP or low in FUNCTION or low in INTERJECTIONS or low in VERB_FORMS:
            return None
    elif low in CAPITAL_STOP and (first_upper or shouting):
        return None
    if not name_like and not shouting:
        if len(low) > 4 and low.endswith("ly") and low not in LY_NOUNS:
            return None      # adverbs
        if len(low) > 4 and low.endswith("ed") and low not in ED_NOUNS:
            return None      # participles and past tenses: "scrubbed", "booked", "Agreed,"
    cap = (first_upper or inner_upper) and (not initial or inner_upper)
    modifier = low in MODIFIERS or (not name_like and len(low) > 5 and low.endswith(_ADJECTIVE_ENDINGS))
    return _Token(singular(low), piece, cap, not (first_upper or inner_upper), modifier=modifier)


def _chunks(text: str) -> tuple[str | None, list[list[_Token]]]:
    """The text's chunks: runs of tokens that may form a tag, never across punctuation."""
    out: list[list[_Token]] = []
    speaker = None
    for n, raw_line in enumerate(unicodedata.normalize("NFKC", text).replace("’", "'").splitlines()):
        line = raw_line
        if n == 0:
            speaker, line = _speaker(line)
        lowered = line.lower()
        for marker in _PHOTO_MARKERS:
            at = lowered.find(marker)
            if at >= 0:      # "[shares a photo: a photo of ...]": the caption counts, the marker not
                line = line[:at] + " . " + line[at + len(marker):]
                lowered = line.lower()
        chunk: list[_Token] = []
        initial = True
        previous = ""
        for raw in line.split():
            if "/" in raw or "\\" in raw or "@" in raw:
                if chunk:
                    out.append(chunk)
                chunk = []                        # paths, URLs, e-mail addresses
                continue
            core = raw.strip(_STRIP)
            start = raw.find(core) if core else len(raw)
            lead, trail = raw[:start], raw[start + len(core):]
            if lead and chunk:
                out.append(chunk)
                chunk = []
            pieces = _split_inner(core)
            for i, piece in enumerate(pieces):
                possessive = piece.endswith("'s")
                if possessive:
                    piece = piece[:-2]
                token = _classify(piece, initial, previous in DETERMINERS) if piece else None
                initial = False
                if token is not None:
                    token.noun = previous in _NOUN_BEFORE or (previous[:1].isdigit() and previous[-1:].isdigit())
                previous = "the" if possessive else piece.casefold()      # "aquarium's ammonia": a noun follows
                if token is None:
                    if chunk:
                        out.append(chunk)
                    chunk = []
                else:
                    chunk.append(token)
                if (possessive or i < len(pieces) - 1) and chunk:
                    out.append(chunk)
                    chunk = []
            if not core:
                initial = initial or any(c in _SENTENCE_END for c in raw)
                previous = ""
            if trail == "." and core.casefold() in HONORIFICS:
                continue                          # "Dr. Patel": the dot ends no sentence
            if trail or not core:
                if chunk:
                    out.append(chunk)
                chunk = []
                if any(c in _SENTENCE_END for c in trail):
                    initial = True
        if chunk:
            out.append(chunk)
    return speaker, out


_NOUN_BEFORE = DETERMINERS | ADJECTIVES | NUMBER_WORDS | MODIFIERS | PREPOSITIONS


_INNER = re.compile(r"[^\w'.+#&-]+")


def _split_inner(core: str) -> list[str]:
    """'orders(created_at' -> ['orders', 'created_at']: other punctuation inside a word splits it
    (a dot, hyphen, apostrophe, + or # stays: 'node.js', 'dairy-free', 'C++')."""
    if _INNER.search(core) is None:
        return [core] if core else []
    return [p for p in (x.strip(_STRIP) for x in _INNER.split(core)) if p]


def extract(text: str) -> Doc:
    """Every tag candidate in one memory, with how it was written."""
    speaker, chunks = _chunks(text)
    doc = Doc(speaker=speaker)
    grams, surface = doc.grams, doc.surface

    def put(key: str, flags: int, words: str) -> None:
        grams[key] = grams.get(key, 0) | flags
        surface.setdefault(key, words)

    for chunk in chunks:
        for i, t in enumerate(chunk):
            if len(t.key) >= 3 and not t.modifier and t.key not in HONORIFICS:
                head = i > 0 and i == len(chunk) - 1          # "support group": "group" is a noun here
                put(t.key, (CAP if t.cap else 0) | (LOW if t.low else 0) | (NOUN if t.noun or head else 0)
                    | (ALONE if len(chunk) == 1 else 0), t.surface)
            if i + 1 < len(chunk) and not chunk[i + 1].modifier:
                u = chunk[i + 1]
                both_caps = (t.cap or u.cap) and not t.low and not u.low
                flags = MULTI | (CAP if both_caps else 0) | (LOW if t.low and u.low else 0)
                put(f"{t.key} {u.key}", flags, f"{t.surface} {u.surface}")
                if i + 2 < len(chunk):
                    v = chunk[i + 2]
                    if both_caps and not v.low:          # three-word names only ("New York City")
                        put(f"{t.key} {u.key} {v.key}", MULTI | CAP, f"{t.surface} {u.surface} {v.surface}")
    return doc


class ScopeStats:
    """Document frequencies of one scope's candidates, packed in one int: memories | written
    capitalised << 20 | written lower case << 40 | used as a noun << 60 | a clause alone << 80."""

    def __init__(self) -> None:
        self.docs = 0
        self.counts: dict[int, int] = {}
        self.speakers: Counter[str] = Counter()
        self.counted: dict[int, int] = {}          # node id -> hash of its content_hash

    def add(self, node_id: int, content_hash: str, doc: Doc) -> None:
        counts = self.counts
        for key, flags in doc.grams.items():
            h = hash(key)
            counts[h] = (counts.get(h, 0) + 1 + ((flags & CAP) << _BITS) + (((flags & LOW) >> 1) << (2 * _BITS))
                         + (((flags & NOUN) >> 3) << (3 * _BITS)) + (((flags & ALONE) >> 4) << (4 * _BITS)))
        if doc.speaker:
            self.speakers[doc.speaker] += 1
        self.docs += 1
        self.counted[node_id] = hash(content_hash)

    def stats(self, key: str) -> tuple[int, int, int, int, int]:
        """(memories, written capitalised, written lower case, used as a noun, a clause alone)."""
        packed = self.counts.get(hash(key), 0)
        return tuple((packed >> (n * _BITS)) & _MASK for n in range(5))

    def speaker_keys(self) -> list[str]:
        """A line prefix is a speaker when it opens a good share of the scope's memories (a
        conversation); a note's "Garden:" once is a heading."""
        return [k for k, n in list(self.speakers.items()) if n >= max(2, 0.3 * self.docs)]

    def is_speaker(self, key: str, speakers: list[str]) -> bool:
        """The speaker, or what the other calls them ("Mel" for Melanie)."""
        return any(s == key or (len(key) >= 3 and " " not in key and s.startswith(key)) for s in speakers)

    def min_docs(self, kind: str) -> int:
        """A name or phrase recurs when two memories share it; a single word is more often
        shared by chance, the more so in a large scope (3 from 1,000 memories, 4 from 10,000).
        (It was 3 from 100: on conversations-dev that left "lake", "library", "spices" untagged in
        turns about them, and the tags two memories share were the more coherent ones, 88% to 87%.)"""
        return MIN_DOCS if kind != "word" else max(MIN_DOCS, int(math.log10(max(self.docs, 1))))

    def kind(self, key: str, flags: int) -> str:
        docs, capitalised, lower, _, alone = self.stats(key)
        if capitalised and capitalised >= lower:
            return "name"
        if not lower and alone and docs >= MIN_DOCS and not flags & MULTI:
            return "name"              # only ever opening a sentence, on its own, never in lower case: "Ana wants..."
        return "phrase" if flags & MULTI else "word"

    def confidence(self, kind: str, df: int) -> float:
        n = max(self.docs, 2)
        recurs = min(1.0, math.log2(max(df, 1)) / 3)                   # 2 memories: 0.33, 8: 1
        specific = 1.0 - math.log(max(df, 1)) / math.log(n) if n > 1 else 0.0
        return round(min(0.99, BASE[kind] + 0.15 * recurs + 0.1 * max(0.0, specific)), 2)

    def propose(self, doc: Doc, *, exclude: set[str] = frozenset(), confirmed: set[str] = frozenset(),
                lift: Callable[[list[str]], dict[str, float]] | None = None,
                limit: int = MAX_TAGS) -> list[tuple[str, str, float]]:
        """(key, surface, confidence) for the memory, best first. `exclude`: keys never to propose
        here (tombstones, this memory's rejections); `confirmed`: keys a person confirmed in the
        scope (proposed first, even when they recur nowhere else yet); `lift`: single words ->
        their share in the scope over their share in the store (None: no background)."""
        scored = []
        words: list[tuple[float, str]] = []
        speakers = self.speaker_keys()
        for key, flags in doc.grams.items():
            if key in exclude or self.is_speaker(key, speakers):
                continue
            df, _, _, as_noun, _ = self.stats(key)
            if key in confirmed:
                scored.append((self.confidence("confirmed", df), key))
                continue
            kind = self.kind(key, flags)
            if df < self.min_docs(kind) or (self.docs >= SHARE_FROM and df > MAX_SHARE[kind] * self.docs):
                continue
            if kind == "word" and not as_noun:
                continue                            # never seen where a noun goes: "appreciate", "lucky"
            (words if kind == "word" else scored).append((self.confidence(kind, df), key))
        if words and lift is not None:
            lifts = lift([key for _, key in words])
            words = [(c, k) for c, k in words if lifts.get(k, MIN_LIFT) >= MIN_LIFT]
        scored += words
        scored.sort(key=lambda p: (-p[0], -len(p[1]), p[1]))
        chosen: list[tuple[str, str, float]] = []
        used: set[str] = set()
        for conf, key in scored:
            words = set(key.split())
            if words & used:
                continue                            # "sourdough starter" already says "starter"
            chosen.append((key, doc.surface[key], conf))
            used |= words
            if len(chosen) >= limit:
                break
        return chosen


_CACHE: OrderedDict[tuple[str, str], ScopeStats] = OrderedDict()
_LOCK = threading.Lock()          # the desktop runs passes on worker threads


def for_scope(conn, scope: str) -> ScopeStats:
    """The scope's statistics, brought up to date with its visible memories (a memory waiting
    for clarification is not searchable yet, so it does not count either)."""
    with _LOCK:
        return _refresh(conn, scope)


def _refresh(conn, scope: str) -> ScopeStats:
    where = (conn.filename, scope)
    stats = _CACHE.get(where)
    current = nodes.visible_hashes(conn, scope)
    if stats is None or len(stats.counted) > len(current) or any(
            hash(current.get(i, "")) != h for i, h in stats.counted.items()):
        stats = ScopeStats()               # a memory left or changed: count again from its texts
    new = [i for i in current if i not in stats.counted]
    for start in range(0, len(new), 500):
        chunk = new[start:start + 500]
        for node_id, row in nodes.get_visible(conn, chunk, [scope]).items():
            stats.add(node_id, row["content_hash"], extract(row["content"]))
    _CACHE[where] = stats
    _CACHE.move_to_end(where)
    while len(_CACHE) > CACHE_SCOPES:
        _CACHE.popitem(last=False)
    return stats
