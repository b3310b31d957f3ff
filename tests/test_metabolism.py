"""Metabolism: tasks propose, never overwrite; rejections hold; leases keep runs single."""
import datetime as dt
import json
import os
import subprocess
import sys

from tidemind.metabolism.scheduler import ordered_tasks, run_due, run_task
from tidemind.store import immediate, links, tags, task_runs
from tidemind.text import sha256

from .conftest import ROOT

CORPUS = [
    "The staging database runs PostgreSQL 16 on port 5433 behind PgBouncer.",
    "Staging PostgreSQL backups run nightly; the staging database is restored weekly to verify them.",
    "We deploy the web app with GitHub Actions on every tag.",
    "GitHub Actions deploys need the DEPLOY_ENV secret set per environment.",
    "Ana prefers small pull requests with tests.",
    "The PostgreSQL staging database uses port 5433 and PgBouncer pools connections.",
]


def _authored(mem):
    return {i: (c, h) for i, c, h in mem.conn.execute("SELECT id, content, content_hash FROM nodes")}


def test_offline_passes_never_change_authored_text(mem):
    for t in CORPUS:
        mem.digest(t, session="s1")
    before = _authored(mem)
    for _ in range(3):
        reports = run_due(mem, force=True)
        assert all(r["status"] == "ok" for r in reports), reports
    after = _authored(mem)
    assert after == before
    assert all(sha256(c) == h for c, h in after.values())
    assert mem.doctor()["ok"]


def test_tasks_produce_proposals_with_status(mem):
    for t in CORPUS:
        mem.digest(t, session="s1")
    run_due(mem, force=True)
    tag_statuses = {s for (s,) in mem.conn.execute("SELECT status FROM node_tags")}
    assert tag_statuses == {"proposed"}
    assert mem.conn.execute("SELECT count(*) FROM derived WHERE field='title'").fetchone()[0] == len(CORPUS)
    link_statuses = {s for (s,) in mem.conn.execute("SELECT status FROM links")}
    assert link_statuses and link_statuses <= {"pending", "confirmed", "rejected_by_model"}
    item = mem.recall("staging database port")["items"][0]
    assert item["derived"]["title"]["layer"] == "derived" and item["derived"]["title"]["generator"]
    assert all(t["status"] in ("proposed", "confirmed") for t in item["tags"])


def test_a_rejected_tag_never_returns(mem):
    # offline tags come from what recurs in the scope, so the node needs company to get any
    nid = [mem.digest(t)["node_ids"][0] for t in CORPUS][0]
    run_due(mem, only=["embed", "annotate"], force=True)
    proposed = [t["name"] for t in tags.for_nodes(mem.conn, [nid])[nid]]
    assert proposed
    with immediate(mem.conn):
        for name in proposed:
            tags.reject(mem.conn, nid, name, mem.now())
        mem.conn.execute("DELETE FROM derived WHERE node_id=?", (nid,))     # force a fresh annotation
        mem.conn.execute("UPDATE nodes SET derived_text='' WHERE id=?", (nid,))
    for _ in range(2):
        run_due(mem, only=["annotate"], force=True)
    statuses = {t["name"]: t["status"] for t in tags.for_nodes(mem.conn, [nid])[nid]}
    assert all(statuses[n] == "rejected_by_user" for n in proposed)
    assert all(t["status"] != "rejected_by_user" for t in mem.show(nid)["tags"])   # and never served


def test_rejected_and_expired_pairs_are_never_reproposed(mem):
    for t in CORPUS:
        mem.digest(t)
    run_due(mem, only=["embed", "link-propose"], force=True)
    first = list(mem.conn.execute("SELECT id, source_id, target_id FROM links"))
    assert first
    with immediate(mem.conn):
        for link_id, _, _ in first:
            links.set_status(mem.conn, link_id, "rejected_by_user", mem.now(), "person said no")
        task_runs.set_cursor(mem.conn, "link-propose", 0)                  # make it look at everything again
    run_due(mem, only=["link-propose"], force=True)
    again = list(mem.conn.execute("SELECT id, source_id, target_id, status FROM links"))
    assert {(s, t) for _, s, t, _ in again} == {(s, t) for _, s, t in first}
    assert all(status == "rejected_by_user" for *_, status in again)


