"""`tidemind eval retrieval --memories F --queries F`: retrieval quality on the normal paths.

Memories (JSONL: id, text, valid_at, scope, source, session?) are loaded in file order through
`Memory.digest` into a fresh store and embedded; every query (JSONL: id, query, scope, evidence
[memory ids], category) runs through `Memory.recall` — hybrid, FTS only and vector only, in the
same run, so each arm's contribution shows — and through plain FTS5 BM25 (`bm25`: the
baseline a memory system must beat). A memory that was split into units counts as found
when any of its units is returned.

Reported per arm, overall and per category: recall@k (share of a query's evidence in the top k),
hit@k (any evidence in the top k) and MRR for k = 1, 5, 10, 20; latency p50/p95; and abstention:
how often queries with no evidence abstain, and how often the others do not.

Tagging is reported when memories name the tags a person would want (`tags`) and, optionally,
others a person would accept (`acceptable`): after the retrieval runs, the offline annotate pass
runs over the store as the daemon would, and every proposed tag is scored against those lists
(names compared by `vocabulary.key_of`: case, separators and plural folded). Precision: the
share of proposed tags that are wanted or acceptable; recall: the share of wanted tags proposed.

Clarification is reported too. At capture: questions per 100 captures, by kind, and against the
labels a memory may carry (`ambiguous`: it deserves a question; `near_miss`: a look-alike that
must not get one). A question is then answered with the memory's `answer` (text, or the index
of a suggested option) or skipped, so every memory is searchable when the queries run. At
recall: how often the answer asked which of several things was meant, on queries labelled
`diverges: true` and on all the others.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import statistics
import tempfile
import time
from pathlib import Path
from typing import Sequence

from .errors import InvalidInput
from .memory import Memory
from .store import fts, visible

KS = (1, 5, 10, 20)
ARMS = {"hybrid": {}, "fts": {"use_vectors": False}, "vector": {"use_lexical": False}, "bm25": None}


def plain_bm25(m: Memory, query: str, scopes: list[str] | None, limit: int) -> dict:
    """The baseline: plain FTS5 BM25 over every token of the query, OR'd, under the visibility
    predicate; no pruning, no vectors, no context, no evidence gate (so it never abstains)."""
    read = m.read_scopes(scopes, scopes is None)
    where, params = visible("n", read, None)
    expression = fts.match_expression(fts.tokens(query))
    hits = fts.search(m.conn, expression, where, params, limit) if expression else []
    return {"items": [{"id": i} for i, _ in hits], "abstained": False}


def _jsonl(path: str) -> list[dict]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    out = []
    for n, line in enumerate(lines, start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                raise InvalidInput(f"{path}:{n} is not a JSON object") from None
    return out


def _summary(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["evidence"]]
    out: dict = {"queries": len(rows), "answerable": len(answerable)}
    for k in KS:
        out[f"recall@{k}"] = round(statistics.mean([r["recall"][k] for r in answerable]), 4) if answerable else None
        out[f"hit@{k}"] = round(statistics.mean([r["hit"][k] for r in answerable]), 4) if answerable else None
    out["mrr"] = round(statistics.mean([r["rr"] for r in answerable]), 4) if answerable else None
    unanswerable = [r for r in rows if not r["evidence"]]
    out["abstain_when_nothing_stored"] = (round(sum(r["abstained"] for r in unanswerable) / len(unanswerable), 4)
                                          if unanswerable else None)
    out["answer_when_stored"] = (round(sum(not r["abstained"] for r in answerable) / len(answerable), 4)
                                 if answerable else None)
    diverging = [r for r in rows if r["diverges"]]
    out["clarify_when_diverging"] = (round(sum(r["asked"] for r in diverging) / len(diverging), 4)
                                     if diverging else None)
    others = [r for r in rows if not r["diverges"]]
    out["clarify_otherwise"] = round(sum(r["asked"] for r in others) / len(others), 4) if others else None
    times = sorted(r["ms"] for r in rows)
    if times:
        out["latency_ms"] = {"p50": round(statistics.median(times), 2),
                             "p95": round(times[min(len(times) - 1, int(0.95 * (len(times) - 1) + 0.5))], 2)}
    return out


def load(m: Memory, memories: list[dict], report: dict | None = None) -> dict[int, str]:
    """Digest every memory (file order, each embedded as it arrives), answer or skip the questions
    asked; returns node id -> memory id. `report` (if given) receives the clarification figures."""
    owner: dict[int, str] = {}
    asked: list[tuple[dict, dict]] = []
    for mem in memories:
        source = mem.get("source") or {}
        r = m.digest(mem["text"], scope=mem.get("scope"), valid_at=mem.get("valid_at"),
                     source_tool=source.get("tool") if isinstance(source, dict) else str(source),
                     session=mem.get("session"))
        for node_id in r["node_ids"]:
            owner[node_id] = str(mem["id"])
        asked += [(mem, q) for q in r.get("questions", [])]
        # embedded as they arrive, as the MCP server's background embedder does (the default
        # embedder's statistics grow with the store, so a vector made early differs from one made
        # at the end, and the figures in-process and through MCP should be of the same store)
        m.embed_pending()
    answered = 0
    for mem, q in asked:
        answer = mem.get("answer")
        if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(q["options"]):
            answer = q["options"][answer]
        if isinstance(answer, str) and answer.strip():
            m.clarify_answer(q["question_id"], answer)
            answered += 1
        else:
            m.clarify_skip(q["question_id"])
    m.embed_pending(batch=500)
    if report is not None:
        report.update(_capture_report(memories, asked, answered))
    return owner


def _capture_report(memories: list[dict], asked: list[tuple[dict, dict]], answered: int) -> dict:
    labelled = [mem for mem in memories if mem.get("ambiguous")]
    near = [mem for mem in memories if mem.get("near_miss")]
    asked_ids = {id(mem) for mem, _ in asked}
    kinds: dict[str, int] = {}
    for _, q in asked:
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
    return {"captures": len(memories), "questions": len(asked),
            "per_100_captures": round(100 * len(asked) / len(memories), 2) if memories else None,
            "by_kind": kinds, "answered": answered, "skipped": len(asked) - answered,
            "labelled_ambiguous": len(labelled), "asked_of_labelled": sum(id(mem) in asked_ids for mem in labelled),
            "near_misses": len(near), "asked_of_near_misses": sum(id(mem) in asked_ids for mem in near),
            "asked_of_unlabelled": sum(1 for mem, _ in asked if not mem.get("ambiguous"))}


def _score_row(q: dict, served: list[str], abstained: bool, asked: bool, ms: float) -> dict:
    """One question's figures from the memory ids served, best first (units of one memory count once)."""
    ranked = list(dict.fromkeys(served))
    evidence = {str(e) for e in q.get("evidence", [])}
    row = {"id": q.get("id"), "category": q.get("category", "all"), "evidence": evidence, "abstained": abstained,
           "ms": ms, "recall": {}, "hit": {}, "ranked": ranked, "diverges": bool(q.get("diverges")), "asked": asked}
    first = next((n for n, mid in enumerate(ranked, start=1) if mid in evidence), None)
    row["rr"] = 1.0 / first if first else 0.0
    for k in KS:
        top = set(ranked[:k])
        row["recall"][k] = len(top & evidence) / len(evidence) if evidence else 0.0
        row["hit"][k] = 1.0 if top & evidence else 0.0
    return row


