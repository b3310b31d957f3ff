"""How related two memories of one scope are, judged the way a person would keep a link.

A link a person keeps joins two memories about one thing. Measured on conversations-dev's topic
labels, the word-and-speaker score this module used to give linked nearly everything: 88% of
its confirmed links joined turns about different things, worse than a plain BM25 neighbour list,
and a fifth had a greeting or a thank-you at one end. What tells two memories apart is what they
say specifically, read with the memories around them:

  specific words   each memory's content words that are not small talk, not the names of the
                   people speaking, not markup (`substance.specific_words`) and not too vague to
                   name a topic (`substance.VAGUE`: "escape", "solutions"), TF-IDF weighted
                   in the scope (rare words and names shared weigh most; words in more than
                   MAX_DF_SHARE of the scope's memories not at all)
  context          a memory's words plus NEIGHBOUR_WEIGHT of the words of the memories right
                   before and after it (the turns around a turn of its session, the sections
                   around a section of its note): "Wow, where in England was it?" is about the
                   trip the turn before it told
  each its own     both memories must contribute: a word of each is in the other's context
                   (a greeting next to a story shares the story's words only through context)
  adjacency        two memories next to each other in one session or note (ADJACENT) or one apart
  cosine           the embedder's cosine, lightly

A memory that carries no content (`substance.carries_content`, and in a large scope fewer than
MIN_SPECIFIC words rarer than SPECIFIC_SHARE) relates to nothing. Candidates are the whole scope
when it is small enough to hold, else the memories sharing its rarest words (FTS5) and its
nearest vectors, under the one visibility predicate.
"""
from __future__ import annotations

import math
from typing import Sequence

import apsw
import numpy as np

from .. import substance
from ..store import fts, nodes, vectors, visible
from ..text import STOPWORDS

# fitted on three conversations of conversations-dev (conv-26, conv-41, conv-43; docs/EVALUATION.md "How good
# is the graph"), reported on the other two
NEIGHBOUR_WEIGHT = 0.5
ADJACENT = {1: 0.15, 2: 0.05}     # same session or note, this many memories apart
COSINE_WEIGHT = 0.1
WORD_WEIGHT = 1.0
MAX_DF_SHARE = 0.3         # a word in more of the scope's memories than this says nothing of a pair
SMALL_SCOPE = 100          # (below this many memories every word counts: a topic may be a third of them)
SPECIFIC_SHARE = 0.03      # in a large scope, a memory needs MIN_SPECIFIC words rarer than this to relate
MIN_SPECIFIC = 2
MIN_SHARED = 2           # stems two related memories' contexts have in common, at least
# words too general to say two memories are about one thing, which a small scope cannot tell by
# their frequency ("every Monday" / "every morning", "two feedings" / "two minutes")
GENERIC = frozenset("""
every each once twice two three four five six seven eight nine ten first second third last next day days week weeks
month months year years time times minute minutes hour hours morning evening night today yesterday tomorrow gets
getting make makes made take takes took keep keeps kept goes going come comes came give gives gave new old good great
little lot lots much many really still even always never often sometimes thing things way ways
""".split())
# an event's words are used in at most LOCAL_SESSIONS sessions, or LOCAL_SHARE of a scope's many
# sessions (`local_words`), once a scope has THEMES_FROM sessions: fewer are not enough for a theme
# to come back in, and a piece of work spread over three agent runs is one thing
LOCAL_SESSIONS, LOCAL_SHARE, THEMES_FROM = 2, 0.05, 10
RARE_WORDS = 25            # the words a memory looks for its partners with
# a word in more of a large scope than this does not find partners: OR-ing a few "is"/"by" into the
# search matched two thirds of a 10k-node store and made link-propose its slowest pass
SEARCH_MAX_SHARE = 0.1
CANDIDATES = 80            # from each of the two searches
RESCORED = 40              # of a held scope, the best this many by context are scored exactly
# up to this many memories a scope is scored whole, in memory, once a pass: exact, and several times
# faster than asking FTS5 and sqlite-vec for each memory's candidates (an OR of its rare words matched
# across every scope of the store, and bm25 ranked them all); a larger scope searches for candidates
WHOLE_SCOPE = 5000
# and no more memories than this held at once by one pass, whatever the number of scopes: a held
# memory costs about 10 KB (its words, postings, row and vector), so a store of many small scopes
# searches for the rest instead of growing the daemon without bound
HOLD_BUDGET = 10000
# holding a scope costs about 0.2 ms a memory, searching about 20 ms a new memory: a pass holds a
# scope only when it has at least one new memory there per HOLD_PAYS memories of the scope (two new
# notes in a scope of 5,000: 0.04 s searching, 0.97 s holding)
HOLD_PAYS = 100


