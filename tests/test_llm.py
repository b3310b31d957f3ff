"""Model passes against an adversarial loopback stub speaking the real Anthropic and Ollama APIs
(driven through the real clients): whatever the model says, authored text stays as written,
rejected tags stay rejected, and invalid output is recorded and never stored."""
import itertools
import re
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


# -- syntheses written by a model: checked like annotate's answers, and more ---------------------
def _prompt_of(body: dict) -> tuple[str, str]:
    if "system" in body:                                           # Anthropic messages API
        return body["system"], body["messages"][0]["content"]
    return body["messages"][0]["content"], body["messages"][1]["content"]     # Ollama chat


def _shown(prompt: str) -> list[tuple[int, str]]:
    return [(int(i), t) for i, t in re.findall(r"(?m)^\[(\d+)\] (?:\(current\) )?(.+)$", prompt)]


class SynthStub(JSONStub):
    """Answers the three synthesis strategies: faithfully (`honest`), or with one of the ways a
    model goes wrong, in turn (`mode = "adversarial"`)."""
    mode = "honest"
    turn = itertools.count()
    hidden_id = 0

    @classmethod
    def answer(cls, system: str, prompt: str) -> dict:
        shown = _shown(prompt)
        if "one rule for next time" in system:
            if cls.mode == "honest":
                if "repeated failure" in prompt:
                    fix = re.search(r"what worked after it: (.+)", prompt)
                    return {"rule": f"Run {fix.group(1) if fix else 'the documented command'} instead"}
                head, text = shown[-1]
                return {"rule": f"Keep to this: {text.rstrip('.')} [{head}]"}
            return [{"rule": "Don't use the old port any more."},                       # not affirmative
                    {"rule": "Use port 9999 for the API gateway [%d]" % (shown[-1][0] if shown else 1)},  # made up
                    {"rule": "npm ERR! missing script: build happened again"}][next(cls.turn) % 3]   # quotes the error
        if cls.mode == "honest":
            sentences = [f"{' '.join(text.split()[:7]).rstrip('.,;')} [{i}]" for i, text in shown[:3]]
            first = next(w for w in shown[0][1].split() if w[0].isupper() and w.casefold() not in ("the", "my"))
            return {"title": first, "sentences": sentences}
        i = shown[0][0]
        return [{"title": "Summary", "sentences": [f"The Zephyrine codename is secret [{cls.hidden_id}]"]},  # not shown
                {"title": "Summary", "sentences": ["These memories are about several things."]},          # no citation
                {"title": "Summary", "sentences": [f"It listens on port 9999 now [{i}]"]},                 # invented
                {"title": "Zephyrine", "sentences": [f"{' '.join(shown[0][1].split()[:6])} [{i}]"]},     # title quotes
                ][next(cls.turn) % 4]

    def reply(self, path, body):
        text = json.dumps(self.answer(*_prompt_of(body)))
        if path.startswith("/v1/messages"):
            return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 7}}
        return {"model": body["model"], "message": {"role": "assistant", "content": text}, "done": True}


def _synthesis_store(mem):
    ids = [mem.digest(t, session="s1")["node_ids"][0] for t in CORPUS[:3]]
    secret = mem.digest("Zephyrine is the codename of the staging database migration.", session="s1")["node_ids"][0]
    with immediate(mem.conn):
        for a, b in ((ids[0], ids[1]), (ids[1], ids[2]), (ids[2], secret)):
            links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now())
    mem.archive(secret)                                           # hidden: never shown, never quoted
    old = mem.digest("The API gateway listens on port 3000.")["node_ids"][0]
    new = mem.correct(old, "The API gateway listens on port 8443 with TLS.")["node_ids"][0]
    mem.propose_lessons([{"kind": "repeated_failure", "said": "npm ERR! missing script: build", "times": 3,
                          "command": "npm run build", "instead": "npm run compile"}], "s1")
    mem.clock.now += __import__("datetime").timedelta(days=9)
    return ids, secret, new


