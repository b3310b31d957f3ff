"""`tidemind serve --http` with bearer tokens (issue 27): the real server as a subprocess, the SDK's
real streamable HTTP client, on SQLite and PostgreSQL (the subprocess inherits TIDEMIND_STORE)."""
from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager, contextmanager

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tidemind.mcp_http import is_loopback, parse_address
from tidemind.errors import InvalidInput

from .conftest import ROOT, cli_json, run_cli, stored_anywhere
from .test_mcp import call

READY = re.compile(r"listening on (http://\S+/mcp)")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Served:
    """A `tidemind serve --http` subprocess: its URL once it said it listens, and every line it logged."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.lines: list[str] = []
        self._ready: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace")
            self.lines.append(line)
            found = READY.search(line)
            if found:
                self._ready.put(found.group(1))
        self._ready.put(None)                    # it ended without saying it listens

    def wait_ready(self, timeout: float = 90) -> str:
        url = self._ready.get(timeout=timeout)
        assert url is not None, "the server ended before it listened:\n" + "".join(self.lines)
        return url

    @property
    def log(self) -> str:
        return "".join(self.lines)


@contextmanager
def http_server(home, *args):
    """The server on a port the system picks (127.0.0.1:0); ready when it prints the line saying where."""
    proc = subprocess.Popen([sys.executable, "-m", "tidemind.cli", "--home", str(home), "serve", "--http",
                             "127.0.0.1:0", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
                            env=dict(os.environ, TIDEMIND_HOME=str(home)))
    served = Served(proc)
    try:
        served.url = served.wait_ready()
        yield served
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@asynccontextmanager
async def session(url: str, token: str | None):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def post(url: str, headers: dict | None = None) -> httpx2.Response:
    return httpx2.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **(headers or {})}, timeout=30)


def add_token(home, name: str, *scopes: str) -> str:
    args = [a for s in scopes for a in ("--scope", s)]
    return cli_json(home, "tokens", "add", name, *args)["token"]


# -- the leak suite over HTTP ---------------------------------------------------------------------------
ALPHA = "The alpha kiln fires at 1240 degrees with the lid vented."
BETA = "The beta kiln fires at 980 degrees, lid closed, in the garden shed."
SHARED = "The shared kiln log lives in the blue binder."


def test_each_token_reads_and_writes_only_its_own_scopes_through_every_tool(home, mem):
    alpha_id = mem.digest(ALPHA, scope="alpha")["node_ids"][0]
    beta_id = mem.digest(BETA, scope="beta")["node_ids"][0]
    shared_id = mem.digest(SHARED, scope="shared")["node_ids"][0]
    old_port = mem.digest("The beta payments service listens on port 3000.", scope="beta")["node_ids"][0]
    mem.correct(old_port, "The beta payments service listens on port 8080.")
    alice = add_token(home, "alice", "alpha")
    bob = add_token(home, "bob", "beta", "shared")
    beta_words = ("980", "garden shed", "beta kiln", "8080", "3000")

    def no_beta(value) -> None:
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        leaked = [w for w in beta_words if w in text]
        assert not leaked, f"alice's answer holds beta's words {leaked}: {text[:400]}"

    async def main(url):
        async with session(url, alice) as a:
            assert {t.name for t in (await a.list_tools()).tools} == {"brain_prepare", "brain_recall", "brain_digest"}
            found = await call(a, "brain_recall", query="what temperature does the kiln fire at")
            assert found["items"] and {i["scope"] for i in found["items"]} == {"alpha"}, found
            assert found["scopes"] == ["alpha"]
            no_beta(found)
            for mode in ("index", "clarify"):
                no_beta(await call(a, "brain_recall", query="kiln degrees garden shed lid", mode=mode))
            assert "outside" in (await call(a, "brain_recall", query="kiln", scope="beta"))["error"]
            assert "outside" in (await call(a, "brain_recall", query="kiln", scope=["alpha", "shared"]))["error"]
            for key in ("node_id", "from_node"):
                for other in (beta_id, shared_id):
                    refused = await call(a, "brain_recall", **{key: other})
                    assert "error" in refused, refused
                    no_beta(refused)
            prepared = await call(a, "brain_prepare", hint="kiln")
            assert "1240" in prepared
            no_beta(prepared)
            # writes land in the token's first scope, never in another
            wrote = await call(a, "brain_digest", content="The alpha glaze is 60 feldspar, 20 silica, 20 whiting.")
            assert wrote["scope"] == "alpha"
            assert "outside" in (await call(a, "brain_digest", content="sneaked in", scope="beta"))["error"]
            # the digest's own answer (reasserted corrections, questions, review items) says nothing of beta
            echoed = await call(a, "brain_digest", content="The beta payments service listens on port 3000.")
            assert echoed["scope"] == "alpha"
            assert not echoed.get("review_items"), echoed
            no_beta({k: v for k, v in echoed.items() if k != "content"})
            for intent in ("correct", "archive", "forget"):
                refused = await call(a, "brain_digest", intent=intent, target_node=beta_id, content="overwritten")
                assert "error" in refused, (intent, refused)
            assert "error" in await call(a, "brain_digest", intent="archive", target_node=shared_id)
        async with session(url, bob) as b:
            found = await call(b, "brain_recall", query="what temperature does the kiln fire at")
            assert found["items"] and {i["scope"] for i in found["items"]} <= {"beta", "shared"}
            assert "1240" not in json.dumps(found) and "feldspar" not in json.dumps(found)
            assert sorted(found["scopes"]) == ["beta", "shared"]
            assert (await call(b, "brain_recall", query="blue binder kiln log", scope="shared"))["items"]
            assert "error" in await call(b, "brain_recall", node_id=alpha_id)
            prepared = await call(b, "brain_prepare")
            assert "1240" not in prepared and "feldspar" not in prepared
            wrote = await call(b, "brain_digest", content="The beta glaze is a celadon.")
            assert wrote["scope"] == "beta"
            shared_write = await call(b, "brain_digest", content="The shared kiln is booked on Fridays.", scope="shared")
            assert shared_write["scope"] == "shared"
        return wrote["node_ids"][0]

    with http_server(home) as served:
        bob_node = anyio.run(main, served.url)
    # what the store holds: alice's writes in alpha, bob's in beta, every beta memory as it was
    mem.conn.execute("SELECT 1").fetchall()
    scopes_by_text = {r[0]: r[1] for r in mem.conn.execute("SELECT content, scope FROM nodes WHERE status = 'live'")}
    assert scopes_by_text["The alpha glaze is 60 feldspar, 20 silica, 20 whiting."] == "alpha"
    assert scopes_by_text["The beta glaze is a celadon."] == "beta"
    assert "sneaked in" not in scopes_by_text
    assert mem.show(beta_id)["content"] == BETA
    assert mem.show(shared_id)["status"] == "live"
    actors = {r[0] for r in mem.conn.execute("SELECT actor FROM audit_log WHERE node_id = ?", (bob_node,))}
    assert actors == {"mcp:bob"}                       # the audit log names the token's holder
    assert mem.show(bob_node)["written_by"] == "agent"  # and a reader weighs it as an agent's, as over stdio


def test_refusals_are_401_with_a_sentence_and_a_revoked_token_is_refused_at_once(home, mem):
    mem.digest(ALPHA, scope="alpha")
    alice = add_token(home, "alice", "alpha")
    with http_server(home, "--scope", "alpha") as served:
        url = served.url
        missing = post(url)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert "needs a bearer token" in missing.json()["error_description"]
        wrong = post(url, {"Authorization": "Bearer tidemind_" + "x" * 43})
        assert wrong.status_code == 401 and "not one this TideMind store knows" in wrong.json()["error_description"]
        basic = post(url, {"Authorization": "Basic YWxpY2U6cHc="})
        assert basic.status_code == 401 and "Bearer <token>" in basic.json()["error_description"]
        assert post(url, {"Authorization": f"Bearer {alice}"}).status_code == 200

        async def recall_works():
            async with session(url, alice) as a:
                assert (await call(a, "brain_recall", query="kiln degrees"))["items"]
                # revoked by another process, mid-session: the next request is refused
                proc = run_cli(home, "tokens", "revoke", "alice")
                assert proc.returncode == 0, proc.stderr.decode()
                with pytest.raises(Exception):
                    await call(a, "brain_recall", query="kiln degrees")

        anyio.run(recall_works)
        revoked = post(url, {"Authorization": f"Bearer {alice}"})
        assert revoked.status_code == 401 and "was revoked" in revoked.json()["error_description"]
        assert "alice" in revoked.json()["error_description"]
        # a new token for the same person works at once, without a restart
        again = add_token(home, "alice", "alpha")
        assert post(url, {"Authorization": f"Bearer {again}"}).status_code == 200
    assert "refused POST /mcp from 127.0.0.1: revoked token of alice" in served.log
    for token in (alice, again):
        assert token not in served.log and token.removeprefix("tidemind_") not in served.log


def test_tokens_never_reach_the_store_the_log_or_a_listing_in_clear(home, mem):
    alice = add_token(home, "alice", "alpha", "personal")
    bob = add_token(home, "bob", "beta")
    listed = run_cli(home, "--json", "tokens", "list")
    human = run_cli(home, "tokens", "list")
    mem.digest(f"Alice's server token is {alice} - keep it safe.", scope="alpha")      # pasted into a memory

    async def use(url):
        for token in (alice, bob):
            async with session(url, token) as s:
                await call(s, "brain_digest", content=f"Bob said his token is {bob}.")
                await call(s, "brain_recall", query="token safe")
                await call(s, "brain_prepare")

    with http_server(home) as served:
        anyio.run(use, served.url)
        post(served.url, {"Authorization": f"Bearer {alice}x"})            # a near miss is logged, not echoed
    run_cli(home, "tokens", "revoke", "bob")
    for token in (alice, bob):
        secret = token.removeprefix("tidemind_")
        assert stored_anywhere(mem.conn, secret) == [], token[:12]
        assert secret not in served.log
        assert secret not in listed.stdout.decode() and secret not in human.stdout.decode()
    entries = "".join(p.read_text(encoding="utf-8") for p in mem.settings.stream_dir.glob("*.md"))
    assert "tidemind_" in entries and alice.removeprefix("tidemind_") not in entries   # masked where it is kept
    rows = json.loads(listed.stdout)["tokens"]
    assert [(t["name"], t["scopes"]) for t in rows] == [("alice", ["alpha", "personal"]), ("bob", ["beta"])]
    after = cli_json(home, "tokens", "list")["tokens"]
    assert {t["name"]: (t["last_used_at"] is not None, t["revoked_at"] is not None) for t in after} == \
        {"alice": (True, False), "bob": (True, True)}
    audited = [(a, json.loads(d)) for a, d in mem.conn.execute(
        "SELECT action, details FROM audit_log WHERE action LIKE 'token_%' ORDER BY id")]
    assert [(a, d["token_name"]) for a, d in audited] == [("token_add", "alice"), ("token_add", "bob"),
                                                           ("token_revoke", "bob")]


def test_loopback_without_tokens_serves_its_own_scopes_until_the_first_token(home, mem):
    mem.digest(ALPHA, scope="alpha")
    mem.digest(BETA, scope="beta")

    async def recall(url, token=None):
        async with session(url, token) as s:
            return await call(s, "brain_recall", query="kiln fires degrees")

    with http_server(home, "--scope", "beta") as served:
        assert "no token is defined" in served.log
        found = anyio.run(recall, served.url)
        assert {i["scope"] for i in found["items"]} == {"beta"}          # as `serve --scope beta` over stdio
        alice = add_token(home, "alice", "alpha")
        assert post(served.url).status_code == 401                       # from the first token on, always asked
        assert {i["scope"] for i in anyio.run(recall, served.url, alice)["items"]} == {"alpha"}
        run_cli(home, "tokens", "revoke", "alice")
        assert post(served.url).status_code == 401                       # and it stays so


@pytest.mark.backends("sqlite", why="refused before the store is served; which backend holds no token is immaterial")
def test_a_server_other_machines_could_reach_refuses_to_start_without_a_token(home, mem):
    for args in (["--http", "0.0.0.0:0"], ["--http", "[::]:0"], ["--http", "127.0.0.1:0", "--require-token"]):
        proc = run_cli(home, "serve", *args)
        assert proc.returncode == 1, args
        err = proc.stderr.decode()
        assert "refusing to serve over HTTP without a token" in err and "tidemind tokens add" in err, err
        assert "listening" not in err
    assert "--http takes HOST:PORT" in run_cli(home, "serve", "--http", "8765").stderr.decode()
    assert "is for --http" in run_cli(home, "serve", "--require-token").stderr.decode()


@pytest.mark.backends("sqlite", why="argument checks; no store involved")
def test_token_names_and_scopes_are_checked_and_a_live_name_is_not_given_twice(home, mem):
    add_token(home, "alice", "alpha")
    twice = run_cli(home, "tokens", "add", "alice", "--scope", "alpha")
    assert twice.returncode == 1 and "revoke it first" in twice.stderr.decode()
    assert "at least one --scope" in run_cli(home, "tokens", "add", "carol").stderr.decode()
    assert "invalid token name" in run_cli(home, "tokens", "add", "-x y", "--scope", "a").stderr.decode()
    assert "invalid scope" in run_cli(home, "tokens", "add", "carol", "--scope", "bad scope").stderr.decode()
    assert "no live token named" in run_cli(home, "tokens", "revoke", "nobody").stderr.decode()
    assert [t["name"] for t in cli_json(home, "tokens", "list")["tokens"]] == ["alice"]


def test_addresses():
    assert parse_address("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_address("[::1]:0") == ("::1", 0)
    assert parse_address("example.org:443") == ("example.org", 443)
    for bad in ("8765", "::1:80", "host:port", ":80", "h:70000"):
        with pytest.raises(InvalidInput):
            parse_address(bad)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("192.168.1.2")


# -- hooks pointed at the server (install-hooks --url writes these commands) ------------------------
def run_hook(event: str, url: str, stdin: dict, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tidemind.cli", "hook", event, "--host", "claude-code", "--url", url,
                           "--token-env", "TEAM_MEMORY_TOKEN"], input=json.dumps(stdin).encode(),
                          capture_output=True, cwd=ROOT, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if k != "TEAM_MEMORY_TOKEN"}, **env})


def test_the_hooks_ask_the_remote_server_in_the_tokens_scopes_and_never_fail_the_host(home, mem, tmp_path):
    mem.digest(ALPHA, scope="alpha")
    mem.digest(BETA, scope="beta")
    alice = add_token(home, "alice", "alpha")
    elsewhere = tmp_path / "laptop"                     # the hook's own machine: no store of its own
    with http_server(home) as served:
        env = {"TEAM_MEMORY_TOKEN": alice, "TIDEMIND_HOME": str(elsewhere)}
        started = run_hook("session-start", served.url, {"hook_event_name": "SessionStart"}, env)
        assert started.returncode == 0, started.stderr.decode()
        context = json.loads(started.stdout)["hookSpecificOutput"]
        assert context["hookEventName"] == "SessionStart" and "1240" in context["additionalContext"]
        assert "980" not in context["additionalContext"]
        prompt = run_hook("user-prompt", served.url, {"prompt": "what temperature does the alpha kiln fire at"}, env)
        said = json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "1240 degrees" in said and "980" not in said
        asked_beta = run_hook("user-prompt", served.url, {"prompt": "what temperature does the beta kiln fire at in"
                                                                    " the garden shed"}, env)
        assert b"980" not in asked_beta.stdout
        run_cli(home, "tokens", "revoke", "alice")
        refused = run_hook("session-start", served.url, {}, env)
        assert refused.returncode == 0                 # a hook never fails the host: one line instead
        line = json.loads(refused.stdout)["hookSpecificOutput"]["additionalContext"]
        assert line.startswith("(TideMind: ") and served.url in line and "was revoked" in line
        assert alice.removeprefix("tidemind_") not in (refused.stdout + refused.stderr).decode()
        unset = run_hook("session-start", served.url, {}, {"TIDEMIND_HOME": str(elsewhere)})
        assert "$TEAM_MEMORY_TOKEN holds no token" in json.loads(unset.stdout)["hookSpecificOutput"]["additionalContext"]
        assert run_hook("stop", served.url, {"transcript_path": "/nonexistent"}, env).stdout == b""
    assert not (elsewhere / "tidemind.db").exists()     # nothing was opened locally
