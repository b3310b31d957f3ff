"""The retrieval evaluation runs the normal digest and recall paths and computes its metrics."""
import json
from pathlib import Path

import pytest

from tidemind.evaluate import evaluate

from .conftest import run_cli

HERE = Path(__file__).parent / "eval"


def test_eval_reports_metrics_per_arm_and_abstention(home):
    r = evaluate(str(HERE / "tiny-memories.jsonl"), str(HERE / "tiny-queries.jsonl"))
    assert set(r["arms"]) == {"hybrid", "fts", "vector", "bm25"}
    hybrid = r["arms"]["hybrid"]["overall"]
    assert hybrid["answerable"] == 4 and hybrid["queries"] == 6
    assert hybrid["hit@10"] >= 0.75 and 0 < hybrid["mrr"] <= 1
    assert hybrid["abstain_when_nothing_stored"] == 1.0          # including the other-scope question
    assert {"fact", "preference", "temporal", "never-stored"} == set(r["arms"]["hybrid"]["by_category"])
    assert r["arms"]["fts"]["overall"]["recall@1"] <= 1
    # the plain BM25 baseline never abstains, and still cannot see another scope
    assert r["arms"]["bm25"]["overall"]["abstain_when_nothing_stored"] == 0.0
    assert r["arms"]["bm25"]["by_category"]["never-stored"]["answer_when_stored"] is None


def _devset():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_devset", HERE / "make_devset.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
    mod = _devset()
    first, second = mod.build(), mod.build()
    assert first == second
    memories, queries = first
    ids = {m["id"] for m in memories}
    assert len(queries) >= 300 and all(set(q["evidence"]) <= ids for q in queries)
    assert {q["split"] for q in queries} == {"tune", "test"}
    assert {"paraphrase", "temporal", "corrected", "never-stored", "fact", "conversation"} <= {q["category"] for q in queries}
    for category in {q["category"] for q in queries}:       # both halves carry every category
        halves = {q["split"] for q in queries if q["category"] == category}
        assert halves == {"tune", "test"}, category
    sessions = [m["session"] for m in memories if m["session"]]
    assert max(sessions.count(s) for s in set(sessions)) >= 8     # long conversations, turn by turn
    assert len({m["valid_at"][:7] for m in memories}) >= 5        # spread over months


