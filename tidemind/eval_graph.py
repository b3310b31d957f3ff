"""`tidemind eval graph`: is the graph the metabolism builds one a person would keep?

Builds a store from conversation turns as an agent host would (each turn digested with its
scope, session and valid time, embedded as it arrives), runs the offline metabolism until it
settles, and judges what it filed against topic labels (`TOPICS/<conversation>.jsonl`: each
turn's `events` and `themes`; a turn with neither is content-free). The definitions are those
of the reference evaluator `../shared/eval/graph_quality.py` (README beside it):

- a confirmed link is right (strict) when its two turns share an event, related (loose) when
  they share any key; links with a content-free end are counted apart; the same across sessions;
- event cohesion: for each event with two or more turns, the share of its turn pairs joined
  within two confirmed links, averaged over events (and across sessions only);
- the baseline: a plain BM25 nearest-neighbour graph with as many links (each turn's words OR'd
  against the other turns of its conversation, the best-scoring pairs kept);
- tags: assignments on content-free turns, and inside a coherent tag (half or more of the tag's
  turns share one key); pair review items (merge, contradiction) as links; crystals: purity (the
  share of members carrying the members' most common event) and content-free members.
"""
from __future__ import annotations

import collections
import itertools
import json
import re
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Sequence

from .memory import Memory

MAX_ROUNDS = 40

# the reference's own tokenisation and stopwords for the BM25 baseline, kept as it is there so
# the figures agree
_BASE_STOP = set("a an the and or but if of to in on at for with from by is are was were be been being it its this"
                 " that these those i you he she we they me him her us them my your his our their what which who whom"
                 " when where why how do does did have has had not no yes so just really too very can could will would"
                 " should about as up out than then there here all any some more most such only own same into over"
                 " after before again also".split())


