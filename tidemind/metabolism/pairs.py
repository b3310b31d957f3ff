"""Shared by the pair-finding passes (link-propose, dedup, contradict): each new embedded node's
nearest live neighbours in its own scope, and cheap lexical signals about a pair."""
from __future__ import annotations

import re

from ..store import vectors, visible
from ..text import content_words

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NEGATION = frozenset({"not", "never", "no", "don", "doesn", "isn", "aren", "won", "cannot", "without", "nobody"})


def nearest(ctx, node_id: int, scope: str, query, k: int, min_cosine: float) -> list[tuple[int, float]]:
    emb = ctx.memory.embedder
    where, params = visible("n", [scope])
    ids = vectors.knn_candidates(ctx.conn, query, [scope], emb.name, k * 4)
    return [(i, c) for i, c in vectors.rerank(ctx.conn, query, ids, where, params, emb.name)
            if i != node_id and c >= min_cosine][:k]


def word_overlap(a: str, b: str) -> float:
    wa = {w for w in content_words(a) if not w.isdigit()}
    wb = {w for w in content_words(b) if not w.isdigit()}
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def negated(text: str) -> bool:
    words = re.findall(r"[a-z]+", text.casefold())
    return any(w in _NEGATION for w in words) or "n't" in text.casefold()
