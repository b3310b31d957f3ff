"""How related two memories of one scope are, from signals that work on short, real text.

The default embedder's cosine between two memories on one topic is 0.1-0.3, so an absolute
cosine threshold (link-propose asked for 0.55) proposed nothing: eighteen short memories on three
topics got no link at all. Here a pair is scored from

  words    the TF-IDF cosine of their words, IDF counted in the scope (rare words and names
           shared weigh most; words in more than MAX_DF_SHARE of the scope's memories not at all)
  speaker  the same person said both ("Caroline: ...")
  cosine   the embedder's cosine (0.1-0.3 on one topic, lower across topics)

and a pair's partners in common (see link_evaluate) decide among the candidates. Candidates of a
memory are the memories sharing its rarest words (FTS5) and its nearest vectors, in its scope,
under the one visibility predicate.
"""
from __future__ import annotations

import math
from typing import Sequence

import apsw
import numpy as np

from ..search.scoring import speaker
from ..store import fts, nodes, vectors, visible
from ..text import STOPWORDS, content_words, words

# chosen on conversations-dev's multi-hop evidence pairs (see the README's linking figures)
WORD_WEIGHT, SPEAKER_WEIGHT, COSINE_WEIGHT = 1.0, 0.25, 0.45
MAX_DF_SHARE = 0.3         # a word in more of the scope's memories than this says nothing of a pair
SMALL_SCOPE = 100          # (below this many memories every word counts: a topic may be a third of them)
# words too general to say two memories are about one thing, which a small scope cannot tell by
# their frequency ("every Monday" / "every morning", "two feedings" / "two minutes")
GENERIC = frozenset("""
every each once twice two three four five six seven eight nine ten first second third last next day days week weeks
month months year years time times minute minutes hour hours morning evening night today yesterday tomorrow gets
getting make makes made take takes took keep keeps kept goes going come comes came give gives gave new old good great
little lot lots much many really still even always never often sometimes thing things way ways
""".split())
RARE_WORDS = 25            # the words a memory looks for its partners with
# a word in more of a large scope than this does not find partners: OR-ing a few "is"/"by" into the
# search matched two thirds of a 10k-node store and made link-propose its slowest pass
SEARCH_MAX_SHARE = 0.1
CANDIDATES = 80            # from each of the two searches
MIN_WORDS = 4              # fewer content words: chatter, linked to nothing
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
    """Pair scores within one scope; caches each memory's words and vector for one pass."""

    def __init__(self, conn: apsw.Connection, scope: str, embedder):
        self.conn, self.scope, self.embedder_name = conn, scope, embedder.name
        self.documents, _ = fts.scope_sizes(conn, [scope])
        self.holds = self.documents <= WHOLE_SCOPE      # `ranked` scores the scope whole
        # an embedder that learns from the store's own text (the default) knows little of a
        # small scope: in eighteen memories its cosine across topics exceeded the one within
        learning = getattr(embedder, "learns_from_store", False)
        self.cosine_weight = COSINE_WEIGHT * (min(1.0, self.documents / SMALL_SCOPE) if learning else 1.0)
        self._idf: dict[str, float] = {}
        self._vec: dict[int, dict[str, float]] = {}
        self._surface: dict[int, dict[str, str]] = {}      # stem -> a word of the memory that made it
        self._rows: dict[int, dict] = {}
        self._floats: dict[int, np.ndarray] = {}
        self._substantive: dict[int, bool] = {}
        self._speaker: dict[int, str | None] = {}
        self._whole: _Whole | None | bool = None       # False: the scope is too large to hold

    def rows(self, node_ids: Sequence[int]) -> dict[int, dict]:
        missing = [i for i in node_ids if i not in self._rows]
        if missing:
            self._rows.update(nodes.get_visible(self.conn, missing, [self.scope]))
        return {i: self._rows[i] for i in node_ids if i in self._rows}

    def _weights(self, stems: Sequence[str]) -> dict[str, float]:
        unknown = sorted({s for s in stems if s not in self._idf})
        if unknown:
            df, _ = fts.stem_frequencies(self.conn, unknown, [self.scope])
            n = max(self.documents, 1)
            for s in unknown:
                d = df.get(s, 0)
                self._idf[s] = 0.0 if d > MAX_DF_SHARE * n and n >= SMALL_SCOPE else math.log(1 + (n - d + 0.5) / (d + 0.5))
        return {s: self._idf[s] for s in stems}

    def words(self, node_id: int) -> dict[str, float]:
        """The memory's unit-length TF-IDF vector over its content words' stems."""
        if node_id not in self._vec:
            row = self.rows([node_id]).get(node_id)
            counts: dict[str, int] = {}
            surface = self._surface.setdefault(node_id, {})
            # every word, function words too, once the scope is large enough for their frequency to
            # show (those in more than MAX_DF_SHARE of it weigh nothing, and the rarer ones, "much",
            # "also", say a little about who writes how); in a small scope, content words only
            read = words if self.documents >= SMALL_SCOPE else content_words
            for w in read(row["content"]) if row else []:
                if (w.isdigit() and len(w) < 4) or w in GENERIC:
                    continue              # "20 minutes" and "20 percent" are not one topic (a port, 5433, may be)
                for s in fts.stems(self.conn, w):
                    counts[s] = counts.get(s, 0) + 1
                    surface.setdefault(s, w)
            idf = self._weights(list(counts))
            vec = {s: (1 + math.log(c)) * idf[s] for s, c in counts.items() if idf[s] > 0}
            norm = math.sqrt(sum(x * x for x in vec.values())) or 1.0
            self._vec[node_id] = {s: x / norm for s, x in vec.items()}
        return self._vec[node_id]

    def vector(self, node_ids: Sequence[int]) -> dict[int, np.ndarray]:
        missing = [i for i in node_ids if i not in self._floats]
        if missing:
            self._floats.update(vectors.floats(self.conn, missing, self.embedder_name))
        return {i: self._floats[i] for i in node_ids if i in self._floats}

    def shared_words(self, a: int, b: int) -> list[str]:
        va, vb = self.words(a), self.words(b)
        return sorted(set(va) & set(vb), key=lambda s: -(va[s] * vb[s]))

    def speaker_of(self, node_id: int) -> str | None:
        if node_id not in self._speaker:
            row = self.rows([node_id]).get(node_id)
            self._speaker[node_id] = speaker(row["content"]) if row else None
        return self._speaker[node_id]

    def score_many(self, a: int, others: Sequence[int]) -> list[tuple[float, int]]:
        """`score(a, o)` for many `o` at once (one vector product), strongest first."""
        others = [o for o in others if o != a]
        if not others:
            return []
        self.rows([a, *others])
        vecs = self.vector([a, *others])
        cosine = {}
        if a in vecs:
            have = [o for o in others if o in vecs]
            if have:
                products = np.stack([vecs[o] for o in have]) @ vecs[a]
                cosine = dict(zip(have, products.tolist()))
        mine, who = self.words(a), self.speaker_of(a)
        out = []
        for o in others:
            theirs = self.words(o)
            small, big = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
            shared = sum(x * big[s] for s, x in small.items() if s in big)
            same = who is not None and who == self.speaker_of(o)
            out.append((WORD_WEIGHT * shared + SPEAKER_WEIGHT * same + self.cosine_weight * max(cosine.get(o, 0.0), 0.0),
                        o))
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
        for s, x in self.words(a).items():
            if s in whole.postings:
                at, weight = whole.postings[s]
                total[at] += WORD_WEIGHT * x * weight
        who = self.speaker_of(a)
        if who is not None:
            total += SPEAKER_WEIGHT * (whole.speakers == who)
        mine = query if query is not None else self.vector([a]).get(a)
        if mine is not None and whole.vectors is not None and whole.vectors.shape[1] == mine.shape[0]:
            total += self.cosine_weight * np.maximum(whole.vectors @ mine, 0.0)
        if a in whole.position:
            total[whole.position[a]] = -1.0
        top = np.argsort(-total, kind="stable")[:limit]
        return [(float(total[k]), whole.ids[k]) for k in top if total[k] > 0]

    def _hold_whole(self) -> "_Whole | None":
        if self._whole is None:
            self._whole = False
            if self.holds:
                self._rows.update(nodes.visible_in_scope(self.conn, self.scope))
                ids = [i for i in self._rows if self.substantive(i)]
                whole = _Whole(ids, {i: self.words(i) for i in ids}, self.vector(ids),
                               [self.speaker_of(i) or "" for i in ids])
                if whole.vectors is not None:        # one copy of each vector: the matrix's row
                    self._floats.update({i: whole.vectors[k] for k, i in enumerate(ids) if i in self._floats})
                self._whole = whole
        return self._whole or None

    def score(self, a: int, b: int) -> float:
        va, vb = self.words(a), self.words(b)
        if len(va) > len(vb):
            va, vb = vb, va
        shared = sum(x * vb.get(s, 0.0) for s, x in va.items())
        rows = self.rows([a, b])
        same = a in rows and b in rows and speaker(rows[a]["content"]) is not None \
            and speaker(rows[a]["content"]) == speaker(rows[b]["content"])
        vecs = self.vector([a, b])
        cosine = float(vecs[a] @ vecs[b]) if a in vecs and b in vecs else 0.0
        return WORD_WEIGHT * shared + SPEAKER_WEIGHT * same + self.cosine_weight * max(cosine, 0.0)

    def substantive(self, node_id: int) -> bool:
        """Chatter ("Thanks!", "ok") links to nothing: it would spend other memories' few links."""
        if node_id not in self._substantive:
            row = self.rows([node_id]).get(node_id)
            self._substantive[node_id] = row is not None and len(content_words(row["content"])) >= MIN_WORDS
        return self._substantive[node_id]

    def _search_floor(self) -> float:
        """The IDF of a word in SEARCH_MAX_SHARE of the scope (0 for a small scope: every word)."""
        n = self.documents
        if n < SMALL_SCOPE:
            return 0.0
        d = SEARCH_MAX_SHARE * n
        return math.log(1 + (n - d + 0.5) / (d + 0.5))

    def candidates(self, node_id: int, query: np.ndarray | None) -> list[int]:
        """Memories sharing this one's rarest words, and its nearest vectors, visible in the scope."""
        if not self.substantive(node_id):
            return []
        where, params = visible("n", [self.scope])
        found: dict[int, None] = {}
        surface = self._surface[node_id] if self.words(node_id) else {}
        floor = self._search_floor()
        rare = [s for s, _ in sorted(self.words(node_id).items(), key=lambda kv: -kv[1])
                if self._idf[s] >= floor and surface[s] not in STOPWORDS][:RARE_WORDS]
        expression = fts.match_expression([surface[s] for s in rare])
        if expression:
            for i, _ in fts.search(self.conn, expression, where, params, CANDIDATES):
                found[i] = None
        if query is not None:
            ids = vectors.knn_candidates(self.conn, query, [self.scope], self.embedder_name, CANDIDATES * 2)
            for i, _ in vectors.rerank(self.conn, query, ids, where, params, self.embedder_name)[:CANDIDATES]:
                found[i] = None
        found.pop(node_id, None)
        return [i for i in found if self.substantive(i)]


class _Whole:
    """A scope held for one pass: each word's postings (positions, weights), the vectors as one matrix
    (zeros where a memory has none) and each memory's speaker."""

    def __init__(self, ids: list[int], word_vectors: dict[int, dict[str, float]], floats: dict[int, np.ndarray],
                 speakers: list[str]):
        self.ids = ids
        self.position = {i: k for k, i in enumerate(ids)}
        gathered: dict[str, tuple[list[int], list[float]]] = {}
        for k, i in enumerate(ids):
            for s, x in word_vectors[i].items():
                at, weight = gathered.setdefault(s, ([], []))
                at.append(k)
                weight.append(x)
        self.postings = {s: (np.array(at, np.int64), np.array(w, np.float32)) for s, (at, w) in gathered.items()}
        dims = {v.shape[0] for v in floats.values()}
        self.vectors = None
        if len(dims) == 1:
            self.vectors = np.zeros((len(ids), dims.pop()), np.float32)
            for k, i in enumerate(ids):
                if i in floats:
                    self.vectors[k] = floats[i]
        self.speakers = np.array(speakers, dtype=object)


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