def test_held_back_half_beats_plain_bm25(tmp_path):
    """The claim in README "How good is it", kept honest: on the test half of the development
    set the hybrid's recall@10 is at least 10 points above plain FTS5 BM25, and it still answers
    at least 90% of the answerable questions."""
    memories, queries = _devset().build()
    test = [q for q in queries if q["split"] == "test"]
    for name, rows in (("memories", memories), ("queries", test)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = evaluate(str(tmp_path / "memories.jsonl"), str(tmp_path / "queries.jsonl"))
    hybrid, bm25 = r["arms"]["hybrid"]["overall"], r["arms"]["bm25"]["overall"]
    assert hybrid["recall@10"] >= bm25["recall@10"] + 0.10, (hybrid, bm25)
    assert hybrid["answer_when_stored"] >= 0.90 and hybrid["abstain_when_nothing_stored"] >= 0.6


def test_clarification_and_abstention_rates_on_the_devset(tmp_path):
    """Issue 9's bar, measured where it is claimed: under 5 questions per 100 captures, every
    labelled ambiguous capture asked, no look-alike asked; recall asks on the diverging queries
    and (almost) never otherwise; the report carries both rates and the abstention rate."""
    memories, queries = _devset().build()
    for name, rows in (("memories", memories), ("queries", queries)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = run_cli(tmp_path / "home", "--json", "eval", "retrieval", "--memories", str(tmp_path / "memories.jsonl"),
                   "--queries", str(tmp_path / "queries.jsonl"))
    assert proc.returncode == 0, proc.stderr.decode()
    r = json.loads(proc.stdout)
    c = r["clarification"]
    assert c["per_100_captures"] < 5 and c["questions"] == c["answered"] + c["skipped"]
    assert c["asked_of_labelled"] == c["labelled_ambiguous"] >= 5
    assert c["asked_of_near_misses"] == 0 and c["near_misses"] >= 5
    assert set(c["by_kind"]) == {"date", "referent", "acronym"}
    hybrid = r["arms"]["hybrid"]
    assert hybrid["overall"]["clarify_when_diverging"] == 1.0
    assert hybrid["overall"]["clarify_otherwise"] <= 0.02
    assert hybrid["by_category"]["clarified"]["recall@10"] == 1.0      # answered questions: findable
    assert hybrid["overall"]["abstain_when_nothing_stored"] is not None
    human = run_cli(tmp_path / "home", "eval", "retrieval", "--memories", str(tmp_path / "memories.jsonl"),
                    "--queries", str(tmp_path / "queries.jsonl"), "--split", "test").stdout.decode()
    assert "per 100" in human and "of diverging queries" in human and "never-stored" in human


CONVERSATIONS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "conversations-dev"


def _conversations():
    import pytest

    if not (CONVERSATIONS / "queries.jsonl").exists():
        pytest.skip(f"the development conversations are not at {CONVERSATIONS}")
    return str(CONVERSATIONS / "memories.jsonl"), str(CONVERSATIONS / "queries.jsonl")


def test_real_conversations_hold_their_lead():
    """The guard for issue 14, on real conversations nobody here wrote: on the two of the five
    of ../shared/eval/conversations-dev held out of fitting, the hybrid stays at least 10 points of
    recall@10 above plain BM25 and not below its own FTS arm; clarification at recall stays quiet."""
    from tests.eval.fit_recall import HELD_OUT

    r = evaluate(*_conversations(), scopes=HELD_OUT)
    assert r["queries"] >= 200
    hybrid, fts, bm25 = (r["arms"][a]["overall"] for a in ("hybrid", "fts", "bm25"))
    assert hybrid["recall@10"] >= bm25["recall@10"] + 0.10, (hybrid["recall@10"], bm25["recall@10"])
    assert hybrid["recall@10"] >= fts["recall@10"] and hybrid["mrr"] > bm25["mrr"]
    assert hybrid["clarify_otherwise"] <= 0.01


@pytest.mark.parametrize("variant", ["chat", "dates", "names", "listener"])
def test_recall_holds_on_variants_of_the_conversations(variant):
    """The robustness suite (issue 24), on the two conversations held out of fitting: a message
    per sentence, dates in other forms, speakers' names respelled. The hybrid stays 10 points of
    recall@10 above plain BM25 and answers at least 98% of the answerable questions (95% with the
    names respelled: "Gia" or "Gna" for a Gina of four letters is not guessed at, since "Dan" is no
    Dana and "Leo" no Leon, search/names.py; 97% with the listener named instead of the
    speaker: "What console does Nate own?" was "answered" with Nate's farewells through his name,
    "What console does Joanna's friend own?" abstains)."""
    from tests.eval.fit_recall import HELD_OUT

    r = evaluate(*_conversations(), scopes=HELD_OUT, variant=variant)
    assert r["variant"]["changed"] > 0
    hybrid, bm25 = r["arms"]["hybrid"]["overall"], r["arms"]["bm25"]["overall"]
    assert hybrid["recall@10"] >= bm25["recall@10"] + 0.10, (hybrid["recall@10"], bm25["recall@10"])
    assert hybrid["answer_when_stored"] >= {"names": 0.95, "listener": 0.97}.get(variant, 0.98), hybrid["answer_when_stored"]


def test_on_all_the_conversations_the_hybrid_is_never_below_its_fts_arm():
    """Overall and in every category of question, on all five development conversations (the
    README's figures), and at least 0.77 recall@10 overall."""
    r = evaluate(*_conversations())
    hybrid, fts = r["arms"]["hybrid"], r["arms"]["fts"]
    assert hybrid["overall"]["recall@10"] >= 0.77 and hybrid["overall"]["recall@10"] >= fts["overall"]["recall@10"]
    for category, figures in hybrid["by_category"].items():
        assert figures["recall@10"] >= fts["by_category"][category]["recall@10"], category
    assert hybrid["overall"]["clarify_otherwise"] <= 0.005


def test_linking_is_measured_against_what_belongs_together(tmp_path):
    """eval --links runs the offline linking passes and reports them: on the labelled topics set
    every confirmed link joins two memories of one topic."""
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": "staging Postgres port", "scope": "personal",
                                   "evidence": ["pg-1"], "category": "fact"}) + "\n")
    proc = run_cli(tmp_path / "home", "--json", "eval", "retrieval", "--memories", str(HERE / "linking-topics.jsonl"),
                   "--queries", str(queries), "--links")
    assert proc.returncode == 0, proc.stderr.decode()
    link = json.loads(proc.stdout)["linking"]
    assert link["topics"]["precision"] == 1.0 and link["topics"]["across_topics"] == 0
    assert link["topics"]["confirmed"] >= 6 and link["per_node_max"] <= 6


