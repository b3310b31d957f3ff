"""Workstream fingerprints: deterministic vectors, decoding within ±0.05, exact membership
queries against the composition table, aliases that keep history, undoable decisions, and a
task that never touches authored content."""
from __future__ import annotations

import json
import random
import re as _re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemind.errors import InvalidInput, NotFound
from tidemind.metabolism.scheduler import run_due
from tidemind.store import immediate
from tidemind.store.connection import checkpoint
from tidemind.workstreams import Workstreams, hypervector, store
from tidemind.workstreams.hypervector import compose, decode, vector_for

from .conftest import JSONStub, cli_json, run_cli, serving

S = "project:a"


def test_vectors_are_deterministic_and_nearly_orthogonal():
    a, b = vector_for("recipe-site"), vector_for("recipe-site")
    assert a is b or np.array_equal(a, b)
    assert set(np.unique(a)) == {-1, 1} and a.shape == (4096,)
    assert not np.array_equal(vector_for("recipe-site", seed="other"), a)
    slugs = [f"w{i}" for i in range(40)]
    dots = [abs(int(vector_for(x).astype(int) @ vector_for(y).astype(int))) / 4096
            for i, x in enumerate(slugs) for y in slugs[i + 1:]]
    assert max(dots) < 0.08                           # ~1/sqrt(4096) = 0.016 typical


def test_decode_recovers_up_to_a_dozen_weights_within_005_and_flags_an_unknown():
    rng = random.Random(20261130)
    codebook = [f"stream-{i}" for i in range(60)]
    worst = 0.0
    for _ in range(150):
        chosen = rng.sample(codebook, rng.randint(1, 12))
        raw = [rng.uniform(0.2, 1.0) for _ in chosen]
        truth = {s: r / sum(raw) for s, r in zip(chosen, raw)}
        got = decode(compose(truth), codebook)
        worst = max(worst, max(abs(got.weights.get(s, 0.0) - truth.get(s, 0.0)) for s in set(truth) | set(got.weights)))
        assert got.residual_weight < 0.05                 # nothing unnamed in these days
    assert worst <= 0.05
    # an injected ingredient nobody named: the known ones still decode, the residual carries it
    mix = {"stream-1": 0.45, "stream-2": 0.3, "sourdough-lab": 0.25}
    got = decode(compose(mix), codebook)
    assert abs(got.weights["stream-1"] - 0.45) <= 0.05 and abs(got.weights["stream-2"] - 0.3) <= 0.05
    assert "sourdough-lab" not in got.weights and abs(got.residual_weight - 0.25) <= 0.05 and got.residual > 0.3


def _seed_days(mem, table: dict[str, dict[str, float]], scope=S):
    """Write a composition table directly (as the task would), fingerprints included."""
    with immediate(mem.conn):
        for day, parts in table.items():
            rows = [{"slug": s, "weight": w, "source": "tag", "evidence": [], "generator": "test"}
                    for s, w in parts.items()]
            store.replace_day(mem.conn, scope, day, rows, nodes=max(1, len(rows)), assigned=len(rows),
                              dim=hypervector.DEFAULT_DIM, seed=hypervector.DEFAULT_SEED, fingerprint=compose(parts),
                              at=mem.now())


NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "old-echo"]
DAYS = [f"2026-0{m}-{d:02d}" for m in (1, 2, 3) for d in (3, 9, 17, 25)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(DAYS), st.dictionaries(st.sampled_from(NAMES), st.floats(0.05, 1.0),
                                                              min_size=1, max_size=4), max_size=12),
       st.sets(st.sampled_from(NAMES[:5]), max_size=5), st.booleans())
def test_where_first_window_diff_gaps_are_exact(mem, table, minted, aliased):
    ws = Workstreams(mem)
    with immediate(mem.conn):
        mem.conn.execute("DELETE FROM ws_compositions")
        mem.conn.execute("DELETE FROM ws_days")
        mem.conn.execute("DELETE FROM ws_slugs")
        mem.conn.execute("DELETE FROM ws_aliases")
    _seed_days(mem, table)
    for slug in minted:
        with immediate(mem.conn):
            store.put_slug(mem.conn, S, slug, dim=4096, seed=hypervector.DEFAULT_SEED, at=mem.now(), by="test",
                           has_note=slug in ("alpha", "bravo"), note="person" if slug in ("alpha", "bravo") else None)
    if aliased and "echo" in minted:
        with immediate(mem.conn):
            store.put_alias(mem.conn, S, "old-echo", "echo", mem.now(), "test")
    resolve = (lambda n: "echo" if n == "old-echo" and aliased and "echo" in minted else n)
    for name in NAMES:
        want: dict[str, float] = {}
        for d, parts in table.items():
            for n, w in parts.items():
                if resolve(n) == resolve(name):
                    want[d] = want.get(d, 0.0) + w
        got = ws.where(name, scope=S)
        assert [(x["day"], pytest.approx(x["weight"], abs=1e-5)) for x in got["days"]] == sorted(want.items())
        first = ws.first(name, scope=S)
        assert first["first"] == (min(want) if want else None)
    a = {resolve(n) for d, parts in table.items() if d <= "2026-01-31" for n in parts}
    b = {resolve(n) for d, parts in table.items() if d >= "2026-03-01" for n in parts}
    diff = ws.diff("2026-01-01", "2026-01-31", "2026-03-01", "2026-03-31", scope=S)
    assert diff["only_in_a"] == sorted(a - b) and diff["only_in_b"] == sorted(b - a) and diff["in_both"] == sorted(a & b)
    jan = {w["slug"]: w for w in ws.window("2026-01-01", "2026-01-31", scope=S)["workstreams"]}
    for slug in a:
        days = {d for d, parts in table.items() if d <= "2026-01-31" for n in parts if resolve(n) == slug}
        mass = sum(w for d, parts in table.items() if d <= "2026-01-31" for n, w in parts.items() if resolve(n) == slug)
        assert jan[slug]["days"] == len(days) and jan[slug]["mass"] == pytest.approx(mass, abs=1e-3)
    gaps = {g["slug"]: g for g in ws.gaps(scope=S)["gaps"]}
    worked = {resolve(n) for parts in table.values() for n in parts}
    noted = {"alpha", "bravo"} & minted
    assert set(gaps) == worked - noted
    for slug, g in gaps.items():
        assert g["in_codebook"] == (slug in minted)


