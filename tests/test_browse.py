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


def _pairs(mem, similarities, scope=None):
    """A merge item per similarity, between two fresh memories each; returns (item, newer, older)."""
    from tidemind.store import review

    made = []
    for n, sim in enumerate(similarities):
        a, b = (mem.digest(f"pair {n} side {side} about the {w} cluster", scope=scope)["node_ids"][0]
                for side, w in (("one", "blue"), ("two", "green")))
        with immediate(mem.conn):
            extra = {} if sim is None else {"similarity": sim}
            item = review.file(mem.conn, "merge", node_id=b, other_node_id=a, at=mem.now(), scope=scope, **extra)
        made.append((item, b, a))
    return made


def test_the_inbox_sorts_items_by_age_or_strength_and_links_by_strength(mem):
    made = _pairs(mem, [0.71, None, 0.93, 0.80])
    ids = [m[0] for m in made]
    order = lambda sort: [r["id"] for r in mem.review_page(kind="merge", sort=sort)["items"]]
    assert order("newest") == order(None) == ids[::-1]
    assert order("oldest") == ids
    assert order("strongest") == [ids[2], ids[3], ids[0], ids[1]]        # the one without a similarity last
    assert order("weakest") == [ids[0], ids[3], ids[2], ids[1]]
    a, b, c, d = (mem.digest(f"link end {w}")["node_ids"][0] for w in ("north", "south", "east", "west"))
    with immediate(mem.conn):
        weak = links.add(mem.conn, a, b, status="pending", proposed_by="t", at=mem.now(), strength=0.3)
        strong = links.add(mem.conn, a, c, status="pending", proposed_by="t", at=mem.now(), strength=0.9)
        middle = links.add(mem.conn, b, d, status="pending", proposed_by="t", at=mem.now(), strength=0.6)
    link_order = lambda sort: [r["id"] for r in mem.review_page(kind="link", sort=sort)["items"]]
    assert link_order(None) == link_order("oldest") == [weak, strong, middle]
    assert link_order("newest") == [middle, strong, weak]
    assert link_order("strongest") == [strong, middle, weak]
    assert link_order("weakest") == [weak, middle, strong]
    with pytest.raises(InvalidInput):
        mem.review_page(sort="loudest")


def test_the_inbox_narrowed_to_a_tag_or_a_memory_counts_what_it_lists(mem):
    made = _pairs(mem, [0.9, 0.8, 0.7])
    (first, newer, older), (second, *_), (third, n3, o3) = made
    mem.tag_add(older, "billing")
    mem.tag_add(n3, "billing")
    c = mem.digest("a third memory near the blue cluster")["node_ids"][0]
    with immediate(mem.conn):
        at_older = links.add(mem.conn, older, c, status="pending", proposed_by="t", at=mem.now())
        elsewhere = links.add(mem.conn, made[1][1], c, status="pending", proposed_by="t", at=mem.now())
    page = mem.review_page(tag="billing")
    assert sorted(r["id"] for r in page["items"]) == sorted([first, third]) and page["total"] == 2
    assert page["counts"] == {"merge": 2, "link": 1}            # the counts are of the narrowed inbox
    assert [r["id"] for r in mem.review_page(kind="link", tag="billing")["items"]] == [at_older]
    at = mem.review_page(node=older)
    assert [r["id"] for r in at["items"]] == [first] and at["counts"] == {"merge": 1, "link": 1}
    assert [r["id"] for r in mem.review_page(kind="link", node=c)["items"]] == [at_older, elsewhere]
    mem.tag_decide(older, "billing", reject=True)              # a rejected tag no longer narrows to it
    assert [r["id"] for r in mem.review_page(tag="billing")["items"]] == [third]
    assert mem.review_page(tag="no-such-tag")["total"] == 0


