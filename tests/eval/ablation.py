"""What each retrieval choice does, measured on one half of the development set.

    python tests/eval/ablation.py [tune|test]      # default: tune

Builds the development set (make_devset.py), loads it once through the normal digest path, then
runs the hybrid recall under each configuration below (module constants set for the run and
restored after) and prints recall@10, MRR, abstention on never-stored questions and answers on
the others. The first row is the shipped configuration; every other row changes one thing.
Plain FTS5 BM25 is the baseline row at the bottom.
"""
from __future__ import annotations

import importlib.util
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from tidemind.evaluate import ARMS, load, run_arm
from tidemind.memory import Memory

RECALL = importlib.import_module("tidemind.search.recall")
FUSION = importlib.import_module("tidemind.search.fusion")

CONFIGS: list[tuple[str, dict]] = [
    ("shipped", {}),
    ("session neighbours as context only (before)", {"NEIGHBOUR_REACH": 1, "SUBSTANTIVE_WORDS": 10**6,
                                                     "NEIGHBOUR_FACTOR": 0.35}),
    ("neighbour reach 1 (no skipping chatter)", {"NEIGHBOUR_REACH": 1}),
    ("neighbour factor 0.7", {"NEIGHBOUR_FACTOR": 0.7}),
    ("no neighbour or link expansion", {"EXPAND_SEEDS": 0}),
    ("item evidence 0.2", {"ITEM_EVIDENCE": 0.2}),
    ("no relative evidence cut", {"RELATIVE_EVIDENCE": 0.0}),
    ("abstain below 0.5", {"ABSTAIN_BELOW": 0.5}),
    ("abstain below 0.3", {"ABSTAIN_BELOW": 0.3}),
    ("cosine evidence 0.25-0.55", {"COS_FLOOR": 0.25, "COS_FULL": 0.55}),
    ("vector weight 0.5 in RRF", {"fusion.ARM_WEIGHTS": {"fts": 1.0, "vector": 0.5}}),
    ("vector weight 1.5 in RRF", {"fusion.ARM_WEIGHTS": {"fts": 1.0, "vector": 1.5}}),
    ("RRF k = 20", {"fusion.K": 20}),
    ("no recency/heat prior", {"fusion.PRIOR_MAX": 0.0}),
]


@contextmanager
def configured(changes: dict):
    saved = []
    for key, value in changes.items():
        module, name = (FUSION, key.split(".", 1)[1]) if key.startswith("fusion.") else (RECALL, key)
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def main(split: str = "tune") -> None:
    spec = importlib.util.spec_from_file_location("make_devset", Path(__file__).with_name("make_devset.py"))
    devset = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(devset)
    memories, queries = devset.build()
    queries = [q for q in queries if q["split"] == split]
    with Memory.open(tempfile.mkdtemp(prefix="tidemind-ablation-")) as m:
        owner = load(m, memories)
        print(f"{len(memories)} memories, {len(queries)} queries ({split} half)\n")
        print("| configuration | R@10 | MRR | abstains (never stored) | answers (stored) |\n|---|---|---|---|---|")
        rows = [(name, changes, ARMS["hybrid"]) for name, changes in CONFIGS] + [("plain FTS5 BM25", {}, None)]
        for name, changes, options in rows:
            with configured(changes):
                o = run_arm(m, owner, queries, options)["overall"]
            print(f"| {name} | {o['recall@10']:.3f} | {o['mrr']:.3f} | {o['abstain_when_nothing_stored']:.2f}"
                  f" | {o['answer_when_stored']:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tune")