def _day_of_work(mem):
    ids = {}
    ids["pump"] = mem.digest("fixed the aquarium pump driver timing", scope=S, valid_at="2026-01-05")["node_ids"][0]
    ids["site"] = mem.digest("deployed the recipe site", scope=S, valid_at="2026-01-05")["node_ids"][0]
    ids["heater"] = mem.digest("tuned the aquarium heater loop", scope=S, valid_at="2026-01-06")["node_ids"][0]
    ids["old"] = mem.digest("sketched the cookbook pages", scope=S, valid_at="2026-01-02")["node_ids"][0]
    mem.tag_add(ids["pump"], "aquarium")
    mem.tag_add(ids["site"], "recipe-site")
    mem.tag_add(ids["heater"], "aquarium")
    mem.tag_add(ids["old"], "cookbook")
    return ids


def test_task_composes_days_from_confirmed_tags_and_follows_changes(mem):
    ids = _day_of_work(mem)
    ws = Workstreams(mem)
    ws.mint("aquarium", scope=S)
    ws.mint("recipe-site", scope=S)
    before = dict(mem.conn.execute("SELECT id, content_hash FROM nodes"))
    run_due(mem, only=["fingerprint"], force=True)
    d = ws.decode("2026-01-05", scope=S)
    assert {x["slug"]: x["recorded"] for x in d["decoded"]} == {"aquarium": 0.5, "recipe-site": 0.5}
    assert all(abs(x["estimated"] - x["recorded"]) <= 0.05 for x in d["decoded"]) and d["unexplained_weight"] < 0.05
    assert ws.where("aquarium", scope=S)["days"][0]["day"] == "2026-01-05"
    # an archive is a mutation: the next run recomposes that day without the archived memory
    mem.archive(ids["site"])
    run_due(mem, only=["fingerprint"], force=True)
    assert [x["slug"] for x in ws.decode("2026-01-05", scope=S)["decoded"]] == ["aquarium"]
    # a proposed tag does not count, nor does a rejected one
    mem.tag_decide(ids["heater"], "aquarium", reject=True)
    run_due(mem, only=["fingerprint"], force=True)
    assert [x["day"] for x in ws.where("aquarium", scope=S)["days"]] == ["2026-01-05"]
    assert dict(mem.conn.execute("SELECT id, content_hash FROM nodes")) == before      # authored text untouched


def test_rename_by_alias_keeps_history_and_every_decision_undoes(mem):
    _day_of_work(mem)
    ws = Workstreams(mem)
    ws.mint("cookbook", scope=S)
    ws.mint("recipe-site", scope=S)
    # the project was called "cookbook" before it became "recipe-site": fold the old slug in
    with pytest.raises(InvalidInput, match="minted slug"):
        ws.alias("cookbook", "recipe-site", scope=S)
    ws.mint("cookbook", scope=S, undo=True)
    ws.alias("cookbook", "recipe-site", scope=S)
    first = ws.first("recipe-site", scope=S)
    assert (first["first"], first["as"]) == ("2026-01-02", "cookbook")
    assert [d["day"] for d in ws.where("recipe-site", scope=S)["days"]] == ["2026-01-02", "2026-01-05"]
    ws.alias("cookbook", "recipe-site", scope=S, undo=True)           # split again
    assert [d["day"] for d in ws.where("recipe-site", scope=S)["days"]] == ["2026-01-05"]
    ws.mint("cookbook", scope=S)                                     # and minted again: its history is back
    assert [d["day"] for d in ws.where("cookbook", scope=S)["days"]] == ["2026-01-02"]
    actions = [r[0] for r in mem.conn.execute("SELECT action FROM audit_log WHERE action LIKE 'ws_%' ORDER BY id")]
    assert actions == ["ws_mint", "ws_mint", "ws_unmint", "ws_alias", "ws_unalias", "ws_mint"]
    with pytest.raises(NotFound):
        ws.mint("never-minted", scope=S, undo=True)
    with pytest.raises(InvalidInput):
        ws.mint("Not A Slug", scope=S)


