"""How recall scores a candidate: its own words, and the turns and session around it.

Real conversations rarely answer in the words of the question, and rarely next to it: "Where did
you go?" is followed by "I went to Woodhaven". A turn is therefore scored with its context
rather than by itself (and rather than pulling its neighbours in as extra items that crowd
distinct hits out of the top k):

  own       its BM25 score                          prev, prev2  the score of the turn(s) before it
  asked     `prev` again when that turn asks a question ("Where did you go?" → "I went to ...")
  next      the score of the turn after it          sess, sess3  the best / three best in its session
  spk       it was said by a person the query names ("Caroline: I went ..." for "what did Caroline ...")
  when      its valid day fits a date the query names ("in July 2023", "on 3 May, 2023")
  cos       its cosine to the query (vector arm)    scos         the best cosine in its session
  cprev     the cosine of the turn before it (a question found by meaning, not by its words)
  linked    the best score among the hits it has a confirmed link with (the graph joins sessions)

Lexical features are divided by the best BM25 score of the query, so weights mean the same in a
scope of 300 memories and of 100,000. The score is the weighted sum. The weights were fitted by
coordinate ascent on recall@10 over the tuning half of the development conversations
(`tests/eval/fit_recall.py`: three of the five conversations of ../shared/eval/conversations-dev);
the other two are held out and reported separately in docs/EVALUATION.md. A memory with no session is
a session of one, so it is neither helped nor hurt by the session features.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from itertools import repeat
from operator import mul
from typing import Sequence

from .. import substance as _substance
from ..text import TextMemo, content_words, speaker  # noqa: F401  (speaker: read here by the features, and by callers)
from .when import Window

WEIGHTS = {"own": 1.0, "prev": 0.6, "asked": 0.6, "prev2": 0.2, "next": 0.3, "sess": 0.5, "sess3": 0.2, "spk": 1.0,
           "when": 1.2, "cos": 0.4, "scos": 0.4, "cprev": 0.0, "linked": 0.2}

SPEAKER_SPECIFIC = 1   # words beyond small talk a turn needs for its speaker to count (1 fitted on conv-26, 41, 43: 0.793 R@10, 2: 0.791)


# a person a question names as the one something was said to, not the one who said it: "What did
# Melanie's friend paint?", "What did Caroline tell Melanie?", "What did John recommend to Maria?"
# (not "important to Caroline", "according to Gina", "what happened to John's car", "John's friend
# Max", a third person, "who is Caroline's friend?", nor gifts and letters: "who gave the necklace
# to Caroline?" is answered by Caroline)
_FRIEND = re.compile(r"\b([A-Z][a-z]+)['’]s (?:friend|buddy|pal)\b(?!,?\s+[A-Z])")
_TOLD = re.compile(
    r"\b(?:tell|tells|told|ask|asks|asked)\s+([A-Z][a-z]+)\b(?!['’]s)"
    r"|\b(?:say|says|said|recommend\w*|suggest\w*|mention\w*|explain\w*)\b(?:\s+[\w'’-]+){0,4}?\s+(?:to|with)\s+"
    r"([A-Z][a-z]+)\b(?!['’]s)")


def listeners(query: str) -> set[str]:
    """The names a question uses for who was spoken to (lower case)."""
    return {next(g for g in groups if g).casefold() for groups in _TOLD.findall(query or "")} | friends_of(query)


def friends_of(query: str) -> set[str]:
    """The X of "X's friend" when the friend is the one the question is about (lower case)."""
    if re.match(r"\s*who\b", query or "", re.IGNORECASE):
        return set()                                  # "Who is Caroline's friend?" asks Caroline
    return {name.casefold() for name in _FRIEND.findall(query or "")}


def _speaker_feature(content: str, as_speaker: set[str], only_to: set[str] = frozenset(),
                     parts: frozenset[str] | None = None) -> float:
    """1 when the question names who said this turn and the turn says something: in long sessions
    of short messages a person's greetings filled the top ten when every turn of theirs was lifted.
    `as_speaker`: the speakers the question names (lower case, each word of a name); `only_to`:
    when it names people only as the ones spoken to ("Melanie's friend", "told Melanie"), them:
    then the turns of the others count, not theirs. (Lifting every turn said to a person named as
    a speaker as well, at half weight, lost 0.6 point of recall@10 and 0.008 of MRR on
    conversations-dev: left out.) `parts`: the turn's `speaker_parts`, when the caller has them."""
    if parts is None:
        parts = speaker_parts(content)
    if not parts:
        return 0.0
    if not (parts & as_speaker or (only_to and not parts & only_to)):
        return 0.0
    return 1.0 if _beyond_small_talk(content) >= SPEAKER_SPECIFIC else 0.0


