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


# offline tags are names and phrases that recur in the scope: a memory needs company to get any
COMPANY = ["PgBouncer pools connections to the staging database.", "Backups of the staging database run at night."]


def test_tag_rejection_and_undo(mem):
    for text in COMPANY:
        mem.digest(text)
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
    for text in COMPANY:
        mem.digest(text)
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


def test_a_tag_name_rejected_everywhere_is_never_proposed_in_that_scope_and_undo_restores_it(home, cli):
    """Offline tagging put the same useless name on every memory, and a rejection held for one node
    only: the name came back on every new memory. "Never this tag here" is a scope-wide tombstone."""
    from tidemind.memory import Memory
    from tidemind.store import immediate, tags

    with Memory.open(home) as m:
        nodes = [m.digest(f"The staging database number {n} listens on port 54{n}.", scope="project:a")["node_ids"][0]
                 for n in range(3)]
        other = m.digest("The staging database in the other project listens on 6000.", scope="project:b")["node_ids"][0]
        m.tag_add(nodes[2], "server-number")                       # a person's own tag of the same name
        with immediate(m.conn):
            for n in nodes[:2] + [other]:
                tags.assign(m.conn, n, "server-number", status="proposed", source="annotate/offline", at=m.now(),
                            confidence=0.4)
        before = {n: m.conn.execute("SELECT status, source, confidence FROM node_tags nt JOIN tags t ON t.id=nt.tag_id"
                                    " WHERE nt.node_id=? AND t.name='server-number'", (n,)).fetchone() for n in nodes}
    listed = cli("tags", "list", "--status", "proposed", "--scope", "project:a")
    assert [(t["name"], t["count"]) for t in listed["tags"]] == [("server-number", 2)]
    done = cli("tags", "reject-everywhere", "server-number", "--scope", "project:a")
    assert sorted(done["node_ids"]) == nodes[:2]
    with Memory.open(home) as m:
        served = lambda n: {t["name"]: t["status"] for t in m.show(n)["tags"]}
        assert "server-number" not in served(nodes[0]) and served(nodes[2])["server-number"] == "confirmed"
        assert served(other)["server-number"] == "proposed"                 # another scope is not touched
        fresh = m.digest("The staging database number 9 listens on port 5499.", scope="project:a")["node_ids"][0]
        with immediate(m.conn):
            assert not tags.assign(m.conn, fresh, "server-number", status="proposed", source="annotate", at=m.now())
        run_due(m, only=["embed", "annotate"], force=True)
        assert "server-number" not in {t["name"] for t in m.show(fresh)["tags"]}
        assert m.tag_listing(scopes=["project:a"])["rejected_everywhere"][0]["name"] == "server-number"
    undone = cli("tags", "unreject-everywhere", "server-number", "--scope", "project:a")
    assert sorted(undone["node_ids"]) == nodes[:2]
    with Memory.open(home) as m:
        after = {n: m.conn.execute("SELECT status, source, confidence FROM node_tags nt JOIN tags t ON t.id=nt.tag_id"
                                   " WHERE nt.node_id=? AND t.name='server-number'", (n,)).fetchone() for n in nodes}
        assert after == before                                            # exactly as it was
        actions = [a for (a,) in m.conn.execute("SELECT action FROM audit_log WHERE action LIKE 'tag_%everywhere'")]
        assert actions == ["tag_reject_everywhere", "tag_unreject_everywhere"]
    bad = run_cli(home, "tags", "unreject-everywhere", "server-number", "--scope", "project:a")
    assert bad.returncode == 1 and b"not rejected everywhere" in bad.stderr


def test_a_tag_name_accepted_everywhere_becomes_a_persons_tag_in_that_scope_only(home, cli):
    from tidemind.memory import Memory
    from tidemind.store import immediate, tags

    with Memory.open(home) as m:
        mine = [m.digest(f"Kiln log {n}: cone 6 in {9 + n} hours.", scope="studio")["node_ids"][0] for n in range(2)]
        other = m.digest("Kiln log elsewhere: cone 5.", scope="studio:b")["node_ids"][0]
        with immediate(m.conn):
            for n in [*mine, other]:
                tags.assign(m.conn, n, "kiln", status="proposed", source="annotate/offline", at=m.now())
    done = cli("tags", "accept-everywhere", "kiln", "--scope", "studio")
    assert sorted(done["node_ids"]) == mine
    with Memory.open(home) as m:
        status = lambda n: {t["name"]: t["status"] for t in m.tags_of(n, scopes=["studio"])}.get("kiln")
        assert [status(n) for n in mine] == ["confirmed", "confirmed"]
        assert {t["name"]: t["status"] for t in m.tags_of(other, scopes=["studio:b"])}["kiln"] == "proposed"
        with Memory.open(home, readable_scopes=["studio:b"], writable_scopes=["studio:b"]) as limited:
            with pytest.raises(NotFound):           # another scope's memories are not undone from here
                limited.tag_accept_everywhere_undo("kiln", done["previous"])
        undone = m.tag_accept_everywhere_undo("kiln", done["previous"])
        assert sorted(undone["node_ids"]) == mine and [status(n) for n in mine] == ["proposed", "proposed"]
    bad = run_cli(home, "tags", "accept-everywhere", "kiln")
    assert bad.returncode != 0 and b"--scope" in bad.stderr


def test_tag_commands_confirm_reject_and_unreject_by_node(home, cli):
    nid = cli("digest", "The ferry to the island leaves at seven.")["node_ids"][0]
    assert "added" in cli("tags", "confirm", str(nid), "ferries")["done"]
    cli("tags", "reject", str(nid), "ferries")
    cli("tags", "unreject", str(nid), "ferries")
    assert {t["name"]: t["status"] for t in cli("show", str(nid))["tags"]} == {"ferries": "confirmed"}