def test_pending_links_expire_instead_of_vanishing(mem, home):
    a, b = (mem.digest(t)["node_ids"][0] for t in ("alpha memory text", "beta memory text"))
    with immediate(mem.conn):
        links.add(mem.conn, a, b, status="pending", proposed_by="test", at="2020-01-01T00:00:00.000000Z")
    run_due(mem, only=["link-evaluate"], force=True)
    status, reason = mem.conn.execute("SELECT status, reason FROM links").fetchone()
    assert status == "expired" and reason


def test_a_leased_task_is_not_run_twice(mem):
    task = next(t for t in ordered_tasks() if t.name == "annotate")
    now = mem.now()
    assert task_runs.acquire(mem.conn, "annotate", "someone-else", now, "9999-01-01T00:00:00.000000Z")
    r = run_task(mem, task, "me")
    assert r["status"] == "busy"


def test_a_lease_held_by_a_dead_local_process_is_taken_over(mem):
    import socket

    from tidemind.metabolism.scheduler import _pid_namespace

    task = next(t for t in ordered_tasks() if t.name == "annotate")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()                                               # its pid now names no process
    far = "9999-01-01T00:00:00.000000Z"
    here = f"{socket.gethostname()}:{_pid_namespace()}"
    assert task_runs.acquire(mem.conn, "annotate", f"{here}:{dead.pid}", mem.now(), far)
    assert run_task(mem, task, "me")["status"] == "ok"
    # a live holder, one on another machine or in another pid namespace, or a malformed owner, is waited for
    for holder in (f"{here}:{os.getpid()}", f"other-host:{_pid_namespace()}:{dead.pid}",
                   f"{socket.gethostname()}:1:{dead.pid}", f"{here}:²", f"{here}:{10**30}", "legacy:123"):
        mem.conn.execute("UPDATE task_runs SET lease_owner=?, lease_until=? WHERE task='annotate'", (holder, far))
        assert run_task(mem, task, "me")["status"] == "busy", holder


def test_two_metabolize_processes_never_run_one_task_twice(home, mem):
    for i in range(300):
        mem.digest(f"memory number {i} about gardening, tomatoes and irrigation schedules")
    mem.close()
    cmd = [sys.executable, "-m", "tidemind.cli", "--home", str(home), "--json", "metabolize", "--task", "embed"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT) for _ in range(2)]
    reports = [json.loads(p.communicate(timeout=120)[0])["tasks"][0] for p in procs]
    statuses = sorted(r["status"] for r in reports)
    embedded = sum(r.get("embedded", 0) for r in reports)
    assert statuses in (["busy", "ok"], ["ok", "ok"])
    from tidemind.memory import Memory
    with Memory.open(home) as m:
        assert m.conn.execute("SELECT count(*) FROM node_vectors").fetchone()[0] == 300
        assert m.conn.execute("SELECT count(*) FROM embed_observed").fetchone()[0] == 300
    assert embedded == 300          # no node embedded (or counted in the statistics) twice


def test_decay_cools_but_never_hides(mem):
    nid = mem.digest("a memory that will cool down")["node_ids"][0]
    run_due(mem, only=["decay"], force=True)
    mem.conn.execute("UPDATE task_runs SET last_finished='2020-01-01T00:00:00.000000Z' WHERE task='decay'")
    run_due(mem, only=["decay"], force=True)
    heat = mem.conn.execute("SELECT heat FROM nodes WHERE id=?", (nid,)).fetchone()[0]
    assert heat < 0.01
    assert mem.recall("memory that will cool down")["items"][0]["id"] == nid


def test_near_duplicate_becomes_a_merge_item_and_approval_keeps_both(mem):
    a = mem.digest("The weekly planning meeting is on Monday at 10:00 in the big room.")["node_ids"][0]
    mem.digest("Lunch options near the office are limited on Sundays.")
    b = mem.digest("The weekly planning meeting is on Monday at 10:00 in the big room!")["node_ids"][0]
    run_due(mem, only=["embed", "dedup"], force=True)
    items = mem.review_list()
    merges = [i for i in items if i["kind"] == "merge"]
    assert len(merges) == 1 and {merges[0]["node_id"], merges[0]["other_node_id"]} == {a, b}
    assert mem.show(a)["content"] and mem.show(b)["content"]          # nothing merged by itself
    run_due(mem, only=["dedup"], force=True)
    assert len([i for i in mem.review_list() if i["kind"] == "merge"]) == 1      # not filed twice
    mem.review_decide(merges[0]["id"], "approved")
    shown = mem.show(b)
    assert [v["id"] for v in shown["versions"]][:1] == [a] and shown["versions"][0]["content"]
    assert mem.recall("weekly planning meeting Monday")["items"][0]["id"] == b
    mem.review_decide(merges[0]["id"], "rejected")                   # taken back: a is live again
    assert mem.show(a)["status"] == "live"