def named_people(pool_rows, query_words: set[str], spoken_to: set[str],
                 friends: set[str] = frozenset(), parts=None) -> tuple[set[str], set[str]]:
    """(the speakers a question names as speakers, those whose friend it asks about when it names
    no speaker), among the speakers of the rows. A person only told something ("What did the
    doctor tell Caroline?") stays a speaker: Caroline is who reports it. `parts`: the rows'
    `speaker_parts`, when the caller has them."""
    talkers = frozenset().union(*(parts if parts is not None else (speaker_parts(row["content"]) for row in pool_rows)))
    named = query_words & talkers
    as_speaker = named - spoken_to
    if as_speaker:
        return as_speaker, set()
    if named & friends:
        return set(), named & friends
    return named, set()


_SPEAKER_PARTS = TextMemo()


def speaker_parts(content: str) -> frozenset[str]:
    """Each word of the turn's speaker label, lower case (none without a label): read for every
    turn of the pool, and for every candidate when a question names someone; the same turns come
    back query after query (kept like `_beyond_small_talk`)."""
    return _SPEAKER_PARTS.get(content, _parts_of_label, content)


def _parts_of_label(content: str) -> frozenset[str]:
    return frozenset(part.casefold() for part in (speaker(content) or "").split())


_SMALL_TALK_COUNTS = TextMemo()


def _beyond_small_talk(content: str) -> int:
    """Content words that are not small talk, less the speaker's name (a memory's text never
    changes, and the same turns come back query after query: counted once, up to a bound)."""
    return _SMALL_TALK_COUNTS.get(content, _count_beyond_small_talk, content)


def _count_beyond_small_talk(content: str) -> int:
    return sum(1 for w in content_words(content) if w not in _substance.CHATTER) - 1


@dataclass
class Pool:
    """The candidates of one query and everything their score is made from."""
    lexical: dict[int, float]                        # BM25 (higher is better), FTS hits only
    cosine: dict[int, float]                         # vector hits only
    rows: dict[int, dict]                            # visible rows of the candidates and their neighbours
    candidates: set[int] = field(default_factory=set)            # what is ranked (chatter is not)
    before: dict[int, list[int]] = field(default_factory=dict)   # candidate -> the turns before it, nearest first
    after: dict[int, list[int]] = field(default_factory=dict)    # candidate -> the turns after it, nearest first
    nearest: dict[int, list[int]] = field(default_factory=dict)  # a hit -> the turns right beside it, chatter too
    linked: dict[int, list[int]] = field(default_factory=dict)   # candidate -> best hits it has a confirmed link with
    features: dict[int, dict[str, float]] = field(default_factory=dict)


def group_of(row: dict) -> object:
    """What a memory's session features are pooled over: its session, else itself alone."""
    return ("session", row["session"]) if row.get("session") else ("node", row["id"])