def test_taste_cli(home, cli):
    cli("digest", "fixed the aquarium pump driver timing", "--scope", S, "--valid-at", "2026-01-05")
    cli("tags", "reject", "1", "noise")
    from tidemind.memory import Memory
    with Memory.open(home) as m:
        m.tag_add(1, "aquarium")
    assert cli("taste", "mint", "aquarium", "--scope", S)["days_recomposed"] == 1
    where = cli("taste", "where", "aquarium", "--scope", S)
    assert [d["day"] for d in where["days"]] == ["2026-01-05"]
    decoded = cli("taste", "decode", "2026-01-05", "--scope", S)
    assert decoded["decoded"][0]["slug"] == "aquarium" and decoded["decoded"][0]["recorded"] == 1.0
    gaps = cli_json(home, "taste", "gaps", "--scope", S)["gaps"]
    assert [g["slug"] for g in gaps] == ["aquarium"]


# -- the model path and the unknown-workstream loop --------------------------------------------

class ComposeStub(JSONStub):
    """Ollama's /api/chat, answering the compose strategy the way a model might: by keywords,
    plus an id it was not shown and a name that is not a slug (both must be ignored)."""
    calls: list = []

    def reply(self, path, body):
        prompt = body["messages"][-1]["content"]
        ComposeStub.calls.append(prompt)
        assign = []
        for node_id, text in _re.findall(r"^\[(\d+)\] (.*)$", prompt, flags=_re.M):
            for word, slug in (("sourdough", "sourdough-lab"), ("starter", "sourdough-lab"), ("aquarium", "aquarium"),
                               ("recipe", "recipe-site")):
                if word in text.lower():
                    assign.append(f"{node_id}={slug}")
                    break
        assign += ["99999=recipe-site", "1=Not A Slug!"]
        return {"model": body["model"], "message": {"role": "assistant", "content": json.dumps({"assign": assign})},
                "done": True, "prompt_eval_count": 5, "eval_count": 5}


@pytest.fixture
def compose_llm():
    from tidemind.llm.providers import OllamaLLM

    ComposeStub.calls = []
    with serving(ComposeStub) as url:
        yield OllamaLLM(url, "stub-model")


def _fortnight(mem):
    """Two weeks: aquarium and recipe-site are known; a sourdough effort starts on day 3, unnamed."""
    ids = []
    for day in range(1, 15):
        date = f"2026-01-{day:02d}"
        ids.append(mem.digest(f"aquarium pump tuning, day {day}", scope=S, valid_at=date)["node_ids"][0])
        if day % 2:
            ids.append(mem.digest(f"recipe site release notes for day {day}", scope=S, valid_at=date)["node_ids"][0])
        if day >= 3:
            ids.append(mem.digest(f"fed the sourdough starter and logged the rise, day {day}", scope=S,
                                  valid_at=date)["node_ids"][0])
    return ids


def test_model_places_unplaced_memories_and_invents_unknowns(mem, compose_llm):
    ids = _fortnight(mem)
    ws = Workstreams(mem)
    ws.mint("aquarium", scope=S)
    ws.mint("recipe-site", scope=S)
    before = dict(mem.conn.execute("SELECT id, content FROM nodes"))
    report = run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)[0]
    assert report["status"] == "ok" and report["model_assignments"] == len(ids)
    d = ws.decode("2026-01-03", scope=S)
    assert {x["slug"]: x["recorded"] for x in d["decoded"]} == {"aquarium": pytest.approx(1 / 3, abs=1e-3),
                                                               "recipe-site": pytest.approx(1 / 3, abs=1e-3)}
    assert d["recorded_only"] == ["sourdough-lab"] and d["unexplained_weight"] == pytest.approx(1 / 3, abs=0.05)
    assert not mem.conn.execute("SELECT count(*) FROM ws_assignments WHERE node_id=99999").fetchone()[0]
    u = ws.unknowns(scope=S)
    assert [x["name"] for x in u["decide"]] == ["sourdough-lab"] and u["decide"][0]["recommendation"] == "mint"
    assert dict(mem.conn.execute("SELECT id, content FROM nodes")) == before       # authored text untouched
    # recomposing (a mint elsewhere) keeps the model's answers without asking again
    calls = len(ComposeStub.calls)
    ws.mint("garden", scope=S)
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)
    assert len(ComposeStub.calls) == calls and ws.where("sourdough-lab", scope=S)["days"]


def _composed_fortnight(mem, llm) -> Workstreams:
    """The fortnight with aquarium and recipe-site minted, composed once with the model."""
    _fortnight(mem)
    ws = Workstreams(mem)
    ws.mint("aquarium", scope=S)
    ws.mint("recipe-site", scope=S)
    run_due(mem, only=["fingerprint"], force=True, llm=llm)
    return ws


