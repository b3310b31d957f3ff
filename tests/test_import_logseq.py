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
    assert r["created"] == 20 and r["skipped"] == []
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


def _key_links(mem):
    """(source key, target key, relation) of the confirmed links between the current units."""
    keys = dict(mem.conn.execute("SELECT node_id, unit_key FROM import_units"))
    return {(keys[a], keys[b], rel) for a, b, rel in mem.conn.execute(
        "SELECT source_id, target_id, relation FROM links WHERE status='confirmed'") if a in keys and b in keys}


def test_logseq_as_its_documentation_describes_it(mem, graph):
    """Pages with and without bullets, headings, tab and space indentation, page and block
    properties, `id::` on a nested child, `((uuid))` refs, both embed macros, journal links by
    date, priority markers and an org-mode page."""
    sync(mem, "logseq", graph, SCOPE)
    units = {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units")}
    text = lambda key: mem.show(units[key], scopes=[SCOPE])["content"]
    docs = sorted(k for k in units if k.startswith("pages/Logseq docs.md#"))
    assert [text(k).splitlines()[0] for k in docs] == ["Welcome to the documentation graph.", "## Why Logseq",
                                                      "## Install"]
    assert "\t\t- it runs in the browser" in text(docs[2])                      # tab-indented children kept
    assert "    - its child, four spaces in" in text("pages/Blocks.md#b2")      # space-indented children kept
    links = _key_links(mem)
    blocks_b0, journal = "pages/Blocks.md#b0", "journals/2024_01_05.md#b0"
    assert ("pages/Blocks.md#b3", blocks_b0, "embeds") in links            # {{embed ((uuid))}} of a nested child
    assert ("pages/Blocks.md#b4", docs[0], "embeds") in links              # {{embed [[title]]}}
    assert ("pages/Blocks.md#b5", journal, "links-to") in links            # [[Jan 5th, 2024]] and its child's id
    org = "pages/Org page.org#65a1b2c3-0000-4000-8000-00000000000c"       # :id: in a drawer is the block's name
    assert (org, blocks_b0, "links-to") in links
    assert ("pages/Org page.org#b1", blocks_b0, "links-to") in links
    tags = lambda key: {t["name"] for t in mem.show(units[key], scopes=[SCOPE])["tags"]}
    assert tags("pages/Blocks.md#b1") == set()                                 # [#A] is a priority, not a tag
    assert tags(org) == {"org-tag"} and tags(docs[2]) == {"docs", "install"}
    assert not mem.conn.execute("SELECT count(*) FROM import_dangling WHERE unit_key LIKE 'pages/Blocks.md%'"
                                " OR unit_key LIKE 'pages/Org%'").fetchone()[0]


def test_an_id_given_to_a_nested_child_keeps_the_blocks_identity(mem, graph):
    """Logseq writes `id::` under a child the moment another block references it: the top-level
    block is the same block, edited, not a new one (which archived it and lost its history)."""
    sync(mem, "logseq", graph, SCOPE)
    before = {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units")}
    page = graph / "pages" / "Blocks.md"
    page.write_text(page.read_text().replace("\t- Another child\n",
                                             "\t- Another child\n\t  id:: 65a1b2c3-0000-4000-8000-0000000000ff\n"))
    (graph / "pages" / "Citing.md").write_text("- cites ((65a1b2c3-0000-4000-8000-0000000000ff))\n")
    r = sync(mem, "logseq", graph, SCOPE)
    assert (r["updated"], r["created"], r["archived"]) == (1, 1, 0)
    after = {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units")}
    versions = mem.show(after["pages/Blocks.md#b0"], scopes=[SCOPE])["versions"]
    assert [v["id"] for v in versions] == [before["pages/Blocks.md#b0"], after["pages/Blocks.md#b0"]]
    assert ("pages/Citing.md#b0", "pages/Blocks.md#b0", "links-to") in _key_links(mem)


def _page_nodes(mem, page):
    """Node ids of a page's current units, in page order."""
    return [n for n, in mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key LIKE ? AND status='live'"
                                         " ORDER BY position", (f"{page}#%",))]


def test_blocks_keep_their_identity_when_others_are_inserted_moved_or_edited(mem, graph):
    """Matched by id:: first, then by text, then by place among the blocks left unmatched:
    inserting one block at the top edits no other block (it reported 6 blocks as edited into
    each other's text), moving blocks changes nothing, an edited block continues its own history."""
    page = graph / "pages" / "Blocks.md"
    sync(mem, "logseq", graph, SCOPE)
    before = _page_nodes(mem, "pages/Blocks.md")
    text = page.read_text()
    page.write_text("- A new first block\n" + text)
    r = sync(mem, "logseq", graph, SCOPE)
    assert (r["created"], r["updated"], r["archived"]) == (1, 0, 0)
    inserted = _page_nodes(mem, "pages/Blocks.md")
    assert inserted[1:] == before

    blocks = page.read_text().split("\n- ")                  # the last block first, the first last
    page.write_text("- " + "\n- ".join([blocks[-1].rstrip("\n"), *blocks[1:-1], blocks[0][2:]]) + "\n")
    r = sync(mem, "logseq", graph, SCOPE)
    assert (r["created"], r["updated"], r["archived"]) == (0, 0, 0)
    moved = _page_nodes(mem, "pages/Blocks.md")
    assert moved != inserted and sorted(moved) == sorted(inserted)

    edited = page.read_text().replace("A block indented with spaces", "A block indented with four spaces")
    page.write_text(edited.replace("- Embed a page:", "- Inserted above an edit\n- Embed a page:"))
    r = sync(mem, "logseq", graph, SCOPE)
    assert (r["created"], r["updated"], r["archived"]) == (1, 1, 0)
    nodes_now = _page_nodes(mem, "pages/Blocks.md")
    new_version = next(n for n in nodes_now if "four spaces" in mem.show(n, scopes=[SCOPE])["content"])
    history = mem.show(new_version, scopes=[SCOPE])["versions"]
    assert [v["id"] for v in history][0] in before and "A block indented with spaces" in history[0]["content"]
    assert set(before) - {history[0]["id"]} <= set(nodes_now)         # no other block was touched


def test_a_block_given_its_own_id_continues_its_history_and_page_properties_refresh_in_place(mem, graph):
    sync(mem, "logseq", graph, SCOPE)
    before = {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units")}
    before_dump = dump(mem)
    page = graph / "pages" / "Blocks.md"
    page.write_text(page.read_text().replace("- A block indented with spaces\n",
                                             "- A block indented with spaces\n  id:: 65a1b2c3-0000-4000-8000-0000000000aa\n"))
    shop = graph / "pages" / "Shop.md"
    shop.write_text(shop.read_text().replace("tags:: project, [[backend]]", "tags:: project, [[backend]], shop"))
    r = sync(mem, "logseq", graph, SCOPE)
    assert (r["created"], r["updated"], r["archived"], r["refreshed"]) == (0, 1, 0, 4)
    after = {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units")}
    named = after["pages/Blocks.md#65a1b2c3-0000-4000-8000-0000000000aa"]
    assert mem.show(named, scopes=[SCOPE])["versions"][0]["id"] == before["pages/Blocks.md#b2"]
    assert "pages/Blocks.md#b2" not in after
    shop_units = [k for k in before if k.startswith("pages/Shop.md")]
    assert all(after[k] == before[k] for k in shop_units)           # no new versions: the words did not change
    assert all("shop" in {t["name"] for t in mem.show(after[k], scopes=[SCOPE])["tags"]} for k in shop_units)
    rollback(mem, r["batch"])
    assert dump(mem) == before_dump
    assert {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units")} == before


def test_a_forgotten_block_stays_forgotten_when_blocks_move_around_it(mem, graph):
    sync(mem, "logseq", graph, SCOPE)
    node = next(n for n, c in mem.conn.execute("SELECT id, content FROM nodes") if "Another child" in c)
    mem.forget(node)
    page = graph / "pages" / "Blocks.md"
    page.write_text("- Inserted first\n" + page.read_text())
    r = sync(mem, "logseq", graph, SCOPE)
    assert (r["created"], r["updated"]) == (1, 0)
    assert not any("Another child" in c for (c,) in mem.conn.execute("SELECT content FROM nodes"))


def test_page_properties_are_searchable_beside_the_blocks(mem, graph):
    """`description::` and the other page properties were stored nowhere."""
    sync(mem, "logseq", graph, SCOPE)
    hits = mem.recall("how is it organised", scopes=[SCOPE])["items"]
    assert hits and mem.show(hits[0]["id"])["note"]["file"] == "pages/Logseq docs.md"
    assert "organised" not in hits[0]["content"]                       # found by the page's description
    note = mem.show(hits[0]["id"])["note"]
    assert note["note"] == "Getting started" and note["source"] == "logseq"
    journal = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key LIKE 'journals/2024_01_05.md#%'"
                               ).fetchone()[0]
    assert mem.show(journal)["note"]["note"] == "Jan 5th, 2024"


def test_a_tag_the_page_no_longer_says_leaves_the_block(mem, graph):
    """Found by the nothing-invented check: an edit that removed `#tag` kept the tag on the new
    version (carried over from the old one), and a page tag taken off stayed on every block."""
    sync(mem, "logseq", graph, SCOPE)
    before = dump(mem)
    shop = graph / "pages" / "Shop.md"
    shop.write_text(shop.read_text().replace("PostgreSQL. #backend", "PostgreSQL.")
                    .replace("tags:: project, [[backend]]", "tags:: [[backend]]"))
    r = sync(mem, "logseq", graph, SCOPE)
    assert r["updated"] == 1 and r["refreshed"] == 3
    units = {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units WHERE status='live'"
                                               " AND unit_key LIKE 'pages/Shop.md#%'")}
    names = lambda n: {t["name"] for t in mem.show(n, scopes=[SCOPE])["tags"]}
    assert all("project" not in names(n) for n in units.values())
    assert names(units["pages/Shop.md#b0"]) == {"backend"}           # the page still says [[backend]]
    rollback(mem, r["batch"])
    assert dump(mem) == before