def compute(pool: Pool, query_words: set[str], when: Window | None,
            anchored: dict[int, list[tuple[dt.date, dt.date]]] | None = None,
            spoken_to: set[str] = frozenset(), friends: set[str] = frozenset()) -> dict[int, dict[str, float]]:
    """Each candidate's features. `anchored`: the days a memory's date anchors name ("yesterday"
    written on the 23rd is the 22nd): a question's date fits them as it fits the valid day.
    `spoken_to`: the names the question uses for who was spoken to (`listeners`); `friends`: those
    whose friend it asks about (`friends_of`)."""
    anchored = anchored or {}
    rows, cosine, candidates = pool.rows, pool.cosine, pool.candidates
    parts_of = {node_id: speaker_parts(row["content"]) for node_id, row in rows.items()}
    as_speaker, only_to = named_people(rows.values(), query_words, spoken_to, friends, parts_of.values())
    top = max(pool.lexical.values(), default=0.0)
    norm = {i: s / top for i, s in pool.lexical.items()} if top > 0 else {}
    by_group: dict[object, list[float]] = {}
    best_cos: dict[object, float] = {}
    group_of_node = {node_id: group_of(rows[node_id]) for node_id in candidates}
    for node_id, key in group_of_node.items():
        if node_id in norm:
            by_group.setdefault(key, []).append(norm[node_id])
        if node_id in cosine:
            best_cos[key] = max(best_cos.get(key, 0.0), cosine[node_id])
    for scores in by_group.values():
        scores.sort(reverse=True)
    # a group's best and three best are the same for each of its members: summed once
    best_of_group = {key: (scores[0], sum(scores[:3])) for key, scores in by_group.items()}
    # no person named as speaker or listener: the feature is 0 for every turn, no label is read
    speakers_named = bool(as_speaker or only_to)
    # (one loop of plain lookups a candidate: two hundred candidates a query, query after query)
    norm_of, cos_of, before_of, after_of, linked_of = norm.get, cosine.get, pool.before.get, pool.after.get, pool.linked.get
    no_group = (0.0, 0)
    out: dict[int, dict[str, float]] = {}
    for node_id in candidates:
        row = rows[node_id]
        key = group_of_node[node_id]
        before = before_of(node_id)
        after = after_of(node_id)
        sess, sess3 = best_of_group.get(key, no_group)
        linked = linked_of(node_id)
        if before:
            first = before[0]
            prev = norm_of(first, 0.0)
            asked = prev if prev and "?" in rows[first]["content"] else 0.0
            prev2 = norm_of(before[1], 0.0) if len(before) > 1 else 0.0
            cprev = cos_of(first, 0.0)
        else:
            prev = asked = prev2 = cprev = 0.0
        if when:
            valid_day = dt.date.fromisoformat(row["valid_from"][:10])
            fits = when.fit(valid_day)
            for a, b in anchored.get(node_id, ()):
                fits = max(fits, when.fit_span(a, b))
        else:
            fits = 0.0
        out[node_id] = {
            "own": norm_of(node_id, 0.0),
            "prev": prev,
            "asked": asked,
            "prev2": prev2,
            "next": norm_of(after[0], 0.0) if after else 0.0,
            "sess": sess,
            "sess3": sess3,
            "spk": _speaker_feature(row["content"], as_speaker, only_to, parts_of[node_id]) if speakers_named else 0.0,
            "when": fits,
            "cos": cos_of(node_id, 0.0),
            "cprev": cprev,
            "linked": max([norm_of(s, 0.0) for s in linked]) if linked else 0.0,
            "scos": best_cos.get(key, 0.0),
        }
    pool.features = out
    return out


FEATURES = ("own", "prev", "asked", "prev2", "next", "sess", "sess3", "spk", "when", "cos", "cprev", "linked", "scos")


def score(features: dict[int, dict[str, float]], weights: dict[str, float] | None = None) -> dict[int, float]:
    w = weights or WEIGHTS
    # the weighted sum in the features' own order (every candidate's features come in the order
    # `compute` writes them: the weights are lined up once, and map leaves no Python frame per feature)
    for f in features.values():
        if tuple(f) != FEATURES:          # (hand-made features, in another order or with fewer names)
            return {node_id: sum(map(mul, map(w.get, f, repeat(0.0)), f.values())) for node_id, f in features.items()}
        break
    lined = [w.get(name, 0.0) for name in FEATURES]
    return {node_id: sum(map(mul, lined, f.values())) for node_id, f in features.items()}


def rank(scores: dict[int, float]) -> list[int]:
    return sorted(scores, key=lambda i: (-scores[i], i))


def context_of(node_ids: Sequence[int], pool: Pool) -> dict[int, list[int]]:
    """For each node, the turns around it that are not themselves served (shown as its context):
    the nearest on each side, chatter included, and the nearest substantive ones."""
    served = set(node_ids)
    out = {}
    for i in node_ids:
        near = pool.nearest.get(i, []) + pool.before.get(i, [])[:1] + pool.after.get(i, [])[:1]
        out[i] = sorted({c for c in near if c not in served})
    return out
