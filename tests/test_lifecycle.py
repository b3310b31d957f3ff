"""Correct, archive, unarchive, forget: versions kept, corrections stick, forget leaves no bytes."""
import json
import pytest

from tidemind.errors import Conflict, NotFound
from tidemind.store.connection import checkpoint

from .conftest import stored_anywhere



def test_correction_keeps_prior_version_and_recall_serves_the_correction(mem):
    old = mem.digest("The payments API listens on port 3000.", scope="project:shop")["node_ids"][0]
    c = mem.correct(old, "The payments API listens on port 8080.")
    new = c["node_ids"][0]
    mem.embed_pending()
    shown = mem.show(new, scopes=["project:shop"])
    assert [(v["id"], v["status"]) for v in shown["versions"]] == [(old, "superseded"), (new, "live")]
    assert shown["versions"][0]["content"] == "The payments API listens on port 3000."
    r = mem.recall("payments API port", scopes=["project:shop"])
    ids = [i["id"] for i in r["items"]]
    assert new in ids and old not in ids
    with pytest.raises(NotFound, match="corrected"):
        mem.show(old, scopes=["project:shop"])


def test_redigest_of_corrected_claim_is_flagged_not_merged(mem):
    old = mem.digest("The payments API listens on port 3000.")["node_ids"][0]
    new = mem.correct(old, "The payments API listens on port 8080.")["node_ids"][0]
    again = mem.digest("the payments api listens on port 3000")       # same claim, different case/punctuation
    assert again["warnings"] and "corrected" in again["warnings"][0]
    assert len(again["review_items"]) == 1
    item = mem.conn.execute("SELECT kind, status, node_id, other_node_id FROM review_items").fetchone()
    assert item == ("contradiction", "open", again["node_ids"][0], new)   # names the correction
    # the correction still stands: its text is unchanged and it is still live
    assert mem.show(new)["content"] == "The payments API listens on port 8080."
    mem.embed_pending()
    r = mem.recall("payments API port")
    flagged = {i["id"]: i["flags"] for i in r["items"]}
    assert any(f.startswith("contradiction") for f in flagged[new])
    assert any(f.startswith("contradiction") for f in flagged[again["node_ids"][0]])


def test_near_duplicate_of_corrected_claim_is_flagged(mem):
    old = mem.digest("Deploys to production happen every Friday afternoon after the standup meeting.")["node_ids"][0]
    mem.correct(old, "Deploys to production happen every Tuesday morning.")
    again = mem.digest("Deploys to production happen every Friday afternoon after the standup meeting!!")
    assert again["review_items"]
    unrelated = mem.digest("The standup meeting moved to the small room.")
    assert unrelated["review_items"] == []


def test_correcting_twice_and_stale_targets(mem):
    a = mem.digest("version one of the fact")["node_ids"][0]
    b = mem.correct(a, "version two of the fact")["node_ids"][0]
    with pytest.raises(Conflict, match=str(b)):
        mem.correct(a, "version three")
    c = mem.correct(b, "version three of the fact")["node_ids"][0]
    assert [v["version"] for v in mem.show(c)["versions"]] == [1, 2, 3]


def test_archive_hides_and_unarchive_restores(mem):
    nid = mem.digest("The office wifi network is called seagull")["node_ids"][0]
    mem.embed_pending()
    assert mem.recall("office wifi seagull")["items"][0]["id"] == nid
    mem.archive(nid)
    assert mem.recall("office wifi seagull")["abstained"]
    assert mem.conn.execute("SELECT count(*) FROM node_vectors WHERE node_id=?", (nid,)).fetchone()[0] == 0
    with pytest.raises(NotFound, match="archived"):
        mem.show(nid)
    with pytest.raises(Conflict):
        mem.archive(nid)
    mem.unarchive(nid)
    mem.embed_pending()
    assert mem.conn.execute("SELECT count(*) FROM node_vectors WHERE node_id=?", (nid,)).fetchone()[0] == 1
    assert mem.recall("office wifi seagull")["items"][0]["id"] == nid


def _files_containing(root, needle: bytes):
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            hits.append(path)
    return hits


