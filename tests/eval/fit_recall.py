"""Fit recall's scoring weights (`tidemind.search.scoring.WEIGHTS`) on the tuning parts of the two
development sets, and report them on the parts held out.

    python tests/eval/fit_recall.py [--data DIR] [--rounds N] [--links]

- Real conversations (../shared/eval/conversations-dev: five multi-session conversations), split
  by conversation: TUNE (three) is fitted on, HELD_OUT (two) is only reported.
- The synthetic set (make_devset.py), split by its own `split` field: "tune" is fitted on,
  "test" only reported. It guards what the conversations do not show (an answer found through a
  question that matched by meaning, corrections, paraphrases).

Every memory is loaded through the normal digest path; each query is gathered once through the
shipped pipeline (`recall.gather`: the arms, the pool, the features, the evidence gate). Then
coordinate ascent tries each weight on a small grid and keeps a change when it raises the
objective by more than MIN_GAIN (so a change that only moves noise is not taken): recall@10 on
the real conversations, counted twice, plus recall@10 on the synthetic set (real data leads; the
synthetic set keeps what it guards from getting worse).
Deterministic: the same data gives the same weights, printed as a dict to paste into scoring.py.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path

from tidemind.evaluate import _jsonl, link_and_measure, load
from tidemind.memory import Memory
from tidemind.search import scoring
from tidemind.search.recall import ABSTAIN_BELOW, GROUNDED_BELOW, ITEM_EVIDENCE, RELATIVE_EVIDENCE, RecallRequest, gather

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "eval" / "conversations-dev"
TUNE = ("conv-26", "conv-41", "conv-43")
HELD_OUT = ("conv-30", "conv-42")
GRID = {"prev": [0, 0.2, 0.4, 0.6], "asked": [0, 0.2, 0.4, 0.6], "prev2": [0, 0.1, 0.2, 0.3],
        "next": [0, 0.1, 0.2, 0.3], "sess": [0, 0.1, 0.2, 0.3, 0.5], "sess3": [0, 0.05, 0.1, 0.2],
        "spk": [0, 0.2, 0.3, 0.5, 0.8, 1.0], "when": [0, 0.2, 0.5, 0.8, 1.2], "cos": [0, 0.2, 0.4, 0.8],
        "scos": [0, 0.1, 0.2, 0.4], "cprev": [0, 0.2, 0.4, 0.8, 1.2, 1.6], "linked": [0, 0.1, 0.2, 0.3, 0.5, 0.8]}
MIN_GAIN = 0.001
REAL_SHARE = 2


def synthetic_set() -> tuple[list[dict], list[dict]]:
    spec = importlib.util.spec_from_file_location("make_devset", Path(__file__).with_name("make_devset.py"))
    devset = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(devset)
    return devset.build()


def gathered(m: Memory, queries: list[dict]) -> list[tuple[dict, list[tuple[int, dict]]]]:
    """Per answerable query: the candidates that pass the evidence gate, with their features."""
    out = []
    for q in queries:
        if not q.get("evidence"):
            continue
        req = RecallRequest(query=q["query"], scopes=[q["scope"]], limit=20, now=m.now())
        g = gather(m.conn, m.embedder, req, None, everything=True)
        best = max(g.evidence.values(), default=0.0)
        keep = max(ITEM_EVIDENCE, RELATIVE_EVIDENCE * best)
        passing = [] if best < ABSTAIN_BELOW or g.grounding < GROUNDED_BELOW else [(i, g.features[i]) for i, ev in g.evidence.items() if ev >= keep]
        out.append((q, passing))
    return out


def recall_at(data, owner: dict[int, str], weights: dict, k: int = 10) -> float:
    values = []
    for q, passing in data:
        scores = scoring.score(dict(passing), weights)
        ranked = list(dict.fromkeys(owner[i] for i in scoring.rank(scores) if i in owner))[:k]
        values.append(len(set(ranked) & {str(e) for e in q["evidence"]}) / len(q["evidence"]))
    return statistics.mean(values)


def fit(parts, start: dict, rounds: int) -> tuple[dict, float]:
    """`parts`: [(gathered queries, owner)] with their weight in the objective, a weighted mean of
    their recall@10."""
    total = sum(share for *_, share in parts)
    objective = lambda w: sum(share * recall_at(data, owner, w) for data, owner, share in parts) / total
    weights, best = dict(start), objective(start)
    for _ in range(rounds):
        changed = False
        for name, values in GRID.items():
            for value in values:
                trial = {**weights, name: value}
                score = objective(trial)
                if score > best + MIN_GAIN:
                    weights, best, changed = trial, score, True
        if not changed:
            break
    return weights, best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--links", action="store_true", help="run the offline linking passes before gathering")
    args = ap.parse_args()
    memories, queries = _jsonl(f"{args.data}/memories.jsonl"), _jsonl(f"{args.data}/queries.jsonl")
    synthetic_memories, synthetic_queries = synthetic_set()
    with Memory.open(tempfile.mkdtemp(prefix="tidemind-fit-")) as real, \
            Memory.open(tempfile.mkdtemp(prefix="tidemind-fit-")) as synthetic:
        real_owner, synthetic_owner = load(real, memories), load(synthetic, synthetic_memories)
        if args.links:          # as the daemon leaves a store: the linking passes have run
            link_and_measure(real, real_owner, memories, queries)
            link_and_measure(synthetic, synthetic_owner, synthetic_memories, synthetic_queries)
        tune = [(gathered(real, [q for q in queries if q["scope"] in TUNE]), real_owner, REAL_SHARE),
                (gathered(synthetic, [q for q in synthetic_queries if q["split"] == "tune"]), synthetic_owner, 1)]
        held = [(gathered(real, [q for q in queries if q["scope"] in HELD_OUT]), real_owner, REAL_SHARE),
                (gathered(synthetic, [q for q in synthetic_queries if q["split"] == "test"]), synthetic_owner, 1)]

        def report(label: str, weights: dict) -> None:
            figures = [f"{recall_at(d, o, weights):.4f}" for d, o, _ in (*tune, *held)]
            print(f"{label}: R@10 conversations tune {figures[0]}, synthetic tune {figures[1]};"
                  f" held out: conversations {figures[2]}, synthetic {figures[3]}", file=sys.stderr)

        report("shipped", scoring.WEIGHTS)
        weights, _ = fit(tune, scoring.WEIGHTS, args.rounds)
        report("fitted ", weights)
        print(weights)


if __name__ == "__main__":
    main()