def test_unknown_loop_every_decision_undoes(mem, compose_llm):
    ws = _composed_fortnight(mem, compose_llm)
    ws.decide("sourdough-lab", "dismissed", scope=S, note="hobby")
    assert [x["name"] for x in ws.unknowns(scope=S)["dismissed"]] == ["sourdough-lab"]
    ws.decide("sourdough-lab", "dismissed", scope=S, undo=True)
    assert [x["name"] for x in ws.unknowns(scope=S)["decide"]] == ["sourdough-lab"]
    ws.decide("sourdough-lab", "watching", scope=S)
    assert [x["name"] for x in ws.unknowns(scope=S)["watching"]] == ["sourdough-lab"]
    ws.decide("sourdough-lab", "watching", scope=S, undo=True)
    ws.mint("sourdough-lab", scope=S)                       # minted: no longer unknown, history kept
    assert ws.unknowns(scope=S)["decide"] == [] and len(ws.where("sourdough-lab", scope=S)["days"]) == 12
    bt = ws.backtest("sourdough-lab", scope=S)
    assert bt["first"] == "2026-01-03" and bt["flagged"] == "2026-01-05"       # ripe after RIPE_DAYS days
    ws.mint("sourdough-lab", scope=S, undo=True)            # and back to unknown
    assert [x["name"] for x in ws.unknowns(scope=S)["decide"]] == ["sourdough-lab"]
    ws.alias("sourdough-lab", "recipe-site", scope=S)       # or folded into a project
    assert ws.unknowns(scope=S)["decide"] == []
    assert {d["day"] for d in ws.where("recipe-site", scope=S)["days"]} >= {"2026-01-04", "2026-01-06"}
    ws.alias("sourdough-lab", "recipe-site", scope=S, undo=True)
    assert [x["name"] for x in ws.unknowns(scope=S)["decide"]] == ["sourdough-lab"]
    actions = [r[0] for r in mem.conn.execute("SELECT action FROM audit_log WHERE action LIKE 'ws_%' ORDER BY id")]
    assert actions[2:] == ["ws_dismiss", "ws_undismiss", "ws_watch", "ws_unwatch", "ws_mint", "ws_unmint",
                           "ws_alias", "ws_unalias"]


def test_a_dismissed_unknown_revives_when_it_grows(mem, compose_llm):
    for day in range(3, 6):
        mem.digest(f"fed the sourdough starter, day {day}", scope=S, valid_at=f"2026-01-{day:02d}")
    ws = Workstreams(mem)
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)
    ws.decide("sourdough-lab", "dismissed", scope=S)
    for day in range(6, 10):
        mem.digest(f"sourdough starter rise logged, day {day}", scope=S, valid_at=f"2026-01-{day:02d}")
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)
    revived = ws.unknowns(scope=S)["decide"]
    assert [(x["name"], x["status"], x["recommendation"]) for x in revived] == [("sourdough-lab", "revived", "watch")]


def test_an_unknown_with_a_project_note_is_filed_without_asking(mem, compose_llm, tmp_path):
    from tidemind.importers.engine import sync

    vault = tmp_path / "vault"
    (vault / "Projects" / "sourdough-lab").mkdir(parents=True)
    (vault / "Projects" / "sourdough-lab" / "plan.md").write_text("Plan for the starter and the oven.\n")
    sync(mem, "obsidian", vault, S)
    for day in (3, 4):
        mem.digest(f"fed the sourdough starter, day {day}", scope=S, valid_at=f"2026-01-{day:02d}")
    report = run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)[0]
    assert report["autofiled"] == ["sourdough-lab"]
    book = {s["slug"]: s for s in Workstreams(mem).codebook(scope=S)["slugs"]}
    assert book["sourdough-lab"]["has_note"] and book["sourdough-lab"]["note"].startswith("import:")
    assert mem.conn.execute("SELECT actor FROM audit_log WHERE action='ws_mint'").fetchone()[0].startswith("daemon")


def test_forget_takes_the_models_name_for_a_memory_away(mem, compose_llm):
    nid = mem.digest("fed the sourdough starter", scope=S, valid_at="2026-01-03")["node_ids"][0]
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)
    assert Workstreams(mem).where("sourdough-lab", scope=S)["days"]
    mem.forget(nid)
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)
    assert mem.conn.execute("SELECT count(*) FROM ws_assignments").fetchone()[0] == 0
    assert Workstreams(mem).where("sourdough-lab", scope=S)["days"] == []


def test_taste_through_the_mcp_server_over_stdio(home):
    import asyncio

    from tidemind.memory import Memory

    from .test_mcp import call, session_for

    with Memory.open(home) as m:
        _day_of_work(m)
        m.digest("other project work", scope="project:b", valid_at="2026-01-05")
        Workstreams(m).mint("aquarium", scope=S)
        run_due(m, only=["fingerprint"], force=True)

    async def main():
        async with session_for(home, S) as s:
            return {q: await call(s, "brain_recall", query=q, mode="taste")
                    for q in ("where aquarium", "gaps", "decode 2026-01-05", "first aquarium", "bogus x")} | {
                "other scope": await call(s, "brain_recall", query="gaps", mode="taste", scope="project:b")}

    out = asyncio.run(main())
    assert [d["day"] for d in out["where aquarium"]["days"]] == ["2026-01-05", "2026-01-06"]
    assert out["first aquarium"]["first"] == "2026-01-05"
    assert [g["slug"] for g in out["gaps"]["gaps"]] == ["aquarium"]
    assert out["decode 2026-01-05"]["decoded"][0]["slug"] == "aquarium"
    assert "error" in out["bogus x"] and "taste query is one of" in out["bogus x"]["error"]
    assert "error" in out["other scope"]                    # the server's scope is not widened


