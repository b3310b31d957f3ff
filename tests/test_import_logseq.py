"""Logseq import: blocks as units, properties, block refs, namespaces, journals."""
import shutil
from pathlib import Path

import pytest

from tidemind.importers.engine import rollback, sync

from .test_import_obsidian import dump

FIXTURE = Path(__file__).parent / "fixtures" / "graph"
SCOPE = "vault:graph"


@pytest.fixture
def graph(tmp_path):
    target = tmp_path / "graph"
    shutil.copytree(FIXTURE, target)
    return target


def test_logseq_graph_imports_blocks_properties_and_refs(mem, graph):
    r = sync(mem, "logseq", graph, SCOPE)
    assert r["created"] == 8 and r["skipped"] == []
    units = {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units")}
    first = mem.show(units["pages/Shop.md#b0"], scopes=[SCOPE])
    assert "Child detail" in first["content"]                       # children belong to their top-level block
    names = lambda n: {t["name"] for t in mem.show(n, scopes=[SCOPE])["tags"]}
    assert {"project", "backend"} <= names(units["pages/Shop.md#b0"])
    assert "payments-team" in names(units["pages/Shop.md#b1"])
    assert "not-a-tag" not in names(units["pages/Shop.md#b3"])
    todo = mem.conn.execute("SELECT content FROM nodes WHERE id=?", (units["pages/Shop.md#b1"],)).fetchone()[0]
    assert todo.startswith("- TODO Rotate")
    stripe = units["pages/Shop.md#6750a1b2-0000-4000-8000-000000000001"]
    deploys = units["pages/infra___deploys.md#b0"]
    links = {(a, b) for a, b in mem.conn.execute("SELECT source_id, target_id FROM links WHERE status='confirmed'")}
    assert (deploys, stripe) in links                                # ((block ref)) by id
    assert (deploys, units["pages/Shop.md#b0"]) in links             # [[Shop]]
    journal = units["journals/2026_03_02.md#b0"]
    assert (journal, deploys) in links                               # namespaced [[infra/deploys]]
    assert (journal, units["pages/Shop.md#b0"]) in links             # alias Webshop
    assert mem.show(journal, scopes=[SCOPE])["valid_from"].startswith("2026-03-02")
    dangling = {t for (t,) in mem.conn.execute("SELECT target FROM import_dangling")}
    assert "Nowhere" in dangling


def test_logseq_edit_and_rollback(mem, graph):
    sync(mem, "logseq", graph, SCOPE)
    before = dump(mem)
    page = graph / "pages" / "Shop.md"
    page.write_text(page.read_text().replace("Payments go through Stripe.", "Payments go through Adyen."))
    r = sync(mem, "logseq", graph, SCOPE)
    assert r["updated"] == 1 and r["created"] == 0
    hits = mem.recall("payments Adyen", scopes=[SCOPE])["items"]
    assert hits and "Adyen" in hits[0]["content"]
    rollback(mem, r["batch"])
    assert dump(mem) == before


def test_a_page_name_or_alias_of_a_page_without_blocks_stays_dangling(mem, tmp_path):
    """`KeyError: 'pages/Desktop.md'`: a link to a page that produced no units crashed the import."""
    graph = tmp_path / "g"
    (graph / "pages").mkdir(parents=True)
    (graph / "pages" / "Desktop.md").write_text("alias:: Desk\n")
    (graph / "pages" / "Empty.md").write_text("")
    (graph / "pages" / "Other.md").write_text("- see [[Desktop]], [[Desk]] and [[Empty]]\n- a second block\n")
    r = sync(mem, "logseq", graph, SCOPE)
    assert r["created"] == 2
    dangling = {t for (t,) in mem.conn.execute("SELECT target FROM import_dangling")}
    assert {"Desktop", "Desk", "Empty"} <= dangling