def test_disagreeing_memories_become_a_contradiction(mem):
    a = mem.digest("The staging database listens on port 5433 behind PgBouncer.")["node_ids"][0]
    b = mem.digest("The staging database listens on port 6432 behind PgBouncer.")["node_ids"][0]
    mem.digest("Our office plants are watered on Fridays.")
    run_due(mem, only=["embed", "contradict", "dedup"], force=True)
    kinds = [(i["kind"], i["payload"].get("reason")) for i in mem.review_list()]
    assert ("contradiction", "different_values") in kinds and not any(k == "merge" for k, _ in kinds)
    flags = {i["id"]: i["flags"] for i in mem.recall("staging database port PgBouncer")["items"]}
    assert any(f.startswith("contradiction") for f in flags[a]) and any(f.startswith("contradiction") for f in flags[b])


def test_syntheses_cite_members_wait_for_review_and_never_cite_the_forgotten(mem):
    from tidemind.store import immediate, links
    ids = [mem.digest(t, scope="personal")["node_ids"][0] for t in
           ("Release step one: bump the version.", "Release step two: update the changelog.",
            "Release step three: tag and push.", "An unrelated note about lunch.")]
    with immediate(mem.conn):
        links.add(mem.conn, ids[0], ids[1], status="confirmed", proposed_by="test", at=mem.now())
        links.add(mem.conn, ids[1], ids[2], status="confirmed", proposed_by="test", at=mem.now())
    old = mem.digest("The cache TTL is 60 seconds.")["node_ids"][0]
    new = mem.correct(old, "The cache TTL is 300 seconds.")["node_ids"][0]
    mem.clock.now += __import__("datetime").timedelta(days=9)           # the recorded days are complete now
    run_due(mem, only=["crystallize", "temporal", "lessons"], force=True)
    rows = {k: (m, t, st) for k, m, t, st in mem.conn.execute("SELECT kind, members, text, status FROM syntheses")}
    assert set(rows) == {"crystal", "daily", "weekly", "lesson"}
    assert json.loads(rows["crystal"][0]) == ids[:3] and rows["crystal"][2] == "unreviewed"
    assert rows["lesson"][1].startswith(f"Use 300 seconds — The cache TTL is 300 seconds. [{new}]")
    assert "60 seconds" not in rows["lesson"][1]                 # the replaced words are named, never quoted
    kinds = {i["kind"] for i in mem.review_list()}
    assert {"crystal", "lesson"} <= kinds
    text = mem.prepare()["text"]
    assert "lesson, offline extract, unreviewed" in text and "300 seconds" in text
    lesson_item = next(i for i in mem.review_list() if i["kind"] == "lesson")
    mem.review_decide(lesson_item["id"], "approved")
    assert "(lesson, approved, derived)" in mem.prepare()["text"]
    run_due(mem, only=["crystallize", "temporal", "lessons"], force=True)
    assert mem.conn.execute("SELECT count(*) FROM syntheses").fetchone()[0] == len(rows)   # made once
    mem.forget(ids[1])
    crystal = mem.conn.execute("SELECT text, status FROM syntheses WHERE kind='crystal'").fetchone()
    assert crystal[1] == "withdrawn" and "changelog" not in crystal[0]
    assert all("changelog" not in t for (t,) in mem.conn.execute("SELECT text FROM syntheses"))
    assert new


def test_reconsolidation_refreshes_derived_only(mem):
    a = mem.digest("The billing service retries failed card payments three times.")["node_ids"][0]
    b = mem.digest("Failed payments trigger an email to the customer after the last retry.")["node_ids"][0]
    run_due(mem, only=["embed", "annotate"], force=True)
    before = mem.conn.execute("SELECT content, content_hash FROM nodes WHERE id=?", (a,)).fetchone()
    for query in ("failed payments retries billing", "what happens after a failed payment retry",
                  "failed card payments: retries and the email"):      # three occasions, not one question thrice
        got = {i["id"] for i in mem.recall(query, limit=5)["items"]}
        assert {a, b} <= got
        mem.clock.now += dt.timedelta(hours=2)
    hits = mem.conn.execute("SELECT count(*) FROM recall_hits WHERE node_id=?", (a,)).fetchone()[0]
    assert hits == 3
    report = run_due(mem, only=["reconsolidate"], force=True)[0]
    assert report["refreshed"] >= 2 and report["links_proposed"] >= 1
    assert mem.conn.execute("SELECT content, content_hash FROM nodes WHERE id=?", (a,)).fetchone() == before
    assert mem.conn.execute("SELECT count(*) FROM derived_history WHERE node_id=?", (a,)).fetchone()[0] >= 1
    assert mem.conn.execute("SELECT status FROM links WHERE source_id IN (?,?) AND target_id IN (?,?)",
                            (a, b, a, b)).fetchone()[0] == "pending"
    again = run_due(mem, only=["reconsolidate"], force=True)[0]
    assert again["refreshed"] == 0                      # nothing new since
    assert "reconsolidated_at" not in mem.show(a)["derived"]        # the pass's bookkeeping, not a reading