class Relatedness:
    """Pair scores within one scope; caches each memory's words, context and vector for one pass."""

    def __init__(self, conn: apsw.Connection, scope: str, embedder):
        self.conn, self.scope, self.embedder_name = conn, scope, embedder.name
        self.documents, _ = fts.scope_sizes(conn, [scope])
        self.holds = self.documents <= WHOLE_SCOPE      # `ranked` scores the scope whole
        # an embedder that learns from the store's own text (the default) knows little of a
        # small scope: in eighteen memories its cosine across topics exceeded the one within
        learning = getattr(embedder, "learns_from_store", False)
        self.cosine_weight = COSINE_WEIGHT * (min(1.0, self.documents / SMALL_SCOPE) if learning else 1.0)
        self._idf: dict[str, float] = {}
        self._df: dict[str, int] = {}
        self._vec: dict[int, dict[str, float]] = {}
        self._context: dict[int, dict[str, float]] = {}
        self._surface: dict[int, dict[str, str]] = {}      # stem -> a word of the memory that made it
        self._rows: dict[int, dict] = {}
        self._floats: dict[int, np.ndarray] = {}
        self._substantive: dict[int, bool] = {}
        self._names: set[str] = set()                      # the scope's speakers, as far as seen
        self._place: dict[int, tuple[object, int]] = {}    # node -> (its session or note, its place there)
        self._beside: dict[int, list[int]] = {}            # node -> the memories right before and after it
        self._near: dict[int, dict[int, int]] = {}         # node -> {memory two or less apart: how far} (searched)
        self._whole: _Whole | None | bool = None           # False: the scope is too large to hold
        self._spread: dict[str, int] = {}                  # stem -> how many sessions of the rows read use it
        self._spread_of = -1                               # (computed over this many rows)
        self._sessions = 0                                 # sessions among those rows

    # -- rows, names and places -------------------------------------------------------------------
    def rows(self, node_ids: Sequence[int]) -> dict[int, dict]:
        missing = [i for i in node_ids if i not in self._rows]
        if missing:
            found = nodes.get_visible(self.conn, missing, [self.scope])
            self._learn(found)
            self._rows.update(found)
        return {i: self._rows[i] for i in node_ids if i in self._rows}

    def _learn(self, found: dict[int, dict]) -> None:
        for row in found.values():
            who = substance.speaker(row["content"])
            if who:
                self._names |= {part.casefold() for part in who.split()}

    def _places(self, found: dict[int, dict]) -> None:
        """Each memory's group (its session, else its note's capture) and its place in it, and
        the memories right before and after it, for a scope held whole."""
        groups: dict[object, list[tuple[tuple, int]]] = {}
        for i, r in found.items():
            key = ("session", r["session"]) if r.get("session") else ("capture", r.get("capture_id"))
            groups.setdefault(key, []).append(((r.get("unit_index") or 0, i) if key[0] == "capture" else (i,), i))
        for key, members in groups.items():
            ordered = [i for _, i in sorted(members)]
            for k, i in enumerate(ordered):
                self._place[i] = (key, k)
                self._beside[i] = [ordered[j] for j in (k - 1, k + 1) if 0 <= j < len(ordered)]

    def _neighbours(self, node_id: int) -> list[int]:
        if node_id not in self._beside:
            found = nodes.neighbours(self.conn, [node_id], [self.scope], reach=2)
            near = sorted(((abs(off), m) for _, m, _, off in found), key=lambda x: x[0])
            self._beside[node_id] = [m for d, m in near if d == 1]
            self._near[node_id] = {m: d for d, m in near}
        return self._beside[node_id]

    def distance(self, a: int, b: int) -> int | None:
        """How many memories apart two memories of one session or note are (None: not in one)."""
        if a in self._place and b in self._place:
            (ga, pa), (gb, pb) = self._place[a], self._place[b]
            return abs(pa - pb) if ga == gb else None
        self._neighbours(a)
        return self._near.get(a, {}).get(b)

    # -- words -----------------------------------------------------------------------------------
    def _weights(self, stems: Sequence[str]) -> dict[str, float]:
        unknown = sorted({s for s in stems if s not in self._idf})
        if unknown:
            df, _ = fts.stem_frequencies(self.conn, unknown, [self.scope])
            n = max(self.documents, 1)
            for s in unknown:
                d = self._df[s] = df.get(s, 0)
                self._idf[s] = 0.0 if d > MAX_DF_SHARE * n and n >= SMALL_SCOPE else math.log(1 + (n - d + 0.5) / (d + 0.5))
        return {s: self._idf[s] for s in stems}

    def words(self, node_id: int) -> dict[str, float]:
        """The memory's unit-length TF-IDF vector over the stems of its specific words."""
        if node_id not in self._vec:
            row = self.rows([node_id]).get(node_id)
            counts: dict[str, int] = {}
            surface = self._surface.setdefault(node_id, {})
            # (vague words only in conversation: in a note "interest", "energy", "power" are a rate, a bill, a supply)
            vague = substance.VAGUE if row and row.get("session") else frozenset()
            for w in substance.specific_words(row["content"], self._names, kept=True) if row else []:
                if w in GENERIC or w in vague:
                    continue
                for s in fts.stems(self.conn, w):
                    counts[s] = counts.get(s, 0) + 1
                    surface.setdefault(s, w)
            idf = self._weights(list(counts))
            vec = {s: (1 + math.log(c)) * idf[s] for s, c in counts.items() if idf[s] > 0}
            norm = math.sqrt(sum(x * x for x in vec.values())) or 1.0
            self._vec[node_id] = {s: x / norm for s, x in vec.items()}
        return self._vec[node_id]

    def context(self, node_id: int) -> dict[str, float]:
        """Its words and, weighed NEIGHBOUR_WEIGHT, the words of the memories right beside it."""
        if node_id not in self._context:
            total = dict(self.words(node_id))
            for other in self._neighbours(node_id):
                if other in self.rows([other]):
                    for s, x in self.words(other).items():
                        total[s] = total.get(s, 0.0) + NEIGHBOUR_WEIGHT * x
            norm = math.sqrt(sum(x * x for x in total.values())) or 1.0
            self._context[node_id] = {s: x / norm for s, x in total.items()}
        return self._context[node_id]

    def vector(self, node_ids: Sequence[int]) -> dict[int, np.ndarray]:
        missing = [i for i in node_ids if i not in self._floats]
        if missing:
            self._floats.update(vectors.floats(self.conn, missing, self.embedder_name))
        return {i: self._floats[i] for i in node_ids if i in self._floats}

    def shared_words(self, a: int, b: int) -> list[str]:
        """The words of the two memories themselves that relate them, strongest first, as
        written in them. Never a word only a neighbour said: a link's reason must not quote a
        third memory (its words would outlive that memory's forget in the link's reason)."""
        ca, cb, wa, wb = self.context(a), self.context(b), self.words(a), self.words(b)
        own = (set(wa) | set(wb)) & set(ca) & set(cb)
        surface = {**self._surface.get(b, {}), **self._surface.get(a, {})}
        return [surface[s] for s in sorted(own, key=lambda s: -(ca[s] * cb[s])) if s in surface]

    def speaker_of(self, node_id: int) -> str | None:
        row = self.rows([node_id]).get(node_id)
        return substance.speaker(row["content"]) if row else None

    def substantive(self, node_id: int) -> bool:
        """Chatter, a heading, an image or an empty page relates to nothing: it would spend other
        memories' few links (`substance`), and in a large scope a memory needs MIN_SPECIFIC words
        rare in it (a long encouragement is made of the scope's most common words)."""
        if node_id not in self._substantive:
            row = self.rows([node_id]).get(node_id)
            ok = row is not None and substance.carries_content(row["content"], self._names, kept=True)
            if ok and self.documents >= SMALL_SCOPE:
                self.words(node_id)
                ok = sum(1 for s in self._vec[node_id] if self._rare(s)) >= MIN_SPECIFIC
            self._substantive[node_id] = ok
        return self._substantive[node_id]

    def rare_words(self, node_id: int) -> set[str]:
        """The stems of the memory's own specific words that are rare in the scope."""
        return {s for s in self.words(node_id) if self._rare(s)}

    def local_words(self, node_id: int) -> set[str]:
        """Its rare words that few sessions of the memories read so far use (LOCAL_SESSIONS, or
        LOCAL_SHARE of many), for a memory of a session in a scope of THEMES_FROM sessions or more
        (a conversation's turn); its rare words otherwise.
        An event is told in a session and recalled in another; a theme ("camping", "family",
        "books") comes back in session after session, and a group held together by a theme's
        words is a chat about a subject, not one thing a person would keep a note of."""
        rare = self.rare_words(node_id)
        if not (self._rows.get(node_id) or {}).get("session"):
            return rare
        if self._spread_of != len(self._rows):
            spread: dict[str, set] = {}
            sessions = set()
            for i, row in self._rows.items():
                if row.get("session"):
                    sessions.add(row["session"])
                    for s in self.words(i):
                        spread.setdefault(s, set()).add(row["session"])
            self._spread, self._spread_of = {s: len(v) for s, v in spread.items()}, len(self._rows)
            self._sessions = len(sessions)
        if self._sessions < THEMES_FROM:
            return rare          # a few sessions are one piece of work (a bug over three agent runs)
        most = max(LOCAL_SESSIONS, LOCAL_SHARE * self._sessions)
        return {s for s in rare if self._spread.get(s, 0) <= most}

    def _rare(self, stem: str) -> bool:
        """A stem in few of a large scope's memories (every stem of a small scope)."""
        return self.documents < SMALL_SCOPE or self._df.get(stem, 0) <= max(2.0, SPECIFIC_SHARE * self.documents)

    # -- scores ----------------------------------------------------------------------------------
    def score(self, a: int, b: int, cosine: float | None = None) -> float:
        if a == b or not self.substantive(a) or not self.substantive(b):
            return 0.0
        wa, wb, ca, cb = self.words(a), self.words(b), self.context(a), self.context(b)
        if not any(s in cb for s in wa) or not any(s in ca for s in wb):
            return 0.0                  # one of them says nothing the other's context says
        if sum(1 for s in ca if s in cb) < MIN_SHARED:
            return 0.0                  # one word in common is a coincidence ("two feedings" / "feed the fish")
        apart = self.distance(a, b)
        if apart is None and not any(s in wb and self._rare(s) for s in wa):
            return 0.0                  # far apart, they must say one rare thing both: neighbours' words or a
                                        # common one ("community" in a talk about volunteering) are the talk's topic
        small, big = (ca, cb) if len(ca) <= len(cb) else (cb, ca)
        total = WORD_WEIGHT * sum(x * big.get(s, 0.0) for s, x in small.items())
        total += ADJACENT.get(apart, 0.0) if apart is not None else 0.0
        if cosine is None:
            vecs = self.vector([a, b])
            cosine = float(vecs[a] @ vecs[b]) if a in vecs and b in vecs else 0.0
        return total + self.cosine_weight * max(cosine, 0.0)

    def score_many(self, a: int, others: Sequence[int]) -> list[tuple[float, int]]:
        """`score(a, o)` for many `o` at once, strongest first, zeros left out."""
        others = [o for o in dict.fromkeys(others) if o != a]
        if not others:
            return []
        self.rows([a, *others])
        vecs = self.vector([a, *others])
        cosine = {}
        if a in vecs:
            have = [o for o in others if o in vecs]
            if have:
                cosine = dict(zip(have, (np.stack([vecs[o] for o in have]) @ vecs[a]).tolist()))
        out = [(self.score(a, o, cosine.get(o, 0.0)), o) for o in others]
        out = [(s, o) for s, o in out if s > 0]
        out.sort(reverse=True)
        return out

    def ranked(self, a: int, query: np.ndarray | None, limit: int) -> list[tuple[float, int]]:
        """The `limit` memories of the scope most related to `a`, strongest first, as `score` rates
        them: over the whole scope when it is small enough to hold, else over `candidates`."""
        whole = self._hold_whole()
        if whole is None:
            return self.score_many(a, self.candidates(a, query))[:limit]
        if not self.substantive(a) or not whole.ids:
            return []
        total = np.zeros(len(whole.ids), np.float32)
        for s, x in self.context(a).items():
            if s in whole.postings:
                at, weight = whole.postings[s]
                total[at] += WORD_WEIGHT * x * weight
        for other in self._neighbours(a):
            if other in whole.position:
                total[whole.position[other]] += 1.0        # always scored exactly
        if a in whole.position:
            total[whole.position[a]] = -1.0
        top = [whole.ids[k] for k in np.argsort(-total, kind="stable")[:max(RESCORED, limit)] if total[k] > 0]
        return self.score_many(a, top)[:limit]

    def _hold_whole(self) -> "_Whole | None":
        if self._whole is None:
            self._whole = False
            if self.holds:
                found = nodes.visible_in_scope(self.conn, self.scope)
                self._learn(found)
                self._rows.update(found)
                self._places(found)
                ids = [i for i in found if self.substantive(i)]
                self._whole = _Whole(ids, {i: self.context(i) for i in ids})
        return self._whole or None

    def _search_floor(self) -> float:
        """The IDF of a word in SEARCH_MAX_SHARE of the scope (0 for a small scope: every word)."""
        n = self.documents
        if n < SMALL_SCOPE:
            return 0.0
        d = SEARCH_MAX_SHARE * n
        return math.log(1 + (n - d + 0.5) / (d + 0.5))

    def candidates(self, node_id: int, query: np.ndarray | None) -> list[int]:
        """Memories sharing this one's rarest words (of it and its context), its neighbours, and
        its nearest vectors, visible in the scope."""
        if not self.substantive(node_id):
            return []
        where, params = visible("n", [self.scope])
        found: dict[int, None] = dict.fromkeys(self._neighbours(node_id))
        surface = {**{s: w for o in self._neighbours(node_id) for s, w in self._surface.get(o, {}).items()},
                   **self._surface.get(node_id, {})}
        floor = self._search_floor()
        rare = [s for s, _ in sorted(self.context(node_id).items(), key=lambda kv: -kv[1])
                if self._idf.get(s, 0.0) >= floor and s in surface and surface[s] not in STOPWORDS][:RARE_WORDS]
        expression = fts.match_expression([surface[s] for s in rare])
        if expression:
            for i, _ in fts.search(self.conn, expression, where, params, CANDIDATES, scopes=[self.scope]):
                found[i] = None
        if query is not None:
            ids = vectors.knn_candidates(self.conn, query, [self.scope], self.embedder_name, CANDIDATES * 2)
            for i, _ in vectors.rerank(self.conn, query, ids, where, params, self.embedder_name)[:CANDIDATES]:
                found[i] = None
        found.pop(node_id, None)
        return [i for i in found if self.rows([i]) and self.substantive(i)]


