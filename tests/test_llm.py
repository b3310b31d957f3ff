"""Model passes against an adversarial loopback stub speaking the real Anthropic and Ollama APIs
(driven through the real clients): whatever the model says, authored text stays as written,
rejected tags stay rejected, and invalid output is recorded and never stored."""
import itertools
import json
import threading

import pytest

from tidemind.llm import CircuitBreaker, validate
from tidemind.llm.providers import AnthropicLLM, OllamaLLM
from tidemind.metabolism.scheduler import run_due
from tidemind.store import immediate, links, tags
from tidemind.text import sha256

from .conftest import JSONStub, serving

REJECTED = "staging-database"
ANSWERS = [
    "Sure! Here is the improved memory: The staging database listens on port 9999.",        # no JSON
    '{"title": "Staging", "tags": ["staging", ',                                             # truncated JSON
    json.dumps({"title": "x" * 400, "tags": ["a"], "kind": "fact"}),                        # over-long title
    json.dumps({"title": "Staging DB", "tags": [REJECTED, "pgbouncer"], "kind": "fact",      # a rejected tag
                "specificity": 0.9, "actuality": 1.0}),
    json.dumps({"title": "Rewritten", "tags": ["ok-tag"], "kind": "opinion"}),               # enum violation
    json.dumps({"title": "Port fact", "tags": ["ports"], "kind": "fact",                     # tries to smuggle text
                "content": "REWRITTEN: the port is 9999", "rewrite": True}),
    json.dumps({"verdict": "confirm", "relation": "related", "reason": "same database"}),
    json.dumps({"verdict": "maybe", "reason": "?"}),
    "<html>502 Bad Gateway</html>",
]


class Stub(JSONStub):
    answers = itertools.cycle(ANSWERS)
    lock = threading.Lock()
    seen: list = []
    prompts: list = []

    def reply(self, path, body):
        with Stub.lock:
            text = next(Stub.answers)
            Stub.seen.append(path)
            Stub.prompts.append(json.dumps(body))
        if path.startswith("/v1/messages"):
            return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 7}}
        if path == "/api/chat":
            return {"model": body["model"], "message": {"role": "assistant", "content": text}, "done": True,
                    "prompt_eval_count": 11, "eval_count": 7}
        return None


@pytest.fixture
def stub():
    with serving(Stub) as url:
        yield url


@pytest.fixture(autouse=True)
def fresh_breaker(monkeypatch):
    import tidemind.llm as llm_mod
    monkeypatch.setattr(llm_mod, "BREAKER", CircuitBreaker(threshold=1000))


CORPUS = ["The staging database runs PostgreSQL 16 on port 5433 behind PgBouncer.",
          "Staging PostgreSQL backups run nightly and are restored weekly to verify them.",
          "The staging database uses port 5433; PgBouncer pools the connections.",
          "Deploys go through GitHub Actions on tags."]