def test_repeated_passes_settle(mem):
    for t in CORPUS:
        mem.digest(t, session="s1")
    run_due(mem, force=True)
    for _ in range(3):
        mem.recall("staging database port")
    run_due(mem, force=True)
    history = mem.conn.execute("SELECT count(*) FROM derived_history").fetchone()[0]
    for _ in range(3):
        run_due(mem, force=True)
    assert mem.conn.execute("SELECT count(*) FROM derived_history").fetchone()[0] == history   # no churn


def test_offline_annotation_writes_dimensions_as_derived(mem):
    d = mem.digest("Decision: we use port 8080 for the api gateway on staging.")["node_ids"][0]
    p = mem.digest("I prefer short answers without preamble.")["node_ids"][0]
    run_due(mem, only=["annotate"], force=True)
    dims = {n: {f: v for f, v in mem.conn.execute("SELECT field, value FROM derived WHERE node_id=?", (n,))}
            for n in (d, p)}
    assert dims[d]["kind"] == "decision" and dims[p]["kind"] == "preference"
    assert float(dims[d]["specificity"]) > float(dims[p]["specificity"])
    assert mem.show(d)["derived"]["kind"]["layer"] == "derived"


def test_lessons_consolidate_corrections_on_one_subject_and_repeated_failures(mem):
    a = mem.digest("The API gateway listens on port 3000.")["node_ids"][0]
    a2 = mem.correct(a, "The API gateway listens on port 8080.")["node_ids"][0]
    a3 = mem.correct(a2, "The API gateway listens on port 8443 with TLS.")["node_ids"][0]
    b = mem.digest("Deploy on Fridays.")["node_ids"][0]
    mem.correct(b, "Never deploy on Fridays; deploy Tuesday mornings.")
    mem.propose_lessons([{"kind": "repeated_failure", "said": "npm ERR! missing script: build", "times": 2}], "s1")
    mem.propose_lessons([{"kind": "repeated_failure", "said": "npm ERR! missing script: build", "times": 3,
                          "command": "npm run build", "instead": "npm run compile"}], "s2")
    run_due(mem, only=["lessons"], force=True)
    texts = [t for (t,) in mem.conn.execute("SELECT text FROM syntheses WHERE kind='lesson' AND status != 'withdrawn'"
                                            " ORDER BY id")]
    gateway = [t for t in texts if "gateway" in t]
    assert len(gateway) == 1 and gateway[0].startswith(f"Use 8443 with TLS — The API gateway listens on port 8443"
                                                       f" with TLS. [{a3}]")
    assert "2 corrections" in gateway[0] and "3000" not in gateway[0] and "8080" not in gateway[0]
    assert any(t.startswith("Deploy Tuesday mornings — Never deploy on Fridays") for t in texts)
    failure = [t for t in texts if "npm" in t]
    assert len(texts) == 3 and len(failure) == 1
    assert failure[0].startswith("Run `npm run compile` instead of `npm run build` (it failed 5 times")
    assert "missing script" not in failure[0]                     # the error is evidence, not the lesson


def test_catch_up_after_sleep_runs_a_due_task_once(mem):
    from tidemind.metabolism.scheduler import is_due
    task = next(t for t in ordered_tasks() if t.name == "decay")
    run_due(mem, only=["decay"], force=True)
    mem.conn.execute("UPDATE task_runs SET last_finished='2026-01-01T00:00:00.000000Z' WHERE task='decay'")
    first = run_due(mem, only=["decay"])                 # weeks of missed intervals: one run
    assert [r["task"] for r in first] == ["decay"]
    assert run_due(mem, only=["decay"]) == []            # and then it is not due again
    assert not is_due(task_runs.state(mem.conn), task, mem.now())