def test_forget_leaves_no_bytes_anywhere(mem, home):
    secret = "Quokkafeather Wintermoss account recovery phrase is lantern-orbit-velvet"
    keep = mem.digest("An unrelated memory about gardening and tomatoes")["node_ids"][0]
    first = mem.digest(secret + "\n\nA second unit in the same capture about bicycles and gears.")
    nid = first["node_ids"][0]
    assert len(first["node_ids"]) == 2
    mem.embed_pending()
    corrected = mem.correct(nid, secret + " (updated)")["node_ids"][0]
    mem.embed_pending()
    checkpoint(mem.conn)
    assert _files_containing(home, b"Quokkafeather")            # it really was on disk
    assert stored_anywhere(mem.conn, "Quokkafeather")           # and in the store's tables
    result = mem.forget(corrected)
    assert set(result["node_ids"]) == {nid, corrected}
    for needle in ("Quokkafeather", "quokkafeather", "Wintermoss", "lantern-orbit-velvet", "lantern"):
        assert stored_anywhere(mem.conn, needle) == [], needle
    mem.close()
    for needle in (b"Quokkafeather", b"quokkafeather", b"Wintermoss", b"lantern-orbit-velvet", b"lantern"):
        assert _files_containing(home, needle) == [], needle
    from tidemind.memory import Memory
    m2 = Memory.open(home)
    try:
        assert m2.recall("quokkafeather wintermoss recovery phrase", all_scopes=True)["abstained"]
        with pytest.raises(NotFound, match="forgotten"):
            m2.show(nid)
        # the sibling unit and the unrelated memory survive, and the store is healthy
        sibling = first["node_ids"][1]
        assert "bicycles" in m2.show(sibling)["content"]
        assert m2.show(keep)["content"].startswith("An unrelated")
        tomb = m2.conn.execute("SELECT content, content_hash, status FROM nodes WHERE id=?", (nid,)).fetchone()
        assert tomb[0] == "" and len(tomb[1]) == 64 and tomb[2] == "forgotten"
        assert m2.doctor()["ok"], m2.doctor()
    finally:
        m2.close()


def test_forget_takes_text_out_of_embedder_statistics(mem):
    base = mem.digest("ordinary note about the weekly planning meeting")["node_ids"][0]
    mem.embed_pending()
    before = list(mem.conn.execute("SELECT term_id, df, ctx FROM embed_terms ORDER BY term_id"))
    nid = mem.digest("zyxwvut blorptastic quantumfrog planning")["node_ids"][0]
    mem.embed_pending()
    assert len(list(mem.conn.execute("SELECT 1 FROM embed_terms"))) > len(before)
    mem.forget(nid)
    after = list(mem.conn.execute("SELECT term_id, df, ctx FROM embed_terms ORDER BY term_id"))
    assert [(t, d) for t, d, _ in after] == [(t, d) for t, d, _ in before]
    assert base


def test_forgetting_one_unit_keeps_a_sibling_that_quotes_it(mem):
    text = ("- The deploy key rotates monthly\n"
            "- The deploy key rotates monthly, except in December when it is frozen\n")
    r = mem.digest(text)
    first, second = r["node_ids"]
    mem.forget(first)
    capture = mem.conn.execute("SELECT content FROM captures WHERE id=?", (r["capture_id"],)).fetchone()[0]
    sibling = mem.show(second)["content"]
    assert sibling == "- The deploy key rotates monthly, except in December when it is frozen"
    assert sibling in capture                                   # the sibling's words are intact
    assert capture.startswith("[forgotten sha256:")
    span = mem.conn.execute("SELECT capture_start, capture_end FROM nodes WHERE id=?", (second,)).fetchone()
    assert capture[span[0]:span[1]] == sibling                  # its span moved with the redaction


def test_forget_reaches_default_statistics_under_another_embedder(mem, home):
    from tidemind.config import load_settings
    from tidemind.memory import Memory

    nid = mem.digest("Vexillology quorum glimmerstone")["node_ids"][0]
    mem.embed_pending()
    assert mem.conn.execute("SELECT count(*) FROM embed_observed").fetchone()[0] == 1
    mem.close()
    other = Memory(load_settings(home, embedder="ollama", ollama_host="http://127.0.0.1:9"))
    try:
        other.forget(nid)
        assert other.conn.execute("SELECT count(*) FROM embed_observed").fetchone()[0] == 0
        assert other.conn.execute("SELECT count(*) FROM embed_terms").fetchone()[0] == 0
    finally:
        other.close()