@pytest.mark.parametrize("provider", ["anthropic", "ollama"])
def test_adversarial_model_changes_nothing_it_may_not(mem, stub, provider):
    llm = AnthropicLLM("stub-model", api_key="test", base_url=stub) if provider == "anthropic" \
        else OllamaLLM(stub, "stub-model")
    ids = [mem.digest(t, session="s1")["node_ids"][0] for t in CORPUS]
    with immediate(mem.conn):
        tags.reject(mem.conn, ids[0], REJECTED, mem.now())
        refused = links.add(mem.conn, ids[0], ids[2], status="rejected_by_user", proposed_by="person",
                            at=mem.now(), reason="not related")
    authored = {i: (c, h) for i, c, h in mem.conn.execute("SELECT id, content, content_hash FROM nodes")}
    titles = set()
    for round_ in range(4):
        reports = run_due(mem, force=True, llm=llm)
        assert all(r["status"] == "ok" for r in reports), reports
        titles |= {v for (v,) in mem.conn.execute("SELECT value FROM derived WHERE field='title'")}
        with immediate(mem.conn):          # make annotate ask again next round
            mem.conn.execute("DELETE FROM derived")
            mem.conn.execute("UPDATE nodes SET derived_text = ''")
    assert Stub.seen, "the stub was never called"
    assert any(REJECTED in p and "never propose" in p for p in Stub.prompts)   # rejections fed as negatives
    assert titles & {"Staging DB", "Port fact"}          # valid answers were used...
    now = {i: (c, h) for i, c, h in mem.conn.execute("SELECT id, content, content_hash FROM nodes")}
    assert now == authored and all(sha256(c) == h for c, h in now.values())
    assert tags.for_nodes(mem.conn, [ids[0]])[ids[0]] and all(
        t["status"] == "rejected_by_user" for t in tags.for_nodes(mem.conn, [ids[0]])[ids[0]] if t["name"] == REJECTED)
    blob = " ".join(v for (v,) in mem.conn.execute("SELECT value FROM derived"))
    assert "9999" not in blob and "REWRITTEN" not in blob and "x" * 200 not in blob
    kinds = {v for (v,) in mem.conn.execute("SELECT value FROM derived WHERE field='kind'")}
    assert kinds <= {"fact", "decision", "preference", "lesson", "event", "note"}
    statuses = {s for (s,) in mem.conn.execute("SELECT status FROM llm_calls")}
    assert "invalid" in statuses and "ok" in statuses
    assert mem.stats()["llm"]["annotate"]["calls"] > 0
    assert mem.conn.execute("SELECT status FROM links WHERE id=?", (refused,)).fetchone()[0] == "rejected_by_user"
    assert mem.conn.execute("SELECT count(*) FROM links WHERE (source_id, target_id) IN ((?, ?), (?, ?))",
                            (ids[0], ids[2], ids[2], ids[0])).fetchone()[0] == 1      # never re-proposed
    for (status,) in mem.conn.execute("SELECT status FROM links WHERE id != ?", (refused,)):
        assert status in ("pending", "confirmed", "rejected_by_model")
    for (reason,) in mem.conn.execute("SELECT reason FROM links WHERE status != 'pending'"):
        assert reason                                   # every decision keeps its reason
    assert mem.doctor()["ok"]


def test_validator_rejects_what_it_should():
    schema = {"title": {"type": "str", "required": True, "max": 10},
              "n": {"type": "float", "min": 0.0, "max_value": 1.0},
              "tags": {"type": "list", "max": 2, "items": {"type": "str", "max": 5}}}
    assert validate({"title": "ok"}, schema) is None
    assert validate({"title": "ok", "n": True}, schema)
    assert validate({"title": "ok", "n": 2}, schema)
    assert validate({"title": "ok", "tags": ["a", "b", "c"]}, schema)
    assert validate({"title": "ok", "tags": ["toolong"]}, schema)
    assert validate([], schema) and validate({}, schema)


def test_breaker_opens_after_repeated_failures():
    breaker = CircuitBreaker(threshold=2, cooldown_s=3600)
    breaker.record("t", False)
    assert breaker.allows("t")
    breaker.record("t", False)
    assert not breaker.allows("t") and breaker.allows("other")


def test_no_llm_means_offline_passes(mem, monkeypatch):
    from tidemind.llm import choose
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("TIDEMIND_LLM", raising=False)
    assert choose(mem.settings) is None
    mem.digest(CORPUS[0])
    reports = run_due(mem, force=True, llm=None)
    assert all(r["status"] == "ok" for r in reports)
    assert mem.conn.execute("SELECT count(*) FROM llm_calls").fetchone()[0] == 0


def test_a_persons_link_decision_made_while_the_model_thinks_wins(mem):
    from tidemind.llm import Completion
    from tidemind.metabolism.scheduler import run_task, ordered_tasks
    a = mem.digest("alpha memory about harbours")["node_ids"][0]
    b = mem.digest("beta memory about harbours")["node_ids"][0]
    with immediate(mem.conn):
        link = links.add(mem.conn, a, b, status="pending", proposed_by="link-propose", at=mem.now())

    class Slow:
        name = "stub/slow"

        def complete(self, system, prompt, max_tokens=800):
            mem.link_decide(link, "rejected_by_user")       # the person decides first
            return Completion(json.dumps({"verdict": "confirm", "reason": "looks related"}))

    task = next(t for t in ordered_tasks() if t.name == "link-evaluate")
    run_task(mem, task, "me", llm=Slow())
    assert mem.conn.execute("SELECT status FROM links WHERE id=?", (link,)).fetchone()[0] == "rejected_by_user"