@pytest.mark.parametrize("provider", ["anthropic", "ollama"])
def test_model_syntheses_cite_what_they_were_shown(mem, provider):
    SynthStub.mode = "honest"
    with serving(SynthStub) as url:
        llm = AnthropicLLM("stub-model", api_key="test", base_url=url) if provider == "anthropic" \
            else OllamaLLM(url, "stub-model")
        ids, secret, new = _synthesis_store(mem)
        reports = run_due(mem, only=["crystallize", "temporal", "lessons"], force=True, llm=llm, clock=mem.clock)
    assert all(r["status"] == "ok" for r in reports), reports
    rows = mem.conn.execute("SELECT kind, generator, text, title FROM syntheses WHERE status != 'withdrawn'").fetchall()
    assert {k for k, *_ in rows} == {"crystal", "daily", "weekly", "lesson"}
    for kind, generator, text, title in rows:
        task = {"crystal": "crystallize", "daily": "temporal", "weekly": "temporal", "lesson": "lessons"}[kind]
        assert generator.startswith(f"{task}/{llm.name}/") and generator.endswith("@1"), generator
        assert "Zephyrine" not in text + title and f"[{secret}]" not in text
    crystal = next(t for k, _, t, _ in rows if k == "crystal")
    assert {int(i) for i in re.findall(r"\[(\d+)\]", crystal)} <= set(ids)
    lessons = [t for k, _, t, _ in rows if k == "lesson"]
    assert any(t.startswith(f"Keep to this: The API gateway listens on port 8443 with TLS [{new}]") for t in lessons)
    assert any(t.startswith("Run npm run compile instead") for t in lessons)


def test_a_model_answer_that_cites_quotes_or_invents_is_refused_and_the_offline_text_says_so(mem):
    SynthStub.mode = "adversarial"
    with serving(SynthStub) as url:
        llm = AnthropicLLM("stub-model", api_key="test", base_url=url)
        ids, secret, new = _synthesis_store(mem)
        SynthStub.hidden_id = secret
        authored = {i: (c, h) for i, c, h in mem.conn.execute("SELECT id, content, content_hash FROM nodes")}
        for _ in range(2):
            reports = run_due(mem, only=["crystallize", "temporal", "lessons"], force=True, llm=llm, clock=mem.clock)
            assert all(r["status"] == "ok" for r in reports), reports
            with immediate(mem.conn):        # ask again next round: each strategy meets every bad answer
                mem.conn.execute("DELETE FROM syntheses")
                mem.conn.execute("DELETE FROM review_items WHERE kind IN ('crystal', 'lesson')")
        reports = run_due(mem, only=["crystallize", "temporal", "lessons"], force=True, llm=llm, clock=mem.clock)
    assert {i: (c, h) for i, c, h in mem.conn.execute("SELECT id, content, content_hash FROM nodes")} == authored
    rows = mem.conn.execute("SELECT kind, generator, text, title FROM syntheses").fetchall()
    assert rows and {g for _, g, _, _ in rows} == {"crystallize/offline-v2", "temporal/offline-v2",
                                                   "lessons/offline-v2"}      # what really wrote them
    blob = " ".join(t + " " + ti for _, _, t, ti in rows)
    assert "Zephyrine" not in blob and "9999" not in blob and "missing script" not in blob
    reasons = [r for (r,) in mem.conn.execute("SELECT reason FROM llm_calls WHERE status='invalid'")]
    assert any("not shown" in r for r in reasons) and any("cites no memory" in r for r in reasons)
    assert any("not in the memories" in r for r in reasons) and any("not affirmative" in r for r in reasons)
    assert any("quotes the error" in r for r in reasons)
    assert mem.doctor()["ok"]


@pytest.mark.parametrize("module", ["anthropic", "ollama"])
def test_a_provider_whose_extra_is_not_installed_is_named_in_one_line(module, monkeypatch, mem):
    """The providers are extras (pip install 'tidemind[anthropic]'): configured without theirs,
    the provider is unavailable with the extra named, and the store goes on offline."""
    from tidemind.embed.ollama import OllamaEmbedder
    from tidemind.errors import ProviderUnavailable

    monkeypatch.setitem(__import__("sys").modules, module, None)          # as if not installed
    make = {"anthropic": lambda: AnthropicLLM("claude-test", api_key="k"),
            "ollama": lambda: OllamaLLM("http://127.0.0.1:9", "llama")}[module]
    with pytest.raises(ProviderUnavailable, match=rf"pip install 'tidemind\[{module}\]'"):
        make()
    if module == "ollama":
        with pytest.raises(ProviderUnavailable, match=r"pip install 'tidemind\[ollama\]'"):
            OllamaEmbedder("http://127.0.0.1:9", "nomic")
    monkeypatch.setenv("TIDEMIND_LLM", module)
    mem.digest("The staging database listens on port 5433.")
    assert mem.recall("staging database port")["items"]
