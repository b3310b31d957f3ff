"""Embedders: the default one (deterministic, beyond word overlap) and Ollama over a loopback stub."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tidemind.config import load_settings
from tidemind.embed import get_embedder
from tidemind.embed.default import DefaultEmbedder
from tidemind.memory import Memory
from tidemind.store import immediate

from .conftest import ROOT, JSONStub, serving


def cos(a, b):
    return float(np.dot(a, b))


def test_default_is_deterministic_and_unit_length():
    a = DefaultEmbedder().embed(["the quick brown fox", "the quick brown fox"])
    b = DefaultEmbedder().embed(["the quick brown fox"])
    assert np.array_equal(a[0], b[0]) and np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_spelling_variants_are_close():
    e = DefaultEmbedder()
    base, variant, other = e.embed(["deployment pipeline", "deploying pipelines", "banana smoothie"])
    assert cos(base, variant) > 0.3
    assert cos(base, variant) > cos(base, other) + 0.25


def test_learned_context_links_words_that_never_co_occur_in_the_query(mem):
    corpus = [
        "postgres database migration ran overnight",
        "the postgres database needs a vacuum",
        "database backup of postgres finished",
        "postgres replication lag on the database",
        "kayak paddle and river trip planning",
        "river kayak trip in the mountains",
    ] * 4
    for t in corpus:
        mem.digest(t)
    mem.embed_pending()
    e = mem.embedder
    q, related, unrelated = e.embed(["postgres", "database", "kayak"])
    assert cos(q, related) > cos(q, unrelated) + 0.2


def test_every_vector_records_its_embedder(mem):
    mem.digest("a memory to embed")
    mem.embed_pending()
    names = {n for (n,) in mem.conn.execute("SELECT embedder FROM node_vectors")}
    assert names == {"default/ri-v2"}


class _OllamaStub(JSONStub):
    calls = []

    def reply(self, path, body):
        type(self).calls.append((path, body))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return {"model": body["model"], "embeddings": [[float(len(t)), float(t.count("a")) + 1.0, 1.0, 0.5]
                                                       for t in texts]}


@pytest.fixture
def ollama_stub():
    with serving(_OllamaStub) as url:
        yield url


def test_ollama_embedder_against_loopback_stub(home, ollama_stub):
    m = Memory(load_settings(home, embedder="ollama", ollama_host=ollama_stub, ollama_model="stub-embed"))
    try:
        m.digest("banana bandana")
        m.digest("x")
        r = m.embed_pending()
        assert r["embedded"] == 2 and r["embedder"] == "ollama/stub-embed"
        rows = list(m.conn.execute("SELECT embedder, dim FROM node_vectors"))
        assert rows == [("ollama/stub-embed", 4)] * 2
        assert _OllamaStub.calls[-1][0] == "/api/embed"
        assert _OllamaStub.calls[-1][1]["model"] == "stub-embed"
        hit = m.recall("banana bandana")["items"][0]           # the query goes through the stub too
        assert hit["content"] == "banana bandana"
        assert _OllamaStub.calls[-1][1]["input"] == ["banana bandana"]
    finally:
        m.close()


def test_unknown_embedder_is_a_clear_error(home):
    from tidemind.errors import InvalidInput
    with pytest.raises(InvalidInput, match="unknown embedder"):
        get_embedder(load_settings(home, embedder="nope"), None)


def test_bit_index_candidates_contain_the_exact_nearest_neighbours(mem):
    """SimHash KNN + rerank must agree with an exact scan on most of the top 10."""
    import random
    from tidemind.search.recall import VEC_CANDIDATES
    from tidemind.store import vectors

    rng = random.Random(4)
    vocab = [f"w{i}x" for i in range(400)]
    texts = [" ".join(rng.choice(vocab) for _ in range(12)) for _ in range(1500)]
    now = mem.now()
    with immediate(mem.conn):
        from tidemind import text as T
        from tidemind.store import nodes
        for t in texts:
            nid = nodes.insert(mem.conn, capture_id=None, unit_index=0, content=t, content_hash=T.sha256(t),
                               norm_hash=T.norm_hash(t), scope="personal", source_tool=None, session=None,
                               recorded_at=now, valid_from=now)
            vectors.enqueue(mem.conn, nid, now)
    mem.embed_pending(batch=500)
    agree = []
    for t in rng.sample(texts, 20):
        q = mem.embedder.embed([" ".join(t.split()[:5])])[0]
        exact = [i for i, _ in vectors.scan(mem.conn, q, "n.status = 'live'", [], mem.embedder.name, 10)]
        cand = vectors.knn_candidates(mem.conn, q, ["personal"], mem.embedder.name, VEC_CANDIDATES)
        fast = [i for i, _ in vectors.rerank(mem.conn, q, cand, "n.status = 'live'", [], mem.embedder.name)[:10]]
        agree.append(len(set(exact) & set(fast)) / 10)
        assert exact[0] in fast
    assert sum(agree) / len(agree) >= 0.8


def test_recall_degrades_to_full_text_when_the_embedder_goes_away(home):
    """With Ollama configured and not running, `tidemind recall` exited 1 and brain_recall
    returned "ollama embed failed". The stub is switched off mid-run: recall still answers from
    the FTS arm, says why in `degraded`, and the CLI prints one line about it and exits 0."""
    with serving(_OllamaStub) as url:
        settings = load_settings(home, embedder="ollama", ollama_host=url, ollama_model="stub-embed")
        m = Memory(settings)
        m.digest("The staging database listens on port 5433 behind PgBouncer.")
        assert m.embed_pending()["embedded"] == 1
        healthy = m.recall("staging database port")
        assert healthy["degraded"] is None and healthy["arms"]["vector"] == 1
    try:                                                     # the service is gone now
        r = m.recall("staging database port")
        assert [i["content"] for i in r["items"]] == ["The staging database listens on port 5433 behind PgBouncer."]
        assert r["arms"]["vector"] == 0 and "ollama embed failed" in r["degraded"]
        assert m.recall("the capital of mongolia")["abstained"] is True
        stored = m.digest("Deploys happen on Tuesdays after the standup.")     # digest still stores, queued
        assert stored["node_ids"] and m.stats()["embed_queue"] == 1
    finally:
        m.close()
    env = {**os.environ, "TIDEMIND_EMBEDDER": "ollama", "OLLAMA_HOST": url, "TIDEMIND_OLLAMA_MODEL": "stub-embed"}
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "recall", "staging database port"],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("(degraded: semantic search unavailable") and "5433" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "--json", "recall", "staging port"],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0 and "ollama embed failed" in json.loads(proc.stdout)["degraded"]


def test_switching_embedders_reembeds_in_the_background_while_the_old_index_serves(home):
    """Switching embedders left recall without a vector arm until someone ran `tidemind embed
    --all`. Now the old vectors keep answering while the new embedder fills in; once it covers
    every memory they are retired."""
    from tidemind.store import vectors

    with Memory.open(home) as m:
        for text in ("The staging database listens on port 5433.", "Deploys happen on Tuesdays after standup.",
                     "The banana bread recipe needs three ripe bananas."):
            m.digest(text)
        m.embed_pending()
        assert vectors.embedders(m.conn) == ["default/ri-v2"]
    with serving(_OllamaStub) as url:
        switched = Memory(load_settings(home, embedder="ollama", ollama_host=url, ollama_model="stub-embed"))
        try:
            before = len(_OllamaStub.calls)
            r = switched.recall("staging database port")
            assert r["arms"]["vector"] > 0 and r["degraded"] is None     # the old index serves
            assert switched.serving_embedder().name == "default/ri-v2"
            assert len(_OllamaStub.calls) == before                      # no query went to the new one yet
            report = switched.embed_pending()
            assert report["embedded"] == 3 and report["retired"] == ["default/ri-v2"]
            assert vectors.embedders(switched.conn) == ["ollama/stub-embed"]
            assert vectors.coverage(switched.conn) == {"ollama/stub-embed": 3}
            assert switched.recall("banana bread")["items"][0]["content"].startswith("The banana bread")
            assert _OllamaStub.calls[-1][1]["input"] == ["banana bread"]      # the new embedder answers now
        finally:
            switched.close()
