"""`tidemind serve` driven by the official TypeScript MCP client (@modelcontextprotocol/sdk, the one
most agent hosts embed), beside tests/test_mcp.py's Python client: the handshake and
serverInfo.version, the tool list, every intent and mode, the errors, and a lone surrogate that
JSON.stringify writes as "\\ud800" answered at once instead of left to the client's timeout.

The client is installed by the test itself from the npm registry into .test-cache/ (ignored by git),
pinned by tests/interop/package.json and package-lock.json; a second run finds it there and installs
nothing. Without node and npm (CI installs both from Debian's packages) the test is skipped and says
why.
"""
import json
import select
import shutil
import subprocess
import sys
import time

import pytest

from tidemind import __version__

from .conftest import ROOT

INTEROP = ROOT / "tests" / "interop"
CACHE = ROOT / ".test-cache" / "ts-mcp-client"
TRICKY = "naïve café 🧠 שלום e\u0301\n```ts\nconst x = 1;\n```\ttab \x07 end  "


@pytest.fixture(scope="module")
def ts_client():
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are not on this machine: the TypeScript MCP client cannot run "
                    "(.ci/run installs them from Debian's packages)")
    pinned = json.loads((INTEROP / "package.json").read_text())["dependencies"]["@modelcontextprotocol/sdk"]
    CACHE.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json", "ts_client.mjs"):
        shutil.copy(INTEROP / name, CACHE / name)
    installed = CACHE / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    started = time.monotonic()
    if not installed.is_file() or json.loads(installed.read_text())["version"] != pinned:
        proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=CACHE,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"npm install of the TypeScript MCP client failed: {proc.stderr[-2000:]}"
    print(f"\nTypeScript MCP client {pinned}: ready in {time.monotonic() - started:.1f} s")
    return node


