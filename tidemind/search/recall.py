"""Hybrid recall.

1. Both arms search under the same WHERE: the one visibility predicate plus the caller's
   filters (tags, source), inside SQL and before any LIMIT, so a narrow filter never loses
   matches and nothing archived, superseded (outside as-of) or out of scope can appear.
2. FTS arm: BM25 over quoted tokens (and, when the query names a date, once more within that
   stretch of valid time). Vector arm: scoped bit-KNN in sqlite-vec reranked by exact cosine; for
   filtered or as-of queries whose candidate set is small, an exact scan instead.
3. The pool: both arms' hits, and the turns right after the best lexical hits (the answer to a
   question is the next turn, in other words).
4. Scoring (`scoring`): each candidate is scored with its context: its own BM25, the turns
   before and after it, its session's best hits, whether the person who said it is named, whether
   its valid day fits a date the query names, and the vector arm's cosine, weighted by weights
   fitted on the development conversations. Tiny recency/heat priors break ties (`fusion`).
5. Evidence gate: each candidate gets an evidence score in [0, 1], the better of lexical
   coverage (share of the query's content words it contains, or CONTEXT_EVIDENCE of the turn it
   answers) and calibrated cosine. Candidates below ITEM_EVIDENCE, or below RELATIVE_EVIDENCE of
   the best one, are dropped rather than padding the answer; if nothing reaches ABSTAIN_BELOW,
   recall abstains with a plain message.
6. Links: memories one confirmed link away from the best hits join the pool and count their
   linked hit's score (`linked`); pending links are never walked. The turns around a served item
   that are not served themselves are listed as its `context`.
7. Divergence (`diverge`): when the grounding memories qualify a query word differently (two
   "Alex"es, two staging databases), the answer carries one question with the candidate groups
   (`clarify`); `choose` answers for one group.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

import apsw

if TYPE_CHECKING:
    import numpy as np

from .. import views
from ..errors import ProviderUnavailable
from ..store import AsOf, derived, fts, links, nodes, review, tags as tag_store, vectors, visible
from ..text import STOPWORDS, content_words, word_count, words
from ..timeutil import from_iso
from . import diverge, fusion, names, scoring, when
from .lexical import Lexical

FTS_CANDIDATES = 100
RESCORE = True                # BM25 within the scopes read (`lexical`), not FTS5's whole-table bm25()
DATED_CANDIDATES = 40
ANCHORED_SHARE = 0.5       # a memory found by its date anchor alone: half the weakest word match of the window
VEC_CANDIDATES = 48
SCAN_LIMIT = 20_000
COS_FLOOR, COS_FULL = 0.20, 0.50
ITEM_EVIDENCE = 0.15
ABSTAIN_BELOW = 0.4
GROUNDED_BELOW = 0.2         # and some memory must hold a fifth of the query's weight in distinctive words
RELATIVE_EVIDENCE = 0.0
EVIDENCE_SHORTLIST = 30       # at least this many of the best-scored candidates get their evidence read
CONTEXT_EVIDENCE = 0.9        # a turn answering a matching question carries most of its evidence
LINK_EVIDENCE = 0.5           # a memory linked to a hit carries half of it
CONTEXT_SEEDS = 30            # the best lexical hits whose neighbouring turns join the pool
VECTOR_SEEDS = 10             # and the best vector hits
CONTEXT_REACH = 3             # far enough to step over a "thanks" between a question and its answer
SUBSTANTIVE_WORDS = 4         # fewer content words and no match of its own: chatter, listed as context only
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
    day_first: bool = False       # 05/07/2023 is the 5th of July in this store (Memory.date_order)


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
        return fts.search(conn, expression, where, params, FTS_CANDIDATES, scopes=req.scopes)
    # Only common words: lexical evidence is weak and a full OR would score a large share of the
    # scope. Both the AND (rows holding both words are BM25's best anyway) and, failing enough of
    # those, the OR run over the newest COMMON_WINDOW memories of each scope read (the whole scope
    # when it is smaller); the vector arm still covers everything.
    window = nodes.window_start(conn, req.scopes, COMMON_WINDOW)
    if len(terms) > 1:
        hits = fts.search(conn, fts.match_expression(terms, "AND"), where, params, FTS_CANDIDATES, window, req.scopes)
        if len(hits) >= req.limit:
            return hits
    return fts.search(conn, expression, where, params, FTS_CANDIDATES, window, req.scopes)


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


def _cos_evidence(cos: float | None) -> float:
    if cos is None:
        return 0.0
    return float(min(1.0, max(0.0, (cos - COS_FLOOR) / (COS_FULL - COS_FLOOR))))


@dataclass
class Gathered:
    """A query's candidates before ranking: their features (for `scoring`) and their evidence."""
    pool: scoring.Pool
    features: dict[int, dict[str, float]]
    ranked: dict[int, float]           # the score with the shipped weights
    evidence: dict[int, float]         # with the turn it answers: what gates an item
    own: dict[int, float]              # its own words only: what grounds an answer
    grounding: float                   # the best IDF-weighted coverage of the query: is it answered at all
    arms: dict[str, int]
    where: str
    params: list
    degraded: str | None


