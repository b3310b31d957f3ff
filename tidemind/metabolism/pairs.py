"""Shared by the pair-finding passes (link-propose, dedup, contradict): each new embedded node's
nearest live neighbours in its own scope, and cheap lexical signals about a pair."""
from __future__ import annotations

import re

from typing import Callable

from ..store import audit, immediate, review, task_runs, vectors, visible
from .. import substance
from ..text import sha256

GENERATOR = "offline-v1"        # what filed a pair's review item (the heuristics below; no model)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NEGATION = frozenset({"not", "never", "no", "don", "doesn", "isn", "aren", "won", "cannot", "without", "nobody"})


def nearest(ctx, node_id: int, scope: str, query, k: int, min_cosine: float) -> list[tuple[int, float]]:
    emb = ctx.memory.embedder
    where, params = visible("n", [scope])
    ids = vectors.knn_candidates(ctx.conn, query, [scope], emb.name, k * 4)
    return [(i, c) for i, c in vectors.rerank(ctx.conn, query, ids, where, params, emb.name)
            if i != node_id and c >= min_cosine][:k]


def _names(a: str, b: str) -> set[str]:
    return {part.casefold() for t in (a, b) if (who := substance.speaker(t)) for part in who.split()}


def word_overlap(a: str, b: str) -> float:
    """The share of specific words two texts have in common (`substance`: not small talk, not
    the speakers' names, not markup): two speakers' "Take care, bye!" share nothing."""
    names = _names(a, b)
    wa = {w for w in substance.specific_words(a, names) if not w.isdigit()}
    wb = {w for w in substance.specific_words(b, names) if not w.isdigit()}
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


# not values: a list or step number at a line's start ("10. You're done!"), dates ("Oct 6th, 2020",
# 2020-10-06), and numbers inside file names, links and image references
_NOT_VALUES = re.compile(r"^\s*(?:[-*+]\s*)?\d+[.)]\s|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b|"
                         r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?\b|"
                         r"[\w./-]*\.(?:png|jpe?g|gif|webp|svg|pdf|md|txt|csv|json|mp4|mov)\b|\[\[[^\]]*\]\]|"
                         r"\(\([^)]*\)\)|https?://\S+", re.IGNORECASE | re.MULTILINE)


def numbers(text: str) -> set[str]:
    """The values a text states: its numbers, less ordinals, dates and numbers in names of files."""
    return set(_NUMBER.findall(_NOT_VALUES.sub(" ", substance.body(text))))


def both_carry_content(a: str, b: str) -> bool:
    names = _names(a, b)
    return substance.carries_content(a, names, kept=True) and substance.carries_content(b, names, kept=True)


def negated(text: str) -> bool:
    words = re.findall(r"[a-z]+", text.casefold())
    return any(w in _NEGATION for w in words) or "n't" in text.casefold()


def pair_digest(kind: str, a: int, b: int) -> str:
    lo, hi = sorted((a, b))
    return sha256(f"{kind}:{lo}:{hi}")


def _content(conn, node_id: int) -> str:
    return conn.execute("SELECT content FROM nodes WHERE id=?", (node_id,)).fetchone()[0]


def file_pair_items(ctx, task: str, kind: str, k: int, min_cosine: float,
                    judge: Callable[[str, str, float], dict | None], batch: int) -> tuple[int, int]:
    """For each newly embedded node (a cursor per task): its nearest neighbours that `judge`
    accepts become one `kind` review item per pair, never twice for a pair and never beside an
    open item about the same pair. Returns (nodes looked at, items filed)."""
    cursor = task_runs.get_cursor(ctx.conn, task)
    todo = vectors.embedded_after(ctx.conn, cursor, ctx.memory.embedder.name, batch)
    filed = done = 0
    for node_id, scope, query in todo:
        if ctx.stopping():
            break
        done += 1
        me = _content(ctx.conn, node_id)
        found = []
        for other, cos in nearest(ctx, node_id, scope, query, k, min_cosine) if substance.carries_content(me, kept=True) else ():
            theirs = _content(ctx.conn, other)
            if not both_carry_content(me, theirs):
                continue              # greetings, headings, images, empty pages: never a merge or a contradiction
            verdict = judge(me, theirs, cos)
            if verdict is not None:
                found.append((other, verdict))
        now = ctx.now()
        with immediate(ctx.conn):
            for other, verdict in found:
                digest = pair_digest(kind, node_id, other)
                if review.exists_with_digest(ctx.conn, digest) or review.open_between(ctx.conn, node_id, other):
                    continue
                item = review.file(ctx.conn, kind, node_id=max(node_id, other), other_node_id=min(node_id, other),
                                   at=now, scope=scope, digest=digest, generator=f"{task}/{GENERATOR}", **verdict)
                audit.record(ctx.conn, at=now, actor=f"daemon:{task}", action=f"{kind}_proposed", node_id=node_id,
                             other=other, review_item=item)
                filed += 1
            task_runs.set_cursor(ctx.conn, task, node_id)
    return done, filed