def test_ripe_unknowns_reach_the_review_queue_and_decisions_there_undo(mem, compose_llm):
    ws = _composed_fortnight(mem, compose_llm)
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)          # filed once, not twice
    items = [dict(zip(("id", "payload"), r)) for r in mem.conn.execute(
        "SELECT id, payload FROM review_items WHERE kind='workstream'")]
    assert len(items) == 1 and '"sourdough-lab"' in items[0]["payload"] and '"mint"' in items[0]["payload"]
    item = items[0]["id"]
    mem.review_decide(item, "approved")                       # the recommendation: mint
    assert "sourdough-lab" in {s["slug"] for s in ws.codebook(scope=S)["slugs"]}
    mem.review_decide(item, "open")                           # reopen: undone
    assert "sourdough-lab" not in {s["slug"] for s in ws.codebook(scope=S)["slugs"]}
    mem.review_decide(item, "rejected")                       # reject: dismissed, not deleted
    assert [u["name"] for u in ws.unknowns(scope=S)["dismissed"]] == ["sourdough-lab"]
    mem.review_decide(item, "approved")                       # changing the verdict undoes the dismissal first
    assert ws.unknowns(scope=S)["dismissed"] == [] and "sourdough-lab" in {
        s["slug"] for s in ws.codebook(scope=S)["slugs"]}


def test_drift_sees_the_work_around_a_workstream_change(mem):
    table = {"2026-01-05": {"site": 0.5, "photos": 0.5}, "2026-01-06": {"site": 0.5, "photos": 0.5},
             "2026-01-12": {"site": 0.5, "photos": 0.5},                        # same company: no drift
             "2026-01-19": {"site": 0.5, "billing": 0.5}, "2026-01-20": {"site": 0.4, "billing": 0.6}}   # moved
    _seed_days(mem, table)
    weeks = Workstreams(mem).drift("site", scope=S)["weeks"]
    assert [w["week"] for w in weeks] == ["2026-W02", "2026-W03", "2026-W04"]
    assert weeks[0]["shift"] is None and weeks[1]["shift"] < 0.05 and weeks[2]["shift"] > 0.8
    assert weeks[2]["company"] == ["billing"] and weeks[0]["days"] == 2


def test_project_notes_mark_minted_workstreams_and_thresholds_are_configurable(home, tmp_path):
    import json as _json

    from tidemind.importers.engine import sync
    from tidemind.memory import Memory

    home.mkdir(parents=True)
    (home / "config.json").write_text(_json.dumps({"workstreams": {"ripe_days": 10}}))
    vault = tmp_path / "vault"
    (vault / "Projects" / "garden-sensors").mkdir(parents=True)
    (vault / "Projects" / "garden-sensors" / "readme.md").write_text("Sensors in the beds.\n")
    with Memory.open(home) as m:
        sync(m, "obsidian", vault, S)
        ws = Workstreams(m)
        assert ws.ripe_days == 10 and ws.ripe_mass == 1.5
        ws.mint("garden-sensors", scope=S)
        ws.mint("recipe-site", scope=S, aliases=("cookbook",))
        note = m.digest("the cookbook project note lives in the wiki", scope=S)["node_ids"][0]
        m.tag_add(note, "cookbook")
        m.tag_add(note, "project-note")
        assert sorted(ws.autofile(scope=S)["marked"]) == ["garden-sensors", "recipe-site"]
        book = {s["slug"]: s for s in ws.codebook(scope=S)["slugs"]}
        assert book["garden-sensors"]["note"].startswith("import:") and book["recipe-site"]["note"] == f"tag:node {note}"
    (home / "config.json").write_text(_json.dumps({"workstreams": {"ripe_days": "soon"}}))
    with pytest.raises(InvalidInput, match="ripe_days"):         # refused when the settings are read
        Memory.open(home)
    (home / "config.json").write_text(_json.dumps({"workstreams": {"ripe_days": -1}}))
    with Memory.open(home) as m:
        with pytest.raises(InvalidInput, match="ripe_days"):
            Workstreams(m)


# -- found by review ---------------------------------------------------------------------------