def gather(conn: apsw.Connection, embedder, req: RecallRequest, side: tuple | None = None,
           everything: bool = False) -> Gathered:
    """Both arms, the pool around their hits, each candidate's features and score, and the
    evidence of those that may be served (of every candidate with `everything`: for fitting)."""
    where, params = _where(req)
    degraded = None
    try:
        query = embed_query(embedder, req) if req.use_vectors else None
    except ProviderUnavailable as exc:         # the model service is away: answer from the text, say so
        query, degraded = None, f"semantic search unavailable ({exc}); answered from full-text search alone"
    dated = when.window(req.query, req.day_first)
    if side is not None and query is not None:
        executor, other = side
        pending = executor.submit(vector_arm, other, embedder, req, where, params, query)
        lexical = _lexical(conn, req, where, params, dated)
        semantic = pending.result()
    else:
        lexical = _lexical(conn, req, where, params, dated)
        semantic = vector_arm(conn, embedder, req, where, params, query) if query is not None else []
    # (embedder is only touched when use_vectors is set; callers may pass None otherwise)
    pool = _pool(conn, req, lexical, semantic, where, params)
    terms, _ = query_terms(conn, req.query, req.scopes, prune=False)
    words_in = Lexical(conn, req.query, terms, req.scopes)
    # FTS5 found them; they are scored within the scopes read (see `lexical`)
    if RESCORE:
        pool.lexical = {i: score for i in pool.lexical if (score := words_in.bm25(pool.rows[i])) > 0}
    anchored = derived.anchored_days(conn, pool.candidates) if dated else {}
    features = scoring.compute(pool, set(words(req.query)), dated, anchored, scoring.listeners(req.query),
                               scoring.friends_of(req.query))
    ranked = scoring.score(features)
    if everything:
        shortlist = set(pool.candidates)
    else:           # evidence is read where it can matter: what may be served, and the best of each arm
        shortlist = set(scoring.rank(ranked)[:max(3 * req.limit, EVIDENCE_SHORTLIST)])
        shortlist |= set(sorted(pool.lexical, key=lambda i: -pool.lexical[i])[:10])
        shortlist |= set(sorted(pool.cosine, key=lambda i: -pool.cosine[i])[:10])
    own: dict[int, float] = {}

    # a memory whose valid day fits the date a question names answers its date words by its time
    dated_words = words_in.stems_of(dated.said) if dated else frozenset()
    also = lambda i: dated_words if dated_words and features[i]["when"] >= 1.0 else frozenset()

    def own_evidence(i: int) -> float:
        if i not in own:
            own[i] = max(words_in.coverage(pool.rows[i], also(i)), _cos_evidence(pool.cosine.get(i)))
        return own[i]

    # a turn's evidence counts the turn it answers: "I went to Woodhaven" after "Where did you go?"
    # a memory a confirmed link joins to a hit carries some of that hit's evidence (a person or a
    # judge said they belong together), enough to be served below it, never enough to ground
    evidence = {i: max(own_evidence(i),
                       CONTEXT_EVIDENCE * max((own_evidence(b) for b in pool.before.get(i, [])[:1]), default=0.0),
                       LINK_EVIDENCE * max((own_evidence(s) for s in pool.linked.get(i, [])), default=0.0))
                for i in shortlist}
    grounding = max((words_in.weighted_coverage(pool.rows[i], also(i)) for i in shortlist), default=0.0)
    return Gathered(pool, features, ranked, evidence, own, grounding, {"fts": len(lexical), "vector": len(semantic)},
                    where, params, degraded)