class Session:
    """The node driver (tests/interop/ts_client.mjs): one JSON command in, one JSON answer out."""

    def __init__(self, node, home, *scopes):
        server = [sys.executable, "-m", "tidemind.cli", "--home", str(home), "serve"]
        for s in scopes:
            server += ["--scope", s]
        self.proc = subprocess.Popen([node, str(CACHE / "ts_client.mjs"), json.dumps(server)], cwd=str(ROOT),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def ask(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")     # ensure_ascii: a lone surrogate travels as \ud800
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 90)
        assert ready, f"no answer from the TypeScript client to {cmd}"
        line = self.proc.stdout.readline()
        assert line, "the TypeScript client exited"
        return json.loads(line)

    def call(self, name, timeout_ms=30000, **arguments):
        """The tool's structured result, or {"error": text} for a tool error or a refused request."""
        r = self.ask(op="call", name=name, arguments=arguments, timeout_ms=timeout_ms)
        if "thrown" in r:
            return {"error": r["thrown"], "code": r["code"]}
        result = r["result"]
        if result.get("isError"):
            return {"error": result["content"][0]["text"]}
        structured = result.get("structuredContent")
        if structured is not None:
            return structured.get("result", structured)
        return result["content"][0]["text"]

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def session(ts_client, home):
    s = Session(ts_client, home, "project:a")
    yield s
    s.close()


def test_handshake_reports_the_package_version_and_lists_the_tools(session):
    info = session.ask(op="info")
    assert info["server"] == {"name": "tidemind", "version": __version__}
    assert "brain_prepare" in info["instructions"] and "tools" in info["capabilities"]
    tools = {t["name"]: t for t in session.ask(op="list")["tools"]}
    assert set(tools) == {"brain_prepare", "brain_recall", "brain_digest"}
    assert tools["brain_recall"]["annotations"]["readOnlyHint"] is True
    assert tools["brain_digest"]["annotations"]["destructiveHint"] is True
    recall = tools["brain_recall"]["inputSchema"]["properties"]
    assert {"query", "node_id", "from_node", "mode", "as_of", "clock", "choose"} <= set(recall)
    digest = tools["brain_digest"]["inputSchema"]["properties"]
    assert {"content", "intent", "target_node", "source", "skip"} <= set(digest)


def test_every_intent_and_mode_through_the_typescript_client(session):
    s = session
    stored = s.call("brain_digest", content=TRICKY, source={"tool": "ts-client", "session": "s1"})
    nid = stored["node_ids"][0]
    shown = s.call("brain_recall", node_id=nid)
    assert shown["items"][0]["content"] == TRICKY                  # byte-exact through JSON.stringify
    assert shown["items"][0]["source"] == {"tool": "ts-client", "session": "s1", "capture": stored["capture_id"]}

    old = s.call("brain_digest", content="The payments service listens on port 3000.")["node_ids"][0]
    new = s.call("brain_digest", intent="correct", target_node=old,
                 content="The payments service listens on port 8080.")["node_ids"][0]
    again = s.call("brain_digest", content="The payments service listens on port 3000.")
    assert again["warnings"] and again["review_items"]
    hits = s.call("brain_recall", query="payments service port")
    ids = [i["id"] for i in hits["items"]]
    assert new in ids and old not in ids
    assert any(f.startswith("contradiction") for f in next(i["flags"] for i in hits["items"] if i["id"] == new))
    index = s.call("brain_recall", query="payments service port", mode="index")
    assert set(index["items"][0]) == {"id", "title", "score"}
    past = s.call("brain_recall", query="payments service port", as_of=shown["items"][0]["recorded_at"],
                  clock="recorded")
    assert old not in [i["id"] for i in past["items"]]
    around = s.call("brain_recall", from_node=new)
    assert around["items"][0]["id"] == new
    nothing = s.call("brain_recall", query="favourite ice cream flavour of the CFO")
    assert nothing["abstained"] is True and nothing["items"] == []

    s.call("brain_digest", content="Alex Chen owns the billing service.")
    s.call("brain_digest", content="Alex Rivera designs the mobile app.")
    held = s.call("brain_digest", content="Alex approved the new invoice layout.")
    [question] = held["questions"]
    answered = s.call("brain_digest", intent="clarify", target_node=held["node_ids"][0], content="Alex Rivera")
    assert question["question"].startswith("Which Alex") and answered["state"] == "answered"
    other = s.call("brain_digest", content="Alex wrote the release notes.")
    assert s.call("brain_digest", intent="clarify", target_node=other["node_ids"][0], skip=True)["state"] == "skipped"
    s.call("brain_digest", content="Alex Chen's phone number is 555-0101.")
    s.call("brain_digest", content="Alex Rivera's phone number is 555-0202.")
    asked = s.call("brain_recall", query="Alex phone number", mode="clarify")
    assert {g["choice"] for g in asked["clarify"]["groups"]} == {"Alex Chen", "Alex Rivera"}
    picked = s.call("brain_recall", query="Alex phone number", choose="Alex Rivera")
    assert "555-0202" in picked["items"][0]["content"]
    taste = s.call("brain_recall", query="codebook", mode="taste")
    assert taste["taste"] == "codebook"

    assert s.call("brain_digest", intent="archive", target_node=nid)["node_ids"] == [nid]
    assert "archived" in s.call("brain_recall", node_id=nid)["error"]
    assert set(s.call("brain_digest", intent="forget", target_node=new)["node_ids"]) == {old, new}
    text = s.call("brain_prepare")
    assert "project:a" in text and len(text) <= 9800 and "8080" not in text


def test_errors_reach_the_typescript_client_as_errors(session):
    s = session
    for name, args, says in [
        ("brain_recall", {"node_id": True}, "node_id"),                    # a boolean is not an id
        ("brain_recall", {}, "exactly one of query, node_id or from_node"),
        ("brain_recall", {"query": "x", "scope": "personal"}, "outside this server's scopes"),
        ("brain_recall", {"query": "x", "mode": "sideways"}, "mode"),
        ("brain_digest", {"intent": "correct", "content": "x"}, "target_node"),
        ("brain_digest", {"content": "   "}, "empty"),
        ("brain_digest", {"intent": "archive", "target_node": 999999}, "999999"),
        ("brain_nonexistent", {}, "brain_nonexistent"),
    ]:
        r = s.call(name, **args)
        assert "error" in r and says in r["error"], (name, args, r)
    assert s.call("brain_prepare")                                  # the session survives every refusal


def test_a_lone_surrogate_is_answered_at_once_not_left_to_time_out(session):
    """JSON.stringify writes a lone surrogate as the escape \\ud800, which no UTF-8 text can hold."""
    started = time.monotonic()
    r = session.call("brain_digest", timeout_ms=15000, content="half a pair: \ud800 here")
    took = time.monotonic() - started
    assert r.get("code") == -32602 and "surrogate" in r["error"] and took < 10, (r, took)
    stored = session.call("brain_digest", content="the server still answers after it")
    assert stored["node_ids"] and "unpaired" not in json.dumps(stored)