def _base_words(s: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9']+", s.lower()) if w not in _BASE_STOP and len(w) > 1]


def load_labels(topics: str | Path, turn_ids: Sequence[str]) -> dict[str, tuple[set, set]]:
    labels = {}
    for conv in sorted({t.split(":")[0] for t in turn_ids}):
        path = Path(topics) / f"{conv}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                labels[r["id"]] = (set(r["events"]), set(r["themes"]))
    return labels


def settle(m: Memory, rounds: int = MAX_ROUNDS, batch: int = 2000) -> dict:
    """Run every offline metabolism task until a round changes nothing the graph holds."""
    from .metabolism.scheduler import run_due

    def state():
        q = lambda sql: m.conn.execute(sql).fetchall()
        return (q("SELECT status, count(*) FROM links GROUP BY status"),
                q("SELECT status, count(*) FROM node_tags GROUP BY status"),
                q("SELECT kind, status, count(*) FROM review_items GROUP BY kind, status"),
                q("SELECT status, count(*) FROM syntheses GROUP BY status"))

    start, before, n = time.monotonic(), None, 0
    for n in range(1, rounds + 1):
        run_due(m, force=True, batch=batch)
        now = state()
        if now == before:
            break
        before = now
    return {"rounds": n, "seconds": round(time.monotonic() - start, 1)}


class Judge:
    """The reference definitions over one store's turns (node → turn id, labels, texts)."""

    def __init__(self, owner: dict[int, str], labels: dict[str, tuple[set, set]], texts: dict[str, str]):
        self.owner, self.labels, self.texts = owner, labels, texts
        self.turns = set(owner.values())
        self.free = {t for t in self.turns if t in labels and not labels[t][0] and not labels[t][1]}

    def related(self, x: str, y: str) -> tuple[bool, bool]:
        ex, tx = self.labels.get(x, (set(), set()))
        ey, ty = self.labels.get(y, (set(), set()))
        return bool(ex & ey), bool((ex | tx) & (ey | ty))

    def turn_pairs(self, rows) -> list[tuple[str, str]]:
        out = []
        for s, t in rows:
            x, y = self.owner.get(s), self.owner.get(t)
            if x and y and x != y:
                out.append((x, y))
        return out

    @staticmethod
    def session(t: str) -> str:
        return t.rsplit(":", 1)[0]

    def pairs(self, pairs: list[tuple[str, str]]) -> dict:
        n = len(pairs)
        if not n:
            return {"n": 0}
        strict = sum(self.related(x, y)[0] for x, y in pairs)
        loose = sum(self.related(x, y)[1] for x, y in pairs)
        junk = sum((x in self.free) or (y in self.free) for x, y in pairs)
        cross = [(x, y) for x, y in pairs if self.session(x) != self.session(y)]
        cross_strict = sum(self.related(x, y)[0] for x, y in cross)
        return {"n": n, "strict": round(strict / n, 3), "loose": round(loose / n, 3),
                "content_free_end": round(junk / n, 3), "cross_session": len(cross),
                "cross_session_strict": round(cross_strict / max(len(cross), 1), 3)}

    def cohesion(self, confirmed: list[tuple[str, str]]) -> tuple[float, float]:
        adj = collections.defaultdict(set)
        for x, y in confirmed:
            adj[x].add(y)
            adj[y].add(x)
        events = collections.defaultdict(set)
        for t in self.turns:
            for k in self.labels.get(t, (set(), set()))[0]:
                events[(t.split(":")[0], k)].add(t)
        covs, xcovs = [], []
        for ts in events.values():
            if len(ts) < 2:
                continue
            ok = tot = xok = xtot = 0
            for x, y in itertools.combinations(sorted(ts), 2):
                two = adj[x] | set().union(*(adj[z] for z in adj[x])) if adj[x] else set()
                tot += 1
                ok += y in two
                if self.session(x) != self.session(y):
                    xtot += 1
                    xok += y in two
            covs.append(ok / tot)
            if xtot:
                xcovs.append(xok / xtot)
        return round(sum(covs) / max(len(covs), 1), 3), round(sum(xcovs) / max(len(xcovs), 1), 3)

    def bm25_graph(self, k_links: int) -> list[tuple[str, str]]:
        mem = sqlite3.connect(":memory:")
        mem.execute("CREATE VIRTUAL TABLE f USING fts5(tid UNINDEXED, conv UNINDEXED, body)")
        mem.executemany("INSERT INTO f VALUES(?,?,?)", [(t, t.split(":")[0], " ".join(_base_words(s)))
                                                         for t, s in self.texts.items()])
        cand = []
        for t, s in self.texts.items():
            w = sorted(set(_base_words(s.split(":", 1)[-1])))
            if not w:
                continue
            q = " OR ".join(f'"{x}"' for x in w[:40])
            for tid, score in mem.execute("SELECT tid, bm25(f) FROM f WHERE f MATCH ? AND conv=? ORDER BY bm25(f)"
                                          " LIMIT 8", (q, t.split(":")[0])):
                if tid != t:
                    cand.append((score, t, tid))
        cand.sort()
        seen, base = set(), []
        for _, x, y in cand:
            key = tuple(sorted((x, y)))
            if key in seen:
                continue
            seen.add(key)
            base.append(key)
            if len(base) >= k_links:
                break
        return base

    def tags(self, rows) -> dict:
        bytag = collections.defaultdict(set)
        assign = []
        for node_id, name in rows:
            t = self.owner.get(node_id)
            if t:
                bytag[name].add(t)
                assign.append((t, name))

        def coherent(ts):
            c = collections.Counter(k for t in ts for k in (self.labels.get(t, (set(), set()))[0]
                                                            | self.labels.get(t, (set(), set()))[1]))
            return bool(c) and c.most_common(1)[0][1] >= 0.5 * len(ts)

        coh = {name: coherent(ts) for name, ts in bytag.items()}
        n = max(len(assign), 1)
        content_turns = max(len(self.turns) - len(self.free), 1)
        return {"assignments": len(assign), "distinct": len(bytag),
                "on_content_free_turn": round(sum(t in self.free for t, _ in assign) / n, 3),
                "in_coherent_tag": round(sum(coh[name] and t not in self.free for t, name in assign) / n, 3),
                "turns_tagged": round(len({t for t, _ in assign if t not in self.free}) / content_turns, 3)}

    def crystals(self, member_lists) -> dict:
        purity, junk = [], []
        for members in member_lists:
            ts = [t for t in (self.owner.get(n) for n in members) if t]
            if len(ts) < 2:
                continue
            c = collections.Counter(k for t in ts for k in self.labels.get(t, (set(), set()))[0])
            purity.append((c.most_common(1)[0][1] if c else 0) / len(ts))
            junk.append(sum(t in self.free for t in ts) / len(ts))
        return {"n": len(purity), "purity": round(sum(purity) / max(len(purity), 1), 3),
                "content_free_members": round(sum(junk) / max(len(junk), 1), 3)}


def measure(conn, owner: dict[int, str], labels: dict, texts: dict[str, str]) -> dict:
    """The reference figures of the graph in `conn` (a TideMind store's connection)."""
    judge = Judge(owner, labels, texts)
    q = lambda sql: conn.execute(sql).fetchall()
    confirmed = judge.turn_pairs(q("SELECT source_id, target_id FROM links WHERE status='confirmed'"))
    pending = judge.turn_pairs(q("SELECT source_id, target_id FROM links WHERE status='pending'"))
    res = {"confirmed_links": judge.pairs(confirmed), "pending_links": judge.pairs(pending)}
    degree = collections.Counter()
    for x, y in confirmed:
        degree[x] += 1
        degree[y] += 1
    turns = judge.turns
    res["confirmed_links"]["per_turn"] = round(2 * len(confirmed) / max(len(turns), 1), 2)
    res["confirmed_links"]["turns_without_link"] = round(
        sum(1 for t in turns if t not in judge.free and degree[t] == 0) / max(len(turns) - len(judge.free), 1), 3)
    res["pending_links"]["per_turn"] = round(len(pending) / max(len(turns), 1), 2)
    res["event_cohesion"], res["event_cohesion_cross_session"] = judge.cohesion(confirmed)
    res["bm25_graph_same_size"] = judge.pairs(judge.bm25_graph(len(confirmed)))
    res["tags"] = judge.tags(q("SELECT nt.node_id, t.name FROM node_tags nt JOIN tags t ON t.id = nt.tag_id"
                               " WHERE nt.status IN ('proposed','confirmed')"))
    by_kind = collections.defaultdict(list)
    for kind, a, b in q("SELECT kind, node_id, other_node_id FROM review_items WHERE node_id IS NOT NULL"
                        " AND other_node_id IS NOT NULL"):
        x, y = owner.get(a), owner.get(b)
        if x and y:
            by_kind[kind].append((x, y))
    res["pair_review_items"] = {k: judge.pairs(v) for k, v in sorted(by_kind.items())}
    res["crystals"] = judge.crystals(json.loads(members) for (members,) in q(
        "SELECT members FROM syntheses WHERE status != 'withdrawn' AND kind='crystal'"))
    events = {(t.split(":")[0], k) for t in turns for k in labels.get(t, (set(), set()))[0]}
    res["labels"] = {"turns": len(turns), "content_free": len(judge.free), "events": len(events)}
    return res


def evaluate_graph(memories_path: str, topics: str, convs: Sequence[str] = (), home: str | None = None) -> dict:
    """Build the store, settle the metabolism, measure. `convs`: only these conversations."""
    from .evaluate import _jsonl, load

    memories = [r for r in _jsonl(memories_path) if not convs or str(r["id"]).split(":")[0] in convs]
    if not memories:
        from .errors import InvalidInput

        raise InvalidInput("no memories to build a graph from (check --convs)")
    with tempfile.TemporaryDirectory(prefix="tidemind-eval-graph-") as tmp:
        m = Memory.open(Path(home or tmp))
        try:
            start = time.monotonic()
            owner = load(m, memories)
            built = round(time.monotonic() - start, 1)
            settled = settle(m)
            texts = {str(r["id"]): r["text"] for r in memories}
            labels = load_labels(topics, list(texts))
            report = measure(m.conn, owner, labels, texts)
            if home:        # kept: the turn → node ids map beside it, for the reference evaluator
                turn_map: dict[str, list[int]] = {}
                for node_id, turn in sorted(owner.items()):
                    turn_map.setdefault(turn, []).append(node_id)
                (Path(home) / "turn-map.json").write_text(json.dumps(turn_map))
        finally:
            m.close()
    report["build"] = {"turns": len(memories), "load_s": built, "metabolism_s": settled["seconds"],
                       "rounds": settled["rounds"],
                       "conversations": sorted({str(r["id"]).split(":")[0] for r in memories})}
    return report


def format_graph_report(r: dict) -> str:
    c, b, p = r["confirmed_links"], r["bm25_graph_same_size"], r["pending_links"]
    t, k = r["tags"], r["crystals"]
    lines = [f"graph of {r['labels']['turns']:,} turns ({r['labels']['content_free']} content-free,"
             f" {r['labels']['events']} events), conversations {', '.join(r['build']['conversations'])};"
             f" metabolism settled in {r['build']['rounds']} rounds, {r['build']['metabolism_s']} s",
             "",
             f"{'':34}{'product':>10}{'BM25 same size':>16}",
             f"{'confirmed links':34}{c['n']:>10,}{b.get('n', 0):>16,}"]
    if c["n"]:
        lines += [f"{'  strict (one event)':34}{c['strict']:>10.3f}{b.get('strict', 0):>16.3f}",
                  f"{'  strict across sessions':34}{c['cross_session_strict']:>10.3f}"
                  f"{b.get('cross_session_strict', 0):>16.3f}",
                  f"{'  loose (any shared topic)':34}{c['loose']:>10.3f}{b.get('loose', 0):>16.3f}",
                  f"{'  with a content-free end':34}{c['content_free_end']:>10.3f}{b.get('content_free_end', 0):>16.3f}",
                  f"{'  per turn':34}{c['per_turn']:>10}"]
    lines += [f"{'event cohesion (all / across)':34}{r['event_cohesion']:>10.3f} / {r['event_cohesion_cross_session']:.3f}",
              f"{'pending links (per turn)':34}{p['n']:>10,} ({p.get('per_turn', 0)})"]
    for kind, v in r["pair_review_items"].items():
        lines.append(f"{kind + ' items':34}{v['n']:>10}" + (f"  strict {v['strict']:.3f}, content-free end"
                                                           f" {v['content_free_end']:.3f}" if v["n"] else ""))
    lines += [f"{'tags: assignments (distinct)':34}{t['assignments']:>10,} ({t['distinct']})",
              f"{'  in a coherent tag':34}{t['in_coherent_tag']:>10.3f}",
              f"{'  on content-free turns':34}{t['on_content_free_turn']:>10.3f}",
              f"{'  content turns tagged':34}{t['turns_tagged']:>10.3f}",
              f"{'crystals (purity, content-free)':34}{k['n']:>10} ({k['purity']:.3f}, {k['content_free_members']:.3f})"]
    return "\n".join(lines)