def recall(conn: apsw.Connection, embedder, req: RecallRequest, side: tuple | None = None) -> dict:
    """`side` = (executor, second connection): the vector arm then runs on that connection in a
    worker thread while the FTS arm runs here (SQLite releases the GIL while it works), so the
    arms cost max(fts, vector) instead of their sum. Both see committed data only, and every hit
    is re-checked against the predicate below, so differing snapshots cannot leak anything."""
    wanted = req.limit
    # a speaker's name as the question spells it ("Caro", "Carolne"): read as the speaker
    req = replace(req, query=names.respelled(conn, req.query, req.scopes))
    if req.choose is not None:       # room for the chosen group once the others leave
        req = replace(req, limit=req.limit * 2)
    g = gather(conn, embedder, req, side)
    found, evidence, ranked, pool, lexical = g.pool.rows, g.evidence, g.ranked, g.pool, g.pool.lexical
    where, params, degraded = g.where, g.params, g.degraded
    best = max(evidence.values(), default=0.0)
    keep_from = max(ITEM_EVIDENCE, RELATIVE_EVIDENCE * best)   # a strong answer is not padded with weak ones
    now = from_iso(req.now) if req.now else None
    scores: dict[int, float] = {}
    for node_id, ev in evidence.items():
        if ev < keep_from:
            continue
        row = found[node_id]
        age = (now - from_iso(row["recorded_at"])).total_seconds() / 86400 if now else 0.0
        scores[node_id] = ranked[node_id] + fusion.prior(age, row["heat"])
    arms = g.arms
    if best < ABSTAIN_BELOW or g.grounding < GROUNDED_BELOW or not scores:
        message = ("I don't have a stored memory about this (nothing matched well enough to answer; no sources,"
                   " nothing padded in).")
        waiting = _waiting_matches(conn, req) if req.use_lexical and not (req.as_of and req.as_of.active) else []
        if waiting:     # ids only: their words stay out of search until the question is settled
            message += (f" {len(waiting)} matching memor{'y waits' if len(waiting) == 1 else 'ies wait'} for the"
                        f" answer to a question (node {', '.join(map(str, waiting))}): answer it with brain_digest"
                        " intent \"clarify\", or `tidemind clarify`.")
        return {"items": [], "abstained": True, "best_evidence": round(best, 3), "arms": arms, "grounded_by": [],
                "clarify": None, "chosen": None, "waiting": waiting, "message": message, "degraded": degraded}
    via: dict[int, str] = {}
    order = sorted(scores, key=lambda i: (-scores[i], i))[: req.limit]
    for node_id in order:
        if node_id in lexical or node_id in pool.cosine or node_id in via:
            continue
        if node_id in pool.before or node_id in pool.after:
            seed = _seed_of(node_id, pool, lexical)          # it came in beside a hit
            via[node_id] = f"{_relation(found, node_id, seed)}:{seed}"
        elif pool.linked.get(node_id):                        # it came in through a confirmed link
            via[node_id] = f"link:{max(pool.linked[node_id], key=lambda i: lexical.get(i, 0.0))}"
    order, overruled = _with_contradictions(conn, req, order, scores, via, found, where, params, evidence)
    nearby = scoring.context_of(order, pool)
    items = views.describe(conn, found, order, req.scopes, req.as_of, scores, via)
    for item in items:
        if item["id"] in overruled:
            item["flags"].append(f"contradicted_by:{overruled[item['id']]}")
        item["evidence"] = round(evidence.get(item["id"], 0.0), 3)
        item["context"] = [{"id": c, "via": _relation(found, item["id"], c)} for c in nearby.get(item["id"], [])]
    # what grounds the answer: served items whose own evidence reaches the answering bar (the
    # others are there as context: a neighbouring turn, a linked memory, a contradiction's partner)
    grounded = [i["id"] for i in items if g.own.get(i["id"], 0.0) >= ABSTAIN_BELOW]
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
        items = [i for i in items if i["id"] not in others and not _came_with(i, others)
                 and not diverge.about_another(i, chosen, found)][:wanted]
        grounded = [i["id"] for i in items if g.own.get(i["id"], 0.0) >= ABSTAIN_BELOW]
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
    return [i for i, _ in fts.search(conn, expression, where, params, limit, scopes=req.scopes)]