def test_the_inbox_follows_the_scopes_it_is_given(mem):
    _pairs(mem, [0.9], scope="work")
    _pairs(mem, [0.8, 0.7], scope="home")
    assert mem.review_page(scopes=["work"])["counts"] == {"merge": 1, "link": 0}
    assert mem.review_page(scopes=["home"])["total"] == 2
    assert mem.review_page()["total"] == 3


def test_every_pending_link_of_a_memory_is_decided_in_one_step_and_undone_exactly(mem):
    hub, *others = (mem.digest(f"memory {w} of the hub test")["node_ids"][0]
                    for w in ("hub", "one", "two", "three", "four"))
    hidden = mem.digest("memory in another scope", scope="elsewhere")["node_ids"][0]
    with immediate(mem.conn):
        mine = [links.add(mem.conn, hub, o, status="pending", proposed_by="t", at=mem.now()) for o in others[:3]]
        decided = links.add(mem.conn, others[3], hub, status="rejected_by_model", proposed_by="t", at=mem.now())
        not_mine = links.add(mem.conn, others[0], others[1], status="pending", proposed_by="t", at=mem.now())
        across = links.add(mem.conn, hub, hidden, status="pending", proposed_by="t", at=mem.now())
    limited = Memory.open(mem.settings.home, readable_scopes=["personal"])
    try:
        before = mem.conn.execute("SELECT max(id) FROM audit_log").fetchone()[0]
        r = limited.link_decide_at(hub, "confirmed")
    finally:
        limited.close()
    assert sorted(x["link"] for x in r["links"]) == sorted(mine) and {x["previous"] for x in r["links"]} == {"pending"}
    status = lambda i: links.get(mem.conn, i)["status"]
    assert [status(i) for i in mine] == ["confirmed"] * 3
    assert (status(decided), status(not_mine), status(across)) == ("rejected_by_model", "pending", "pending")
    audited = mem.conn.execute("SELECT action FROM audit_log WHERE id > ?", (before,)).fetchall()
    assert [a for (a,) in audited] == ["link_confirmed"] * 3
    for x in r["links"]:                                        # what undo does: each back to what it was
        mem.link_decide(x["link"], x["previous"])
    assert [status(i) for i in mine] == ["pending"] * 3
    with pytest.raises(NotFound):
        mem.link_decide_at(999_999, "confirmed")
    with pytest.raises(InvalidInput):
        mem.link_decide_at(hub, "maybe")


def test_a_conversation_turn_is_read_with_the_turns_around_it_in_order(mem):
    said = ["Caroline: I went to the adoption meeting today.", "Melanie: How did it go?",
            "Caroline: They said the home study is next month.", "Melanie: That is quick!",
            "Caroline: I am nervous but happy."]
    ids = [mem.digest(t, session="chat-1")["node_ids"][0] for t in said]
    other = mem.digest("Caroline: a turn of another chat", session="chat-2")["node_ids"][0]
    mem.archive(ids[3])
    turns = mem.conversation(ids[2])
    assert [t["id"] for t in turns] == [ids[0], ids[1], ids[2], ids[4]]      # as said, the archived one not
    assert [t["here"] for t in turns] == [False, False, True, False] and other not in [t["id"] for t in turns]
    assert mem.conversation(other) is None                                   # alone in its session
    assert mem.conversation(mem.digest("a note of no session")["node_ids"][0]) is None
    elsewhere = Memory.open(mem.settings.home, readable_scopes=["elsewhere"])
    try:
        assert elsewhere.conversation(ids[2]) is None                        # another scope reads nothing of it
    finally:
        elsewhere.close()