def test_alias_chains_resolve_and_an_alias_is_never_silently_repointed(mem):
    _day_of_work(mem)
    ws = Workstreams(mem)
    ws.mint("aquarium", scope=S, aliases=("fishtank",))
    ws.mint("aquarium-controller", scope=S)
    ws.mint("aquarium", scope=S, undo=True)                     # renamed a second time:
    ws.alias("aquarium", "aquarium-controller", scope=S)        # fishtank -> aquarium -> aquarium-controller
    assert set(ws.where("fishtank", scope=S)["names"]) == {"aquarium", "aquarium-controller", "fishtank"}
    assert [d["day"] for d in ws.where("aquarium-controller", scope=S)["days"]] == ["2026-01-05", "2026-01-06"]
    with pytest.raises(InvalidInput, match="already an alias"):
        ws.alias("fishtank", "aquarium-controller", scope=S)
    with pytest.raises(InvalidInput, match="already a name"):
        ws.mint("garden", scope=S, aliases=("aquarium-controller",))


class FailingLLM:
    name = "failing"

    def complete(self, system, prompt, max_tokens):
        raise ConnectionError("model unreachable")


def test_a_failed_model_call_keeps_the_days_pending_and_omitted_memories_are_not_asked_again(mem, compose_llm):
    mem.digest("fed the sourdough starter", scope=S, valid_at="2026-01-03")
    chatter = mem.digest("lunch was nice", scope=S, valid_at="2026-01-03")["node_ids"][0]
    report = run_due(mem, only=["fingerprint"], force=True, llm=FailingLLM())[0]
    assert report["model_failed"] and report["pending"] == 1
    report = run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)[0]     # the same day again
    assert report["days"] == 1 and report["model_assignments"] == 1 and "model_failed" not in report
    assert mem.conn.execute("SELECT slug FROM ws_assignments WHERE node_id=?", (chatter,)).fetchone()[0] == ""
    calls = len(ComposeStub.calls)
    Workstreams(mem).recompose(scope=S)
    mem.digest("another note the same day", scope=S, valid_at="2026-01-03")
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)
    assert len(ComposeStub.calls) == calls + 1 and "lunch was nice" not in ComposeStub.calls[-1]


def test_a_moved_note_moves_its_day_to_the_other_workstream(mem, tmp_path):
    from tidemind.importers.engine import sync

    vault = tmp_path / "vault"
    (vault / "recipe-site").mkdir(parents=True)
    (vault / "garden-sensors").mkdir()
    note = vault / "recipe-site" / "deploy.md"
    note.write_text("Deployed with the new photo pipeline.\n")
    sync(mem, "obsidian", vault, S)
    ws = Workstreams(mem)
    ws.mint("recipe-site", scope=S)
    ws.mint("garden-sensors", scope=S)
    run_due(mem, only=["fingerprint"], force=True)
    assert ws.where("recipe-site", scope=S)["days"] and not ws.where("garden-sensors", scope=S)["days"]
    note.rename(vault / "garden-sensors" / "deploy.md")
    sync(mem, "obsidian", vault, S)
    run_due(mem, only=["fingerprint"], force=True)
    assert not ws.where("recipe-site", scope=S)["days"] and ws.where("garden-sensors", scope=S)["days"]


def test_undoing_a_decision_restores_the_one_before_and_stale_items_never_undo_a_persons_act(mem, compose_llm):
    for day in range(3, 6):
        mem.digest(f"fed the sourdough starter, day {day}", scope=S, valid_at=f"2026-01-{day:02d}")
    ws = Workstreams(mem)
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)
    ws.decide("sourdough-lab", "dismissed", scope=S)
    ws.decide("sourdough-lab", "watching", scope=S)
    ws.decide("sourdough-lab", "watching", scope=S, undo=True)
    assert [u["name"] for u in ws.unknowns(scope=S)["dismissed"]] == ["sourdough-lab"]      # back to dismissed
    ws.decide("sourdough-lab", "dismissed", scope=S, undo=True)
    ws.file_ripe(S)
    item = mem.conn.execute("SELECT id FROM review_items WHERE kind='workstream'").fetchone()[0]
    ws.mint("sourdough-lab", scope=S)                          # the person decides elsewhere first
    mem.review_decide(item, "rejected")                        # no error; nothing to dismiss any more
    mem.review_decide(item, "approved")                        # nothing to do: already minted
    mem.review_decide(item, "open")                            # and reopening must not unmint the person's mint
    assert "sourdough-lab" in {s["slug"] for s in ws.codebook(scope=S)["slugs"]}


def test_forget_takes_an_unknowns_trail_and_a_forgotten_note_is_no_project_note(mem, compose_llm, tmp_path):
    from tidemind.importers.engine import sync

    ids = [mem.digest(f"fed the sourdough starter, day {day}", scope=S, valid_at=f"2026-01-{day:02d}")["node_ids"][0]
           for day in range(3, 6)]
    ws = Workstreams(mem)
    run_due(mem, only=["fingerprint"], force=True, llm=compose_llm)
    ws.decide("sourdough-lab", "dismissed", scope=S)
    ws.decide("sourdough-lab", "dismissed", scope=S, undo=True)
    ws.file_ripe(S)
    for node_id in ids:
        mem.forget(node_id)
    checkpoint(mem.conn)
    for table, column in (("ws_compositions", "slug"), ("ws_decisions", "name"), ("review_items", "payload"),
                          ("audit_log", "details")):
        assert not mem.conn.execute(f"SELECT count(*) FROM {table} WHERE {column} LIKE '%sourdough%'").fetchone()[0], table
    vault = tmp_path / "vault"
    (vault / "secret-plan").mkdir(parents=True)
    (vault / "secret-plan" / "plan.md").write_text("The plan nobody should see.\n")
    sync(mem, "obsidian", vault, S)
    ws.mint("secret-plan", scope=S)
    planned = mem.conn.execute("SELECT node_id FROM import_units").fetchone()[0]
    mem.forget(planned)
    assert ws.autofile(scope=S)["marked"] == []


