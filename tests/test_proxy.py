"""`tidemind proxy` (issue 26) driven by the real `anthropic` and `openai` clients, pointed at a proxy
process, in front of a loopback upstream stub that records what it receives and answers as the
vendors' APIs do (whole or streamed as server-sent events)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from tidemind.memory import Memory

from .conftest import ROOT

ANTHROPIC_KEY = "sk-ant-api03-" + "k" * 40
OPENAI_KEY = "sk-proj-" + "o" * 40


# -- the upstream stub ------------------------------------------------------------------------------
class Upstream:
    """A loopback HTTP server answering as the Anthropic and OpenAI APIs do; `script` says what to
    answer next (an answer text, a tool call, an error status, a stall); `seen` keeps each request."""

    def __init__(self):
        import uvicorn

        self.seen: list[dict] = []
        self.answers: list[str] = []          # next answers, oldest first; "" -> default
        self.status: int | None = None        # answer this status (an error body) instead
        self.stall = 0.0
        self.tool_call = False
        self.odd_stream = False               # an OpenAI-compatible server sending arguments as an object
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off", interface="asgi3"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=10)

    async def app(self, scope, receive, send):
        import anyio

        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.seen.append({"path": scope["path"], "method": scope["method"], "headers": headers, "body": body})
        if self.stall:
            await anyio.sleep(self.stall)
        anthropic = scope["path"] == "/v1/messages"
        if self.status:
            payload = ({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}} if anthropic
                       else {"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}})
            data = json.dumps(payload).encode()
            await send({"type": "http.response.start", "status": self.status,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"7"),
                                    (b"x-upstream-note", b"kept")]})
            await send({"type": "http.response.body", "body": data})
            return
        if scope["path"] not in ("/v1/messages", "/v1/chat/completions"):
            data = json.dumps({"data": [{"id": "model-a"}], "path": scope["path"]}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": data})
            return
        request = json.loads(body)
        answer = self.answers.pop(0) if self.answers else "An answer."
        events = _anthropic_events(answer, self.tool_call) if anthropic else _openai_events(answer, self.tool_call)
        if self.odd_stream and not anthropic:
            odd = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test", "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": {"a": 1}}}]}}]}
            events = events[:1] + [_sse(None, odd)] + events[1:]
        if request.get("stream"):
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
            for event in events:
                await send({"type": "http.response.body", "body": event, "more_body": True})
                await anyio.sleep(0.001)
            await send({"type": "http.response.body", "body": b""})
            return
        whole = _anthropic_whole(answer, self.tool_call) if anthropic else _openai_whole(answer, self.tool_call)
        data = json.dumps(whole).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})


def _sse(kind: str | None, data: dict | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {kind}\n" if kind else "").encode() + f"data: {text}\n\n".encode()


def _anthropic_whole(answer: str, tool: bool) -> dict:
    content = [{"type": "text", "text": answer}]
    if tool:
        content.append({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}})
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": content,
            "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def _anthropic_events(answer: str, tool: bool) -> list[bytes]:
    half = len(answer) // 2
    out = [_sse("message_start", {"type": "message_start", "message": {**_anthropic_whole("", False), "content": []}}),
           _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "text", "text": ""}})]
    for piece in (answer[:half], answer[half:]):
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta", "text": piece}}))
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if tool:
        out += [_sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
                    "type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
                _sse("content_block_delta", {"type": "content_block_delta", "index": 1,
                                             "delta": {"type": "input_json_delta", "partial_json": '{"city": '}}),
                _sse("content_block_delta", {"type": "content_block_delta", "index": 1,
                                             "delta": {"type": "input_json_delta", "partial_json": '"Paris"}'}}),
                _sse("content_block_stop", {"type": "content_block_stop", "index": 1})]
    out += [_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                   "usage": {"output_tokens": 5}}),
            _sse("message_stop", {"type": "message_stop"})]
    return out


def _openai_whole(answer: str, tool: bool) -> dict:
    message = {"role": "assistant", "content": answer}
    if tool:
        message["tool_calls"] = [{"id": "call_1", "type": "function",
                                  "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def _openai_events(answer: str, tool: bool) -> list[bytes]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}
    half = len(answer) // 2
    out = [_sse(None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})]
    for piece in (answer[:half], answer[half:]):
        out.append(_sse(None, {**base, "choices": [{"index": 0, "delta": {"content": piece}}]}))
    if tool:
        out.append(_sse(None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"ci'}}]}}]}))
        out.append(_sse(None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": 'ty": "Paris"}'}}]}}]}))
    out.append(_sse(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    out.append(_sse(None, "[DONE]"))
    return out


# -- the proxy as a process ---------------------------------------------------------------------------
class ProxyProcess:
    def __init__(self, home, upstream: Upstream, *extra: str):
        env = {**os.environ, "TIDEMIND_HOME": str(home)}
        self.proc = subprocess.Popen([sys.executable, "-m", "tidemind.cli", "proxy", "--listen", "127.0.0.1:0",
                                      "--anthropic-upstream", upstream.url, "--openai-upstream", upstream.url, *extra],
                                     stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        self.lines = []
        while True:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError("the proxy exited: " + "".join(self.lines) + (self.proc.stderr.read() or ""))
            self.lines.append(line)
            if "listening on" in line:
                break
        self.url = line.split("listening on ", 1)[1].split()[0]
        self.rest = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self.rest.start()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def upstream():
    stub = Upstream()
    yield stub
    stub.stop()


@pytest.fixture
def proxy(home, upstream, store):
    started = []

    def start(*extra):
        p = ProxyProcess(home, upstream, *extra)
        started.append(p)
        return p
    yield start
    for p in started:
        p.stop()


def _anthropic(url):
    import anthropic

    return anthropic.Anthropic(base_url=url, api_key=ANTHROPIC_KEY, max_retries=0, timeout=60)


def _openai(url):
    import openai

    return openai.OpenAI(base_url=url + "/v1", api_key=OPENAI_KEY, max_retries=0, timeout=60)


def _stored(home) -> list[dict]:
    """The proxy's memories: live nodes whose source is the proxy, oldest first."""
    with Memory.open(home) as m:
        return [{"id": i, "content": c, "tool": t, "session": s, "scope": sc} for i, c, t, s, sc in m.conn.execute(
            "SELECT id, content, source_tool, session, scope FROM nodes WHERE status = 'live'"
            " AND source_tool LIKE 'proxy%' ORDER BY id")]


