"""Undo from the audit log: a person's decisions are put back after the window (or command)
that made them is gone, one decision at a time, never an undo undone, never another actor's,
and a part decided again since is left as it is."""
import pytest

from tidemind.errors import NotFound
from tidemind.memory import Memory
from tidemind.store import immediate, links, tags

from .conftest import StepClock
from .test_browse import _contradictions, _pairs


def _reopened(mem, actor="person:desktop"):
    """A second handle on the same store, as a window opened again would be."""
    return Memory.open(mem.settings.home, clock=StepClock(mem.clock.now), actor=actor)


def test_decisions_are_undone_one_at_a_time_after_the_window_that_made_them_is_gone(mem):
    mem.actor = "person:desktop"
    items = _contradictions(mem, 3)
    a, b, c = (mem.digest(f"undo link end {w}")["node_ids"][0] for w in ("one", "two", "three"))
    with immediate(mem.conn):
        spoke = links.add(mem.conn, a, b, status="pending", proposed_by="t", at=mem.now())
        other = links.add(mem.conn, a, c, status="pending", proposed_by="t", at=mem.now())
    mem.link_decide_at(a, "confirmed")                     # decision 1: two links
    mem.review_decide_many(items, "rejected")              # decision 2: three items
    mem.archive(c)                                         # decision 3
    later = _reopened(mem)
    try:
        assert later.last_decision()["label"] == "archive #%d" % c
        later.undo_last()
        assert later.show(c)["id"] == c                      # live again, readable
        assert "3 review item(s) set rejected" == later.last_decision()["label"]
        later.undo_last()
        assert {later.review_show(i)["status"] for i in items} == {"open"}
        later.undo_last()
        assert (links.get(mem.conn, spoke)["status"], links.get(mem.conn, other)["status"]) == ("pending", "pending")
        assert later.last_decision() is None                # the undos themselves are never undone
        with pytest.raises(NotFound):
            later.undo_last()
    finally:
        later.close()


def test_another_actors_decision_is_not_undone_and_a_part_decided_again_stays(mem):
    mem.actor = "person:desktop"
    items = _contradictions(mem, 2)
    mem.review_decide_many(items, "approved")
    cli = _reopened(mem, actor="person:cli")
    try:
        with pytest.raises(NotFound):
            cli.undo_last()                                 # the CLI decided nothing
        cli.review_decide(items[0], "rejected")             # decided again since, by someone else
    finally:
        cli.close()
    r = mem.undo_last()
    assert len(r["kept"]) == 1 and str(items[0]) in r["kept"][0]
    assert mem.review_show(items[0])["status"] == "rejected"       # the later decision stands
    assert mem.review_show(items[1])["status"] == "open"


def test_a_contradiction_undone_gets_back_the_memory_that_stood(mem):
    mem.actor = "person:desktop"
    item = _contradictions(mem, 1)[0]
    row = mem.review_show(item)
    mem.review_decide(item, "approved", stands=row["node_id"])
    mem.review_decide(item, "approved", stands=row["other_node_id"])
    mem.undo_last()
    back = mem.review_show(item)
    assert back["status"] == "approved" and back["payload"]["stands"] == row["node_id"]


def test_a_merge_approved_in_bulk_is_undone_whole(mem):
    mem.actor = "person:desktop"
    made = _pairs(mem, [0.9, 0.8])
    mem.review_decide_many([m[0] for m in made], "approved")
    assert all(mem.conn.execute("SELECT status FROM nodes WHERE id=?", (older,)).fetchone()[0] == "superseded"
               for _, _, older in made)
    mem.undo_last()
    assert all(mem.review_show(i)["status"] == "open" for i, _, _ in made)
    assert all(mem.show(older)["id"] == older for _, _, older in made)          # both merges taken back


def test_tag_decisions_are_undone_from_the_audit(mem):
    mem.actor = "person:desktop"
    node = mem.digest("the harbour crane needs new cables")["node_ids"][0]
    with immediate(mem.conn):
        tags.assign(mem.conn, node, "cranes", status="proposed", source="model:test", at=mem.now())
    was = tags.assignment(mem.conn, node, "cranes")
    mem.tag_decide(node, "cranes", reject=True)
    mem.undo_last()
    assert tags.assignment(mem.conn, node, "cranes")["status"] == "proposed"
    mem.tag_add(node, "cranes")                                   # the proposal confirmed by hand...
    mem.undo_last()                                               # ...and back to the proposal it was
    assert {k: tags.assignment(mem.conn, node, "cranes")[k] for k in ("status", "source")} == \
        {k: was[k] for k in ("status", "source")}
    mem.tag_reject_everywhere("cranes", "personal")
    assert tags.assignment(mem.conn, node, "cranes")["status"] == "rejected_by_user"
    assert mem.last_decision()["label"] == "tag 'cranes' rejected everywhere in personal"
    mem.undo_last()
    assert tags.assignment(mem.conn, node, "cranes")["status"] == "proposed"
    mem.tag_accept_everywhere("cranes", "personal")
    mem.undo_last()
    assert tags.assignment(mem.conn, node, "cranes")["status"] == "proposed"
    assert mem.last_decision() is None           # each decision undone once, no undo undone


