"""The MCP server through a real client over stdio (`tidemind serve` as a subprocess)."""
import os
import sys
from contextlib import asynccontextmanager

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client

from tidemind import __version__
from tidemind.mcp_server import build_server
from tidemind.memory import Memory
from tidemind.store import immediate, links

from .conftest import ROOT

TRICKY = "naïve café 🧠 שלום e\u0301\n```py\nx = 1\n```\ttab \x07 end  "


@asynccontextmanager
async def session_for(home, *scopes):
    args = ["-m", "tidemind.cli", "--home", str(home), "serve"]
    for s in scopes:
        args += ["--scope", s]
    # the SDK starts the server with a few inherited variables only: the store a test runs on goes along
    env = {**get_default_environment(), **{k: v for k, v in os.environ.items() if k == "TIDEMIND_STORE"}}
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session, tool, **arguments):
    r = await session.call_tool(tool, arguments)
    if r.is_error:
        return {"error": r.content[0].text}
    if r.structured_content is not None:
        return r.structured_content.get("result", r.structured_content)
    return r.content[0].text


def test_every_intent_and_mode_end_to_end(home):
    async def main():
        async with session_for(home, "project:a") as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert names == {"brain_prepare", "brain_recall", "brain_digest"}
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert tools["brain_recall"].annotations.read_only_hint is True
            assert tools["brain_digest"].annotations.destructive_hint is True

            stored = await call(s, "brain_digest", content=TRICKY, source={"tool": "pytest", "session": "s1"})
            nid = stored["node_ids"][0]
            shown = await call(s, "brain_recall", node_id=nid)
            assert shown["items"][0]["content"] == TRICKY                  # byte-exact through JSON
            assert shown["items"][0]["source"] == {"tool": "pytest", "session": "s1", "capture": stored["capture_id"]}

            port = await call(s, "brain_digest", content="The payments service listens on port 3000.")
            old = port["node_ids"][0]
            fixed = await call(s, "brain_digest", intent="correct", target_node=old,
                               content="The payments service listens on port 8080.")
            new = fixed["node_ids"][0]
            again = await call(s, "brain_digest", content="The payments service listens on port 3000.")
            assert again["warnings"] and again["review_items"]

            hits = await call(s, "brain_recall", query="payments service port")
            ids = [i["id"] for i in hits["items"]]
            assert new in ids and old not in ids
            flags = next(i["flags"] for i in hits["items"] if i["id"] == new)
            assert any(f.startswith("contradiction") for f in flags)
            index = await call(s, "brain_recall", query="payments service port", mode="index")
            assert set(index["items"][0]) == {"id", "title", "score"}

            past = await call(s, "brain_recall", query="payments service port", as_of=shown["items"][0]["recorded_at"],
                              clock="recorded")
            assert old not in [i["id"] for i in past["items"]]             # recorded before the old claim existed
            nothing = await call(s, "brain_recall", query="favourite ice cream flavour of the CFO")
            assert nothing["abstained"] is True and nothing["items"] == []

            archived = await call(s, "brain_digest", intent="archive", target_node=nid)
            assert archived["node_ids"] == [nid]
            gone = await call(s, "brain_recall", node_id=nid)
            assert "archived" in gone["error"]
            forgotten = await call(s, "brain_digest", intent="forget", target_node=new)
            assert set(forgotten["node_ids"]) == {old, new}

            text = await call(s, "brain_prepare")
            assert "project:a" in text and len(text) <= 9800
            assert "8080" not in text and TRICKY.split()[0] not in text    # forgotten and archived stay out

            bad = await call(s, "brain_digest", intent="correct", content="x")
            assert "target_node" in bad["error"]
            empty = await call(s, "brain_digest", content="   ")
            assert "empty" in empty["error"]
    anyio.run(main)


def test_traversal_walks_confirmed_links_only(home):
    with Memory.open(home) as m:
        a, b, c = (m.digest(t, scope="project:a")["node_ids"][0] for t in
                   ("hub memory about the release process", "confirmed neighbour: tag first", "pending neighbour"))
        now = m.now()
        with immediate(m.conn):
            links.add(m.conn, a, b, status="confirmed", proposed_by="test", at=now)
            links.add(m.conn, a, c, status="pending", proposed_by="test", at=now)

    async def main():
        async with session_for(home, "project:a") as s:
            r = await call(s, "brain_recall", from_node=a)
            ids = [i["id"] for i in r["items"]]
            assert ids == [a, b]
            statuses = {l["target"]: l["status"] for l in r["items"][0]["links"]}
            assert statuses == {b: "confirmed", c: "pending"}
    anyio.run(main)