def _until(condition, timeout=60) -> None:
    """Wait for a condition (never for a length of time: the machines are loaded)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        time.sleep(0.02)


def _wait_stored(home, count, timeout=120):
    """Wait for the proxy's worker to have stored `count` turns (a condition, not a margin)."""
    deadline = time.monotonic() + timeout
    found = []
    while time.monotonic() < deadline:
        found = _stored(home)
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{len(found)} of {count} turns stored: {found}")


# -- the tests --------------------------------------------------------------------------------------
def test_recall_is_injected_and_the_exchange_stored_through_both_clients(home, mem, upstream, proxy):
    mem.digest("The staging database listens on port 5433 behind PgBouncer.", source_tool="claude-code")
    mem.embed_pending()
    p = proxy()
    messages = [{"role": "user", "content": "Which port does the staging database listen on?"}]
    upstream.answers = ["Port 5433, behind PgBouncer."]
    reply = _anthropic(p.url).messages.create(model="claude-test", max_tokens=100, messages=messages,
                                               system="You are terse.")
    assert reply.content[0].text == "Port 5433, behind PgBouncer."
    sent = json.loads(upstream.seen[-1]["body"])
    assert sent["messages"] == messages                                  # the client's messages as they came
    assert sent["system"].startswith("You are terse.\n\n<tidemind-memory>") and "port 5433" in sent["system"]
    # the client's key reaches the upstream in the header the client put it in (x-api-key or Authorization)
    assert any(ANTHROPIC_KEY in v for v in upstream.seen[-1]["headers"].values())
    upstream.answers = ["It is 5433."]
    chat = _openai(p.url).chat.completions.create(model="gpt-test", messages=[
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "staging database port?"}])
    assert chat.choices[0].message.content == "It is 5433."
    sent = json.loads(upstream.seen[-1]["body"])["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."} and sent[1]["role"] == "system"
    assert "<tidemind-memory>" in sent[1]["content"] and sent[2] == {"role": "user", "content": "staging database port?"}
    assert upstream.seen[-1]["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
    stored = _wait_stored(home, 4)
    texts = {n["content"] for n in stored}
    assert {"Which port does the staging database listen on?", "Port 5433, behind PgBouncer.", "It is 5433."} <= texts
    assert {n["tool"] for n in stored} == {"proxy", "proxy:claude-test", "proxy:gpt-test"}
    # nothing of the keys reaches the store or the proxy's log
    with Memory.open(home) as m:
        from .conftest import stored_anywhere

        assert stored_anywhere(m.conn, ANTHROPIC_KEY) == [] and stored_anywhere(m.conn, OPENAI_KEY) == []
    assert ANTHROPIC_KEY not in "".join(p.lines) and OPENAI_KEY not in "".join(p.lines)


def test_streams_are_relayed_event_by_event_and_the_answer_read_from_them(home, mem, upstream, proxy):
    """Both APIs streamed: every event the upstream sent reaches the client in order, and the
    answer stored is the streamed text with its tool call, as the next request will carry it."""
    p = proxy()
    upstream.answers = ["The kiln fires to cone 6 tonight."]
    upstream.tool_call = True
    with _anthropic(p.url).messages.stream(model="claude-test", max_tokens=100,
                                           messages=[{"role": "user", "content": "When does the kiln fire?"}]) as s:
        kinds = [event.type for event in s]
        final = s.get_final_message()
    assert kinds.count("content_block_delta") >= 4 and kinds[-1] == "message_stop"
    assert final.content[0].text == "The kiln fires to cone 6 tonight."
    assert final.content[1].input == {"city": "Paris"}
    upstream.answers = ["Cone 6, at eight."]
    chunks = list(_openai(p.url).chat.completions.create(model="gpt-test", stream=True, messages=[
        {"role": "user", "content": "Which cone and when?"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Cone 6, at eight."
    assert any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
    stored = {n["content"] for n in _wait_stored(home, 4)}
    assert 'The kiln fires to cone 6 tonight.\n[tool call get_weather {"city": "Paris"}]' in stored
    assert 'Cone 6, at eight.\n[tool call get_weather {"city": "Paris"}]' in stored


def test_memory_off_forwards_every_byte_as_sent(home, mem, upstream, proxy):
    """`--no-memory` and, with memory on, the x-tidemind-memory: off header: the upstream receives
    the client's body byte for byte and the client the upstream's; other paths and their query
    strings pass through; nothing is stored."""
    import httpx

    mem.digest("The staging database listens on port 5433.")
    mem.embed_pending()
    body = b'{"model": "claude-test",  "max_tokens": 5, "messages": [{"role": "user", "content": "staging port?"}]}'
    for extra, headers in ((("--no-memory",), {}), ((), {"x-tidemind-memory": "off"})):
        p = proxy(*extra)
        got = httpx.post(p.url + "/v1/messages", content=body, timeout=60,
                         headers={"content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01",
                                  **headers})
        assert got.status_code == 200 and upstream.seen[-1]["body"] == body
        assert got.content == json.dumps(_anthropic_whole("An answer.", False)).encode()
        assert "x-tidemind-memory" not in upstream.seen[-1]["headers"]
        listed = httpx.get(p.url + "/v1/models?limit=3", headers={"x-api-key": "k"}, timeout=60)
        assert listed.json()["path"] == "/v1/models" and upstream.seen[-1]["method"] == "GET"
        p.stop()
    assert _stored(home) == []


def test_upstream_errors_reach_the_client_as_sent_and_a_silent_upstream_is_a_504(home, mem, upstream, proxy):
    import anthropic
    import openai

    p = proxy("--upstream-timeout", "1")
    for status, anthropic_error, openai_error in ((429, anthropic.RateLimitError, openai.RateLimitError),
                                                   (500, anthropic.InternalServerError, openai.InternalServerError),
                                                   (401, anthropic.AuthenticationError, openai.AuthenticationError)):
        upstream.status = status
        with pytest.raises(anthropic_error) as raised:
            _anthropic(p.url).messages.create(model="claude-test", max_tokens=5,
                                              messages=[{"role": "user", "content": "hello"}])
        assert raised.value.status_code == status and "slow down" in str(raised.value)
        assert raised.value.response.headers["retry-after"] == "7"
        assert raised.value.response.headers["x-upstream-note"] == "kept"
        with pytest.raises(openai_error):
            _openai(p.url).chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hello"}])
    upstream.status = None
    upstream.stall = 30                          # far past the proxy's one second
    with pytest.raises(anthropic.APIStatusError) as raised:
        _anthropic(p.url).messages.create(model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 504 and "did not answer in time" in str(raised.value)
    upstream.stall = 0
    assert _stored(home) == []                   # no answer, nothing stored


def _window_client(p, upstream, history: list[dict], question: str, answer: str, keep: int = 4) -> dict:
    """One turn of a client that sends only its last `keep` messages; returns what the upstream got."""
    upstream.answers = [answer]
    messages = history[-keep:] + [{"role": "user", "content": question}]
    reply = _anthropic(p.url).messages.create(model="claude-test", max_tokens=50, messages=messages)
    history += [{"role": "user", "content": question}, {"role": "assistant", "content": reply.content[0].text}]
    return json.loads(upstream.seen[-1]["body"])


def test_turn_30_gets_turn_3_back_through_long_term_memory_after_the_window_moved_on(home, mem, upstream, proxy):
    """A client that keeps only its last four messages: a few turns later the proxy gives the
    dropped turns back from the branch (short-term); once they are out of the short-term window
    too, the product's recall brings the fact back (long-term)."""
    (home / "config.toml").write_text("[memory]\nwindow = 5\n")
    p = proxy()
    history: list[dict] = []
    fact = "My sister Ottilie moved to Bergen last spring."
    for turn in range(1, 30):
        question = fact if turn == 3 else f"Turn {turn}: what should I plant in bed number {turn}?"
        sent = _window_client(p, upstream, history, question, f"Noted, turn {turn}.")
        _wait_stored(home, 2 * turn)
        if turn == 6:                                   # turn 3 is no longer among the client's messages
            assert fact not in json.dumps(sent["messages"])
            block = sent["system"]
            assert "Earlier in this conversation:" in block and f"- user: {fact}" in block
    sent = _window_client(p, upstream, history, "Where does my sister live now?", "In Bergen.")
    block = sent["system"]
    earlier, _, recalled = block.partition("Recalled from earlier conversations and notes:")
    assert fact not in earlier and "Turn 27" in earlier and "Turn 24" not in earlier   # the window: the last five
    assert fact in recalled                                          # long-term memory brought it back
    assert len(block) <= 4000
    stored = _wait_stored(home, 60)
    assert len({n["session"] for n in stored}) == 1                # one conversation, one branch


def test_a_forked_conversation_never_sees_its_siblings_turns(home, mem, upstream, proxy):
    p = proxy()
    base = [{"role": "user", "content": "Plan a trip to Lisbon."}]
    upstream.answers = ["Sure: three days."]
    first = _anthropic(p.url).messages.create(model="claude-test", max_tokens=50, messages=base)
    base.append({"role": "assistant", "content": first.content[0].text})
    _wait_stored(home, 2)
    # the original branch goes on with a secret only it holds
    original = base + [{"role": "user", "content": "The code word for this branch is zebrafinch."}]
    upstream.answers = ["Got it."]
    _anthropic(p.url).messages.create(model="claude-test", max_tokens=50, messages=original)
    _wait_stored(home, 4)
    # the person edits their second message: a fork from the first exchange
    fork = base + [{"role": "user", "content": "Make it Porto instead."}]
    upstream.answers = ["Porto it is."]
    reply = _anthropic(p.url).messages.create(model="claude-test", max_tokens=50, messages=fork)
    fork.append({"role": "assistant", "content": reply.content[0].text})
    _wait_stored(home, 6)
    # the fork goes on with a client that sends only its last two messages
    upstream.answers = ["Trains from Lisbon."]
    _anthropic(p.url).messages.create(model="claude-test", max_tokens=50,
                                      messages=fork[-2:] + [{"role": "user", "content": "How do I get there?"}])
    sent = json.loads(upstream.seen[-1]["body"])
    assert "Plan a trip to Lisbon." in sent["system"]              # its own earlier turn, from the branch
    assert "zebrafinch" not in sent["system"] and "Got it." not in sent["system"]
    stored = _wait_stored(home, 8)
    session = {n["content"]: n["session"] for n in stored}
    assert session["Make it Porto instead."] != session["The code word for this branch is zebrafinch."]
    assert session["Make it Porto instead."] == session["How do I get there?"]
    assert session["Plan a trip to Lisbon."] == session["The code word for this branch is zebrafinch."]


def test_a_store_held_or_killed_mid_run_loses_nothing_queued_and_no_secret_reaches_the_disk(home, mem, upstream,
                                                                                           proxy, store):
    """The store's writer lock is held by another process: answers still come at once (the
    response path never waits on the store), each exchange is queued on disk, masked; the proxy
    is killed; started again after the lock is released, it stores every one of them, once."""
    import signal

    from tidemind.store.connection import connect

    secret = "sk-ant-api03-" + "Z" * 48
    p = proxy()
    if store:
        from tidemind.store.postgresql import Connection

        holder = Connection.connect(store)
    else:
        holder = connect(home / "tidemind.db")
    holder.execute("BEGIN IMMEDIATE")
    try:
        for n in range(5):
            upstream.answers = [f"Answer {n}."]
            reply = _anthropic(p.url).messages.create(model="claude-test", max_tokens=20, messages=[
                {"role": "user", "content": f"Question {n}: my key is {secret}, keep it safe"}])
            assert reply.content[0].text == f"Answer {n}."
        queued = (home / "proxy-queue" / "exchanges.jsonl").read_bytes()
        assert queued.count(b"\n") == 5 and secret.encode() not in queued and b"REDACTED" in queued
        p.proc.send_signal(signal.SIGKILL)
        p.proc.wait(timeout=30)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    proxy()
    stored = _wait_stored(home, 10)
    assert sorted(n["content"] for n in stored if n["tool"] != "proxy") == [f"Answer {n}." for n in range(5)]
    assert all(secret not in n["content"] for n in stored)
    with Memory.open(home) as m:
        from .conftest import stored_anywhere

        assert stored_anywhere(m.conn, secret) == []


def test_a_request_reads_and_writes_only_among_the_proxys_scopes(home, mem, upstream, proxy):
    """x-tidemind-scope chooses among the proxy's scopes (never more): a scope it does not serve
    turns memory off for that request, and nothing of another scope is ever injected."""
    mem.digest("The alpha launch code name is Heron.", scope="team:alpha")
    mem.digest("The beta launch code name is Osprey.", scope="team:beta")
    mem.digest("The private launch code name is Kestrel.", scope="personal")
    p = proxy("--scope", "team:alpha", "--scope", "team:beta")
    ask = lambda **h: _anthropic(p.url).messages.create(   # noqa: E731
        model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "What is the launch code name?"}],
        extra_headers=h)
    ask()
    both = json.loads(upstream.seen[-1]["body"])["system"]
    assert "Heron" in both and "Osprey" in both and "Kestrel" not in both
    ask(**{"x-tidemind-scope": "team:beta"})
    only = json.loads(upstream.seen[-1]["body"])
    assert "Osprey" in only["system"] and "Heron" not in only["system"]
    assert "x-tidemind-scope" not in upstream.seen[-1]["headers"]
    reply = _anthropic(p.url).messages.with_raw_response.create(
        model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "What is the launch code name?"}],
        extra_headers={"x-tidemind-scope": "personal"})
    assert reply.headers["x-tidemind-memory"].startswith("off") and "system" not in json.loads(upstream.seen[-1]["body"])
    stored = _wait_stored(home, 4)
    assert {n["scope"] for n in stored} == {"team:alpha", "team:beta"}      # writes: the first scope asked


def test_images_and_tool_results_pass_through_as_sent(home, mem, upstream, proxy):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                          "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="}}
    messages = [{"role": "user", "content": [image, {"type": "text", "text": "What is in this picture?"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "look", "input": {"zoom": 2}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "a red dot"}]}]
    p = proxy()
    _anthropic(p.url).messages.create(model="claude-test", max_tokens=5, messages=messages,
                                      tools=[{"name": "look", "description": "look closer",
                                              "input_schema": {"type": "object", "properties": {"zoom": {"type": "integer"}}}}])
    sent = json.loads(upstream.seen[-1]["body"])
    assert sent["messages"] == messages and sent["tools"][0]["name"] == "look"
    stored = {n["content"] for n in _wait_stored(home, 2)}
    assert "[tool result a red dot]" in stored