def test_unlinked_mentions_of_a_note_are_the_memories_naming_it_without_a_link(mem, tmp_path):
    from tidemind.importers.engine import sync

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Core plugins.md").write_text("# Core plugins\nThe core plugins ship with the app.\n")
    (vault / "Linked.md").write_text("See [[Core plugins]] for what ships with the app.\n")
    (vault / "Mentions.md").write_text("The core plugins can be switched off one by one.\n")
    (vault / "Other.md").write_text("Community plugins are made by other people.\n")
    sync(mem, "obsidian", vault, "vault:v")
    unit = lambda key: mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key = ?", (key,)).fetchone()[0]
    core = unit("Core plugins.md#Core plugins")
    found = mem.unlinked_mentions(core, scopes=["vault:v"])
    assert [f["id"] for f in found] == [unit("Mentions.md#")]                 # not the linked one, not itself
    assert mem.unlinked_mentions(mem.digest("not a note")["node_ids"][0]) == []
    spoken = mem.digest("I read about the core plugins today", scope="personal")["node_ids"][0]
    assert spoken not in [f["id"] for f in mem.unlinked_mentions(core, scopes=["vault:v"])]   # another scope


def test_a_local_graph_honours_its_depth_says_when_it_is_capped_and_walks_only_the_kinds_shown(mem):
    """Issue 25: the local graph stopped silently at 500 (depth 2 and 3 the same), and a memory
    reached only through a pending link stayed as a loose dot when pending links were hidden."""
    center = mem.digest("the hub of the test graph")["node_ids"][0]
    ring1 = [mem.digest(f"first ring memory {i}")["node_ids"][0] for i in range(4)]
    ring2 = [mem.digest(f"second ring memory {i}")["node_ids"][0] for i in range(8)]
    ring3 = [mem.digest(f"third ring memory {i}")["node_ids"][0] for i in range(16)]
    pending_only = mem.digest("reached through a pending link only")["node_ids"][0]
    with immediate(mem.conn):
        add = lambda a, b, status="confirmed": links.add(mem.conn, a, b, status=status, proposed_by="t", at=mem.now())
        for i, r in enumerate(ring1):
            add(center, r)
        for i, r in enumerate(ring2):
            add(ring1[i // 2], r)
        for i, r in enumerate(ring3):
            add(ring2[i // 2], r)
        add(center, pending_only, "pending")
    ids = lambda g: {n["id"] for n in g["nodes"]}
    two, three = mem.graph(center, depth=2), mem.graph(center, depth=3)
    assert ids(two) == {center, *ring1, *ring2, pending_only} and ids(three) == ids(two) | set(ring3)
    assert not three["capped"] and three["complete_depth"] == 3
    capped = mem.graph(center, depth=3, limit=20)
    assert capped["capped"] and len(capped["nodes"]) == 20 and capped["reachable"] == 30
    assert capped["complete_depth"] == 2 and ids(two) <= ids(capped)            # the nearest are kept
    confirmed = mem.graph(center, depth=3, link_statuses=["confirmed"])
    assert pending_only not in ids(confirmed) and {e["status"] for e in confirmed["edges"]} == {"confirmed"}
    with pytest.raises(InvalidInput):
        mem.graph(center, link_statuses=["maybe"])


def test_a_grouped_link_decision_decides_only_what_the_narrowed_inbox_listed(mem):
    hub = mem.digest("hub memory in work", scope="work")["node_ids"][0]
    same = mem.digest("a work memory", scope="work")["node_ids"][0]
    tagged = mem.digest("a tagged work memory", scope="work")["node_ids"][0]
    with immediate(mem.conn):
        plain = links.add(mem.conn, hub, same, status="pending", proposed_by="t", at=mem.now())
        marked = links.add(mem.conn, hub, tagged, status="pending", proposed_by="t", at=mem.now())
    mem.tag_add(tagged, "cranes")
    r = mem.link_decide_at(hub, "confirmed", scopes=["work"], tag="cranes")
    assert [x["link"] for x in r["links"]] == [marked] and links.get(mem.conn, plain)["status"] == "pending"
    assert mem.graph(hub, link_statuses=[])["nodes"][0]["id"] == hub       # no kind shown: the memory alone
    assert len(mem.graph(hub, link_statuses=[])["nodes"]) == 1
