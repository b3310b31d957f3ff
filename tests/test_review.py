"""A person's decisions: review queue, tag rejection, link confirmation — audited and reversible."""
import pytest

from tidemind.errors import NotFound
from tidemind.metabolism.scheduler import run_due
from tidemind.store import immediate, links

from .conftest import run_cli


def test_review_queue_round_trip_through_the_cli(home, cli):
    old = cli("digest", "The cache TTL is 60 seconds.")["node_ids"][0]
    new = cli("correct", str(old), "The cache TTL is 300 seconds.")["node_ids"][0]
    again = cli("digest", "The cache TTL is 60 seconds.")
    item = again["review_items"][0]
    listed = cli("review", "list")["items"]
    assert [i["id"] for i in listed] == [item] and listed[0]["other_node_id"] == new
    shown = cli("review", "show", str(item))
    assert {n["id"] for n in shown["nodes"]} == {again["node_ids"][0], new}
    assert cli("review", "reject", str(item))["status"] == "rejected"
    assert cli("review", "list")["items"] == []
    flags = [i["flags"] for i in cli("recall", "cache TTL")["items"]]
    assert not any(f.startswith("contradiction") for fl in flags for f in fl)     # decided: no longer flagged
    assert cli("review", "reopen", str(item))["status"] == "open"                  # reversible
    actions = [a for (a,) in __import__("apsw").Connection(str(home / "tidemind.db")).execute(
        "SELECT action FROM audit_log WHERE action LIKE 'review_%' ORDER BY id")]
    assert actions == ["review_rejected", "review_open"]


def test_tag_rejection_and_undo(mem):
    nid = mem.digest("The staging database runs PostgreSQL 16 on port 5433.")["node_ids"][0]
    run_due(mem, only=["embed", "annotate"], force=True)
    name = mem.show(nid)["tags"][0]["name"]
    mem.tag_decide(nid, name, reject=True)
    assert name not in [t["name"] for t in mem.show(nid)["tags"]]
    run_due(mem, only=["annotate"], force=True)
    assert name not in [t["name"] for t in mem.show(nid)["tags"]]
    mem.tag_decide(nid, name, reject=False)
    with pytest.raises(NotFound):
        mem.tag_decide(nid, name, reject=False)


def _assignment(mem, node_id, name):
    return mem.conn.execute("SELECT nt.status, nt.source, nt.confidence FROM node_tags nt JOIN tags t ON t.id = nt.tag_id"
                            " WHERE nt.node_id=? AND t.name=?", (node_id, name)).fetchone()


def test_undoing_a_rejection_restores_exactly_what_was_there(mem, tmp_path):
    """Undo deleted the row: a person's own tag (typed, or an imported #tag) vanished for good."""
    from tidemind.importers.engine import sync

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Garden.md").write_text("Tomatoes need staking by June. #garden\n", encoding="utf-8")
    sync(mem, "obsidian", vault, "vault:v")
    imported = mem.conn.execute("SELECT id FROM nodes WHERE scope='vault:v' AND status='live'").fetchone()[0]
    typed = mem.digest("The staging database runs PostgreSQL 16 on port 5433.")["node_ids"][0]
    mem.tag_add(typed, "postgres")
    run_due(mem, only=["embed", "annotate"], force=True)
    proposed = next(t["name"] for t in mem.tags_of(typed) if t["status"] == "proposed")
    cases = [(imported, "garden"), (typed, "postgres"), (typed, proposed)]
    before = {case: _assignment(mem, *case) for case in cases}
    assert before[(imported, "garden")][0] == "confirmed" and before[(typed, proposed)][0] == "proposed"
    for node_id, name in cases:
        mem.tag_decide(node_id, name, reject=True)
        mem.tag_decide(node_id, name, reject=True)            # a second no keeps the first one's memory
        assert _assignment(mem, node_id, name)[0] == "rejected_by_user"
    run_due(mem, only=["annotate"], force=True)
    for node_id, name in cases:
        mem.tag_decide(node_id, name, reject=False)
        assert _assignment(mem, node_id, name) == before[(node_id, name)], name
    mem.tag_decide(typed, "never-had-it", reject=True)        # a no to a tag the memory never had
    mem.tag_decide(typed, "never-had-it", reject=False)
    assert _assignment(mem, typed, "never-had-it") is None


def test_link_decisions_change_what_traversal_walks(mem):
    a, b = (mem.digest(t)["node_ids"][0] for t in ("hub memory", "spoke memory"))
    with immediate(mem.conn):
        link = links.add(mem.conn, a, b, status="pending", proposed_by="test", at=mem.now())
    assert mem.neighbourhood(a)["neighbours"] == []
    mem.link_decide(link, "confirmed")
    assert [n["id"] for n in mem.neighbourhood(a)["neighbours"]] == [b]
    mem.link_decide(link, "rejected_by_user")
    assert mem.neighbourhood(a)["neighbours"] == []
    mem.link_decide(link, "pending")
    assert mem.conn.execute("SELECT status FROM links WHERE id=?", (link,)).fetchone()[0] == "pending"


def test_cli_tag_and_link_errors_are_clear(home, cli):
    cli("init")
    proc = run_cli(home, "tags", "reject", "42", "x")
    assert proc.returncode == 1 and "no node 42" in proc.stderr.decode()
    proc = run_cli(home, "links", "confirm", "7")
    assert proc.returncode == 1 and "no link 7" in proc.stderr.decode()