def test_a_long_task_renews_its_lease_and_stops_if_it_lost_it(mem, monkeypatch):
    import tidemind.metabolism.scheduler as sched
    monkeypatch.setattr(sched, "HEARTBEAT_SECONDS", 0)
    for i in range(5):
        mem.digest(f"memory {i} for a long annotate pass")
    task = next(t for t in ordered_tasks() if t.name == "annotate")
    seen = []
    original = task.run

    def run(ctx):
        seen.append(ctx.stopping())                                       # renews: still ours
        mem.conn.execute("UPDATE task_runs SET lease_owner='thief' WHERE task='annotate'")
        seen.append(ctx.stopping())                                       # renewal fails: stop
        return original(ctx)

    monkeypatch.setattr(task, "run", run)
    report = run_task(mem, task, "me")
    assert seen == [False, True] and report["annotated"] == 0


# -- links that join what belongs together -----------------------------------------------------

def _topics(mem):
    import json as _json
    from pathlib import Path

    rows = [_json.loads(line) for line in (Path(__file__).parent / "eval" / "linking-topics.jsonl").read_text().splitlines()]
    return {mem.digest(r["text"], scope=r["scope"])["node_ids"][0]: r["topic"] for r in rows}


def test_eighteen_short_memories_on_three_topics_get_links_within_topics_only(mem):
    """Offline, a full pass over six memories each about a staging database, sourdough and an
    aquarium left 0 links (the default embedder's cosine within a topic is 0.1-0.3, and proposals
    needed 0.55). The judge must confirm the clear ones, none across topics, each with a reason."""
    topic = _topics(mem)
    for _ in range(3):
        run_due(mem, only=["embed", "link-propose", "link-evaluate"], force=True)
    found = mem.conn.execute("SELECT source_id, target_id, status, proposed_by, reason FROM links").fetchall()
    confirmed = [(a, b) for a, b, status, *_ in found if status == "confirmed"]
    assert len(confirmed) >= 6, found
    assert all(topic[a] == topic[b] for a, b in confirmed), [(topic[a], topic[b]) for a, b in confirmed]
    assert all(by == "link-propose" and reason for *_, by, reason in found)
    degree: dict[int, int] = {}
    for a, b in confirmed:
        degree[a], degree[b] = degree.get(a, 0) + 1, degree.get(b, 0) + 1
    assert max(degree.values()) <= 6
    assert len({topic[a] for a, _ in confirmed}) == 3                    # every topic is joined
    # recall walks them: a hit's confirmed neighbour can join the answer, flagged with the link
    r = mem.recall("staging Postgres port", limit=8, record=False)
    assert any(f.startswith("via:link:") for i in r["items"] for f in i["flags"]) or \
        all(topic[i["id"]] == "staging-db" for i in r["items"])


def test_the_judge_keeps_each_memorys_best_few_and_leaves_the_rest_pending(mem):
    from tidemind.metabolism.link_evaluate import MAX_LINKS

    hub = mem.digest("Kafka consumer lag on the orders topic: the kafka brokers, partitions and consumer groups.")
    hub = hub["node_ids"][0]
    spokes = [mem.digest(f"Kafka consumer group {n} reads the orders topic partitions {n} and {n + 1}.")["node_ids"][0]
              for n in range(12)]
    for _ in range(3):
        run_due(mem, only=["embed", "link-propose", "link-evaluate"], force=True)
    found = mem.conn.execute("SELECT source_id, target_id, status FROM links").fetchall()
    degree: dict[int, int] = {}
    for a, b, status in found:
        if status == "confirmed":
            degree[a], degree[b] = degree.get(a, 0) + 1, degree.get(b, 0) + 1
    # twelve near-copies all relate to each other: each keeps its best few, the rest wait
    assert degree and max(degree.values()) <= MAX_LINKS
    # the rest are not rejected: they wait, or leave the inbox as proposals whose ends have their best few
    assert any(s in ("pending", "expired") for *_, s in found)
    assert not any(s == "rejected_by_model" for *_, s in found)
    # the hub shares only the words every memory here has: it relates to nothing in particular
    assert hub not in degree and len(spokes) == 12


