"""The retrieval evaluation runs the normal digest and recall paths and computes its metrics."""
import json
from pathlib import Path

from tidemind.evaluate import evaluate

from .conftest import run_cli

HERE = Path(__file__).parent / "eval"


def test_eval_reports_metrics_per_arm_and_abstention(home):
    r = evaluate(str(HERE / "tiny-memories.jsonl"), str(HERE / "tiny-queries.jsonl"))
    assert set(r["arms"]) == {"hybrid", "fts", "vector"}
    hybrid = r["arms"]["hybrid"]["overall"]
    assert hybrid["answerable"] == 4 and hybrid["queries"] == 6
    assert hybrid["hit@10"] >= 0.75 and 0 < hybrid["mrr"] <= 1
    assert hybrid["abstain_when_nothing_stored"] == 1.0          # including the other-scope question
    assert {"fact", "preference", "temporal", "never-stored"} == set(r["arms"]["hybrid"]["by_category"])
    assert r["arms"]["fts"]["overall"]["recall@1"] <= 1


def test_eval_cli_json_and_bad_input(home, tmp_path):
    proc = run_cli(home, "--json", "eval", "retrieval", "--memories", str(HERE / "tiny-memories.jsonl"),
                   "--queries", str(HERE / "tiny-queries.jsonl"))
    assert proc.returncode == 0, proc.stderr.decode()
    assert "hybrid" in json.loads(proc.stdout)["arms"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    proc = run_cli(home, "eval", "retrieval", "--memories", str(bad), "--queries", str(bad))
    assert proc.returncode == 1 and "not a JSON object" in proc.stderr.decode()


def test_devset_generator_is_reproducible_and_well_formed(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_devset", HERE / "make_devset.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    first, second = mod.build(), mod.build()
    assert first == second
    memories, queries = first
    ids = {m["id"] for m in memories}
    assert len(queries) >= 300 and all(set(q["evidence"]) <= ids for q in queries)
    assert {q["split"] for q in queries} == {"tune", "test"}
    assert {"paraphrase", "temporal", "corrected", "never-stored", "fact"} <= {q["category"] for q in queries}