def test_listening_beyond_loopback_needs_a_token_of_the_store(home, mem, upstream, store):
    """Another address than loopback refuses to start while the store holds no token; with one,
    a request without a valid x-tidemind-token is a 401, and the token's scopes bound it."""
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "proxy", "--listen", "0.0.0.0:0",
                           "--anthropic-upstream", upstream.url], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1 and "holds no token" in proc.stderr
    token = mem.token_add("ci", ["team:ci"])["token"]
    p = ProxyProcess(home, upstream, "--listen", "0.0.0.0:0")
    try:
        url = p.url.replace("0.0.0.0", "127.0.0.1")
        import anthropic

        with pytest.raises(anthropic.AuthenticationError):
            _anthropic(url).messages.create(model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        assert upstream.seen == []                                         # refused before the upstream
        _anthropic(url).messages.create(model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "hi"}],
                                        extra_headers={"x-tidemind-token": token})
        assert "x-tidemind-token" not in upstream.seen[-1]["headers"]
        assert {n["scope"] for n in _wait_stored(home, 2)} == {"team:ci"}
    finally:
        p.stop()


def test_a_forgotten_turn_never_comes_back_through_the_branch(home, mem, upstream, proxy):
    p = proxy()
    history: list[dict] = []
    _window_client(p, upstream, history, "My locker code is 4417, remember it.", "Remembered.", keep=2)
    _window_client(p, upstream, history, "Also: the bike is blue.", "Noted.", keep=2)
    stored = _wait_stored(home, 4)
    said = next(n for n in stored if n["content"].startswith("My locker code"))
    with Memory.open(home) as m:
        m.forget(said["id"])
        from .conftest import stored_anywhere

        assert m.conn.execute("SELECT count(*) FROM proxy_exchanges").fetchone()[0] == 1     # its exchange went
        assert stored_anywhere(m.conn, "4417") == []
    sent = _window_client(p, upstream, history, "What else did I tell you?", "The bike.", keep=2)
    assert "4417" not in json.dumps(sent)


