"""Browsing without a query, the review inbox a page at a time, the whole-scope graph and bulk
decisions: the reads the desktop's sidebar, inbox and graph stand on, through `Memory`."""
import json

import pytest

from tidemind.errors import InvalidInput, NotFound
from tidemind.memory import Memory
from tidemind.store import immediate, links


def _contradictions(mem, n, scope=None):
    """n open contradiction items: a claim, its correction, the claim said again."""
    items = []
    for i in range(n):
        name = "".join("bcdfghjklmnprstvz"[(i // 17 ** k) % 17] for k in range(3))      # a word per service
        old = mem.digest(f"The {name}x cache TTL is 60 seconds.", scope=scope)["node_ids"][0]
        mem.correct(old, f"The {name}x cache TTL is 300 seconds.")
        items += mem.digest(f"The {name}x cache TTL is 60 seconds.", scope=scope)["review_items"]
    assert len(items) == n
    return items


def test_review_page_counts_every_item_and_pages_past_one_hundred(mem):
    items = _contradictions(mem, 120)
    first = mem.review_page(limit=50)
    assert first["total"] == 120 and first["counts"]["contradiction"] == 120 and len(first["items"]) == 50
    seen = [r["id"] for off in (0, 50, 100) for r in mem.review_page(offset=off, limit=50)["items"]]
    assert sorted(seen) == sorted(items)                    # every item, none twice, none lost at 100
    row = first["items"][0]
    assert set(row["titles"]) == {row["node_id"], row["other_node_id"]}
    assert all("cache TTL" in t for t in row["titles"].values())


def test_review_page_lists_pending_links_as_their_own_kind(mem):
    a, b, c = (mem.digest(t)["node_ids"][0] for t in ("alpha note", "beta note", "gamma note"))
    with immediate(mem.conn):
        one = links.add(mem.conn, a, b, status="pending", proposed_by="t", at=mem.now())
        links.add(mem.conn, a, c, status="confirmed", proposed_by="t", at=mem.now())
    mem.archive(c)
    page = mem.review_page(kind="link")
    assert page["counts"]["link"] == 1 and [r["id"] for r in page["items"]] == [one]
    assert page["items"][0]["titles"] == {a: "alpha note", b: "beta note"}


def test_review_decide_many_is_one_transaction_audited_per_item_and_undone_exactly(mem):
    items = _contradictions(mem, 3)
    before = mem.conn.execute("SELECT max(id) FROM audit_log").fetchone()[0]
    r = mem.review_decide_many(items, "rejected")
    assert [x["previous"] for x in r["items"]] == ["open"] * 3
    rows = mem.conn.execute("SELECT action, details FROM audit_log WHERE id > ?", (before,)).fetchall()
    assert [a for a, _ in rows] == ["review_rejected"] * 3
    assert sorted(json.loads(d)["review_item"] for _, d in rows) == sorted(items)
    assert mem.review_list() == []
    mem.review_decide_many(items, "open")
    assert sorted(i["id"] for i in mem.review_list()) == sorted(items)
    with pytest.raises(NotFound):                           # all or nothing: one unknown item, none decided
        mem.review_decide_many([*items, 999_999], "rejected")
    assert len(mem.review_list()) == 3


def test_undo_of_an_approved_contradiction_puts_back_which_memory_stood(mem):
    item = _contradictions(mem, 1)[0]
    row = mem.review_show(item)
    first = mem.review_decide(item, "approved", stands=row["node_id"])
    assert first["previous_stands"] is None
    again = mem.review_decide_many([item], "rejected")["items"][0]
    assert again["previous"] == "approved" and again["previous_stands"] == row["node_id"]
    mem.review_decide(item, again["previous"], stands=again["previous_stands"])
    assert mem.review_show(item)["payload"]["stands"] == row["node_id"]


def test_link_decide_many_is_all_or_nothing(mem):
    a, b, c = (mem.digest(t)["node_ids"][0] for t in ("one", "two", "three"))
    with immediate(mem.conn):
        ab = links.add(mem.conn, a, b, status="pending", proposed_by="t", at=mem.now())
        ac = links.add(mem.conn, a, c, status="pending", proposed_by="t", at=mem.now())
    mem.archive(c)
    with pytest.raises(NotFound):
        mem.link_decide_many([ab, ac], "confirmed")
    assert links.get(mem.conn, ab)["status"] == "pending"
    r = mem.link_decide_many([ab], "confirmed")
    assert r["links"] == [{"link": ab, "status": "confirmed", "previous": "pending"}]


def test_browse_views_follow_the_visibility_predicate(mem):
    shown = mem.digest("Kept memory about deploys", scope="project:a")["node_ids"][0]
    hidden = mem.digest("Archived memory about deploys", scope="project:a")["node_ids"][0]
    other = mem.digest("Memory of another scope", scope="project:b")["node_ids"][0]
    gone = mem.digest("Forgotten memory about deploys", scope="project:a")["node_ids"][0]
    mem.tag_add(shown, "deploys")
    mem.tag_add(hidden, "deploys")
    mem.archive(hidden)
    mem.forget(gone)
    recent = mem.browse("recent", scopes=["project:a"])
    assert [i["id"] for i in recent["items"]] == [shown] and recent["total"] == 1
    assert [i["id"] for i in mem.browse("archived")["items"]] == [hidden]
    assert [i["id"] for i in mem.browse("tag", tag="deploys")["items"]] == [shown]
    assert {i["id"] for i in mem.browse("all")["items"]} == {shown, other}
    bar = mem.sidebar()
    assert bar["scopes"] == {"project:a": 1, "project:b": 1} and bar["archived"] == 1
    assert ("deploys", 1) in bar["tags"]
    narrow = Memory(mem.settings, readable_scopes=["project:b"])
    try:
        assert [i["id"] for i in narrow.browse("all")["items"]] == [other]
        assert narrow.sidebar()["archived"] == 0
    finally:
        narrow.close()
    with pytest.raises(InvalidInput):
        mem.browse("everything")
    with pytest.raises(InvalidInput):
        mem.browse("recent", limit=0)


def test_flagged_lists_both_sides_of_an_open_contradiction(mem):
    item = _contradictions(mem, 1)[0]
    row = mem.review_show(item)
    assert {i["id"] for i in mem.browse("flagged")["items"]} == {row["node_id"], row["other_node_id"]}
    mem.review_decide(item, "rejected")
    assert mem.browse("flagged")["total"] == 0


def test_graph_overview_is_the_scopes_visible_graph(mem):
    a, b, c = (mem.digest(t, scope="project:a")["node_ids"][0] for t in ("hub one", "spoke two", "spoke three"))
    x = mem.digest("another scope", scope="project:b")["node_ids"][0]
    lonely = mem.digest("no links at all", scope="project:a")["node_ids"][0]
    with immediate(mem.conn):
        links.add(mem.conn, a, b, status="confirmed", proposed_by="t", at=mem.now())
        links.add(mem.conn, a, c, status="pending", proposed_by="t", at=mem.now())
        links.add(mem.conn, a, x, status="confirmed", proposed_by="t", at=mem.now())
        links.add(mem.conn, b, c, status="rejected_by_user", proposed_by="t", at=mem.now())
    g = mem.graph_overview(scopes=["project:a"])
    assert {n["id"] for n in g["nodes"]} == {a, b, c, lonely}                  # x is another scope's
    assert {(e["source_id"], e["target_id"], e["status"]) for e in g["edges"]} == {(a, b, "confirmed"),
                                                                               (a, c, "pending")}
    assert {n["id"] for n in mem.graph_overview(scopes=["project:a"], orphans=False)["nodes"]} == {a, b, c}
    with_rejected = mem.graph_overview(scopes=["project:a"], link_statuses=["confirmed", "rejected_by_user"])
    assert {e["status"] for e in with_rejected["edges"]} == {"confirmed", "rejected_by_user"}
    mem.archive(c)
    assert c not in {n["id"] for n in mem.graph_overview()["nodes"]}
    top = mem.graph_overview(limit=2, orphans=False)
    assert top["total"] == 4 and len(top["nodes"]) == 2 and a in {n["id"] for n in top["nodes"]}   # the hub stays
    with pytest.raises(InvalidInput):
        mem.graph_overview(link_statuses=["maybe"])


def _proposed(mem, nid, name="staging-database"):
    """A pass's proposal, with its source and confidence (what tag_restore must put back)."""
    from tidemind.store import tags as tag_store

    with immediate(mem.conn):
        tag_store.assign(mem.conn, nid, name, status="proposed", source="annotate/offline-v2", at=mem.now(),
                         confidence=0.73)
    return name


def test_tag_restore_puts_back_exactly_what_tag_add_replaced(mem):
    nid = mem.digest("The staging database runs PostgreSQL 16 on port 5433.")["node_ids"][0]
    proposed = {"name": _proposed(mem, nid)}
    before = mem.conn.execute("SELECT nt.* FROM node_tags nt JOIN tags t ON t.id = nt.tag_id WHERE nt.node_id=?"
                              " AND t.name=?", (nid, proposed["name"])).fetchall()
    r = mem.tag_add(nid, proposed["name"])
    assert {t["name"]: t["status"] for t in mem.tags_of(nid)}[proposed["name"]] == "confirmed"
    mem.tag_restore(nid, proposed["name"], r["previous"])
    after = mem.conn.execute("SELECT nt.* FROM node_tags nt JOIN tags t ON t.id = nt.tag_id WHERE nt.node_id=?"
                             " AND t.name=?", (nid, proposed["name"])).fetchall()
    assert after == before
    fresh = mem.tag_add(nid, "brand-new")
    mem.tag_restore(nid, "brand-new", fresh["previous"])
    assert "brand-new" not in {t["name"] for t in mem.tags_of(nid)}


def test_changes_since_names_what_a_mutation_touched(mem):
    a = mem.digest("first")["node_ids"][0]
    mark = mem.change_mark()[0]
    b = mem.digest("second")["node_ids"][0]
    mem.tag_add(a, "x")
    got = mem.changes_since(mark)
    assert got["nodes"] == sorted([a, b]) and set(got["actions"]) == {"digest", "tag_add"} and got["complete"]
    assert mem.changes_since(mem.change_mark()[0])["nodes"] == []


def test_tag_restore_never_brings_back_a_proposal_a_scope_now_refuses(mem):
    nid = mem.digest("The staging database runs PostgreSQL 16 on port 5433.")["node_ids"][0]
    name = _proposed(mem, nid)
    r = mem.tag_add(nid, name)
    mem.tag_reject_everywhere(name, mem.settings.default_scope)      # said meanwhile, elsewhere
    mem.tag_restore(nid, name, r["previous"])
    assert {t["name"]: t["status"] for t in mem.tags_of(nid)}[name] == "rejected_by_user"
    mem.tag_unreject_everywhere(name, mem.settings.default_scope)
    assert {t["name"]: t["status"] for t in mem.tags_of(nid)}[name] == "proposed"


def test_the_flagged_graph_is_the_memories_in_open_contradictions(mem):
    item = _contradictions(mem, 1)[0]
    row = mem.review_show(item)
    quiet = mem.digest("An unrelated note about bread")["node_ids"][0]
    with immediate(mem.conn):
        links.add(mem.conn, row["node_id"], quiet, status="confirmed", proposed_by="t", at=mem.now())
    g = mem.graph_overview(flagged=True)
    assert {n["id"] for n in g["nodes"]} == {row["node_id"], row["other_node_id"]} and g["edges"] == []
    mem.review_decide(item, "rejected")
    assert mem.graph_overview(flagged=True)["nodes"] == []