def test_a_models_no_lapses_for_a_stronger_signal_and_a_persons_no_never_does(mem):
    from tidemind.store import immediate, links

    a, b, c = (mem.digest(t)["node_ids"][0] for t in ("alpha note about kafka", "beta note about kafka",
                                                      "gamma note about kafka"))
    with immediate(mem.conn):
        model = links.add(mem.conn, a, b, status="rejected_by_model", strength=0.2, proposed_by="reconsolidate",
                          at="2026-01-01T00:00:00.000000Z")
        mem.conn.execute("UPDATE links SET decided_at='2026-01-01T00:00:00.000000Z' WHERE id=?", (model,))
        person = links.add(mem.conn, a, c, status="rejected_by_user", strength=0.2, proposed_by="reconsolidate",
                           at="2026-01-01T00:00:00.000000Z")
        cutoff = "2026-02-01T00:00:00.000000Z"
        assert links.propose(mem.conn, a, b, strength=0.1, proposed_by="reconsolidate", at=mem.now(),
                             rejected_before=cutoff) is None                      # weaker: stays rejected
        assert links.propose(mem.conn, a, b, strength=0.5, proposed_by="reconsolidate", at=mem.now(),
                             rejected_before="2025-12-01T00:00:00.000000Z") is None   # not lapsed yet
        assert links.propose(mem.conn, a, b, strength=0.5, proposed_by="reconsolidate", at=mem.now(),
                             rejected_before=cutoff) == model
        assert links.propose(mem.conn, a, c, strength=0.9, proposed_by="reconsolidate", at=mem.now(),
                             rejected_before=cutoff) is None
    statuses = dict(mem.conn.execute("SELECT id, status FROM links").fetchall())
    assert statuses == {model: "pending", person: "rejected_by_user"}


def test_co_recall_proposes_only_pairs_that_recur_and_a_few_per_node(mem):
    from tidemind.metabolism.reconsolidate import CO_RECALL_LINKS
    from tidemind.store import immediate, recall_hits

    ids = [mem.digest(f"release checklist item {n}: tag the build, update the changelog, notify support")["node_ids"][0]
           for n in range(8)]
    mem.embed_pending()
    with immediate(mem.conn):
        for minute in (58, 59, 61):                  # one question asked three times across a clock hour
            recall_hits.record(mem.conn, ids[:3], f"2026-03-01T09:{minute % 60:02d}:00.000000Z"
                               if minute < 60 else "2026-03-01T10:01:00.000000Z")
    assert run_due(mem, only=["reconsolidate"], force=True)[0]["links_proposed"] == 0
    with immediate(mem.conn):
        for k in range(3):                           # the first node recalled with the others in three answers
            recall_hits.record(mem.conn, [i for i in ids if i != ids[7 - k]], mem.now())
        recall_hits.record(mem.conn, [ids[0], 999_999], mem.now())          # once only: never proposed
    report = run_due(mem, only=["reconsolidate"], force=True)[0]
    made = mem.conn.execute("SELECT source_id, target_id, strength FROM links WHERE proposed_by='reconsolidate'"
                            " AND (source_id=? OR target_id=?)", (ids[0], ids[0])).fetchall()
    assert 1 <= len(made) <= CO_RECALL_LINKS and report["links_proposed"] >= len(made)
    assert all(strength > 0 for *_, strength in made)


def test_plain_negation_is_caught_as_a_contradiction_and_a_person_says_which_stands(mem):
    deployed = mem.digest("The payments service is deployed to the eu-west cluster.")["node_ids"][0]
    withdrawn = mem.digest("The payments service is not deployed to the eu-west cluster any more.")["node_ids"][0]
    mem.digest("The cache TTL is 60 seconds.")
    enabled = mem.digest("Query caching is enabled on the reporting replica.")["node_ids"][0]
    disabled = mem.digest("Query caching isn't enabled on the reporting replica anymore.")["node_ids"][0]
    for _ in range(2):          # the whole pass, as a person's daemon runs it: dedup runs before contradict
        run_due(mem, force=True)
    items = mem.review_list()
    assert not [i for i in items if i["kind"] == "merge"], "a negation is not a near-duplicate"
    found = {frozenset((i["node_id"], i["other_node_id"])): i for i in items if i["kind"] == "contradiction"}
    assert set(found) == {frozenset((deployed, withdrawn)), frozenset((enabled, disabled))}
    item = found[frozenset((deployed, withdrawn))]
    assert item["payload"]["reason"] == "negation" and item["payload"]["generator"] == "contradict/offline-v1"
    decided = mem.review_decide(item["id"], "approved", stands=withdrawn)
    assert decided["stands"] == withdrawn
    r = mem.recall("is the payments service deployed to eu-west", record=False)
    order = [i["id"] for i in r["items"]]
    assert order.index(withdrawn) < order.index(deployed)
    assert f"contradicted_by:{withdrawn}" in next(i for i in r["items"] if i["id"] == deployed)["flags"]