@pytest.mark.backends("sqlite", why="the bench fills a store of its own; test_store_postgresql runs it on a server")
def test_the_bench_times_the_proxy_and_loses_nothing_under_load(home, backend):
    from .conftest import run_cli

    proc = run_cli(home, "--json", "bench", "--nodes", "300", "--queries", "20", "--digests", "2", "--no-mcp",
                   "--proxy", "2")
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    r = json.loads(proc.stdout)
    load = r["proxy_load"]
    assert load["answered"] > 0 and load["failed"] == 0 and load["lost"] == 0 and load["stored"] == load["answered"]
    assert r["proxy_to_upstream_ms"]["n"] == r["direct_to_upstream_ms"]["n"] > 0
    assert r["proxy_first_event_after_upstream_ms"]["n"] > 0


# -- found by review ----------------------------------------------------------------------------------
def test_a_turn_the_store_refuses_is_set_aside_and_the_turns_behind_it_are_stored(home, mem, upstream, proxy):
    """An answer longer than one digest takes is stored cut (and says so); a turn the store refuses
    whatever happens (a NUL) is set aside, said in one line, and never blocks the queue: before,
    the worker retried it for ever and stored its question again at every try."""
    p = proxy()
    upstream.answers = ["x" * 100_050]
    _anthropic(p.url).messages.create(model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "long?"}])
    upstream.answers = ["fine"]
    _openai(p.url).chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "a\u0000b"}])
    upstream.answers = ["after"]
    _anthropic(p.url).messages.create(model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "next"}])
    stored = _wait_stored(home, 4)
    contents = [n["content"] for n in stored]
    assert contents.count("long?") == 1 and "next" in contents and "after" in contents
    cut = next(c for c in contents if c.startswith("xxx"))
    assert len(cut) <= 100_000 and cut.endswith("more characters not stored by the proxy]")
    aside = (home / "proxy-queue" / "set-aside.jsonl").read_text()
    assert "NUL" in aside
    # (the worker empties its file, and says what it set aside, a moment after the last store)
    _until(lambda: (home / "proxy-queue" / "exchanges.jsonl").read_bytes() == b"")
    _until(lambda: any("set aside" in line for line in p.lines))


