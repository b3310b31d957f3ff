"""BM25 and word coverage of candidates, counted within the scopes read.

FTS5 finds the candidates; its own bm25() weighs words by their frequency in the whole table,
every scope together, and normalises length with b = 0.75. Both fit short conversational turns
poorly: a person's name, frequent in their own conversation, looked rare next to everyone
else's, and a long turn was pushed down for being long. So the candidates are scored again
here with the scope's own document frequencies and average length (kept in `fts_terms`) and a
gentler length normalisation (B, chosen on the tuning half of the development conversations).
Each candidate is tokenised once, by FTS5's own tokenizer, for its score and its coverage.
"""
from __future__ import annotations

import math
from typing import Sequence

import apsw

from ..store import fts
from ..text import content_words

K1 = 1.2
B = 0.3
# the index's own column weights: authored words fully, a person's clarification nearly so, a
# model's derived words and an imported note's context (title, heading path) half
COLUMN_WEIGHTS = dict(zip(fts.COLUMNS, fts.WEIGHTS))
_NONE: tuple[dict[str, int], int] = ({}, 0)        # an empty column's counts (shared: only read)


class Lexical:
    def __init__(self, conn: apsw.Connection, query: str, terms: Sequence[str], scopes: Sequence[str]):
        self.conn = conn
        scored = {s for t in terms for s in fts.stems(conn, t)}
        self.asked = {s for w in content_words(query) for s in fts.stems(conn, w)}
        stems = sorted(scored | self.asked)
        df, n_docs = fts.stem_frequencies(conn, stems, scopes) if stems else ({}, 0)
        documents, tokens = fts.scope_sizes(conn, scopes)
        self.average = tokens / documents if documents else 1.0
        n = max(n_docs, 1)
        idf = {w: math.log(1 + (n - df.get(w, 0) + 0.5) / (df.get(w, 0) + 0.5)) for w in stems}
        self.idf = {w: idf[w] for w in scored}
        # a word in nearly every memory has an IDF near 0; below 1 the ratio of two such tiny
        # numbers would decide whether the answer counts as grounded at all
        self.asked_weight = {w: max(idf[w], 1.0) for w in self.asked}
        self._counts: dict[int, dict[str, tuple[dict[str, int], int]]] = {}
        self._query_stems = list(dict.fromkeys([*self.idf, *self.asked_weight]))
        self._found: dict[int, dict[str, float]] = {}

    def counts(self, row: dict) -> dict[str, tuple[dict[str, int], int]]:
        """Per indexed column: its terms with their counts, and its length in terms."""
        found = self._counts.get(row["id"])
        if found is None:
            conn = self.conn
            found = self._counts[row["id"]] = {c: fts.stem_counts(conn, text) if (text := row.get(c)) else _NONE
                                               for c in COLUMN_WEIGHTS}
        return found

    def found(self, row: dict) -> dict[str, float]:
        """The query's stems (scored or asked) that the memory holds in any indexed column, each
        with its column-weighted count: BM25, coverage and weighted coverage all read these few
        numbers, so they are worked out once a memory, not once a measure and a word."""
        found = self._found.get(row["id"])
        if found is None:
            # (a column without the stem adds 0 to its sum: skipped, the figure is the same)
            counts = self.counts(row)
            found = self._found[row["id"]] = {}
            for column, weight in COLUMN_WEIGHTS.items():
                counted = counts[column][0]
                if not counted:
                    continue
                for stem in self._query_stems:
                    n = counted.get(stem)
                    if n:
                        found[stem] = found.get(stem, 0) + weight * n
        return found

    def bm25(self, row: dict) -> float:
        found = self.found(row)
        length = self.counts(row)["content"][1] or 1
        norm = K1 * (1 - B + B * length / self.average)
        total = 0.0
        for stem, idf in self.idf.items():        # the query's few words, not the memory's many
            f = found.get(stem)
            if f:
                total += idf * f * (K1 + 1) / (f + norm)
        return total

    def coverage(self, row: dict, also: frozenset[str] = frozenset()) -> float:
        """The share of the query's content words found in any column (the evidence of one item);
        `also`: stems the memory answers otherwise (the date words of a question its valid day fits)."""
        if not self.asked_weight:
            return 0.0
        found = self.found(row)
        return sum(1 for s in self.asked_weight if s in found or s in also) / len(self.asked_weight)

    def weighted_coverage(self, row: dict, also: frozenset[str] = frozenset()) -> float:
        """The same share with each word weighted by its IDF in the scopes read (whether the answer
        is grounded at all): "what is the error budget for billing" is not answered by "no errors
        so far" in a billing note, because "budget", the word that matters, is missing."""
        total = sum(self.asked_weight.values())
        if not total:
            return 0.0
        found = self.found(row)
        return sum(w for s, w in self.asked_weight.items() if s in found or s in also) / total

    def stems_of(self, text: str) -> frozenset[str]:
        return frozenset(s for w in content_words(text) for s in fts.stems(self.conn, w))