def test_show_as_of_lists_only_versions_recorded_by_then(mem):
    first = mem.digest("the release train leaves on Mondays")["node_ids"][0]
    second = mem.correct(first, "the release train leaves on Wednesdays")["node_ids"][0]
    recorded = mem.show(second)["versions"][0]["recorded_at"]
    past = mem.show(first, as_of=recorded, clock="recorded")
    assert [v["id"] for v in past["versions"]] == [first]
    with pytest.raises(NotFound, match="not recorded or not valid"):
        mem.show(second, as_of="2001-01-01")


def test_correction_carries_decisions_not_proposals(mem):
    from tidemind.store import immediate, tags

    old = mem.digest("The ferry to the island leaves at seven from pier four")["node_ids"][0]
    with immediate(mem.conn):
        tags.assign(mem.conn, old, "pier-four", status="proposed", source="annotate", at=mem.now())
    mem.tag_add(old, "ferries")                       # a person's tag
    mem.tag_add(old, "islands")
    mem.tag_decide(old, "islands", reject=True)       # a person's "no"
    new = mem.correct(old, "The ferry to the island leaves at eight from pier two")["node_ids"][0]
    carried = {t["name"]: t["status"] for t in mem.tags_of(new)}
    assert carried == {"ferries": "confirmed", "islands": "rejected_by_user"}   # the old words' proposal stays behind


def test_forget_scrubs_words_from_audit_details_but_keeps_the_trail(mem):
    from tidemind.store import audit, immediate

    nid = mem.digest("the zephyrine courier code is under the mat")["node_ids"][0]
    with immediate(mem.conn):
        audit.record(mem.conn, at=mem.now(), actor="daemon:annotate", action="annotate", node_id=nid,
                     tags=["zephyrine-courier"], generator="annotate/offline-v1")
    mem.forget(nid)
    trail = audit.for_node(mem.conn, nid)
    assert [t["action"] for t in trail][-1] == "forget" and len(trail) >= 3
    assert "zephyrine" not in json.dumps(trail)
    annotated = next(json.loads(t["details"]) for t in trail if t["action"] == "annotate")
    assert annotated == {"generator": "annotate/offline-v1", "scrubbed": "forget"}


def _merge(mem, older_text: str, newer_text: str) -> tuple[int, int]:
    from tidemind.metabolism.scheduler import run_due

    older = mem.digest(older_text)["node_ids"][0]
    newer = mem.digest(newer_text)["node_ids"][0]
    run_due(mem, only=["embed", "dedup"], force=True)
    item = next(i for i in mem.review_list() if i["kind"] == "merge")
    mem.review_decide(item["id"], "approved")
    assert mem.show(newer)["versions"][0]["id"] == older
    return older, newer


def test_forgetting_a_merged_memory_erases_the_version_merged_into_it(mem, home):
    """forget erased the correction lineage only: the node merged into the forgotten one kept its
    text on disk and came back through a recorded-clock as-of."""
    older, newer = _merge(mem, "The quarzite vault combination is kept in the blue binder.",
                          "The quarzite vault combination is kept in the blue binder!")
    between = mem.show(older, as_of=mem.show(newer)["recorded_at"], clock="recorded")["recorded_at"]
    mem.forget(newer)
    raw = mem.conn.execute("SELECT status, content FROM nodes WHERE id IN (?, ?)", (older, newer)).fetchall()
    assert raw == [("forgotten", ""), ("forgotten", "")]
    for clock in ("recorded", "both", "valid"):
        r = mem.recall("quarzite vault combination", as_of=between, clock=clock, record=False)
        assert r["items"] == [] and r["abstained"]
        with pytest.raises(NotFound):
            mem.show(older, as_of=between, clock=clock)
    stream = "".join(p.read_text() for p in (home / "stream").glob("*.md"))
    assert "quarzite" not in stream


def test_archiving_a_corrected_memory_hides_its_earlier_versions_on_every_clock(mem):
    """Archive hid the current version only: a recorded-clock as-of still served the old one."""
    first = mem.digest("The obsidianite relay listens on port 3000.")["node_ids"][0]
    when = mem.show(first)["recorded_at"]
    second = mem.correct(first, "The obsidianite relay listens on port 8080.")["node_ids"][0]
    assert [i["id"] for i in mem.recall("obsidianite relay port", as_of=when, clock="recorded",
                                        record=False)["items"]] == [first]
    mem.archive(second)
    for clock in ("recorded", "both"):
        assert mem.recall("obsidianite relay port", as_of=when, clock=clock, record=False)["items"] == []
        with pytest.raises(NotFound):
            mem.show(first, as_of=when, clock=clock)
    mem.unarchive(second)                               # reversible: the history is back with it
    assert [i["id"] for i in mem.recall("obsidianite relay port", as_of=when, clock="recorded",
                                        record=False)["items"]] == [first]