def run_arm(m: Memory, owner: dict[int, str], queries: list[dict], options: dict | None) -> dict:
    rows = []
    for q in queries:
        start = time.perf_counter()
        scopes = [q["scope"]] if q.get("scope") else None
        if options is None:
            r = plain_bm25(m, q["query"], scopes, max(KS))
        else:
            r = m.recall(q["query"], scopes=scopes, all_scopes=scopes is None, limit=max(KS), record=False,
                         **options)
        ms = (time.perf_counter() - start) * 1000
        rows.append(_score_row(q, [owner.get(i["id"]) for i in r["items"] if i["id"] in owner], r["abstained"],
                               bool(r.get("clarify")), ms))
    per_category = {c: _summary([r for r in rows if r["category"] == c])
                    for c in sorted({r["category"] for r in rows})}
    return {"overall": _summary(rows), "by_category": per_category, "rows": rows}


def _annotate_offline(m: Memory) -> None:
    """The offline annotate pass until it has nothing left (new nodes, then retags), as the daemon
    would run it with no model configured."""
    from .metabolism import load_all
    from .metabolism.scheduler import owner_id, run_task

    task = load_all()["annotate"]
    for _ in range(10_000):
        r = run_task(m, task, owner_id(), batch=500, llm=None)
        if r["status"] != "ok":
            raise InvalidInput(f"annotate failed during the tagging evaluation: {r.get('error') or r['status']}")
        if not r.get("annotated") and not r.get("retagged"):
            return


