"""Workstream fingerprints: deterministic vectors, decoding within ±0.05, exact membership
queries against the composition table, aliases that keep history, undoable decisions, and a
task that never touches authored content."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemind.errors import InvalidInput, NotFound
from tidemind.metabolism.scheduler import run_due
from tidemind.store import immediate
from tidemind.workstreams import Workstreams, hypervector, store
from tidemind.workstreams.hypervector import compose, decode, vector_for

from .conftest import cli_json

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