def test_a_dated_correction_closes_the_old_facts_valid_time(mem):
    """Superseding set no valid_to, so a valid-time as-of after a dated correction abstained and
    one before it could not see the old fact at all."""
    marta = mem.digest("The platform team lead is Marta.", valid_at="2025-01-01")["node_ids"][0]
    jonas = mem.correct(marta, "The platform team lead is Jonas.", valid_at="2026-02-01")["node_ids"][0]
    assert mem.conn.execute("SELECT valid_to FROM nodes WHERE id=?", (marta,)).fetchone()[0].startswith("2026-02-01")
    ask = lambda day: [i["id"] for i in mem.recall("platform team lead", as_of=day, clock="valid",
                                                   record=False)["items"]]
    assert ask("2025-06-01") == [marta] and ask("2026-06-01") == [jonas] and ask("2024-06-01") == []
    assert mem.show(marta, as_of="2025-06-01", clock="valid")["content"] == "The platform team lead is Marta."
    assert [i["id"] for i in mem.recall("platform team lead", record=False)["items"]] == [jonas]   # now: the new one
    # an undated correction says the old words were never true: they never hold on the valid clock
    typo = mem.digest("The release train leaves on Mondays.", valid_at="2025-01-01")["node_ids"][0]
    fixed = mem.correct(typo, "The release train leaves on Tuesdays.")["node_ids"][0]
    assert [i["id"] for i in mem.recall("release train", as_of="2025-06-01", clock="valid",
                                        record=False)["items"]] == [fixed]


@pytest.mark.backends("sqlite", why="a migration of a SQLite store written by an earlier version; a PostgreSQL store"
                      " starts at the schema these migrations reach")
def test_stores_written_before_have_their_superseded_valid_time_closed_by_the_migration(mem):
    from tidemind.store import immediate, nodes

    old = mem.digest("The office wifi password rotates monthly.", valid_at="2025-03-01")["node_ids"][0]
    mem.correct(old, "The office wifi password rotates weekly.", valid_at="2025-09-01")
    with immediate(mem.conn):
        mem.conn.execute("UPDATE nodes SET valid_to=NULL WHERE id=?", (old,))      # as an older version left it
        mem.conn.execute(nodes.SUPERSEDED_VALID_TO)
    assert mem.conn.execute("SELECT valid_to FROM nodes WHERE id=?", (old,)).fetchone()[0].startswith("2025-09-01")


def test_approving_a_contradiction_says_which_memory_stands(home, cli):
    from tidemind.memory import Memory
    from tidemind.store import immediate, review

    from .conftest import run_cli

    with Memory.open(home) as m:
        a = m.digest("The payments service is deployed to the eu-west cluster.")["node_ids"][0]
        b = m.digest("The payments service is not deployed to the eu-west cluster any more.")["node_ids"][0]
        with immediate(m.conn):
            item = review.file(m.conn, "contradiction", node_id=b, other_node_id=a, at=m.now(), reason="negation")
    ids = lambda r: [i["id"] for i in r["items"]]
    assert set(ids(cli("recall", "payments service eu-west cluster"))) == {a, b}       # open: both, together
    decided = cli("review", "approve", str(item), "--stands", str(a))
    assert decided["stands"] == a and f"node {a} stands" in decided["done"]
    r = cli("recall", "payments service eu-west cluster")
    assert ids(r)[:2] == [a, b]
    assert f"contradicted_by:{a}" in r["items"][1]["flags"]
    assert not any(f.startswith("contradicted_by") for f in r["items"][0]["flags"])
    cli("review", "approve", str(item), "--stands", str(b))                 # a person may change their mind
    r = cli("recall", "payments service eu-west cluster")
    assert ids(r)[:2] == [b, a] and f"contradicted_by:{b}" in r["items"][1]["flags"]
    cli("review", "reopen", str(item))                                       # reversible
    r = cli("recall", "payments service eu-west cluster")
    assert not any(f.startswith("contradicted_by") for i in r["items"] for f in i["flags"])
    bad = run_cli(home, "review", "approve", str(item), "--stands", "999")
    assert bad.returncode == 1 and b"stands must be node" in bad.stderr