def evaluate_tagging(m: Memory, owner: dict[int, str], memories: list[dict]) -> dict:
    """Precision and recall of the offline tags proposed on memories that name expected tags."""
    from .metabolism.vocabulary import key_of
    from .store import tags as tag_store

    _annotate_offline(m)
    labelled = {str(mem["id"]): mem for mem in memories if isinstance(mem.get("tags"), list)}
    by_memory: dict[str, set[str]] = {mid: set() for mid in labelled}
    found = tag_store.for_nodes(m.conn, [n for n, mid in owner.items() if mid in labelled])
    for node_id, assigned in found.items():
        by_memory[owner[node_id]] |= {t["name"] for t in assigned if t["status"] == "proposed"}
    totals: dict[str, dict] = {}
    misses: dict[str, int] = {}
    carriers: dict[str, int] = {}
    for mid, names in by_memory.items():
        mem = labelled[mid]
        wanted = {key_of(t) for t in mem["tags"]}
        fine = wanted | {key_of(t) for t in mem.get("acceptable", [])}
        keys = {key_of(n): n for n in names}
        for scope in ("all", mem.get("scope") or "-"):
            t = totals.setdefault(scope, {"memories": 0, "proposed": 0, "right": 0, "wanted": 0, "found": 0,
                                          "tagged": 0})
            t["memories"] += 1
            t["proposed"] += len(keys)
            t["right"] += len(set(keys) & fine)
            t["wanted"] += len(wanted)
            t["found"] += len(set(keys) & wanted)
            t["tagged"] += bool(keys)
        for key, name in keys.items():
            carriers[name] = carriers.get(name, 0) + 1
            if key not in fine:
                misses[name] = misses.get(name, 0) + 1

    def summary(t: dict) -> dict:
        return {"memories": t["memories"], "proposed": t["proposed"],
                "precision": round(t["right"] / t["proposed"], 4) if t["proposed"] else None,
                "recall": round(t["found"] / t["wanted"], 4) if t["wanted"] else None,
                "tagged_share": round(t["tagged"] / t["memories"], 4) if t["memories"] else None}

    overall = summary(totals.get("all", {"memories": 0, "proposed": 0, "right": 0, "wanted": 0, "found": 0,
                                         "tagged": 0}))
    return {**overall, "names": len(carriers),
            "memories_per_name": round(sum(carriers.values()) / len(carriers), 2) if carriers else None,
            "by_scope": {s: summary(t) for s, t in sorted(totals.items()) if s != "all"},
            "unexpected": sorted(misses.items(), key=lambda p: (-p[1], p[0]))[:15]}