class _Whole:
    """A scope held for one pass: each stem's postings (positions, weights) over the context
    vectors of its memories that carry content."""

    def __init__(self, ids: list[int], word_vectors: dict[int, dict[str, float]]):
        self.ids = ids
        self.position = {i: k for k, i in enumerate(ids)}
        gathered: dict[str, tuple[list[int], list[float]]] = {}
        for k, i in enumerate(ids):
            for s, x in word_vectors[i].items():
                at, weight = gathered.setdefault(s, ([], []))
                at.append(k)
                weight.append(x)
        self.postings = {s: (np.array(at, np.int64), np.array(w, np.float32)) for s, (at, w) in gathered.items()}


class PassScopes:
    """The Relatedness of each scope a pass meets, holding whole scopes up to HOLD_BUDGET memories
    in all (the first scopes met; later ones search for candidates), and only where the pass has
    enough new memories to pay for it (`new`: how many it has in each scope; None: always)."""

    def __init__(self, conn: apsw.Connection, embedder, new: dict[str, int] | None = None):
        self.conn, self.embedder, self.new = conn, embedder, new
        self._by_scope: dict[str, Relatedness] = {}
        self.held = 0

    def __getitem__(self, scope: str) -> Relatedness:
        if scope not in self._by_scope:
            rel = Relatedness(self.conn, scope, self.embedder)
            if rel.holds and self.held + rel.documents > HOLD_BUDGET:
                rel.holds = False
            if rel.holds and self.new is not None and self.new.get(scope, 0) * HOLD_PAYS < rel.documents:
                rel.holds = False
            self.held += rel.documents if rel.holds else 0
            self._by_scope[scope] = rel
        return self._by_scope[scope]