def test_a_server_for_one_scope_cannot_touch_another(home):
    with Memory.open(home) as m:
        other = m.digest("secret plans of project b", scope="project:b")["node_ids"][0]
        m.digest("ordinary note of project a", scope="project:a")

    async def main():
        async with session_for(home, "project:a") as s:
            for args in ({"query": "secret plans", "scope": "project:b"},
                         {"query": "secret plans", "scope": ["project:a", "project:b"]},
                         {"node_id": other}, {"from_node": other}):
                r = await call(s, "brain_recall", **args)
                assert "error" in r, args
            r = await call(s, "brain_recall", query="secret plans of project b")
            assert r["abstained"] is True
            for args in ({"content": "sneaky", "scope": "project:b"},
                         {"intent": "archive", "target_node": other},
                         {"intent": "forget", "target_node": other},
                         {"intent": "correct", "target_node": other, "content": "rewritten"}):
                r = await call(s, "brain_digest", **args)
                assert "error" in r, args
            text = await call(s, "brain_prepare")
            assert "secret plans" not in text
    anyio.run(main)
    with Memory.open(home) as m:
        assert m.show(other, scopes=["project:b"])["content"] == "secret plans of project b"
        assert m.stats(["project:b"])["nodes"]["live"] == 1


def test_scope_is_derived_from_the_git_repository(tmp_path):
    from tidemind.config import load_settings
    from tidemind.scopes import derive_scopes

    repo = tmp_path / "My Shop"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    settings = load_settings(tmp_path / "home")
    [derived] = derive_scopes(None, settings, repo / "src")
    assert derived.startswith("project:My-Shop@") and derived == derive_scopes(None, settings, repo)[0]
    assert derive_scopes(["personal"], settings, repo) == ["personal"]
    assert derive_scopes(None, settings, tmp_path) == ["personal"]


def test_two_repositories_of_one_name_or_with_no_ascii_name_never_share_a_scope(tmp_path):
    """Every repository called "api", and every one whose name has no ASCII letter ("日記"), became
    one scope and shared its memories. The scope carries the repository's own id (random,
    recorded in its git config: tests/reliability/test_scope_identity.py); memories written under
    the old name stay readable, not writable."""
    import subprocess

    from tidemind.config import load_settings
    from tidemind.scopes import derive_scopes

    settings = load_settings(tmp_path / "home")
    made = []
    for parent, name in (("a", "api"), ("b", "api"), ("c", "日記"), ("d", "日本")):
        repo = tmp_path / parent / name
        repo.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                        "--allow-empty", "-m", f"root of {parent}"], check=True)
        made.append(derive_scopes(None, settings, repo)[0])
    assert len(set(made)) == 4, made
    assert made[2].startswith("project:xn--") and made[3].startswith("project:xn--")
    clone = tmp_path / "clone" / "api"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "a" / "api"), str(clone)], check=True)
    assert derive_scopes(None, settings, clone)[0] != made[0]          # a clone is another checkout: its own id
    ident = made[0].rsplit("@", 1)[1]
    subprocess.run(["git", "-C", str(clone), "config", "tidemind.scope-id", ident], check=True)   # unless told
    assert derive_scopes(None, settings, clone)[0] == made[0]

    with Memory.open(tmp_path / "home") as m:
        m.digest("written before scopes carried the repository's id", scope="project:api")
    server = build_server(str(tmp_path / "home"), None, cwd=tmp_path / "a" / "api")
    assert server.memory.readable == [made[0], "project:api"] and server.memory.writable == [made[0]]
    assert server.memory.recall("written before scopes")["items"]
    server.memory.close()


def test_server_embeds_in_the_background(home):
    async def main():
        async with session_for(home, "project:a") as s:
            r = await call(s, "brain_digest", content="The nightly backup job runs at 02:00 from the ops host.")
            assert r["node_ids"]
            for _ in range(100):
                with Memory.open(home) as m:
                    if m.conn.execute("SELECT count(*) FROM node_vectors").fetchone()[0] == 1:
                        return
                await anyio.sleep(0.1)
            raise AssertionError("the digest was never embedded")
    anyio.run(main)


