"""What each part of recall does, measured on parts nobody tuned on.

    python tests/eval/ablation.py [--data DIR]

Loads the real development conversations (../shared/eval/conversations-dev), the held-out ones
again chat-shaped (eval_variants: a message per sentence), and the synthetic set (make_devset.py)
through the normal digest path, then runs the shipped hybrid recall under
each configuration below (module constants and weights set for the run and restored after) on
the HELD-OUT conversations (fit_recall.HELD_OUT) and the synthetic set's "test" half, and prints
a Markdown table: recall@10 and MRR on both, abstention on the synthetic set's never-stored
questions and answers on its others. The first row is the shipped configuration; every other
row changes one thing. Plain FTS5 BM25 is the baseline row at the bottom.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from tidemind.eval_variants import apply
from tidemind.evaluate import _jsonl, load, run_arm
from tidemind.memory import Memory

sys.path.insert(0, str(Path(__file__).parent))
from fit_recall import DEFAULT_DATA, HELD_OUT, synthetic_set  # noqa: E402

RECALL = importlib.import_module("tidemind.search.recall")
LEXICAL = importlib.import_module("tidemind.search.lexical")
SCORING = importlib.import_module("tidemind.search.scoring")


def weights(**changes) -> dict:
    return {"scoring.WEIGHTS": {**SCORING.WEIGHTS, **changes}}


CONFIGS: list[tuple[str, dict, dict]] = [
    ("shipped", {}, {}),
    ("no vector arm (FTS arm alone)", {}, {"use_vectors": False}),
    ("no FTS arm (vector arm alone)", {}, {"use_lexical": False}),
    ("no context: a turn scored alone (prev, asked, prev2, next = 0)", weights(prev=0, asked=0, prev2=0, next=0), {}),
    ("no session features (sess, sess3, scos = 0)", weights(sess=0, sess3=0, scos=0), {}),
    ("no speaker feature", weights(spk=0), {}),
    ("no date feature", weights(when=0), {}),
    ("no cosine features (cos, scos = 0)", weights(cos=0, scos=0), {}),
    ("FTS5's own bm25 (whole-table IDF, b = 0.75) instead of rescoring", {"recall.RESCORE": False}, {}),
    ("rescoring with b = 0.75", {"lexical.B": 0.75}, {}),
    ("no grounding check (IDF-weighted coverage)", {"recall.GROUNDED_BELOW": 0.0}, {}),
    ("item evidence 0.3 and relative cut 0.5 (the gate before)", {"recall.ITEM_EVIDENCE": 0.3,
                                                                   "recall.RELATIVE_EVIDENCE": 0.5}, {}),
]
MODULES = {"recall": RECALL, "lexical": LEXICAL, "scoring": SCORING}


@contextmanager
def configured(changes: dict):
    saved = []
    for key, value in changes.items():
        owner, name = key.split(".", 1)
        module = MODULES[owner]
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    args = ap.parse_args()
    memories, queries = _jsonl(f"{args.data}/memories.jsonl"), _jsonl(f"{args.data}/queries.jsonl")
    held = [q for q in queries if q["scope"] in HELD_OUT]
    # the same held-out conversations chat-shaped (a message per sentence): a feature must earn
    # its weight on both turn shapes (issue 24)
    chat_memories, _, _ = apply("chat", [m for m in memories if m["scope"] in HELD_OUT], held)
    synthetic_memories, synthetic_queries = synthetic_set()
    synthetic_test = [q for q in synthetic_queries if q["split"] == "test"]
    with Memory.open(tempfile.mkdtemp(prefix="tidemind-ablation-")) as real, \
            Memory.open(tempfile.mkdtemp(prefix="tidemind-ablation-")) as chat, \
            Memory.open(tempfile.mkdtemp(prefix="tidemind-ablation-")) as synthetic:
        real_owner, chat_owner = load(real, memories), load(chat, chat_memories)
        synthetic_owner = load(synthetic, synthetic_memories)
        print(f"held-out conversations {', '.join(HELD_OUT)}: {len(held)} questions, as turns and chat-shaped;"
              f" synthetic test half: {len(synthetic_test)} questions\n")
        print("| configuration | conversations R@10 | MRR | chat-shaped R@10 | MRR | synthetic R@10 | MRR"
              " | abstains (never stored) | answers (stored) |\n|---|---|---|---|---|---|---|---|---|")
        rows = [(name, changes, {"use_vectors": True, "use_lexical": True, **options})
                for name, changes, options in CONFIGS] + [("plain FTS5 BM25", {}, None)]
        for name, changes, options in rows:
            with configured(changes):
                c = run_arm(real, real_owner, held, options)["overall"]
                t = run_arm(chat, chat_owner, held, options)["overall"]
                s = run_arm(synthetic, synthetic_owner, synthetic_test, options)["overall"]
            print(f"| {name} | {c['recall@10']:.3f} | {c['mrr']:.3f} | {t['recall@10']:.3f} | {t['mrr']:.3f}"
                  f" | {s['recall@10']:.3f} | {s['mrr']:.3f}"
                  f" | {s['abstain_when_nothing_stored']:.2f} | {s['answer_when_stored']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