def test_a_thin_old_one_off_is_advised_dismiss(mem):
    _seed_days(mem, {"2026-01-05": {"site": 0.9, "kite-repair": 0.1}, "2026-01-20": {"site": 0.8, "kite-repair": 0.2}})
    Workstreams(mem).mint("site", scope=S)
    u = Workstreams(mem).unknowns(scope=S)["decide"]
    assert [(x["name"], x["recommendation"]) for x in u] == [("kite-repair", "dismiss")]


# -- offline: recurring tags and note folders ripen into unknowns; unplaced weight is reported -------

def _tagged_days(mem, name, days, scope=S):
    """Each day: a memory with a person's own `name` tag and an untagged one; on even days one on
    aquarium too (a workstream it would be folded into if they always came together)."""
    ids = {}
    for day in days:
        date = f"2026-02-{day:02d}"
        ids[date] = mem.digest(f"kite repair: restitched the leading edge, session {day}", scope=scope,
                               valid_at=date)["node_ids"][0]
        mem.tag_add(ids[date], name)
        if day % 2 == 0:
            mem.tag_add(mem.digest(f"aquarium pump check {day}", scope=scope, valid_at=date)["node_ids"][0],
                        "aquarium")
        mem.digest(f"lunch with Sam, day {day}", scope=scope, valid_at=date)
    return ids


def test_a_persons_tag_on_six_days_outside_the_codebook_ripens_without_a_model(mem, home):
    ws = Workstreams(mem)
    ws.mint("aquarium", scope=S)
    _tagged_days(mem, "kite-repair", range(2, 8))
    once = mem.digest("bought a birthday cake", scope=S, valid_at="2026-02-03")["node_ids"][0]
    mem.tag_add(once, "birthday")                            # a label on one day is not a workstream
    before = dict(mem.conn.execute("SELECT id, content_hash FROM nodes"))
    report = run_due(mem, only=["fingerprint"], force=True)[0]
    assert report["status"] == "ok" and report["autofiled"] == []
    u = ws.unknowns(scope=S)
    [kite] = u["decide"]
    assert (kite["name"], kite["days"], kite["ripe"]) == ("kite-repair", 6, True) and kite["recommendation"] == "mint"
    assert "birthday" not in {x["name"] for group in u.values() if isinstance(group, list) for x in group}
    assert {d["day"] for d in ws.where("kite-repair", scope=S)["days"]} == {f"2026-02-{d:02d}" for d in range(2, 8)}
    assert all(d["source"] == ["tag"] for d in ws.where("kite-repair", scope=S)["days"])
    item = mem.conn.execute("SELECT id, payload FROM review_items WHERE kind='workstream'").fetchone()
    assert '"kite-repair"' in item[1]                        # it reaches the review queue...
    mem.review_decide(item[0], "approved")                    # ...where approving mints it
    assert "kite-repair" in {s["slug"] for s in ws.codebook(scope=S)["slugs"]}
    mem.review_decide(item[0], "open")                        # and reopening takes the mint back
    assert "kite-repair" not in {s["slug"] for s in ws.codebook(scope=S)["slugs"]}
    listed = cli_json(home, "taste", "unknowns", "--scope", S)
    assert [x["name"] for x in listed["decide"]] == ["kite-repair"]
    assert dict(mem.conn.execute("SELECT id, content_hash FROM nodes")) == before      # authored text untouched


def test_a_name_recurs_from_its_second_day_and_stops_when_a_person_takes_it_back(mem):
    ids = _tagged_days(mem, "kite-repair", [2])
    run_due(mem, only=["fingerprint"], force=True)
    assert Workstreams(mem).where("kite-repair", scope=S)["days"] == []      # one day: a label
    ids.update(_tagged_days(mem, "kite-repair", [9]))
    run_due(mem, only=["fingerprint"], force=True)
    days = [d["day"] for d in Workstreams(mem).where("kite-repair", scope=S)["days"]]
    assert days == ["2026-02-02", "2026-02-09"]              # the first day, untouched since, records it too
    mem.tag_decide(ids["2026-02-09"], "kite-repair", reject=True)
    run_due(mem, only=["fingerprint"], force=True)
    assert Workstreams(mem).where("kite-repair", scope=S)["days"] == []