def test_clarifying_questions_through_a_real_client(home):
    """brain_digest returns the question, intent "clarify" answers or skips it, brain_prepare
    mentions open ones, and brain_recall asks which one when its memories diverge."""
    async def main():
        async with session_for(home, "project:a") as s:
            await call(s, "brain_digest", content="Alex Chen owns the billing service.")
            await call(s, "brain_digest", content="Alex Rivera designs the mobile app.")
            held = await call(s, "brain_digest", content="Alex approved the new invoice layout.")
            [q] = held["questions"]
            assert q["question"] == "Which Alex is this: Alex Chen or Alex Rivera?"
            node = held["node_ids"][0]
            assert f"node {node} (\"Alex approved the new invoice layout.\"): Which Alex" in await call(s, "brain_prepare")
            gone = await call(s, "brain_recall", query="approved the new invoice layout")
            assert node not in [i["id"] for i in gone["items"]]
            missing = await call(s, "brain_digest", intent="clarify", target_node=node)
            assert "needs content" in missing["error"]
            done = await call(s, "brain_digest", intent="clarify", target_node=node, content="Alex Rivera")
            assert done["state"] == "answered" and done["node_id"] == node
            assert f"node {node} (\"Alex approved the new invoice layout.\")" not in await call(s, "brain_prepare")
            missing_node = await call(s, "brain_digest", intent="clarify", target_node=9999, content="Alex Chen")
            assert "no open question about node 9999" in missing_node["error"]
            both = await call(s, "brain_digest", intent="clarify", target_node=node, content="x", skip=True)
            assert "not both" in both["error"]
            found = await call(s, "brain_recall", query="Rivera invoice layout")
            item = next(i for i in found["items"] if i["id"] == node)
            assert item["content"] == "Alex approved the new invoice layout."
            assert item["clarified"][0]["answer"] == "Alex Rivera"
            assert "Which Alex" not in await call(s, "brain_prepare")

            other = await call(s, "brain_digest", content="Alex wrote the release notes.")
            skipped = await call(s, "brain_digest", intent="clarify", target_node=other["node_ids"][0], skip=True)
            assert skipped["state"] == "skipped"
            assert other["node_ids"][0] in [i["id"] for i in (await call(s, "brain_recall",
                                                                        query="wrote the release notes"))["items"]]
            bad = await call(s, "brain_digest", content="Deploy on Friday.", skip=True)
            assert "skip is only for" in bad["error"]

            # iterative recall: a question with the candidate groups, then the chosen group
            await call(s, "brain_digest", content="Alex Chen's phone number is 555-0101.")
            await call(s, "brain_digest", content="Alex Rivera's phone number is 555-0202.")
            asked = await call(s, "brain_recall", query="Alex phone number", mode="clarify")
            assert asked["items"] == [] and asked["clarify"]["question"].startswith("Which Alex do you mean")
            choices = {g["choice"]: g for g in asked["clarify"]["groups"]}
            assert set(choices) == {"Alex Chen", "Alex Rivera"}
            assert all(g["memories"] and g["memories"][0]["title"] for g in choices.values())
            picked = await call(s, "brain_recall", query="Alex phone number", choose="Alex Rivera")
            assert "555-0202" in picked["items"][0]["content"]
            assert all("555-0101" not in i["content"] for i in picked["items"])
            plain = await call(s, "brain_recall", query="billing service owner", mode="clarify")
            assert plain["clarify"] is None and plain["items"]      # nothing diverges: the normal answer
    anyio.run(main)


def _raw_session(home):
    """`tidemind serve` driven line by line, as a client with a broken serializer would."""
    import json
    import select
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "tidemind.cli", "--home", str(home), "serve", "--scope", "personal"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))

    def send(line: str):
        proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        proc.stdin.flush()

    def reply(timeout=10):
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        return json.loads(proc.stdout.readline()) if ready else None

    send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}))
    hello = reply()
    assert hello["id"] == 1 and hello["result"]["serverInfo"] == {"name": "tidemind", "version": __version__}
    send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    return proc, send, reply


