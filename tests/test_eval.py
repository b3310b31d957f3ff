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