def evaluate(memories_path: str, queries_path: str | None, home: str | None = None, split: str | None = None,
             scopes: Sequence[str] | None = None, via: str = "process", links: bool = False,
             variant: str | None = None) -> dict:
    """`split` keeps only queries whose `split` field matches (tune on one half, report the other);
    `scopes` keeps only the memories and queries of those scopes; `via="mcp"` loads and asks
    through the real MCP server (see `evaluate_mcp`); `links` runs the offline linking passes
    after loading (so recall walks confirmed links) and reports their quality (`linking`).
    Without a queries file only what the memories file can measure on its own is reported
    (tagging, linking by topic, clarification at capture)."""
    memories, queries = _jsonl(memories_path), (_jsonl(queries_path) if queries_path else [])
    if split:
        queries = [q for q in queries if q.get("split") == split]
    if scopes:
        memories = [m for m in memories if m.get("scope") in scopes]
        queries = [q for q in queries if q.get("scope") in scopes]
    shaped = None
    if variant:
        from .eval_variants import apply

        memories, queries, shaped = apply(variant, memories, queries)
    if via == "mcp":
        return evaluate_mcp(memories, queries, split)
    if via != "process":
        raise InvalidInput("via is 'process' or 'mcp'")
    temp = None if home else tempfile.mkdtemp(prefix="tidemind-eval-")
    try:
        with Memory.open(home or temp) as m:
            capture: dict = {}
            owner = load(m, memories, capture)
            result: dict = {"memories": len(memories), "queries": len(queries), "split": split,
                            "clarification": capture, "arms": {}, **({"variant": shaped} if shaped else {})}
            if links:
                result["linking"] = link_and_measure(m, owner, memories, queries)
            for arm, options in ARMS.items():
                if not queries:
                    break
                data = run_arm(m, owner, queries, options)
                data.pop("rows")
                result["arms"][arm] = data
            # after the retrieval runs: annotate writes derived text that search indexes
            if any(isinstance(mem.get("tags"), list) for mem in memories):
                result["tagging"] = evaluate_tagging(m, owner, memories)
        return result
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)


LINK_ROUNDS = 50


def link_and_measure(m: Memory, owner: dict[int, str], memories: list[dict], queries: list[dict]) -> dict:
    """Run the offline linking passes to completion, then measure the confirmed links against
    what the files say belongs together:
    - memories with a `topic`: every pair of one topic belongs together, every pair of two topics
      does not: precision (confirmed links within a topic) and recall (pairs of a topic joined
      by a confirmed link);
    - questions with two or more evidence memories (multi-hop, when categories are given): the
      pairs of one question belong together: how many are joined by a confirmed path of at most
      two links, and directly;
    - confirmed links per node (the judge keeps each memory's best few)."""
    import itertools

    from .metabolism.scheduler import run_due

    started = time.perf_counter()
    for _ in range(LINK_ROUNDS):
        reports = run_due(m, only=["link-propose", "link-evaluate"], force=True, batch=5000)
        if all(not r.get("nodes") and not r.get("confirmed") for r in reports):
            break
    seconds = time.perf_counter() - started
    node_of: dict[str, list[int]] = {}
    for node_id, mid in owner.items():
        node_of.setdefault(mid, []).append(node_id)
    edges = m.conn.execute("SELECT source_id, target_id FROM links WHERE status='confirmed'").fetchall()
    degree: dict[int, int] = {}
    for a, b in edges:
        degree[a], degree[b] = degree.get(a, 0) + 1, degree.get(b, 0) + 1
    confirmed = [(owner.get(a), owner.get(b)) for a, b in edges]
    neighbours: dict[str, set[str]] = {}
    for a, b in confirmed:
        if a and b and a != b:
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
    out: dict = {"confirmed": len(confirmed), "seconds": round(seconds, 1),
                 "per_node_max": max(degree.values(), default=0),
                 "per_node_mean": round(statistics.mean(degree.values()), 2) if degree else 0}
    topic = {str(mem["id"]): mem["topic"] for mem in memories if mem.get("topic")}
    if topic:
        labelled = [(a, b) for a, b in confirmed if a in topic and b in topic]
        within = [(a, b) for a, b in labelled if topic[a] == topic[b]]
        pairs = [(a, b) for a, b in itertools.combinations(sorted(topic), 2) if topic[a] == topic[b]]
        joined = sum(1 for a, b in pairs if b in neighbours.get(a, ()))
        out["topics"] = {"precision": round(len(within) / len(labelled), 4) if labelled else None,
                         "recall": round(joined / len(pairs), 4) if pairs else None,
                         "confirmed": len(labelled), "across_topics": len(labelled) - len(within)}
    # the questions whose answer needs several memories (their category says so when it can)
    several = [q for q in queries if len(q.get("evidence", [])) >= 2]
    if any(q.get("category") == "multi-hop" for q in several):
        several = [q for q in several if q.get("category") == "multi-hop"]
    pairs = {tuple(sorted(p)) for q in several for p in itertools.combinations({str(e) for e in q["evidence"]}, 2)}
    if pairs:
        near = lambda a: neighbours.get(a, set())
        out["evidence_pairs"] = {
            "pairs": len(pairs),
            "joined_within_2": round(sum(1 for a, b in pairs if b in near(a) or near(a) & near(b)) / len(pairs), 4),
            "joined_directly": round(sum(1 for a, b in pairs if b in near(a)) / len(pairs), 4)}
    return out


