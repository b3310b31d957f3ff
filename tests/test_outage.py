"""Degrade, never fail: a model service switched off mid-run makes the tasks that need it wait and
retry with backoff; nothing is written in its name, no stand-in passes for it, the store keeps
working, doctor says what happened, and everything resumes when it is back."""
import datetime as dt
import hashlib
import json
import re

import pytest

from tidemind.llm import CircuitBreaker
from tidemind.llm.providers import AnthropicLLM
from tidemind.memory import Memory
from tidemind.metabolism.scheduler import BACKOFF_FIRST_S, run_due
from tidemind.store import immediate, links, provider_state

from .conftest import JSONStub, Switch, cli_json


class Model(JSONStub):
    """Answers every strategy the way a careful model would."""

    def reply(self, path, body):
        system, prompt = body["system"], body["messages"][0]["content"]
        shown = [(int(i), t) for i, t in re.findall(r"(?m)^\[(\d+)\] (?:\(current\) )?(.+)$", prompt)]
        if "annotate one memory" in system:
            memory = prompt.split("<<<", 1)[1].split(">>>", 1)[0].strip()
            answer = {"title": " ".join(memory.split()[:5]), "tags": ["staging"], "kind": "fact"}
        elif "meaningfully related" in system:
            answer = {"verdict": "confirm", "relation": "related", "reason": "the same database"}
        elif "one rule for next time" in system:
            answer = {"rule": f"Keep to this: {shown[-1][1].rstrip('.')} [{shown[-1][0]}]"}
        elif "sentences" in system:
            answer = {"title": "Staging", "sentences": [f"{' '.join(t.split()[:6]).rstrip('.,;')} [{i}]"
                                                        for i, t in shown[:2]]}
        else:
            answer = {"assign": []}
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": json.dumps(answer)}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 7}}


@pytest.fixture(autouse=True)
def fresh_breaker(monkeypatch):
    import tidemind.llm as llm_mod
    monkeypatch.setattr(llm_mod, "BREAKER", CircuitBreaker(threshold=1000))


def _cluster(mem, texts):
    ids = [mem.digest(t, session="s1")["node_ids"][0] for t in texts]
    with immediate(mem.conn):
        for a, b in zip(ids, ids[1:]):
            links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now())
    return ids


def _by_status(reports):
    return {r["task"]: r["status"] for r in reports}


class Frozen:
    """A clock that moves only when the test moves it (backoff windows are counted in seconds)."""

    def __init__(self):
        self.now = dt.datetime(2026, 3, 2, 9, tzinfo=dt.timezone.utc)

    def __call__(self):
        return self.now


@pytest.fixture
def mem(home):
    m = Memory.open(home, clock=Frozen())
    yield m
    m.close()