def test_links_join_the_evidence_of_multi_hop_questions_on_real_conversations():
    """Issue 15's bar on conversations-dev was 40% of the multi-hop evidence pairs joined within two
    confirmed links; issue 23 showed a linker meets it by linking nearly everything (88% of its
    links joined turns about different things), so the graph's bar is now its precision
    (test_the_graph_is_right_not_just_dense...). This keeps the evidence pairs reachable where the
    precise graph reaches them (0.28 at issue 23's defaults), at most eight links per memory."""
    from tidemind.evaluate import _jsonl, link_and_measure, load
    from tidemind.memory import Memory

    memories_path, queries_path = _conversations()
    memories, queries = _jsonl(memories_path), _jsonl(queries_path)
    import tempfile

    with Memory.open(tempfile.mkdtemp(prefix="tidemind-links-")) as m:
        owner = load(m, memories)
        link = link_and_measure(m, owner, memories, queries)
    assert link["evidence_pairs"]["pairs"] >= 500
    assert link["evidence_pairs"]["joined_within_2"] >= 0.25, link
    assert link["per_node_max"] <= 8


GRAPH_GUARD = ("conv-26", "conv-41")      # two of the three conversations the graph's bars were fitted on


def test_the_graph_is_right_not_just_dense_and_the_reference_evaluator_agrees(tmp_path):
    """Issue 23's guard: `tidemind eval graph` on two conversations of conversations-dev (built as a
    host would, the offline metabolism run to rest): confirmed links join one event at least 0.10
    more often than a BM25 neighbour graph of the same size, at most 5% of them touch a greeting,
    thanks or sign-off, no memory has more than six, and no merge or contradiction is filed on a
    content-free turn. On the kept store the reference evaluator (../shared/eval/graph_quality.py)
    gives the same figures."""
    import subprocess
    import sys

    import pytest

    memories, _ = _conversations()
    topics = CONVERSATIONS / "topics"
    reference = CONVERSATIONS.parent / "graph_quality.py"
    if not topics.exists() or not reference.exists():
        pytest.skip("the topic labels or the reference evaluator are not beside this checkout")
    keep = tmp_path / "graph"
    proc = run_cli(tmp_path / "home", "--json", "eval", "graph", "--memories", memories, "--topics", str(topics),
                   "--convs", ",".join(GRAPH_GUARD), "--keep", str(keep))
    assert proc.returncode == 0, proc.stderr.decode()
    r = json.loads(proc.stdout)
    links, bm25 = r["confirmed_links"], r["bm25_graph_same_size"]
    assert links["n"] >= 500
    assert links["strict"] >= bm25["strict"] + 0.10, (links, bm25)
    assert links["content_free_end"] <= 0.05, links
    assert links["per_turn"] <= 6
    for kind, items in r["pair_review_items"].items():
        assert items["n"] == 0 or items["content_free_end"] == 0.0, (kind, items)
    ref = subprocess.run([sys.executable, str(reference), str(keep / "tidemind.db"), str(keep / "turn-map.json"),
                          str(topics), memories], capture_output=True, text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr
    theirs = json.loads(ref.stdout)
    for key in ("confirmed_links", "pending_links", "bm25_graph_same_size", "tags", "crystals", "pair_review_items",
                "event_cohesion", "event_cohesion_cross_session", "labels"):
        mine = r[key]
        if isinstance(mine, dict) and "per_turn" in mine and "per_turn" not in theirs[key]:
            mine = {k: v for k, v in mine.items() if k != "per_turn"}
        assert mine == theirs[key], (key, mine, theirs[key])