def test_an_unarchive_is_undone_and_the_memory_hidden_again(mem):
    mem.actor = "person:desktop"
    node = mem.digest("an old note about the bakery oven")["node_ids"][0]
    mem.archive(node)
    mem.unarchive(node)
    mem.undo_last()                              # the unarchive: archived again
    assert mem.recall("bakery oven")["items"] == []
    mem.undo_last()                              # the archive: live again
    assert [i["id"] for i in mem.recall("bakery oven")["items"]] == [node]


def test_an_undo_meant_for_one_decision_undoes_that_one_even_after_a_later_one_and_only_once(mem):
    from tidemind.errors import Conflict

    mem.actor = "person:desktop"
    a, b = (mem.digest(f"note {w} for the second window")["node_ids"][0] for w in ("left", "right"))
    mark = mem.change_mark()[0]
    mem.archive(a)
    mine = mem.decisions_after(mark)
    assert len(mine) == 1
    second_window = _reopened(mem)
    try:
        second_window.archive(b)                      # the same person, another window
    finally:
        second_window.close()
    mem.undo_last(expect=mine[0])                     # this window's own decision, not the other's
    status = lambda i: mem.conn.execute("SELECT status FROM nodes WHERE id=?", (i,)).fetchone()[0]
    assert (status(a), status(b)) == ("live", "archived")
    with pytest.raises(Conflict):
        mem.undo_last(expect=mine[0])                 # never twice
    assert mem.last_decision()["label"] == f"archive #{b}"
    mem.undo_last()
    assert status(b) == "live" and mem.last_decision() is None
    with pytest.raises(NotFound):
        mem.undo_last(expect=[999_999])


def test_a_scope_wide_tag_decision_and_its_lifting_are_each_undone(mem):
    mem.actor = "person:desktop"
    node = mem.digest("the crane cables are worn")["node_ids"][0]
    with immediate(mem.conn):
        tags.assign(mem.conn, node, "cables", status="proposed", source="model:test", at=mem.now())
    mem.tag_reject_everywhere("cables", "personal")
    mem.tag_unreject_everywhere("cables", "personal")
    assert tags.assignment(mem.conn, node, "cables")["status"] == "proposed"
    mem.undo_last()                                   # the lifting undone: never here again
    assert tags.assignment(mem.conn, node, "cables")["status"] == "rejected_by_user"
    assert mem.tag_listing(scopes=["personal"])["rejected_everywhere"]
    mem.undo_last()                                   # the rejection undone: proposed again
    assert tags.assignment(mem.conn, node, "cables")["status"] == "proposed"
    assert not mem.tag_listing(scopes=["personal"])["rejected_everywhere"]


def test_a_bulk_decision_of_thousands_is_undone_whole(mem):
    mem.actor = "person:desktop"
    hub = mem.digest("the hub of many links")["node_ids"][0]
    with immediate(mem.conn), mem.stream_batch():
        now = mem.now()
        ends = [mem.store_unit(f"end memory {i} of the hub", scope="personal", source_tool="test", valid_from=None,
                               now=now)[0] for i in range(2100)]
    with immediate(mem.conn):
        made = [links.add(mem.conn, hub, e, status="pending", proposed_by="t", at=mem.now()) for e in ends[:2100]]
    mark = mem.change_mark()[0]
    assert len(mem.link_decide_at(hub, "confirmed")["links"]) == 2100
    assert [len(g) for g in mem.decisions_after(mark)] == [2100]
    r = mem.undo_last()
    assert len(r["rows"]) == 2100
    assert {links.get(mem.conn, i)["status"] for i in made} == {"pending"}


def test_a_part_that_cannot_go_back_is_kept_and_the_rest_is_undone(mem):
    """Undoing a rejection approves again; when what was approved (a synthesis) was withdrawn
    since, that part stays as it is and says so, and the undo does not fail for good."""
    from tidemind.store import review, syntheses

    mem.actor = "person:desktop"
    crystal = mem.digest("a memory a synthesis is about")["node_ids"][0]
    with immediate(mem.conn):
        sid, _ = syntheses.put(mem.conn, subject="crystal:test", kind="crystal", scope="personal", members=[crystal],
                               text="about it", generator="t", at=mem.now())
        item = review.file(mem.conn, "crystal", node_id=crystal, other_node_id=None, at=mem.now(), scope="personal",
                           synthesis=sid, members=[crystal])
    pair = _pairs(mem, [0.9])[0][0]
    mem.review_decide(item, "approved")
    mem.review_decide_many([item, pair], "rejected")
    with immediate(mem.conn):
        syntheses.withdraw_citing(mem.conn, crystal, mem.now())
    r = mem.undo_last()                               # the rejection: approving the item again cannot be done
    assert len(r["kept"]) == 1 and str(item) in r["kept"][0]
    assert mem.review_show(pair)["status"] == "open"              # the rest of the decision went back
    assert mem.last_decision()["label"] == "1 review item(s) set approved"     # the next one further back