def _came_with(item: dict, seeds: set[int]) -> bool:
    """Whether `item` was served as context of one of `seeds` (a neighbour, link or partner)."""
    for flag in item.get("flags", []):
        if flag.startswith("via:"):
            seed = flag.rsplit(":", 1)[-1]
            if seed.isdigit() and int(seed) in seeds:
                return True
    return False


def _with_contradictions(conn, req, order, scores, via, found, where, params, evidence) -> tuple[list[int], dict]:
    """A memory with an open contradiction is served with the memory it contradicts, right
    after it (both carry their dates), never one of them alone: the person or agent sees the
    disagreement instead of a silent pick. When it is settled, the one that stands comes first:
    a correction before a later re-digest of the claim it corrected (while open), and the memory
    a person's approval named before the other (which is flagged `contradicted_by:<id>`). The
    partner obeys the same predicate and filters. To stay within the limit, the lowest items that
    are neither half of a pair nor grounds of the answer make room. An as-of read skips this (the
    review queue has no past). Returns the order and {overruled node: the node that stands}."""
    if req.as_of and req.as_of.active:
        return order, {}
    candidates: dict[int, list[int]] = {}
    leads: list[tuple[int, int]] = []            # (stands, overruled)
    for item in review.contradictions_touching(conn, order):
        a, b = item["node_id"], item["other_node_id"]
        if not a or not b:
            continue
        for node_id, other in ((a, b), (b, a)):
            if node_id in order:
                candidates.setdefault(node_id, []).append(other)
        if item["stands"] in (a, b):
            leads.append((item["stands"], b if item["stands"] == a else a))
        elif item["reason"] == "reasserts_corrected_claim":
            leads.append((b, a))                 # the correction outranks the claim said again
    if not candidates:
        return order, {}
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
    overruled: dict[int, int] = {}
    for stands, loser in leads:
        if stands in out and loser in out:
            overruled[loser] = stands
            if out.index(stands) > out.index(loser):     # it goes right before the one it overrules
                out.remove(stands)
                out.insert(out.index(loser), stands)
                scores[stands] = max(scores[stands], scores[loser])
    while len(out) > req.limit:          # drop from the tail, never half of a pair, never a ground
        tail = next((i for i in reversed(out) if i not in paired and evidence.get(i, 0.0) < ABSTAIN_BELOW), None)
        if tail is None:
            break
        out.remove(tail)
    return out, overruled


def _lexical(conn: apsw.Connection, req: RecallRequest, where: str, params: list,
             dated: "when.Window | None") -> dict[int, float]:
    """BM25 of the FTS hits (higher is better). A query naming a date also searches that stretch
    of valid time, so a memory of that day competes even when older words outrank it elsewhere."""
    if not req.use_lexical:
        return {}
    hits = {i: -s for i, s in fts_arm(conn, req, where, params)}
    if dated is not None and dated.searched_stretch():
        start, end = dated.bounds()
        window_where = f"{where} AND n.valid_from >= ? AND n.valid_from < ?"
        window_params = [*params, start.isoformat(), (end + dt.timedelta(days=1)).isoformat()]
        # the date is matched by time here, so its words are left out of this search
        terms, _ = query_terms(conn, req.query.replace(dated.said, " "), req.scopes, prune=False)
        expression = fts.match_expression(terms)
        found = (fts.search(conn, expression, window_where, window_params, DATED_CANDIDATES, scopes=req.scopes)
                 if expression else [])
        for i, s in found:
            hits[i] = max(hits.get(i, 0.0), -s)
        # a memory whose date anchor names that time ("last Friday", written on the 23rd) competes
        # too, below every word match: its time fits, its words are scored like any other's
        floor = min((-s for _, s in found), default=1.0) * ANCHORED_SHARE
        for i in derived.anchored_within(conn, window_where, window_params, dated.fit_span):
            hits.setdefault(i, floor)
    return hits


