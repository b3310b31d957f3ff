"""Hybrid recall.

1. Both arms search under the same WHERE: the one visibility predicate plus the caller's
   filters (tags, source), inside SQL and before any LIMIT, so a narrow filter never loses
   matches and nothing archived, superseded (outside as-of) or out of scope can appear.
2. FTS arm: BM25 over quoted tokens. Vector arm: scoped bit-KNN in sqlite-vec reranked by exact
   cosine; for filtered or as-of queries whose candidate set is small, an exact scan instead.
3. Weighted reciprocal-rank fusion plus tiny recency/heat priors (`fusion`).
4. Evidence gate: each direct hit gets an evidence score in [0, 1], the better of lexical
   coverage (share of the query's content words it contains) and calibrated cosine. Hits below
   ITEM_EVIDENCE, or below RELATIVE_EVIDENCE of the best hit's evidence, are dropped rather than
   padding the answer; if nothing reaches ABSTAIN_BELOW, recall abstains with a plain message.
6. Divergence (`diverge`): when the grounding memories qualify a query word differently (two
   "Alex"es, two staging databases), the answer carries one question with the candidate groups
   (`clarify`); `choose` answers for one group.
5. Context: sibling units of a hit's capture and the adjacent digests of its session join below
   their seed's score when they carry some evidence of their own, else are listed as the seed's `context`;
   nodes one confirmed link away join below their seed's score (pending links are never walked).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

import apsw

if TYPE_CHECKING:
    import numpy as np

from .. import views
from ..errors import ProviderUnavailable
from ..store import AsOf, fts, links, nodes, review, tags as tag_store, vectors, visible
from ..text import STOPWORDS, content_words
from ..timeutil import from_iso
from . import diverge, fusion

FTS_CANDIDATES = 60
VEC_CANDIDATES = 48
SCAN_LIMIT = 20_000
COS_FLOOR, COS_FULL = 0.20, 0.50
ITEM_EVIDENCE = 0.30
ABSTAIN_BELOW = 0.4
RELATIVE_EVIDENCE = 0.5
NEIGHBOUR_FACTOR = 0.95
NEIGHBOUR_MIN_EVIDENCE = 0.15
NEIGHBOUR_REACH = 3
SUBSTANTIVE_WORDS = 4
LINK_FACTOR = 0.5
EXPAND_SEEDS = 5
COMMON_TERM_SHARE = 0.08
PRUNE_MIN_DOCS = 2000
COMMON_WINDOW = 20_000


@dataclass
class RecallRequest:
    query: str
    scopes: Sequence[str]
    tags: Sequence[str] = field(default_factory=tuple)
    source: str | None = None
    limit: int = 8
    as_of: AsOf | None = None
    now: str | None = None
    expand: bool = True
    use_vectors: bool = True      # False: lexical only (hooks on every prompt: no numpy, no embedding)
    use_lexical: bool = True      # False: vector arm only (evaluation compares the arms)
    choose: str | None = None     # the follow-up to a divergent answer: one group's choice


def _where(req: RecallRequest, awaiting: bool = False) -> tuple[str, list]:
    pred, params = visible("n", req.scopes, req.as_of, held="only" if awaiting else "hide")
    if req.tags:
        frag, extra = tag_store.filter_sql("n", req.tags)
        pred, params = f"{pred} AND {frag}", params + extra
    if req.source:
        pred, params = f"{pred} AND n.source_tool = ?", params + [req.source]
    return pred, params


def query_terms(conn: apsw.Connection, query: str, scopes: Sequence[str] | None = None,
                prune: bool = True) -> tuple[list[str], bool]:
    """The words worth matching, and whether they are all common.

    Frequencies are counted within the scopes read, so a word common elsewhere still counts as
    rare here. In a large scope (PRUNE_MIN_DOCS), a word found in half its memories or more has zero IDF in
    BM25 (FTS5 clamps it), so it is dropped: it costs a scan of half the index and ranks
    nothing. Words found in more than COMMON_TERM_SHARE of memories are dropped while rarer words
    remain; they cost most of the FTS time and move BM25 little. When every word is common the
    two rarest are kept and flagged `all_common`. Function words go first, unless they are all
    the query has. Filtered queries are not pruned (see fts_arm).
    """
    words = list(dict.fromkeys(fts.tokens(query)))
    content = [w for w in words if w not in STOPWORDS]
    if not content:
        return words, False
    df, n_docs = fts.document_frequencies(conn, content, scopes)
    if not prune or n_docs < PRUNE_MIN_DOCS:
        return content, False
    content = [w for w in content if 2 * df[w] < n_docs]
    rare = [w for w in content if df[w] <= COMMON_TERM_SHARE * n_docs]
    if rare or not content:
        return rare, False
    return sorted(content, key=lambda w: df[w])[:2], True


def fts_arm(conn: apsw.Connection, req: RecallRequest, where: str, params: list) -> list[tuple[int, float]]:
    # a filtered query keeps every word: its few matching rows may hold only common ones
    filtered = bool(req.tags or req.source or (req.as_of and req.as_of.active))
    terms, all_common = query_terms(conn, req.query, req.scopes, prune=not filtered)
    expression = fts.match_expression(terms)
    if expression is None:
        return []
    if not all_common:
        return fts.search(conn, expression, where, params, FTS_CANDIDATES)
    # Only common words: lexical evidence is weak and a full OR would score a large share of the
    # scope. Both the AND (rows holding both words are BM25's best anyway) and, failing enough of
    # those, the OR run over the newest COMMON_WINDOW memories of each scope read (the whole scope
    # when it is smaller); the vector arm still covers everything.
    window = nodes.window_start(conn, req.scopes, COMMON_WINDOW)
    if len(terms) > 1:
        hits = fts.search(conn, fts.match_expression(terms, "AND"), where, params, FTS_CANDIDATES, window)
        if len(hits) >= req.limit:
            return hits
    return fts.search(conn, expression, where, params, FTS_CANDIDATES, window)


def embed_query(embedder, req: RecallRequest) -> np.ndarray | None:
    if not content_words(req.query):
        return None
    query = embedder.embed([req.query])[0]
    return query if query.any() else None


def vector_arm(conn: apsw.Connection, embedder, req: RecallRequest, where: str, params: list,
               query: np.ndarray | None = None) -> list[tuple[int, float]]:
    if query is None:
        query = embed_query(embedder, req)
        if query is None:
            return []
    filtered = bool(req.tags or req.source or (req.as_of and req.as_of.active))
    # the bit index holds live nodes only: the recorded clock (superseded versions) always scans
    past = bool(req.as_of and req.as_of.recorded)
    if past or (filtered and vectors.count_matching(conn, where, params, embedder.name) <= SCAN_LIMIT):
        return vectors.scan(conn, query, where, params, embedder.name, VEC_CANDIDATES)
    k = 4096 if filtered else VEC_CANDIDATES
    ids = vectors.knn_candidates(conn, query, req.scopes, embedder.name, k)
    return vectors.rerank(conn, query, ids, where, params, embedder.name)[:VEC_CANDIDATES]


def _query_stems(conn: apsw.Connection, query: str) -> set[str]:
    """Porter stems (the FTS tokenizer's own) of the query's content words."""
    return {s for w in content_words(query) for s in fts.stems(conn, w)}


def _coverage(conn: apsw.Connection, query_stems: set[str], text: str) -> float:
    """The share of the query's content words found in `text`. (Weighting words by IDF was
    measured on the development set: +0.01 MRR, no recall gain; not worth a second lookup.)"""
    if not query_stems:
        return 0.0
    return len(query_stems & set(fts.stems(conn, text))) / len(query_stems)


def _cos_evidence(cos: float | None) -> float:
    if cos is None:
        return 0.0
    return float(min(1.0, max(0.0, (cos - COS_FLOOR) / (COS_FULL - COS_FLOOR))))


def recall(conn: apsw.Connection, embedder, req: RecallRequest, side: tuple | None = None) -> dict:
    """`side` = (executor, second connection): the vector arm then runs on that connection in a
    worker thread while the FTS arm runs here (SQLite releases the GIL while it works), so the
    arms cost max(fts, vector) instead of their sum. Both see committed data only, and every hit
    is re-checked against the predicate below, so differing snapshots cannot leak anything."""
    wanted = req.limit
    if req.choose is not None:       # room for the chosen group once the others leave
        req = replace(req, limit=req.limit * 2)
    where, params = _where(req)
    degraded = None
    try:
        query = embed_query(embedder, req) if req.use_vectors else None
    except ProviderUnavailable as exc:         # the model service is away: answer from the text, say so
        query, degraded = None, f"semantic search unavailable ({exc}); answered from full-text search alone"
    if side is not None and query is not None:
        executor, other = side
        pending = executor.submit(vector_arm, other, embedder, req, where, params, query)
        lexical = fts_arm(conn, req, where, params) if req.use_lexical else []
        semantic = pending.result()
    else:
        lexical = fts_arm(conn, req, where, params) if req.use_lexical else []
        semantic = vector_arm(conn, embedder, req, where, params, query) if query is not None else []
    # (embedder is only touched when use_vectors is set; callers may pass None otherwise)
    fused = fusion.rrf({"fts": [i for i, _ in lexical], "vector": [i for i, _ in semantic]})
    cosines = dict(semantic)
    pool = sorted(fused, key=lambda i: (-fused[i], i))[: max(req.limit * 3, 24)]
    found = nodes.get_visible(conn, pool, req.scopes, req.as_of)   # re-checked: defence in depth
    query_stems = _query_stems(conn, req.query)
    now = from_iso(req.now) if req.now else None
    scores: dict[int, float] = {}
    evidence: dict[int, float] = {}
    for node_id in pool:
        row = found.get(node_id)
        if row is None:
            continue
        evidence[node_id] = max(_coverage(conn, query_stems, " ".join((row["content"], row["derived_text"],
                                                                       row["clarified_text"], row["context_text"]))),
                                _cos_evidence(cosines.get(node_id)))
    best = max(evidence.values(), default=0.0)
    keep_from = max(ITEM_EVIDENCE, RELATIVE_EVIDENCE * best)   # a strong answer is not padded with weak ones
    for node_id, ev in evidence.items():
        if ev < keep_from:
            continue
        row = found[node_id]
        age = (now - from_iso(row["recorded_at"])).total_seconds() / 86400 if now else 0.0
        scores[node_id] = fused[node_id] + fusion.prior(age, row["heat"])
    arms = {"fts": len(lexical), "vector": len(semantic)}
    if best < ABSTAIN_BELOW or not scores:
        message = ("I don't have a stored memory about this (nothing matched well enough to answer; no sources,"
                   " nothing padded in).")
        waiting = _waiting_matches(conn, req) if req.use_lexical and not (req.as_of and req.as_of.active) else []
        if waiting:     # ids only: their words stay out of search until the question is settled
            message += (f" {len(waiting)} matching memor{'y waits' if len(waiting) == 1 else 'ies wait'} for the"
                        f" answer to a question (node {', '.join(map(str, waiting))}): answer it with brain_digest"
                        " intent \"clarify\", or `tidemind clarify`.")
        return {"items": [], "abstained": True, "best_evidence": round(best, 3), "arms": arms, "grounded_by": [],
                "clarify": None, "chosen": None, "waiting": waiting, "message": message, "degraded": degraded}
    direct = sorted(scores, key=lambda i: (-scores[i], i))[: req.limit]
    via: dict[int, str] = {}
    if req.expand:
        _expand(conn, req, direct, scores, via, found, where, params, evidence)
    order = sorted(scores, key=lambda i: (-scores[i], i))[: req.limit]
    order = _with_contradictions(conn, req, order, scores, via, found, where, params, evidence)
    items = views.describe(conn, found, order, req.scopes, req.as_of, scores, via)
    for item in items:
        item["evidence"] = round(evidence.get(item["id"], 0.0), 3)
        item["context"] = found[item["id"]].get("context", [])
    # what grounds the answer: served items whose own evidence reaches the answering bar (the
    # others are there as context: a neighbouring turn, a linked memory, a contradiction's partner)
    grounded = [i["id"] for i in items if i["evidence"] >= ABSTAIN_BELOW]
    found = diverge.divergences(req.query, items, grounded)
    clarify = found[0] if found else None
    chosen = None
    note = ""
    if req.choose is not None and not found:
        # a choice kept through a conversation meets a query whose memories agree: nothing to drop
        note = f" (nothing to choose for {req.choose!r}: these memories do not diverge)"
        items = items[:wanted]
    elif req.choose is not None:
        chosen, others = diverge.choose(found, req.choose)
        items = [i for i in items if i["id"] not in others and not _came_with(i, others)][:wanted]
        grounded = [i["id"] for i in items if i["evidence"] >= ABSTAIN_BELOW]
        clarify = None
    message = (f"{len(items)} memories; grounded by " + ", ".join(f"#{i}" for i in grounded) if grounded else
               f"{len(items)} memories, none of which answers this by itself (context of a weaker match)")
    if clarify:
        message = (f"{len(items)} memories; those that answer are about {len(clarify['groups'])} different things,"
                   f" so ask before answering: {clarify['question']} (then recall again with choose=<one of the"
                   " choices>)")
    elif chosen:
        message += f" (for {chosen['choice']})"
    message += note
    return {"items": items, "abstained": False, "arms": arms, "best_evidence": round(best, 3), "grounded_by": grounded,
            "clarify": clarify, "chosen": chosen and chosen["choice"], "message": message, "degraded": degraded}


def _waiting_matches(conn, req: RecallRequest, limit: int = 5) -> list[int]:
    """Ids of units held with a clarifying question that the query's words match, so an
    abstention can say a memory exists but waits (only on the abstaining path: a second FTS
    query). Same scopes, filters and lifecycle as the read, the hold inverted."""
    terms, _ = query_terms(conn, req.query, req.scopes, prune=False)
    expression = fts.match_expression(terms)
    if expression is None:
        return []
    where, params = _where(req, awaiting=True)
    return [i for i, _ in fts.search(conn, expression, where, params, limit)]


def _came_with(item: dict, seeds: set[int]) -> bool:
    """Whether `item` was served as context of one of `seeds` (a neighbour, link or partner)."""
    for flag in item.get("flags", []):
        if flag.startswith("via:"):
            seed = flag.rsplit(":", 1)[-1]
            if seed.isdigit() and int(seed) in seeds:
                return True
    return False


def _with_contradictions(conn, req, order, scores, via, found, where, params, evidence) -> list[int]:
    """A memory with an open contradiction is served with the memory it contradicts, right
    after it (both carry their dates), never one of them alone: the person or agent sees the
    disagreement instead of a silent pick. The partner obeys the same predicate and filters. To
    stay within the limit, the lowest items that are neither half of a pair nor grounds of the
    answer make room. An as-of read skips this (the review queue has no past)."""
    if req.as_of and req.as_of.active:
        return order
    open_items = review.open_for_nodes(conn, order)
    candidates: dict[int, list[int]] = {}
    for node_id in order:
        for item in open_items[node_id]:
            if item["kind"] == "contradiction":
                other = item["other_node_id"] if item["node_id"] == node_id else item["node_id"]
                if other:
                    candidates.setdefault(node_id, []).append(other)
    if not candidates:
        return order
    wanted = sorted({o for others in candidates.values() for o in others if o not in order})
    rows = {}
    if wanted:
        marks = ",".join("?" * len(wanted))
        admitted = [r[0] for r in conn.execute(f"SELECT n.id FROM nodes n WHERE n.id IN ({marks}) AND {where}",
                                               [*wanted, *params])]
        rows = nodes.get_visible(conn, admitted, req.scopes, req.as_of)
    paired: set[int] = set()
    partners: dict[int, int] = {}
    for node_id in order:
        others = candidates.get(node_id, [])
        present = next((o for o in others if o in order), None)
        if present is not None:                      # both already served: keep them both
            paired |= {node_id, present}
            continue
        shown = next((o for o in others if o in rows and o not in partners.values()), None)
        if shown is not None:
            partners[node_id] = shown
            paired |= {node_id, shown}
    out: list[int] = []
    for node_id in order:
        if node_id in out:
            continue
        out.append(node_id)
        other = partners.get(node_id)
        if other is not None and other not in out:
            found.setdefault(other, rows[other])
            scores.setdefault(other, scores[node_id])
            via.setdefault(other, f"contradicts:{node_id}")
            out.append(other)
    while len(out) > req.limit:          # drop from the tail, never half of a pair, never a ground
        tail = next((i for i in reversed(out) if i not in paired and evidence.get(i, 0.0) < ABSTAIN_BELOW), None)
        if tail is None:
            break
        out.remove(tail)
    return out


def _expand(conn, req, direct, scores, via, found, where, params, evidence) -> None:
    """Neighbours (same capture, nearby in session) and confirmed-link targets of the top hits.

    Agents write a conversation turn by turn, so the answer to a question is often the next
    turn and does not repeat the question's words. In each direction of the session, the nearest
    substantive turn (one with evidence of its own, or at least SUBSTANTIVE_WORDS content words)
    joins as an item just below its seed, the turn after above the turn before; chatter before
    it ("thanks", "running the tests") is listed in the seed's `context`, and so is anything
    beyond it. The units of the seed's own capture are treated the same way (one each side
    joins, so a long note cannot flood the answer). Nodes one confirmed link away join below
    their seed's score. Pending links are never walked.
    """
    seeds = direct[:EXPAND_SEEDS]
    offers: dict[int, tuple[float, str]] = {}
    context: dict[int, list[dict]] = {}
    near = nodes.neighbours(conn, seeds, req.scopes, req.as_of, reach=NEIGHBOUR_REACH)
    # the caller's filters (tags, source) first, so a filtered-out turn does not take a slot
    candidates = list({other for _, other, _, _ in near})
    if candidates:
        marks = ",".join("?" * len(candidates))
        passing = [r[0] for r in conn.execute(f"SELECT n.id FROM nodes n WHERE n.id IN ({marks}) AND {where}",
                                              [*candidates, *params])]
    else:
        passing = []
    rows = nodes.get_visible(conn, [i for i in passing if i not in found], req.scopes, req.as_of)
    rows.update({i: found[i] for i in passing if i in found})
    joined: set[tuple[int, str, int]] = set()
    for seed, other, why, offset in near:
        row = rows.get(other)
        if row is None:
            continue
        direction = (seed, why, (offset > 0) - (offset < 0))
        substantive = (evidence.get(other, 0.0) >= NEIGHBOUR_MIN_EVIDENCE
                       or len(content_words(row["content"])) >= SUBSTANTIVE_WORDS)
        if not substantive or direction in joined:
            context.setdefault(seed, []).append({"id": other, "via": why})
            continue
        joined.add(direction)
        # an answer follows its question: the turn after ranks above the turn before
        score = NEIGHBOUR_FACTOR * scores[seed] * (NEIGHBOUR_FACTOR if offset < 0 else 1.0)
        if score > offers.get(other, (0.0, ""))[0]:
            offers[other] = (score, f"{why}:{seed}")
    for seed, other, strength in links.confirmed_neighbours(conn, seeds, req.scopes, req.as_of):
        score = LINK_FACTOR * scores[seed] * min(max(strength, 0.0), 1.0)
        if score > offers.get(other, (0.0, ""))[0]:
            offers[other] = (score, f"link:{seed}")
    fresh = [i for i in offers if i not in scores]
    if fresh:
        # expansion obeys the same predicate and filters as the arms: neighbours passed them
        # above (`rows`); link targets are checked here
        admit = {i: rows[i] for i in fresh if i in rows}
        targets = [i for i in fresh if i not in rows]
        if targets:
            marks = ",".join("?" * len(targets))
            admitted = [r[0] for r in conn.execute(f"SELECT n.id FROM nodes n WHERE n.id IN ({marks}) AND {where}",
                                                   [*targets, *params])]
            admit.update(nodes.get_visible(conn, admitted, req.scopes, req.as_of))
        for node_id, row in admit.items():
            scores[node_id], via[node_id] = offers[node_id]
            found[node_id] = row
    for seed, entries in context.items():          # every entry came from `rows`: already admitted
        unique = {c["id"]: c for c in reversed(entries)}   # first reason wins
        found[seed]["context"] = sorted(unique.values(), key=lambda c: c["id"])
