"""Leaks: archived, superseded, forgotten, held (awaiting clarification) and other-scope content never comes back through any read
path, tool or hook, even after the metabolism has read all of it (titles, tags, links, crystals,
contradiction checks); and after `forget` the text's bytes are nowhere on disk.

Each hidden memory carries its own nonce word; every read path's whole output (JSON or widget
text) is searched for the nonces. The paths: recall (hybrid, FTS only, vector only, index mode),
show, neighbourhood, graph, prepare, review queue, pending links; the CLI; the MCP tools over
stdio; the session-start and user-prompt hooks; the desktop search and node view.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from tidemind.memory import Memory
from tidemind.metabolism.scheduler import run_due
from tidemind.store.connection import checkpoint

from ..conftest import ROOT, stored_anywhere
from ..test_mcp import call, session_for

KEY = "marmalade lighthouse"
S, OTHER = "project:leak", "project:other"
NONCE = {"archived": "quintessa", "superseded": "vexillum", "forgotten": "wombatique", "other_scope": "florblen",
         "held": "gribblenut"}


@pytest.fixture(scope="module")
def world(tmp_path_factory, module_store):
    """(Built once per backend: `module_store` runs the module on SQLite and on PostgreSQL.)"""
    home = tmp_path_factory.mktemp("leaks") / "home"
    ids = {}
    with Memory.open(home) as m:
        d = lambda text, scope=S: m.digest(text, scope=scope, session="s1")["node_ids"][0]
        ids["live"] = d(f"The {KEY} recipe uses Seville oranges and a slow boil.")
        ids["sibling"] = d(f"The {KEY} jars are labelled by the keeper every Sunday.")
        ids["archived"] = d(f"The {KEY} archived variant adds {NONCE['archived']} lemons.")
        ids["superseded"] = d(f"The {KEY} sets in two hours with {NONCE['superseded']} pectin.")
        ids["forgotten"] = d(f"The {KEY} secret: {NONCE['forgotten']} family trick, keep private.")
        ids["other_scope"] = d(f"The {KEY} from another project uses {NONCE['other_scope']} sugar.", OTHER)
        d(f"Alex Chen owns the {KEY} pot.")
        d(f"Alex Rivera is the keeper of the {KEY} jars.")
        held = m.digest(f"Alex says {NONCE['held']} zest goes into the {KEY} on Sundays.", scope=S, session="s1")
        assert held["questions"], "the held memory must wait on a question for this suite to mean anything"
        ids["held"] = held["node_ids"][0]
        for n in range(12):        # enough neighbours for links, duplicates and crystals to form
            d(f"The {KEY} batch {n} was boiled with oranges and stored in the cellar.")
        m.embed_pending()
        run_due(m, force=True)                      # the metabolism reads everything while it is live
        ids["correction"] = m.correct(ids["superseded"], f"The {KEY} sets in forty minutes.")["node_ids"][0]
        m.archive(ids["archived"])
        m.forget(ids["forgotten"])
        run_due(m, force=True)
        m.embed_pending()
    repo = tmp_path_factory.mktemp("repos") / "leak"
    (repo / ".git").mkdir(parents=True)
    return home, ids, repo


def _leaked(output, hidden=NONCE) -> list[str]:
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return [name for name, word in hidden.items() if word in text.lower()]


def _without_questions(text: str) -> str:
    """brain_prepare's "Open questions" section quotes the start of a memory that waits on a
    question, on purpose: the agent puts the question to the person with its context. It is the
    one place a held memory's words appear (besides `tidemind clarify` and the desktop's panel);
    the rest of the text must be clean."""
    head, sep, rest = text.partition("\n## Open questions")
    assert sep and NONCE["held"] in rest.split("\n## ")[0], "the held memory's question is listed with its context"
    return head + "\n## " + rest.split("\n## ", 1)[1] if "\n## " in rest else head


def _without_versions(item: dict) -> dict:
    """`show` lists a node's own earlier versions, marked superseded: that is the history the
    person asked for, not a leak. Everything else in it must be clean."""
    return {k: v for k, v in item.items() if k != "versions"}


def test_memory_api_read_paths(world):
    home, ids, _ = world
    with Memory.open(home) as m:
        outputs = {
            "recall": m.recall(KEY, scopes=[S], limit=50, record=False),
            "recall fts": m.recall(KEY, scopes=[S], limit=50, use_vectors=False, record=False),
            "recall vector": m.recall(KEY, scopes=[S], limit=50, use_lexical=False, record=False),
            "recall nonces": m.recall(" ".join(NONCE.values()), scopes=[S], limit=50, record=False),
            "show live": m.show(ids["live"], scopes=[S]),
            "show correction": _without_versions(m.show(ids["correction"], scopes=[S])),
            "neighbourhood": m.neighbourhood(ids["live"], scopes=[S]),
            "graph": m.graph(ids["live"], depth=3),
            "prepare": _without_questions(m.prepare(hint=KEY, scopes=[S])["text"]),
            "review list": m.review_list(),
            "pending links": m.pending_links(scopes=[S]),
        }
        listed = outputs["review list"]
        listed = listed["items"] if isinstance(listed, dict) else listed
        outputs["review items"] = [m.review_show(i["id"]) for i in listed]
        for path in ("recall", "recall fts", "recall vector"):
            assert outputs[path]["items"], f"{path}: the live memories are found (else this test proves nothing)"
        for path, output in outputs.items():
            hidden = NONCE if path not in ("graph", "review list", "review items") else \
                {k: v for k, v in NONCE.items() if k != "other_scope"}     # a person's views span scopes
            assert _leaked(output, hidden) == [], path


def test_cli_read_paths(world):
    home, ids, _ = world
    env = dict(os.environ, TIDEMIND_HOME=str(home))
    for args in (["recall", KEY, "--scope", S, "--limit", "50"], ["show", str(ids["live"])],
                 ["recall", " ".join(NONCE.values()), "--scope", S]):
        proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--json", *args], capture_output=True, env=env,
                              cwd=ROOT, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert _leaked(proc.stdout.decode()) == [], args


def test_mcp_tools(world):
    home, ids, _ = world

    async def main():
        async with session_for(home, S) as s:
            return {
                "query": await call(s, "brain_recall", query=KEY, limit=50),
                "index": await call(s, "brain_recall", query=KEY, limit=50, mode="index"),
                "node": await call(s, "brain_recall", node_id=ids["live"]),
                "from_node": await call(s, "brain_recall", from_node=ids["live"]),
                "prepare": _without_questions(await call(s, "brain_prepare", hint=KEY)),
                "other scope by id": await call(s, "brain_recall", node_id=ids["other_scope"]),
                "archived by id": await call(s, "brain_recall", node_id=ids["archived"]),
                "forgotten by id": await call(s, "brain_recall", node_id=ids["forgotten"]),
            }

    outputs = asyncio.run(main())
    assert "marmalade" in json.dumps(outputs["query"]).lower()
    for path, output in outputs.items():
        assert _leaked(output) == [], path
    for path in ("other scope by id", "archived by id", "forgotten by id"):
        assert "error" in outputs[path], path


def test_hooks(world):
    home, _, repo = world
    for name, event in (("session-start", {"hook_event_name": "SessionStart", "cwd": str(repo), "source": "startup"}),
                        ("user-prompt", {"cwd": str(repo), "prompt": f"what is the {KEY} recipe with oranges?"}),
                        ("user-prompt", {"cwd": str(repo), "prompt": " ".join(NONCE.values())})):
        proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "hook", name],
                              input=json.dumps(event).encode(), capture_output=True, cwd=ROOT, timeout=60)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode()
        if name == "session-start":                       # it injects brain_prepare's text
            out = _without_questions(json.loads(out)["hookSpecificOutput"]["additionalContext"])
        assert _leaked(out) == [], (name, event)
        if KEY in event.get("prompt", KEY):              # positive control: the hook did inject memories
            assert b"marmalade" in proc.stdout.lower(), (name, event)
    assert b"marmalade" in subprocess.run(
        [sys.executable, "-m", "tidemind.cli", "--home", str(home), "hook", "session-start"],
        input=json.dumps({"cwd": str(repo), "source": "startup"}).encode(), capture_output=True, cwd=ROOT,
        timeout=60).stdout.lower()


def test_desktop_search_and_node_view(world, qtbot):
    pytest.importorskip("PySide6")
    from tidemind_desktop.main_window import MainWindow

    home, ids, _ = world
    with Memory.open(home) as m:
        w = MainWindow(m, poll_ms=10_000)
        qtbot.addWidget(w)
        w.show()
        w.query.setText(KEY)
        w.search()
        qtbot.waitUntil(lambda: w.results.count() > 0, timeout=5000)
        shown = [w.results.item(i).text() for i in range(w.results.count())]
        w.results.setCurrentRow(0)
        qtbot.wait(300)
        from PySide6.QtWidgets import QLabel, QListWidget, QTextEdit
        # the questions panel shows a held unit's words on purpose: a person answers about them there
        asking = w.review_view.questions
        assert NONCE["held"] in asking.detail.text() + "".join(
            asking._data[q]["content"] for q in asking._data)
        for widget in w.findChildren(QLabel):
            if widget is asking.detail:
                continue
            if not widget.text().startswith("<b>Versions</b>"):    # the node's own history, labelled (see show)
                shown.append(widget.text())
        for widget in w.findChildren(QTextEdit):
            shown.append(widget.toPlainText())
        for widget in w.findChildren(QListWidget):
            shown += [widget.item(i).text() for i in range(widget.count())]
        w.close()
    hidden = {k: v for k, v in NONCE.items() if k != "other_scope"}       # the person's own app spans scopes
    assert [s for s in shown if _leaked(s, hidden)] == []
    assert any("marmalade" in s.lower() for s in shown)


def test_forgotten_bytes_are_nowhere_on_disk(world):
    """In the home's files (the SQLite store, its log, the stream) and, on a server, in any table."""
    home, _, _ = world
    with Memory.open(home) as m:
        checkpoint(m.conn)
        in_tables = {word: stored_anywhere(m.conn, word) for word in (NONCE["forgotten"], NONCE["archived"])}
    needle = NONCE["forgotten"].encode()
    holders = [str(p) for p in home.rglob("*") if p.is_file() and needle in p.read_bytes().lower()]
    assert holders == [] and in_tables[NONCE["forgotten"]] == []
    # the archived text, by contrast, is still there (archive hides, it does not erase)
    assert in_tables[NONCE["archived"]]
    assert m.settings.store_location.path is None or \
        any(NONCE["archived"].encode() in p.read_bytes() for p in home.rglob("*") if p.is_file())