def _pool(conn: apsw.Connection, req: RecallRequest, lexical: dict[int, float], semantic: list[tuple[int, float]],
          where: str, params: list) -> scoring.Pool:
    """Every candidate with its row and its place among its neighbours: the hits of both arms, and
    the turns around the best lexical hits (an answer rarely repeats its question). Neighbours obey
    the predicate and the caller's filters like the hits; a filtered-out turn takes no place in the
    line, and chatter ("ok thanks": few words, no match of its own) is skipped over, so the answer
    after it still follows its question. Chatter is listed as context, never ranked."""
    cosine = dict(semantic)
    seeds = sorted(lexical, key=lambda i: (-lexical[i], i))[:CONTEXT_SEEDS]
    seeds += [i for i, _ in semantic[:VECTOR_SEEDS] if i not in lexical]        # a question found by meaning
    relations = nodes.neighbours(conn, seeds, req.scopes, req.as_of, reach=CONTEXT_REACH) if req.expand else []
    around: dict[int, dict[int, int]] = {}
    for seed, other, why, offset in relations:
        # within a capture its own units are the nearest turns; across captures, the session's
        if why == "capture" or offset not in around.setdefault(seed, {}):
            around.setdefault(seed, {})[offset] = other
    # a confirmed link can join a hit to a memory of another session (pending links are never walked)
    linked: dict[int, list[int]] = {}
    if req.expand:
        for seed, other, _strength in links.confirmed_neighbours(conn, seeds, req.scopes, req.as_of):
            linked.setdefault(other, []).append(seed)
    wanted = list(set(lexical) | set(cosine) | {o for by in around.values() for o in by.values()} | set(linked))
    # the filters (tags, source) and the predicate, for the neighbours too; the predicate is the
    # store's own as well as the one `where` carries: defence in depth
    rows = nodes.get_visible(conn, wanted, req.scopes, req.as_of, also=(where, params))
    hits = {i for i in (*lexical, *cosine) if i in rows}

    def substantive(i: int) -> bool:
        return i in hits or word_count(rows[i]["content"]) >= SUBSTANTIVE_WORDS
    before: dict[int, list[int]] = {}
    after: dict[int, list[int]] = {}
    nearest: dict[int, list[int]] = {}
    candidates = set(hits)
    for seed, by_offset in around.items():
        if seed not in rows:
            continue
        line = [by_offset[o] for o in sorted(by_offset) if o < 0] + [seed] + [by_offset[o] for o in sorted(by_offset) if o > 0]
        line = [i for i in line if i in rows]
        at = line.index(seed)
        nearest.setdefault(seed, [i for i in (line[at - 1] if at else None, line[at + 1] if at + 1 < len(line) else None)
                                  if i is not None])
        line = [i for i in line if substantive(i)]
        candidates.update(line)
        for k, node_id in enumerate(line):
            if k > 0 and node_id not in before:
                before[node_id] = [line[k - 1]] + ([line[k - 2]] if k > 1 else [])
            if k + 1 < len(line) and node_id not in after:
                after[node_id] = [line[k + 1]]
    linked = {i: [s for s in seeds_ if s in rows] for i, seeds_ in linked.items() if i in rows}
    candidates.update(i for i, seeds_ in linked.items() if seeds_)
    return scoring.Pool(lexical={i: s for i, s in lexical.items() if i in rows},
                        cosine={i: c for i, c in cosine.items() if i in rows}, rows=rows, candidates=candidates,
                        before=before, after=after, nearest=nearest, linked=linked)


def _seed_of(node_id: int, pool: scoring.Pool, lexical: dict[int, float]) -> int:
    near = pool.before.get(node_id, []) + pool.after.get(node_id, [])
    hits = [i for i in near if i in lexical]
    return max(hits, key=lambda i: lexical[i]) if hits else (near[0] if near else node_id)


def _relation(found: dict[int, dict], a: int, b: int) -> str:
    ra, rb = found.get(a, {}), found.get(b, {})
    return "capture" if ra.get("capture_id") is not None and ra.get("capture_id") == rb.get("capture_id") else "session"