def test_a_note_folder_on_several_days_ripens_but_is_not_minted_for_being_a_folder(mem, tmp_path):
    from tidemind.importers.engine import sync

    vault = tmp_path / "vault"
    (vault / "Projects" / "kite-repair").mkdir(parents=True)
    for day in (2, 4, 6):
        (vault / "Projects" / "kite-repair" / f"session-{day}.md").write_text(
            f"---\ndate: 2026-02-{day:02d}\n---\nRestitched panel {day} of the kite.\n", encoding="utf-8")
    sync(mem, "obsidian", vault, S)
    report = run_due(mem, only=["fingerprint"], force=True)[0]
    assert report["autofiled"] == []                          # a folder's name is the question, not the answer
    [kite] = Workstreams(mem).unknowns(scope=S)["decide"]
    assert kite["name"] == "kite-repair" and kite["days"] == 3
    assert all(d["source"] == ["folder"] for d in Workstreams(mem).where("kite-repair", scope=S)["days"])
    (vault / "Projects" / "kite-repair" / "kite-repair.md").write_text(
        "---\ndate: 2026-02-07\n---\nThe kite repair project: plan and parts.\n", encoding="utf-8")
    sync(mem, "obsidian", vault, S)                           # a note of its own name: a project note
    assert run_due(mem, only=["fingerprint"], force=True)[0]["autofiled"] == ["kite-repair"]


def test_a_folder_of_daily_notes_is_a_journal_not_a_workstream(mem, tmp_path):
    """Obsidian's daily notes (Daily/2026-02-02.md) and Logseq's journals (journals/2026_02_04.md) sit
    in one folder every day: a journal, not a piece of work, while a project folder beside them ripens."""
    from tidemind.importers.engine import sync

    vault = tmp_path / "vault"
    for folder in ("Daily", "journals", "Diary", "kite-repair", "shed-build"):
        (vault / folder).mkdir(parents=True)
    for day in (2, 4, 6):
        dated = f"---\ndate: 2026-02-{day:02d}\n---\n"
        (vault / "Daily" / f"2026-02-{day:02d}.md").write_text(f"{dated}Restitched panel {day} of the kite.\n")
        (vault / "journals" / f"2026_02_{day:02d}.md").write_text(f"{dated}Aquarium water change {day}.\n")
        (vault / "Diary" / f"Feb {day}th, 2026.md").write_text(f"{dated}Lunch with Sam, day {day}.\n")
        (vault / "kite-repair" / f"session-{day}.md").write_text(
            f"---\ndate: 2026-02-{day:02d}\n---\nBought ripstop for panel {day}.\n", encoding="utf-8")
        # notes named by their day *and* their subject are about something: their folder is work
        (vault / "shed-build" / f"2026-02-{day:02d} roof panels.md").write_text(
            f"{dated}Fitted roof panel {day} on the shed.\n", encoding="utf-8")
    sync(mem, "obsidian", vault, S)
    run_due(mem, only=["fingerprint"], force=True)
    unknowns = Workstreams(mem).unknowns(scope=S)
    names = {x["name"] for group in unknowns.values() if isinstance(group, list) for x in group}
    assert {"kite-repair", "shed-build"} <= names
    assert not names & {"daily", "journals", "diary"}


def test_decode_reports_what_no_workstream_places_instead_of_stretching_the_rest(mem, home):
    ws = Workstreams(mem)
    ws.mint("aquarium", scope=S)
    tagged = mem.digest("aquarium pump check", scope=S, valid_at="2026-02-10")["node_ids"][0]
    mem.tag_add(tagged, "aquarium")
    for text in ("lunch with Sam", "read a chapter", "called the bank"):
        mem.digest(text, scope=S, valid_at="2026-02-10")
    run_due(mem, only=["fingerprint"], force=True)
    d = ws.decode("2026-02-10", scope=S)
    [aquarium] = d["decoded"]
    assert aquarium["slug"] == "aquarium" and aquarium["recorded"] == 0.25       # a quarter of the day, not all of it
    assert abs(aquarium["estimated"] - 0.25) <= 0.05 and d["unplaced"] == 0.75
    assert abs(d["unexplained_weight"] - 0.75) <= 0.05 and d["unnamed_weight"] < 0.05
    proc = run_cli(home, "taste", "decode", "2026-02-10", "--scope", S)
    assert proc.returncode == 0 and b"75% of its memories no workstream places" in proc.stdout


def test_days_an_earlier_composer_made_are_composed_again_once(mem):
    ws = Workstreams(mem)
    ws.mint("aquarium", scope=S)
    mem.tag_add(mem.digest("aquarium pump check", scope=S, valid_at="2026-02-10")["node_ids"][0], "aquarium")
    mem.digest("lunch with Sam", scope=S, valid_at="2026-02-10")
    run_due(mem, only=["fingerprint"], force=True)
    with immediate(mem.conn):             # as the first composer left it: the placed half stretched to all of it
        mem.conn.execute("UPDATE ws_compositions SET weight = 1.0")
        mem.conn.execute("UPDATE ws_days SET composer = 'compose/offline-v1'")
    assert run_due(mem, only=["fingerprint"], force=True)[0]["days"] == 1
    assert ws.where("aquarium", scope=S)["days"][0]["weight"] == 0.5
    assert run_due(mem, only=["fingerprint"], force=True)[0]["days"] == 0         # once