def test_whole_scope_ranking_agrees_with_pair_scores_and_sees_only_the_scope(mem, monkeypatch):
    """link-propose ranks a memory's partners over the whole scope held in memory: the ranking must be
    the one `score` gives pair by pair, and must never offer an archived memory or another scope's."""
    from tidemind.metabolism import relate
    from tidemind.store import vectors

    texts = CORPUS + ["PgBouncer pools the staging PostgreSQL connections on port 5433 for the web app.",
                      "The DEPLOY_ENV secret for GitHub Actions lives in the staging environment settings."]
    ids = [mem.digest(t, scope="project:a", session="s1")["node_ids"][0] for t in texts]
    archived = mem.digest("Staging PostgreSQL on port 5433 with PgBouncer, archived note.", scope="project:a")["node_ids"][0]
    other = mem.digest("Staging PostgreSQL on port 5433 with PgBouncer in another project.", scope="project:b")["node_ids"][0]
    mem.archive(archived)
    run_due(mem, only=["embed"], force=True)
    a = ids[0]
    query = dict((n, q) for n, _, q in vectors.embedded_after(mem.conn, 0, mem.embedder.name, 100))[a]

    whole = relate.Relatedness(mem.conn, "project:a", mem.embedder).ranked(a, query, 10)
    assert whole, "the staging memories share rare words with the first"
    pair = relate.Relatedness(mem.conn, "project:a", mem.embedder)
    assert [o for _, o in whole] == [o for s, o in sorted(((pair.score(a, o), o) for o in ids if o != a
                                                             if pair.score(a, o) > 0), reverse=True)][:10]
    for s, o in whole:
        assert abs(s - pair.score(a, o)) < 1e-4
    assert archived not in {o for _, o in whole} and other not in {o for _, o in whole} and a not in {o for _, o in whole}

    # a scope too large to hold searches for candidates instead: the same scores, a subset of the same partners
    monkeypatch.setattr(relate, "WHOLE_SCOPE", 0)
    searched = relate.Relatedness(mem.conn, "project:a", mem.embedder).ranked(a, query, 10)
    assert searched and {o for s, o in searched if s > 0} <= {o for _, o in whole}
    assert searched[0][1] == whole[0][1]

    # one pass holds whole scopes up to a budget of memories in all; the scopes past it search
    monkeypatch.setattr(relate, "WHOLE_SCOPE", 5000)
    monkeypatch.setattr(relate, "HOLD_BUDGET", relate.Relatedness(mem.conn, "project:a", mem.embedder).documents)
    held = relate.PassScopes(mem.conn, mem.embedder)
    assert held["project:a"].holds and not held["project:b"].holds
    assert held["project:a"] is held["project:a"] and held.held == held["project:a"].documents
    assert [o for _, o in held["project:a"].ranked(a, query, 10)] == [o for _, o in whole]
    # and only where the pass has enough new memories to pay for holding the scope
    monkeypatch.setattr(relate, "HOLD_BUDGET", 10000)
    few = relate.Relatedness(mem.conn, "project:a", mem.embedder).documents
    monkeypatch.setattr(relate, "HOLD_PAYS", few)          # one new memory pays for `few` held ones
    assert relate.PassScopes(mem.conn, mem.embedder, {"project:a": 1})["project:a"].holds
    monkeypatch.setattr(relate, "HOLD_PAYS", few - 1)
    assert not relate.PassScopes(mem.conn, mem.embedder, {"project:a": 1})["project:a"].holds


def test_far_apart_turns_relate_by_a_rare_word_of_their_own_not_by_the_talks_topic(mem):
    """Across sessions, two turns must say one rare thing both. A word half the talk says
    ("community" in a talk about volunteering), or words only their neighbours said, are the
    topic of the whole talk: linking by them joined encouragements to every event (issue 23)."""
    from tidemind.metabolism import relate

    # "community" in one memory of ten: too common to be rare (3%), not so common it says nothing (30%)
    filler = [f"Maria: The {'community' if n % 10 == 0 else 'allotment'} garden plot {n} needs {w} this week."
              for n, w in enumerate(["mulch", "compost", "seedlings", "watering", "weeding", "fencing"] * 20)]
    for n, text in enumerate(filler):
        mem.digest(text, scope="talk", session=f"filler-{n % 10}")
    first = [mem.digest(t, scope="talk", session="s1")["node_ids"][0] for t in (
        "John: The food drive collected canned goods and toiletries for the shelter.",
        "Maria: Let's join forces and build a safe, bustling community together!",
        "John: The shelter wants more canned goods and toiletries next month.")]
    later = [mem.digest(t, scope="talk", session="s9")["node_ids"][0] for t in (
        "Maria: The community food drive collected canned goods again, with a bakery donating bread.",
        "John: The food drive at the shelter doubled its canned goods this year.")]
    run_due(mem, only=["embed"], force=True)
    score = relate.Relatedness(mem.conn, "talk", mem.embedder).score
    encouragement, drive_again, drive_doubled = first[1], later[0], later[1]
    # the encouragement shares only "community" (said in most of the talk) with a later turn about the drive,
    # whose words it meets only in its neighbours
    assert score(encouragement, drive_again) == 0.0
    # the food drive's turns say rare things both ("toiletries"/"canned goods", "shelter")
    assert score(first[0], drive_doubled) > 0.0