def test_every_request_gets_an_answer_even_when_it_cannot_be_parsed(home):
    """Malformed JSON, 5,000-deep nesting and a lone surrogate (JSON.stringify writes it as a
    \\ud800 escape) were dropped by the SDK without a word: the client waited for its timeout."""
    import json

    proc, send, reply = _raw_session(home)
    try:
        call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "brain_recall",
                                                                   "arguments": {"query": "a\ud800b"}}}
        cases = [('{"jsonrpc":"2.0","id":2,"method":"tools/list"', 2, -32700),
                 ('{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"brain_recall","arguments":'
                  '{"query":' + "[" * 5000 + "]" * 5000 + "}}}", "three", -32700),
                 (json.dumps({**call, "id": 4}), 4, -32602),
                 (json.dumps({"id": 5, "hello": "not json-rpc"}), 5, -32600)]
        for line, request_id, code in cases:
            send(line)
            answer = reply()
            assert answer is not None, line[:60]
            assert answer["id"] == request_id and answer["error"]["code"] == code, answer
        send('{"jsonrpc":"2.0","method":"notifications/x", broken')     # no id to answer: logged
        send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                         "params": {"name": "brain_digest", "arguments": {"content": "still serving"}}}))
        answer = reply()
        assert answer["id"] == 6 and answer["result"]["structuredContent"]["node_ids"] == [1], answer
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    assert "could not be read" in proc.stderr.read().decode()


def test_scanning_for_a_request_id_is_linear_and_never_raises():
    import time

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tidemind.mcp_stdio import diagnose, scan_id

    assert scan_id('{"method": "x", "params": {"id": 9}, "id": 7, ') == 7
    assert scan_id('{"id": "abc\\"d", ') == 'abc"d'
    assert scan_id('{"params": {"id": 3}') is None and scan_id("[[[") is None and scan_id('{"id": true}') is None

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet='{}[]":,\\ id0123456789abc\ud800', max_size=300))
    def check(line):
        scan_id(line)
        assert diagnose(line) is None or diagnose(line)[1] in (-32700, -32600, -32602)

    check()
    for nasty in ('{"' * 50_000, '\\"' * 50_000, '{"id": "' + "\\\\" * 50_000, "[" * 100_000):
        started = time.monotonic()
        scan_id(nasty)
        diagnose(nasty)
        assert time.monotonic() - started < 1.0


def test_every_request_with_a_readable_id_gets_an_answer_and_invalid_utf8_is_refused(home):
    """The SDK read a request whose id is 1.5, true, an object or null as a notification and
    answered nothing; it dropped a batch and an id with a lone surrogate without a word; and it
    replaced invalid UTF-8 by U+FFFD, so a digest the CLI refuses was stored over MCP with its
    bytes changed. Each now gets a JSON-RPC error: id null and -32600 for an id that is not one,
    the request's own id when it can be read."""
    import json

    proc, send, reply = _raw_session(home)
    try:
        null_id = ['{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', '{"jsonrpc":"2.0","id":2.0,"method":"tools/list"}',
                   '{"jsonrpc":"2.0","id":true,"method":"tools/list"}', '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
                   '{"jsonrpc":"2.0","id":null,"method":"tools/list"}', '{"jsonrpc":"2.0","id":[7],"method":"tools/list"}',
                   '{"jsonrpc":"2.0","id":"a\\ud800","method":"tools/list"}',
                   '[{"jsonrpc":"2.0","id":9,"method":"tools/list"}]', "[]"]
        for line in null_id:
            send(line)
            answer = reply()
            assert answer is not None, line
            assert answer["id"] is None and answer["error"]["code"] == -32600, (line, answer)
        digest = {"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                  "params": {"name": "brain_digest", "arguments": {"content": "bad PLACE bytes"}}}
        raw = json.dumps(digest).replace("PLACE", "\udcff\udcfe").encode("utf-8", "surrogateescape")
        proc.stdin.write(raw + b"\n")
        proc.stdin.flush()
        answer = reply()
        assert answer["id"] == 12 and answer["error"]["code"] == -32700 and "UTF-8" in answer["error"]["message"]
        proc.stdin.write(b'{"jsonrpc":"2.0","id":"\xff","method":"tools/list"}\n')     # an id nobody can read: logged
        proc.stdin.flush()
        send(json.dumps({"jsonrpc": "2.0", "id": 13, "method": "tools/call",
                         "params": {"name": "brain_digest", "arguments": {"content": "still serving"}}}))
        answer = reply()
        assert answer["id"] == 13 and answer["result"]["structuredContent"]["node_ids"] == [1], answer
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    assert "not valid UTF-8" in proc.stderr.read().decode()
    with Memory.open(home) as m:
        assert [r[0] for r in m.conn.execute("SELECT content FROM nodes")] == ["still serving"]
    from tidemind.mcp_stdio import scan_id

    assert scan_id('{"id": 1.5, "method": ') is None and scan_id('{"id": 15, "method": ') == 15