def test_an_odd_stream_still_reaches_the_client_whole(home, mem, upstream, proxy):
    """An OpenAI-compatible upstream sending a tool call's arguments as an object broke the
    proxy's reading of the stream, and the client's stream was cut after its first event."""
    p = proxy()
    upstream.odd_stream = True
    upstream.answers = ["All of it."]
    chunks = list(_openai(p.url).chat.completions.create(model="gpt-test", stream=True,
                                                         messages=[{"role": "user", "content": "stream please"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "All of it."
    _until(lambda: any("not stored" in line for line in p.lines))


def test_a_request_the_proxy_cannot_read_goes_on_as_sent_with_the_clients_headers_only(home, mem, upstream, proxy):
    """A body the proxy's reader does not know got a bare 500 and never reached the upstream; and
    httpx added its own Accept, Accept-Encoding and User-Agent to what the client sent."""
    import http.client

    p = proxy()
    host, port = p.url.removeprefix("http://").split(":")
    body = json.dumps({"model": "gpt-test", "messages": [{"role": "assistant", "tool_calls": [{"function": "x"}]},
                                                         {"role": "user", "content": "hi"}]}).encode()
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.putrequest("POST", "/v1/chat/completions", skip_accept_encoding=True)
    conn.putheader("content-type", "application/json")
    conn.putheader("content-length", str(len(body)))
    conn.endheaders(body)
    got = conn.getresponse()
    assert got.status == 200 and json.loads(got.read())["choices"][0]["message"]["content"]
    assert got.getheader("x-tidemind-memory").startswith("off")
    seen = upstream.seen[-1]
    assert seen["body"] == body
    assert not {"accept", "accept-encoding", "user-agent"} & set(seen["headers"])


def test_two_branches_ending_alike_are_told_apart_by_their_earlier_turns(home, mem, upstream, proxy):
    """Found by review: the last question and answer alone ("continue" / "Done.") took the newest
    exchange ending so, another branch's: a client sending only its last turns got that branch's
    turns injected. The earlier pairs it sends must agree with the exchange's."""
    p = proxy()
    opening = [{"role": "user", "content": "Let us write two stories."}, {"role": "assistant", "content": "Ready."}]

    def run(middle_q: str, middle_a: str) -> list[dict]:
        history = list(opening)
        for q, a in ((middle_q, middle_a), ("continue", "Done.")):
            upstream.answers = [a]
            _anthropic(p.url).messages.create(model="claude-test", max_tokens=5,
                                              messages=history + [{"role": "user", "content": q}])
            history += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        return history

    upstream.answers = ["Ready."]
    _anthropic(p.url).messages.create(model="claude-test", max_tokens=5, messages=opening[:1])
    _wait_stored(home, 2)
    fox = run("A story about a fox named Ember.", "Ember ran.")
    _wait_stored(home, 6)
    run("A story about an owl named Quill.", "Quill flew.")              # the newest to end "continue"/"Done."
    _wait_stored(home, 10)
    upstream.answers = ["The end."]
    _anthropic(p.url).messages.create(model="claude-test", max_tokens=5,
                                      messages=fox[-4:] + [{"role": "user", "content": "finish it"}])
    block = json.loads(upstream.seen[-1]["body"]).get("system", "")
    assert "Let us write two stories." in block and "Quill" not in block


def test_the_queue_survives_a_cut_line_a_crash_while_emptying_and_a_second_owner(tmp_path):
    from tidemind.errors import InvalidInput
    from tidemind.proxy.queue import DurableQueue

    folder = tmp_path / "q"
    queue = DurableQueue(folder)
    queue.put({"exchange_id": "a"})
    with pytest.raises(InvalidInput, match="another tidemind proxy"):
        DurableQueue(folder)                                         # one owner at a time
    with open(queue.path, "ab") as fh:
        fh.write(b'{"exchange_id": "cut-by-a-cra')                  # a crash mid-append
    queue.close()
    queue = DurableQueue(folder)
    queue.put({"exchange_id": "b"})
    assert [e["exchange_id"] for _, e in queue.pending()] == ["a", "b"]
    stored = []
    assert queue.drain(lambda e: stored.append(e["exchange_id"])) == 2 and queue.path.read_bytes() == b""
    # a crash after the mark went back to 0 and before the file was emptied: replayed, not lost
    queue.put({"exchange_id": "c"})
    queue._mark(0)
    assert [e["exchange_id"] for _, e in queue.pending()] == ["c"]
    queue.close()


# -- the driver seam ---------------------------------------------------------------------------------
def _conversation(question: str):
    from tidemind.proxy.wire import read_request

    return read_request("anthropic", json.dumps({"model": "claude-test", "max_tokens": 10,
                                                 "messages": [{"role": "user", "content": question}]}).encode())


@pytest.mark.parametrize("kind", ["local", "in-memory"])
def test_both_drivers_keep_the_seams_promises(home, store, kind):
    """store -> recall finds it within the scopes asked -> forget -> recall finds it no more -> close:
    what the proxy relies on, held by the store's driver and by the test double alike."""
    from tidemind.proxy.driver import InMemoryDriver, LocalDriver, MemoryConfig

    driver = LocalDriver(str(home), MemoryConfig(), log=lambda line: None) if kind == "local" else InMemoryDriver()
    try:
        driver.store(_conversation("Where does the staging database listen?"),
                     "The staging database listens on port 5433 behind PgBouncer.", ["personal"])
        if kind == "local":
            assert driver.flush()
        asked = _conversation("Which port does the staging database listen on?")
        found = driver.recall(asked, ["personal"])
        assert "5433" in found.block and found.long_term >= 1 and found.node_ids
        assert "5433" not in driver.recall(asked, ["work"]).block          # never another scope's
        driver.forget(found.node_ids)
        assert "5433" not in driver.recall(asked, ["personal"]).block
    finally:
        driver.close()
    if kind == "local":
        assert not driver.worker.is_alive() and driver.queue.size() == 0     # closed with nothing left queued
    else:
        with pytest.raises(RuntimeError):
            driver.recall(asked, ["personal"])


def test_the_proxy_runs_on_the_test_double_without_a_store(tmp_path, upstream):
    """The ASGI app over InMemoryDriver, served in this process: the first exchange is kept by the
    driver, the second request gets it back in the injected block, the client's messages as sent."""
    import asyncio

    import uvicorn

    from tidemind.proxy.app import Proxy, Upstreams
    from tidemind.proxy.driver import BLOCK_OPEN, InMemoryDriver

    driver = InMemoryDriver()
    app = Proxy(driver, Upstreams(upstream.url, upstream.url), ["personal"], log=lambda line: None)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", interface="asgi3"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    _until(lambda: server.started)
    try:
        client = _anthropic(url)
        upstream.answers = ["The staging database listens on port 5433."]
        client.messages.create(model="claude-test", max_tokens=50,
                               messages=[{"role": "user", "content": "Where does staging listen?"}])
        _until(lambda: driver.exchanges)
        assert driver.exchanges[0]["answer"] == "The staging database listens on port 5433."
        assert driver.exchanges[0]["scope"] == "personal"
        second = [{"role": "user", "content": "Remind me: which port does the staging database use?"}]
        client.messages.create(model="claude-test", max_tokens=50, messages=second)
        sent = json.loads(upstream.seen[-1]["body"])
        assert BLOCK_OPEN in json.dumps(sent["system"]) and "5433" in json.dumps(sent["system"])
        assert sent["messages"] == second
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    assert driver.closed                   # the app's shutdown closed its driver