def test_the_llm_switched_off_mid_run_makes_model_tasks_wait_and_retry_with_backoff(home, mem, monkeypatch):
    service = Switch(Model).on()
    llm = AnthropicLLM("stub-model", api_key="test", base_url=service.url)
    for var, value in {"TIDEMIND_LLM": "anthropic", "ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": service.url,
                       "TIDEMIND_ANTHROPIC_MODEL": "stub-model"}.items():
        monkeypatch.setenv(var, value)
    try:
        _cluster(mem, ["The staging database runs PostgreSQL 16 on port 5433.",
                       "Staging PostgreSQL backups run nightly at 02:00.",
                       "The staging database is restored weekly from the nightly backup."])
        first = run_due(mem, llm=llm, clock=mem.clock)
        assert set(_by_status(first).values()) == {"ok"}, first
        assert provider_state.get(mem.conn, llm.name)["state"] == "ok"

        service.off()                                             # the model goes away mid-run
        calls_before = mem.conn.execute("SELECT count(*) FROM llm_calls").fetchone()[0]
        derived_before = mem.conn.execute("SELECT count(*) FROM derived").fetchone()[0]
        syntheses_before = mem.conn.execute("SELECT count(*) FROM syntheses").fetchone()[0]
        late = _cluster(mem, ["The analytics warehouse loads from the staging database at 03:00.",
                              "Analytics warehouse loads retry twice before paging.",
                              "The analytics warehouse keeps 90 days of staging snapshots."])
        assert mem.recall("analytics warehouse loads")["items"][0]["id"] in late      # the store still answers
        mem.clock.now += dt.timedelta(hours=2)                    # everything is due again
        second = run_due(mem, llm=llm, clock=mem.clock)
        status = _by_status(second)
        assert status["annotate"] == "waiting" and status["embed"] == "ok" and status["decay"] == "ok"
        assert status["crystallize"] == "waiting"             # a new cluster asks the model: it waits too
        assert status["lessons"] == "ok"                       # no correction, nothing to ask the model
        state = provider_state.get(mem.conn, llm.name)
        assert state["state"] == "unreachable" and state["failures"] == 1 and "unreachable" in state["last_error"]
        outage_at = dt.datetime.fromisoformat(state["last_failure_at"].replace("Z", "+00:00"))
        assert outage_at == mem.clock.now
        assert state["retry_at"] == (outage_at + dt.timedelta(seconds=BACKOFF_FIRST_S)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ")
        # one attempt reached for the model; nothing was written in its name or in its place
        calls = mem.conn.execute("SELECT status FROM llm_calls WHERE id > ?", (calls_before,)).fetchall()
        assert calls == [("unreachable",)]
        assert mem.conn.execute("SELECT count(*) FROM derived").fetchone()[0] == derived_before
        assert mem.conn.execute("SELECT count(*) FROM syntheses").fetchone()[0] == syntheses_before
        runs = mem.task_state()
        assert runs["annotate"]["status"] == "waiting" and runs["annotate"]["counts"]["waiting_for"] == llm.name

        doctor = cli_json(home, "doctor")
        assert doctor["ok"] and doctor["providers"]["llm"]["configured"] == llm.name
        assert doctor["providers"]["llm"]["reachable"] is False and doctor["providers"]["llm"]["state"] == "unreachable"
        assert doctor["providers"]["embedder"]["reachable"] is True
        assert any("unreachable" in n and "waits" in n for n in doctor["notes"])

        mem.clock.now += dt.timedelta(seconds=10)                 # inside the backoff: nobody calls it
        third = run_due(mem, llm=llm, clock=mem.clock)
        assert _by_status(third)["annotate"] == "waiting"
        assert mem.conn.execute("SELECT count(*) FROM llm_calls WHERE id > ?", (calls_before,)).fetchone()[0] == 1
        mem.clock.now += dt.timedelta(seconds=BACKOFF_FIRST_S)    # the backoff ran out: one retry, still away
        run_due(mem, llm=llm, clock=mem.clock)
        state = provider_state.get(mem.conn, llm.name)
        assert state["failures"] == 2
        retry = dt.datetime.fromisoformat(state["retry_at"].replace("Z", "+00:00"))
        failed = dt.datetime.fromisoformat(state["last_failure_at"].replace("Z", "+00:00"))
        assert retry - failed == dt.timedelta(seconds=2 * BACKOFF_FIRST_S)        # doubled

        service.on()                                              # back, at the same address
        mem.clock.now = retry + dt.timedelta(seconds=1)
        fourth = run_due(mem, llm=llm, clock=mem.clock)
        assert "waiting" not in _by_status(fourth).values(), fourth
        assert provider_state.get(mem.conn, llm.name)["state"] == "ok"
        generators = {g for (g,) in mem.conn.execute(
            f"SELECT generator FROM derived WHERE field='title' AND node_id IN ({','.join(map(str, late))})")}
        assert generators == {f"annotate/{llm.name}/annotate@1"}
        crystal = mem.conn.execute("SELECT generator FROM syntheses WHERE kind='crystal' AND members LIKE ?",
                                   (f"%{late[0]}%",)).fetchone()
        assert crystal[0].startswith(f"crystallize/{llm.name}/")
        assert cli_json(home, "doctor")["providers"]["llm"]["reachable"] is True
    finally:
        service.off()


class Embeddings(JSONStub):
    """Ollama's /api/embed: a deterministic vector per text."""

    def reply(self, path, body):
        if path != "/api/embed":
            return None
        vectors = [[b / 255 for b in hashlib.sha256(t.encode()).digest()[:16]] for t in body["input"]]
        return {"model": body["model"], "embeddings": vectors}


def test_the_embedder_switched_off_queues_the_work_and_the_embed_task_waits(home):
    service = Switch(Embeddings).on()
    try:
        mem = Memory.open(home, clock=Frozen(), embedder="ollama", ollama_host=service.url,
                          ollama_model="stub-embed")
        mem.digest("The staging database runs PostgreSQL 16.")
        assert _by_status(run_due(mem, only=["embed"], clock=mem.clock))["embed"] == "ok"
        assert provider_state.get(mem.conn, "ollama/stub-embed")["state"] == "ok"
        service.off()
        stored = mem.digest("Staging backups run nightly.")                     # digest still stores
        assert stored["node_ids"] and mem.stats()["embed_queue"] == 1
        report = run_due(mem, only=["embed"], clock=mem.clock, force=True)[0]
        assert report["status"] == "waiting" and report["waiting_for"] == "ollama/stub-embed"
        doctor = mem.doctor()
        assert doctor["ok"] and doctor["providers"]["embedder"]["reachable"] is False
        assert doctor["providers"]["embedder"]["state"] == "unreachable"
        mem.clock.now += dt.timedelta(hours=1)
        assert _by_status(run_due(mem, only=["embed"], clock=mem.clock))["embed"] == "waiting"  # retried, failed
        assert provider_state.get(mem.conn, "ollama/stub-embed")["failures"] == 2
        service.on()
        mem.clock.now += dt.timedelta(hours=1)
        assert _by_status(run_due(mem, only=["embed"], clock=mem.clock))["embed"] == "ok"
        assert mem.stats()["embed_queue"] == 0 and provider_state.get(mem.conn, "ollama/stub-embed")["state"] == "ok"
        mem.close()
    finally:
        service.off()


class Picky(Model):
    """A model that cannot annotate one memory (its answer is not JSON) until told otherwise."""
    refuse = "02:00"

    def reply(self, path, body):
        if Picky.refuse and "annotate one memory" in body["system"] and Picky.refuse in body["messages"][0]["content"]:
            return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                    "content": [{"type": "text", "text": "Sure! Here is a nice title for you."}],
                    "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        return super().reply(path, body)


def test_rederive_redoes_what_a_fallback_made_once_the_model_is_back(home, monkeypatch):
    """Through the real CLI: a store made offline, then with a model that could not annotate one
    memory; rederive makes that one and the offline syntheses again with the model."""
    from .conftest import run_cli

    monkeypatch.setenv("TIDEMIND_LLM", "none")
    old = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=10)).date().isoformat()
    with Memory.open(home) as m:
        ids = [m.digest(t, session="s1", valid_at=old)["node_ids"][0] for t in (
            "The staging database runs PostgreSQL 16 on port 5433.",
            "Staging PostgreSQL backups run nightly at 02:00.",
            "The staging database is restored weekly from the nightly backup.")]
        with immediate(m.conn):
            for a, b in zip(ids, ids[1:]):
                links.add(m.conn, a, b, status="confirmed", proposed_by="test", at=m.now())
        fixed = m.correct(ids[0], "The staging database runs PostgreSQL 17 on port 6432.")["node_ids"][0]
    cli_json(home, "metabolize")
    with Memory.open(home) as m:
        offline = {g for (g,) in m.conn.execute("SELECT generator FROM syntheses WHERE status != 'withdrawn'")}
        assert offline == {"crystallize/offline-v2", "temporal/offline-v2", "lessons/offline-v2"}
        crystal_item = next(i for i in m.review_list() if i["kind"] == "crystal")

    service = Switch(Picky).on()
    try:
        for var, value in {"TIDEMIND_LLM": "anthropic", "ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": service.url,
                           "TIDEMIND_ANTHROPIC_MODEL": "stub-model"}.items():
            monkeypatch.setenv(var, value)
        model_gen = "annotate/anthropic/stub-model/annotate@1"
        cli_json(home, "metabolize", "--task", "annotate")
        with Memory.open(home) as m:
            nightly = ids[1]
            shown = m.show(nightly)["derived"]
            assert shown["kind"]["generator"] == model_gen + "+offline-fallback"       # the stand-in says so
            assert shown["title"]["value"] == "Staging PostgreSQL backups run nightly at 02:00."
        assert cli_json(home, "rederive", "--since", "2999-01-01")["tasks"]["crystallize"]["candidates"] == 0

        Picky.refuse = None                                       # the model can answer it now
        r = cli_json(home, "rederive")
        assert r["llm"] == "anthropic/stub-model"
        assert r["tasks"]["annotate"]["fallbacks_made_due"] == 1 and r["tasks"]["annotate"]["annotated"] >= 1
        for task in ("crystallize", "temporal", "lessons"):
            assert r["tasks"][task]["candidates"] >= 1 and r["tasks"][task]["redone"] == r["tasks"][task]["candidates"]
        with Memory.open(home) as m:
            shown = m.show(ids[1])["derived"]
            assert shown["title"] == {**shown["title"], "value": "Staging PostgreSQL backups run nightly",
                                      "generator": model_gen}
            assert shown["kind"]["generator"] == model_gen
            current = m.conn.execute("SELECT id, kind, generator FROM syntheses WHERE status != 'withdrawn'").fetchall()
            assert {g.split("/stub-model/")[0] for _, _, g in current} == {"crystallize/anthropic", "temporal/anthropic",
                                                                           "lessons/anthropic"}
            replaced = m.conn.execute("SELECT count(*) FROM syntheses WHERE withdrawn_why='recomputed'"
                                      " AND replaced_by IS NOT NULL").fetchone()[0]
            assert replaced >= 3
            crystal = next(i for i, k, _ in current if k == "crystal")
            item = m.review_show(crystal_item["id"])
            assert item["status"] == "open" and item["payload"]["synthesis"] == crystal     # the item followed
            lesson = m.conn.execute("SELECT text FROM syntheses WHERE kind='lesson' AND status != 'withdrawn'").fetchone()
            assert lesson[0].startswith(f"Keep to this: The staging database runs PostgreSQL 17 on port 6432 [{fixed}]")

        service.off()                                             # the model is away again
        waiting = cli_json(home, "metabolize", "--task", "annotate")["tasks"][0]
        assert waiting["status"] in ("ok", "waiting")
        with Memory.open(home) as m:
            m.digest("A new memory about the staging database.")
        assert cli_json(home, "metabolize", "--task", "annotate")["tasks"][0]["status"] == "waiting"
        refused = run_cli(home, "rederive")
        assert refused.returncode == 1 and b"unreachable" in refused.stderr and b"when the model is back" in refused.stderr
    finally:
        service.off()
        Picky.refuse = "02:00"