def evaluate_mcp(memories: list[dict], queries: list[dict], split: str | None = None) -> dict:
    """The same measurement through the real MCP server over stdio, as an agent host drives it:
    every memory digested with brain_digest (content, scope, source {tool, session}, valid_at),
    every question asked with brain_recall (mode "index", limit 20, the question's scope). Plain
    BM25 runs in-process on the store the server wrote, as the baseline."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    temp = tempfile.mkdtemp(prefix="tidemind-eval-mcp-")
    scopes = list(dict.fromkeys(m.get("scope") for m in memories if m.get("scope"))) or ["personal"]
    owner: dict[int, str] = {}
    rows: list[dict] = []

    async def call(session, tool: str, arguments: dict) -> dict:
        r = await session.call_tool(tool, arguments)
        if r.is_error:
            raise InvalidInput(f"{tool} failed: {r.content[0].text}")
        data = r.structured_content or {}
        return data.get("result", data)

    async def run() -> None:
        args = ["-m", "tidemind.cli", "--home", temp, "serve", *[a for s in scopes for a in ("--scope", s)]]
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for mem in memories:
                    source = mem.get("source")
                    arguments = {"content": mem["text"], "scope": mem.get("scope") or scopes[0],
                                 "source": {"tool": source if isinstance(source, str) else "eval",
                                            **({"session": mem["session"]} if mem.get("session") else {})}}
                    if mem.get("valid_at"):
                        arguments["valid_at"] = mem["valid_at"]
                    for node_id in (await call(session, "brain_digest", arguments))["node_ids"]:
                        owner[node_id] = str(mem["id"])
                with Memory.open(temp) as m:          # the server embeds in the background: wait for it
                    while m.stats()["embed_queue"]:
                        await anyio.sleep(0.2)
                for q in queries:
                    start = time.perf_counter()
                    r = await call(session, "brain_recall", {"query": q["query"], "scope": q.get("scope") or scopes[0],
                                                             "mode": "index", "limit": max(KS)})
                    rows.append({"q": q, "items": r["items"], "abstained": r["abstained"],
                                 "asked": bool(r.get("clarify")), "ms": (time.perf_counter() - start) * 1000})

    try:
        anyio.run(run)
        result: dict = {"memories": len(memories), "queries": len(queries), "split": split, "via": "mcp",
                        "clarification": {}, "arms": {}}
        scored = [_score_row(row["q"], [owner.get(i["id"]) for i in row["items"] if i["id"] in owner],
                             row["abstained"], row["asked"], row["ms"]) for row in rows]
        result["arms"]["hybrid"] = {"overall": _summary(scored), "by_category": {
            c: _summary([r for r in scored if r["category"] == c]) for c in sorted({r["category"] for r in scored})}}
        with Memory.open(temp) as m:
            data = run_arm(m, owner, queries, None)
            if any(isinstance(mem.get("tags"), list) for mem in memories):
                result["tagging"] = evaluate_tagging(m, owner, memories)
        data.pop("rows")
        result["arms"]["bm25"] = data
        return result
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def format_report(r: dict) -> str:
    split = f" (split {r['split']})" if r.get("split") else ""
    cell = lambda v, w=7: f"{v:>{w}.3f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"
    lines = [f"retrieval evaluation: {r['memories']} memories, {r['queries']} queries{split}"]
    if r.get("variant"):
        v = r["variant"]
        lines.append(f"variant {v['variant']}: {v['changed']} {v['what']}")
    if r["arms"]:
        lines += ["", f"  {'arm':<8}{'R@1':>7}{'R@5':>7}{'R@10':>7}{'R@20':>7}{'H@10':>7}{'MRR':>7}{'abst∅':>7}{'ans':>7}"
                      f"{'p50ms':>8}"]
    for arm, data in r["arms"].items():
        o = data["overall"]
        lines.append(f"  {arm:<8}{cell(o['recall@1'])}{cell(o['recall@5'])}{cell(o['recall@10'])}{cell(o['recall@20'])}"
                     f"{cell(o['hit@10'])}{cell(o['mrr'])}{cell(o['abstain_when_nothing_stored'])}"
                     f"{cell(o['answer_when_stored'])}{o.get('latency_ms', {}).get('p50', 0):>8}")
    arms = list(r["arms"])
    categories = sorted({c for data in r["arms"].values() for c in data["by_category"]})
    if arms:
        lines += ["", "  recall@10 by category (abstention for never-stored)",
                  f"  {'category':<14}{'n':>5}" + "".join(f"{a:>9}" for a in arms)]
    for c in categories:
        per = [r["arms"][a]["by_category"].get(c, {}) for a in arms]
        n = per[0].get("queries", 0)
        key = "abstain_when_nothing_stored" if c == "never-stored" else "recall@10"
        lines.append(f"  {c:<14}{n:>5}" + "".join(cell(p.get(key), 9) for p in per))
    c = r.get("clarification") or {}
    if c:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(c["by_kind"].items())) or "none"
        lines += ["", f"  clarification at capture: {c['questions']} question(s) in {c['captures']} captures"
                      f" ({c['per_100_captures']:.2f} per 100; {kinds}); {c['answered']} answered, {c['skipped']} skipped",
                  f"    asked of {c['asked_of_labelled']}/{c['labelled_ambiguous']} labelled ambiguous,"
                  f" {c['asked_of_near_misses']}/{c['near_misses']} near misses, {c['asked_of_unlabelled']} unlabelled"]
    link = r.get("linking")
    if link:
        lines += ["", f"  links: {link['confirmed']} confirmed in {link['seconds']} s, at most {link['per_node_max']} per"
                      f" memory unit (mean {link['per_node_mean']})"]
        if link.get("topics"):
            t = link["topics"]
            lines.append(f"    by topic: precision {cell(t['precision'], 0).strip()}, recall {cell(t['recall'], 0).strip()}"
                         f" ({t['across_topics']} across topics)")
        if link.get("evidence_pairs"):
            e = link["evidence_pairs"]
            lines.append(f"    evidence pairs of one question: {e['pairs']}, joined within two links"
                         f" {cell(e['joined_within_2'], 0).strip()}, directly {cell(e['joined_directly'], 0).strip()}")
    t = r.get("tagging")
    if t:
        lines += ["", f"  tagging (offline annotate): {t['proposed']} proposed on {t['memories']} labelled memories;"
                      f" precision {cell(t['precision'], 0).strip()}, recall {cell(t['recall'], 0).strip()},"
                      f" {t['names']} names, {cell(t['memories_per_name'], 0).strip()} memories a name"]
        lines += [f"    {scope:<22} precision {cell(v['precision'], 0).strip()}  recall {cell(v['recall'], 0).strip()}"
                  for scope, v in t["by_scope"].items()]
        if t["unexpected"]:
            lines.append("    not expected: " + ", ".join(f"{n} ({c})" for n, c in t["unexpected"][:10]))
    h = r["arms"].get("hybrid", {}).get("overall", {})
    if h:
        lines.append(f"  clarification at recall (hybrid): asked on {cell(h.get('clarify_when_diverging'), 0).strip()}"
                     f" of diverging queries, {cell(h.get('clarify_otherwise'), 0).strip()} of the others;"
                     f" abstained on {cell(h.get('abstain_when_nothing_stored'), 0).strip()} of never-stored ones")
    return "\n".join(lines)
