"""Extractive summaries without a model: the sentences of a group of memories that say most of
what the group has in common, each citing its memory, and a title made of the names they share.

Centrality is the centroid method (MEAD): every memory is a tf-idf vector (idf from the scope's
own document frequencies, so a word every memory of the scope uses weighs nothing), and a
sentence scores by its cosine to the sum of the *other* memories' vectors. Linear in the words of
the group, so a week of a busy scope costs milliseconds; a pairwise sentence graph would cost
seconds. Sentences are quoted verbatim (they are authored text of visible members) and cut at a
word boundary when long.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Callable, Sequence

from .. import substance
from ..text import STOPWORDS, content_words

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*+>#]+|\d+[.)])\s*")
_TOKEN = re.compile(r"[\w][\w.+#/-]*[\w+#]|\w")
SENTENCE_CHARS = 220
REDUNDANCY = 0.7            # how much a sentence loses for each unit of likeness to a chosen one

Member = tuple[int, str]           # (node id, authored text)


class Reading:
    """What is read from each memory (its words, its sentences' words, its candidate names), kept
    for one pass: a memory is in its day's digest and in its week's, and authored text never
    changes under an id, so it is read once."""

    def __init__(self, limit: int = 1000):
        # bounded: a node's candidate names take a few kilobytes, and a pass over 100,000 nodes
        # must not hold them all (the temporal pass reads a week's days, then the week, then forgets)
        self.limit = limit
        self.words: dict[int, list[str]] = {}
        self.sentences: dict[int, list[tuple[str, list[str]]]] = {}
        self.names: dict[int, dict[str, tuple[str, int]]] = {}

    def forget(self) -> None:
        self.words.clear()
        self.sentences.clear()
        self.names.clear()

    def words_of(self, nid: int, text: str) -> list[str]:
        if nid not in self.words:
            if len(self.words) >= self.limit:
                self.forget()
            self.words[nid] = content_words(text)
        return self.words[nid]

    def sentences_of(self, nid: int, text: str) -> list[tuple[str, list[str]]]:
        if nid not in self.sentences:
            if len(self.sentences) >= self.limit:
                self.forget()
            # a summary quotes what was said: a heading names a section, it says nothing
            self.sentences[nid] = [(s, content_words(s)) for s in sentences(text, headings=False)]
        return self.sentences[nid]

    def names_of(self, nid: int, text: str) -> dict[str, tuple[str, int]]:
        if nid not in self.names:
            if len(self.names) >= self.limit:
                self.forget()
            self.names[nid] = _names(text)
        return self.names[nid]


# a full stop after these is not the end of a sentence ("Dentist appointment with Dr. Patel")
_ABBREVIATION = re.compile(r"(?:^|\s|\()(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr|St|Mt|Ft|Gen|Col|Capt|Lt|Sgt|Rev|Hon|Inc|Ltd|Co"
                           r"|Corp|No|Nos|Vol|Fig|approx|vs|cf|ca|e\.g|i\.e|[A-Z])\.$")
_LINE = re.compile(r"\n+")
_HEADING_LINE = re.compile(r"[ \t]{0,3}#{1,6}[ \t]")


def sentences(text: str, headings: bool = True) -> list[str]:
    """The sentences of a text: each line is cut after . ! ? before a capital or a digit, except
    after a title or an abbreviation (Dr., St., e.g.) or an initial (J. Smith); without heading
    lines when `headings` is False."""
    out: list[str] = []
    for line in _LINE.split(text or ""):
        if not headings and _HEADING_LINE.match(line):
            continue
        line = _BULLET.sub("", " ".join(line.split())).strip()
        held: list[str] = []           # pieces of one sentence: joined once (linear in the line)
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip()
            if not piece:
                continue
            held.append(piece)
            if not _ABBREVIATION.search(piece[-12:]):     # only its end can be "Dr." or "e.g."
                out.append(" ".join(held))
                held = []
        if held:
            out.append(" ".join(held))
    return out


def clip(sentence: str, chars: int = SENTENCE_CHARS) -> str:
    if len(sentence) <= chars:
        return sentence
    return sentence[: chars - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def _vector(words: Sequence[str], idf: dict[str, float]) -> dict[str, float]:
    counts = Counter(words)
    vec = {w: (1 + math.log(n)) * idf.get(w, 1.0) for w, n in counts.items()}
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {w: v / norm for w, v in vec.items()}


def idf_from(df: dict[str, int], n_docs: int) -> dict[str, float]:
    """Smoothed idf; a word found in (nearly) every memory of the scope weighs (nearly) nothing."""
    return {w: max(0.0, math.log((n_docs + 1) / (d + 1))) for w, d in df.items()}


def central(members: Sequence[Member], idf: dict[str, float], k: int, per_member: int = 1,
            in_time_order: bool = False, reading: Reading | None = None) -> list[tuple[int, str]]:
    """Up to `k` (node id, sentence) pairs: the most central sentences of the group, at most
    `per_member` from one memory, none that repeats a chosen one; by score, or by node id."""
    reading = reading or Reading()
    names = {part.casefold() for _, text in members if (who := substance.speaker(text)) for part in who.split()}
    vectors = {nid: _vector(reading.words_of(nid, text), idf) for nid, text in members}
    centroid: dict[str, float] = {}
    for vec in vectors.values():
        for w, v in vec.items():
            centroid[w] = centroid.get(w, 0.0) + v
    c_norm2 = sum(v * v for v in centroid.values())
    scored = []
    for position, (nid, text) in enumerate(members):
        own = vectors[nid]
        # the others' centroid is centroid - own: its norm without building it
        others2 = c_norm2 - 2 * sum(centroid[w] * v for w, v in own.items()) + sum(v * v for v in own.values())
        others = math.sqrt(max(others2, 0.0)) or 1.0
        who = substance.speaker(text)
        for index, (sentence, words) in enumerate(reading.sentences_of(nid, text)):
            if len(members) > 1 and (len(words) < 2 or not substance.carries_content(sentence, names)):
                continue                # "Nice job, John!", "Wow, Maria!": a summary drops the chatter
            if who and index and not sentence.startswith(who + ":"):
                sentence = f"{who}: {sentence}"      # who said it stays with what they said
            vec = _vector(words, idf)
            echo = sum(v * (centroid.get(w, 0.0) - own.get(w, 0.0)) for w, v in vec.items()) / others
            # among equals, an earlier sentence and a fuller one: the first sentence usually says what it is about
            score = (echo if len(members) > 1 else 0.0) + 0.05 * min(1.0, len(words) / 8) - 0.01 * index
            scored.append((score, position, index, nid, sentence, vec))
    # maximal marginal relevance: each next sentence is central *and* unlike the ones chosen, so a
    # day about three things quotes all three instead of three sentences about the busiest one
    chosen: list = []
    per: Counter = Counter()
    # the best few times k are enough to choose from (a week of a busy scope has hundreds)
    pool = sorted(scored, key=lambda s: (-s[0], s[1], s[2]))[: max(20, 6 * k)]
    while pool and len(chosen) < k:
        best, best_value = None, None
        for cand in pool:
            if per[cand[3]] >= per_member:
                continue
            overlap = max((sum(v * c[5].get(w, 0.0) for w, v in cand[5].items()) for c in chosen), default=0.0)
            if overlap > 0.7:
                continue                # says again what a chosen sentence says
            value = cand[0] - REDUNDANCY * overlap
            if best_value is None or value > best_value:
                best, best_value = cand, value
        if best is None:
            break
        chosen.append(best)
        per[best[3]] += 1
        pool.remove(best)
    if in_time_order:
        chosen.sort(key=lambda c: (c[3], c[2]))
    return [(c[3], clip(c[4])) for c in chosen]


def _names(text: str) -> dict[str, tuple[str, int]]:
    """Candidate names of one memory, matching key -> (as written, how): the tag vocabulary's
    candidates (`vocabulary.extract`: chunks cut at function words, verbs, adverbs and numbers, so a
    name is never a clause fragment such as "Anna reviewed" or "disk filled"), with its flags
    (written capitalised, a phrase, used as a noun here)."""
    from . import vocabulary

    doc = vocabulary.extract(text)
    return {key: (doc.surface[key], flags) for key, flags in doc.grams.items()}


def shared_names(members: Sequence[Member], idf: dict[str, float], k: int = 3,
                 reading: Reading | None = None) -> list[str]:
    """Up to `k` names most of the group shares and the scope rarely uses, as written. A phrase
    wins over its own words when it is nearly as common in the group."""
    from .vocabulary import CAP, MULTI, NOUN

    reading = reading or Reading()
    seen: Counter = Counter()
    named: set[str] = set()             # a phrase, a name, or a word the group uses as a noun somewhere
    surface: dict[str, str] = {}        # key -> as first written: the idf is of words as written
    for nid, text in members:
        names = reading.names_of(nid, text)
        seen.update(names.keys())
        named.update(key for key, (_, flags) in names.items() if flags & (CAP | MULTI | NOUN))
        for key, (written, _) in names.items():
            surface.setdefault(key, written)
    need = 2 if len(members) > 1 else 1

    def weight(folded: str) -> float:
        parts = folded.split()           # singular ("user"), where the idf knows "users"
        words = surface[folded].casefold().split()
        if len(words) != len(parts):
            words = parts
        rarity = sum(idf.get(w, idf.get(p, 1.0)) for w, p in zip(words, parts)) / len(parts)
        return seen[folded] * rarity * (1.15 if len(parts) > 1 else 1.0)

    weights = {f: weight(f) for f, n in seen.items() if n >= need and f in named}
    ranked = sorted((f for f, w in weights.items() if w > 0), key=lambda f: (-weights[f], f))
    out: list[str] = []
    for folded in ranked:
        if len(out) >= k:
            break
        words = set(folded.split())
        # a chosen phrase and its own words (or the other way round) say one thing
        if any(words <= set(o.split()) or set(o.split()) <= words for o in out):
            continue
        # two chosen words the group also writes as one phrase are that phrase ("staging database")
        joined = next(((o, p) for o in out for p in (f"{o} {folded}", f"{folded} {o}") if seen.get(p, 0) >= need),
                      None)
        if joined is not None:
            out[out.index(joined[0])] = joined[1]
            continue
        out.append(folded)
    written: dict[str, Counter] = {f: Counter() for f in out}      # each name as the group writes it most
    for nid, text in members:
        names = reading.names_of(nid, text)
        for f in out:
            if f in names:
                written[f][names[f][0]] += 1
    return [written[f].most_common(1)[0][0] for f in out]


def title(names: Sequence[str], fallback: str = "") -> str:
    if not names:
        return fallback
    head = " · ".join(names)
    return head[0].upper() + head[1:]


def idf_lookup(document_frequencies: Callable[[list[str]], tuple[dict[str, int], int]],
               members: Sequence[Member], reading: Reading | None = None,
               known: dict[str, int] | None = None) -> dict[str, float]:
    """idf of every word of the group, from one document-frequency query for the words not in
    `known` (a pass keeps the scope's frequencies it has read: {word: df}, "" for the count)."""
    reading = reading or Reading()
    known = {} if known is None else known
    words = {w for nid, text in members for w in reading.words_of(nid, text)}
    missing = sorted(words - known.keys())
    if missing or "" not in known:
        df, n_docs = document_frequencies(missing)
        known.update(df)
        known[""] = n_docs
    return idf_from({w: known[w] for w in words}, known[""])