def test_words_too_vague_to_name_a_topic_relate_nothing(mem):
    """"Escape", "solutions", "impact": life advice is made of them, and two encouragements that
    share them are no more about one thing than two that share "great" (`substance.VAGUE`; on
    conversations-dev, dropping them took links with a content-free end from 1.7% to 1.3%)."""
    from tidemind.metabolism import relate

    a = mem.digest("John: Reading is my escape; it helps me find solutions and see the impact of small steps.",
                   scope="talk", session="s1")["node_ids"][0]
    b = mem.digest("Tim: Surfing is an escape too, and it finds solutions with real impact on me.",
                   scope="talk", session="s2")["node_ids"][0]
    c = mem.digest("John: Surfing at Malibu before sunrise, the reading of the swell matters most.",
                   scope="talk", session="s3")["node_ids"][0]
    run_due(mem, only=["embed"], force=True)
    score = relate.Relatedness(mem.conn, "talk", mem.embedder).score
    assert score(a, b) == 0.0
    assert score(c, mem.digest("Tim: Surfing Malibu at sunrise: the swell was perfect.", scope="talk",
                               session="s4")["node_ids"][0]) > 0.0


ROUNDS_UNTIL_SETTLED = """
import json, sys
from tidemind.memory import Memory
from tidemind.metabolism.scheduler import backlog, owner_id, run_due
runs = []
with Memory.open(sys.argv[1]) as m:
    for _ in range(60):
        reports = run_due(m, owner=sys.argv[2] + ":" + owner_id(), batch=40)
        runs += reports
        if not backlog(reports) and all(r["status"] != "busy" for r in reports):
            break
print(json.dumps(runs))
"""


def test_two_daemons_on_one_store_never_do_the_same_work_twice(tmp_path, store):
    """Issue 27: daemons of two machines on one store (here two processes with homes of their
    own, each working its rounds until the store settles) split the work: every memory embedded
    once and proposed for once, and a task one of them finished is not run again by the other
    on a reading of the task states taken before (a round reads them all first)."""
    from tidemind.memory import Memory

    # (a SQLite store is one file in one home: there the two daemons share it)
    homes = [tmp_path / "laptop", tmp_path / "desktop"] if store else [tmp_path / "home"] * 2
    with Memory.open(homes[0]) as m:
        for i in range(240):
            m.digest(f"Turn {i}: the harbour crane {i} lifted container {i * 7} onto the ship Aurora {i % 11}"
                     f" before the tide turned at pier {i % 5}.", scope="project:port", session=f"s{i // 40}")
    procs = [subprocess.Popen([sys.executable, "-c", ROUNDS_UNTIL_SETTLED, str(h), f"daemon-{n}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
             for n, h in enumerate(homes)]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-3000:] for _, err in outputs]
    runs = [r for out, _ in outputs for r in json.loads(out)]
    ok = [r for r in runs if r["status"] == "ok"]
    assert sum(r.get("embedded", 0) for r in ok) == 240
    assert sum(r.get("nodes", 0) for r in ok if r["task"] == "link-propose") == 240
    # a task that never stopped with work left is one pass over the store: run once in all
    single_pass = {r["task"] for r in ok} - {r["task"] for r in ok if r.get("backlog")}
    twice = {t: n for t in single_pass if (n := sum(r["task"] == t for r in ok)) > 1}
    assert not twice, twice
    with Memory.open(homes[1]) as m:
        assert m.conn.execute("SELECT count(*) FROM node_vectors").fetchone()[0] == 240
        assert m.conn.execute("SELECT count(*) FROM task_runs WHERE lease_owner IS NOT NULL").fetchone()[0] == 0
