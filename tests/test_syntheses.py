"""Crystals, digests and lessons worth reading, offline: extractive summaries citing their members,
digests keyed on valid time, and no synthesis served once a member's words stopped being current."""
import datetime as dt
import json
import re

import anyio

from tidemind.metabolism.scheduler import run_due
from tidemind.store import immediate, links, syntheses

from .conftest import cli_json
from .test_mcp import call, session_for

TOPICS = {
    "pg": ["The staging database runs PostgreSQL 16 on port 5433 behind PgBouncer.",
           "Nightly backups of the staging PostgreSQL database go to the S3 bucket tm-backups.",
           "PgBouncer on staging pools at most 40 connections; raise it before load tests.",
           "The staging database was restored from the Sunday backup after the failed migration.",
           "Migrations on the staging database run with alembic upgrade head from the deploy box.",
           "Staging PostgreSQL logs slow queries over 200 ms to the pg_slow table."],
    "bread": ["My sourdough starter lives in the fridge and gets fed every Sunday.",
              "The sourdough loaf needs 75% hydration and a 4 hour bulk ferment at 24 C.",
              "Feed the sourdough starter twice before baking so it doubles within 6 hours.",
              "Bake the sourdough at 250 C in the Dutch oven, lid on for 20 minutes.",
              "Rye flour in the starter makes the sourdough more sour.",
              "Cold retard the shaped sourdough overnight in the fridge for a better crust."],
    "fish": ["The aquarium is a 120 litre planted tank with neon tetras.",
             "Change 25% of the aquarium water every week and treat it with dechlorinator.",
             "The aquarium filter is an Eheim 2213; clean its sponges monthly in tank water.",
             "Neon tetras in the aquarium prefer soft water around pH 6.5.",
             "The aquarium light runs 8 hours a day on a timer to keep algae down.",
             "Feed the tetras small pinches of flakes once a day; skip one day a week."],
}
CITED = re.compile(r"^- (.+) \[(\d+)\]$")


def _three_topics(mem, scope="personal"):
    """18 memories on three topics, each topic a chain of confirmed links (as a judge leaves them)."""
    ids = {k: [mem.digest(t, scope=scope, session=k)["node_ids"][0] for t in texts] for k, texts in TOPICS.items()}
    with immediate(mem.conn):
        for chain in ids.values():
            for a, b in zip(chain, chain[1:]):
                links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now())
    return ids


def _current(mem, kind):
    return [r for r in syntheses.current_of_kind(mem.conn, kind)]


def test_offline_crystals_quote_their_most_central_sentences_and_are_titled_by_shared_names(mem):
    from tidemind.metabolism.vocabulary import extract as extract_names, key_of

    ids = _three_topics(mem)
    report = run_due(mem, only=["crystallize"], force=True)[0]
    assert report["crystals"] == 3
    crystals = _current(mem, "crystal")
    texts = {i: mem.show(i)["content"] for chain in ids.values() for i in chain}
    for crystal in crystals:
        topic = next(k for k, chain in ids.items() if set(crystal["members"]) == set(chain))
        lines = crystal["text"].splitlines()
        assert 2 <= len(lines) <= 5 and "connected memories" not in crystal["text"]
        for line in lines:
            sentence, cited = CITED.match(line).groups()
            assert int(cited) in ids[topic]                      # each sentence cites a member of its cluster
            assert sentence.rstrip("…") in texts[int(cited)]     # and quotes it word for word
        names = crystal["title"].split(" · ")
        assert names and crystal["title"] != ""
        for name in names:          # every name of the title is shared (as a name: "backup" and "backups" are one)
            assert sum(key_of(name) in extract_names(texts[i]).grams for i in ids[topic]) >= 2, (name, topic)
        assert crystal["generator"] == "crystallize/offline-v2" and crystal["status"] == "unreviewed"
    titles = " ".join(c["title"].casefold() for c in crystals)
    assert "staging database" in titles and "sourdough" in titles and "aquarium" in titles
    assert {i["kind"] for i in mem.review_list()} == {"crystal"} and len(mem.review_list()) == 3


def test_a_crystal_citing_a_corrected_memory_is_withdrawn_at_once_and_recomputed(home, mem):
    ids = _three_topics(mem)
    run_due(mem, only=["crystallize"], force=True)
    pg = next(c for c in _current(mem, "crystal") if ids["pg"][0] in c["members"])
    assert "PgBouncer" in pg["text"]
    old = ids["pg"][0]
    mem.close()

    async def over_mcp():
        async with session_for(home, "personal") as s:
            before = await call(s, "brain_prepare")
            assert "5433 behind PgBouncer" in before
            fixed = await call(s, "brain_digest", intent="correct", target_node=old,
                               content="The staging database runs PostgreSQL 17 on port 6432 behind PgBouncer.")
            after = await call(s, "brain_prepare")
            return fixed["node_ids"][0], after

    new, after = anyio.run(over_mcp)
    # before any pass ran again: the crystal quoting the corrected words is not served
    assert "5433" not in after and "Staging database" not in after
    from tidemind.memory import Memory
    from .conftest import StepClock
    with Memory.open(home, clock=StepClock(dt.datetime(2026, 3, 2, tzinfo=dt.timezone.utc))) as m:
        row = syntheses.get(m.conn, pg["id"])
        assert row["status"] == "withdrawn" and "corrected" in row["withdrawn_why"]
        run_due(m, only=["crystallize"], force=True)
        again = next(c for c in syntheses.current_of_kind(m.conn, "crystal") if new in c["members"])
        assert old not in again["members"] and "6432" in again["text"] and "5433" not in again["text"]
        assert syntheses.get(m.conn, pg["id"])["replaced_by"] == again["id"]
        open_items = [i for i in m.review_list() if i["kind"] == "crystal"]
        assert len(open_items) == 3                        # the cluster's item asks about the new crystal
        assert any(i["payload"]["synthesis"] == again["id"] for i in open_items)
        assert "6432" in m.prepare()["text"]


def test_archive_withdraws_and_unarchive_brings_back_the_persons_decision(mem):
    ids = _three_topics(mem)
    run_due(mem, only=["crystallize"], force=True)
    fish = next(c for c in _current(mem, "crystal") if ids["fish"][0] in c["members"])
    item = next(i for i in mem.review_list() if i["payload"]["synthesis"] == fish["id"])
    text = mem.prepare()["text"]
    # unreviewed, a crystal is served as what it is: an offline extract, never a lesson or decision
    assert "(crystal, offline extract, unreviewed, derived)" in text
    assert "(crystal" not in text.split("## Lessons")[1].split("\n## ")[0] if "## Lessons" in text else True
    mem.review_decide(item["id"], "approved")
    assert "(crystal, approved, derived) system: \"Aquarium" in mem.prepare()["text"]
    assert "## Summaries of linked memories" in mem.prepare()["text"]
    quoted = int(CITED.match(fish["text"].splitlines()[1]).group(2))
    mem.archive(quoted)
    assert syntheses.get(mem.conn, fish["id"])["status"] == "withdrawn"
    assert "(crystal, approved, derived) system: \"Aquarium" not in mem.prepare()["text"]
    run_due(mem, only=["crystallize"], force=True)
    # the rest of the chain is two clusters now, neither a crystal of the archived memory
    assert all(quoted not in c["members"] for c in _current(mem, "crystal"))
    mem.unarchive(quoted)
    run_due(mem, only=["crystallize"], force=True)
    back = syntheses.get(mem.conn, fish["id"])
    assert back["status"] == "approved" and back["members"] == sorted(ids["fish"])   # revived with its approval
    assert "(crystal, approved, derived) system: \"Aquarium" in mem.prepare()["text"]
    assert sum(c["members"] == sorted(ids["fish"]) for c in _current(mem, "crystal")) == 1
    actions = [a for (a,) in mem.conn.execute("SELECT action FROM audit_log WHERE action LIKE 'syntheses%'")]
    assert actions == ["syntheses_withdrawn"]


def test_digests_are_keyed_on_valid_time_and_recomputed_when_a_backdated_memory_arrives(home, mem):
    mem.clock.now = dt.datetime(2026, 3, 11, 9, tzinfo=dt.timezone.utc)      # a Wednesday of week 11
    a = mem.digest("The release train leaves on Tuesdays after the QA sign-off.", valid_at="2026-03-03")["node_ids"][0]
    b = mem.digest("QA signed off the 4.2 release train after the flaky checkout test was fixed.",
                   valid_at="2026-03-03T15:00:00Z")["node_ids"][0]
    today = mem.digest("Today we started on the 4.3 release train.")["node_ids"][0]
    mem.digest("Monday: the checkout test passed in QA twice.", valid_at="2026-03-09")
    run_due(mem, only=["temporal"], force=True, clock=mem.clock)
    daily = {r["period"]: r for r in _current(mem, "daily")}
    weekly = {r["period"]: r for r in _current(mem, "weekly")}
    assert set(daily) == {"2026-03-03", "2026-03-09"}          # by the day each fact held; today is not over
    assert set(weekly) == {"2026-W10"}                         # week 11 is not over either
    assert daily["2026-03-03"]["members"] == [a, b] and today not in weekly["2026-W10"]["members"]
    late = mem.digest("The 4.2 release train was delayed an hour by a flaky checkout test.",
                      valid_at="2026-03-03T18:00:00Z")["node_ids"][0]
    run_due(mem, only=["temporal"], force=True, clock=mem.clock)
    again = next(r for r in _current(mem, "daily") if r["period"] == "2026-03-03")
    assert again["members"] == [a, b, late]
    assert syntheses.get(mem.conn, daily["2026-03-03"]["id"])["replaced_by"] == again["id"]
    # reachable: the CLI by week, prepare for this week, the Memory method the desktop calls
    mem.close()
    listed = cli_json(home, "digests", "--week", "2026-W10")["digests"]
    assert [d["period"] for d in listed] == ["2026-W10", "2026-03-03"]
    assert all(d["status"] == "unreviewed" and d["generator"].startswith("temporal/") for d in listed)
    assert cli_json(home, "digests", "--week", "2026-W11")["digests"][0]["period"] == "2026-03-09"
    from tidemind.memory import Memory
    from .conftest import StepClock
    with Memory.open(home, clock=StepClock(dt.datetime(2026, 3, 11, 10, tzinfo=dt.timezone.utc))) as m:
        text = m.prepare()["text"]
        week = text.split("## This week", 1)[1]
        assert "2026-03-09" in week and "last week (2026-W10)" in week
        found = m.digests(week="2026-W10")
        assert [d["period"] for d in found["digests"]] == ["2026-W10", "2026-03-03"]
        assert m.digests(day="2026-03-03")["digests"][0]["members"] == [a, b, late]
        # what recall calls for "what happened in week X / on DATE" (None: the question names no period)
        asked = m.period_digests("what happened in week 10?")
        assert (asked["kind"], asked["period"]) == ("week", "2026-W10")
        assert [d["period"] for d in asked["digests"]] == ["2026-W10", "2026-03-03"]
        assert m.period_digests("what happened last week?")["period"] == "2026-W10"
        # week 11 is not over, so a day of it has only its own digest
        assert [d["period"] for d in m.period_digests("anything on 2026-03-09?")["digests"]] == ["2026-03-09"]
        assert m.period_digests("which port does staging use?") is None


def test_a_held_memory_is_never_quoted_and_its_day_waits_for_the_answer(mem):
    # a hold lapses by the real clock, so this store lives in the real present
    mem.clock.now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    day1, day2 = ((mem.clock.now - dt.timedelta(days=n)).date().isoformat() for n in (3, 2))
    mem.digest("Alex Chen owns billing.", valid_at=day1)
    mem.digest("Alex Rivera owns design.", valid_at=day1)
    held = mem.digest("Alex approved the Zephyrine invoice layout.", valid_at=day2)
    assert held["questions"]
    mem.digest("The invoice layout review is on Thursday.", valid_at=day2)
    run_due(mem, only=["temporal"], force=True, clock=mem.clock)
    periods = {r["period"] for r in _current(mem, "daily") + _current(mem, "weekly")}
    assert day1 in periods and day2 not in periods
    assert all("Zephyrine" not in t for (t,) in mem.conn.execute("SELECT text FROM syntheses"))
    mem.clarify_skip(held["questions"][0]["question_id"])
    run_due(mem, only=["temporal"], force=True, clock=mem.clock)
    assert day2 in {r["period"] for r in _current(mem, "daily")}


def test_forget_erases_a_synthesis_citing_the_memory_as_member_or_as_replaced_version(mem):
    a = mem.digest("The cache TTL is 60 seconds.")["node_ids"][0]
    b = mem.correct(a, "The cache TTL is 300 seconds.")["node_ids"][0]
    run_due(mem, only=["lessons"], force=True)
    lesson = _current(mem, "lesson")[0]
    assert lesson["members"] == [b] and lesson["history"] == [a] and "300 seconds" in lesson["text"]
    mem.forget(b)
    row = syntheses.get(mem.conn, lesson["id"])
    assert row["status"] == "withdrawn" and "300" not in row["text"] and row["title"] == ""
    assert json.dumps(mem.prepare()).count("300") == 0


def test_shared_names_join_two_chosen_words_into_the_phrase_the_group_writes():
    from tidemind.metabolism.extract import shared_names
    # "lin" is inside "linmor": the phrase is found by its words, not by cutting text
    group = [(1, "linmor lin runs the dex daily"), (2, "the linmor lin dex runs again"), (3, "linmor lin and dex")]
    names = shared_names(group, {}, k=3)
    assert "linmor lin" in names and "dex" in names and "lin" not in names


def test_named_periods_read_weeks_and_days_as_people_write_them():
    from tidemind.periods import named_period, weeks_between
    today = "2026-03-11"                                   # a Wednesday of ISO week 11
    assert named_period("what happened in 2026-W10", today) == ("week", "2026-W10")
    assert named_period("week 10 of 2026", today) == ("week", "2026-W10")
    assert named_period("in week 50", today) == ("week", "2025-W50")      # not begun this year: last year's
    assert named_period("the week of 2026-03-04", today) == ("week", "2026-W10")
    assert named_period("this week", today) == ("week", "2026-W11")
    assert named_period("yesterday", today) == ("day", "2026-03-10")
    assert named_period("on 2026-02-30", today) is None and named_period("week 54 of 2026", today) is None
    assert weeks_between("2026-03-01", "2026-03-10") == ["2026-W09", "2026-W10", "2026-W11"]


def test_recall_answers_a_question_about_a_period_with_its_digests(home, mem):
    """'What happened in week 10?' reaches that week's digests through recall and brain_recall; a
    question naming no period carries none, and another scope's digest never comes with it."""
    mem.clock.now = dt.datetime(2026, 3, 11, 9, tzinfo=dt.timezone.utc)
    a = mem.digest("QA signed off the 4.2 release train after the flaky checkout test was fixed.",
                   valid_at="2026-03-03")["node_ids"][0]
    mem.digest("The secret project kickoff happened with the design agency.", scope="project:hidden",
               valid_at="2026-03-04")
    run_due(mem, only=["temporal"], force=True, clock=mem.clock)
    r = mem.recall("what happened in week 10?", scopes=["personal"])
    assert (r["period"]["kind"], r["period"]["period"]) == ("week", "2026-W10")
    assert [d["period"] for d in r["period"]["digests"]] == ["2026-W10", "2026-03-03"]
    assert all(d["members"] == [a] and d["scope"] == "personal" for d in r["period"]["digests"])
    assert "period" not in mem.recall("who signed off the release train?", scopes=["personal"])
    # as of a moment before the memory was recorded, nothing of it may come back, digests included
    before = mem.recall("what happened in week 10 of 2026?", scopes=["personal"], as_of="2026-03-01T00:00:00Z",
                        clock="recorded")
    assert "period" not in before and "QA signed off" not in json.dumps(before)
    mem.close()
    from .conftest import run_cli
    said = run_cli(home, "recall", "what happened in week 10 of 2026?", "--scope", "personal").stdout.decode()
    assert "digests of 2026-W10 (derived):" in said and "2026-03-03 · personal · daily" in said
    assert "design agency" not in said

    async def go():
        async with session_for(home, "personal") as s:
            return await call(s, "brain_recall", query="anything in week 10 of 2026?", mode="index")

    served = anyio.run(go)
    assert served["period"]["period"] == "2026-W10"
    assert [d["members"] for d in served["period"]["digests"]] == [[a], [a]]
    assert all("text" not in d for d in served["period"]["digests"])          # index mode stays cheap
    assert "design agency" not in json.dumps(served)


def test_a_withdrawn_crystal_leaves_the_queue_and_its_item_no_longer_quotes_the_hidden_memory(mem):
    """Archiving most of a cluster withdraws its crystal for good (too few members are left to make
    one): its open review item must not stay in the queue quoting the archived words, and cannot be
    approved; unarchiving brings both back."""
    ids = _three_topics(mem)
    run_due(mem, only=["crystallize"], force=True)
    fish = next(c for c in _current(mem, "crystal") if set(c["members"]) == set(ids["fish"]))
    item = next(i for i in mem.review_list() if i["payload"]["synthesis"] == fish["id"])
    quoted = [int(CITED.match(line).group(2)) for line in fish["text"].splitlines()]
    words = [mem.show(q)["content"][:30] for q in quoted]
    archived = ids["fish"][1:]                    # one member left: no crystal can be made again
    for node_id in archived:
        mem.archive(node_id)
    run_due(mem, only=["crystallize"], force=True)
    assert syntheses.get(mem.conn, fish["id"])["status"] == "withdrawn"
    assert item["id"] not in {i["id"] for i in mem.review_list()}
    assert mem.stats()["review"]["open"] == len(mem.review_list())            # counted as the queue has it
    shown = mem.review_show(item["id"])
    assert shown["synthesis"]["hidden"].startswith("withdrawn") and shown["synthesis"]["title"] == ""
    assert not any(w in json.dumps(shown) for w, q in zip(words, quoted) if q in archived)
    try:
        mem.review_decide(item["id"], "approved")
        raise AssertionError("approved a withdrawn crystal")
    except Exception as exc:
        assert "withdrawn" in str(exc)
    for node_id in archived:
        mem.unarchive(node_id)
    run_due(mem, only=["crystallize"], force=True)                # the cluster is whole again
    assert item["id"] in {i["id"] for i in mem.review_list()}
    assert "hidden" not in mem.review_show(item["id"])["synthesis"]


def test_a_title_or_an_initial_does_not_end_a_sentence():
    """Digests quoted "Dentist appointment with Dr." and titles were cut there: a full stop after a
    title, an abbreviation or an initial is not the end of a sentence; one at a sentence's end is."""
    from tidemind.metabolism.annotate import title_for
    from tidemind.metabolism.extract import sentences

    assert sentences("Dentist appointment with Dr. Patel on Friday. Bring the forms.") == [
        "Dentist appointment with Dr. Patel on Friday.", "Bring the forms."]
    assert sentences("Met J. R. Smith in St. Louis. It rained.") == ["Met J. R. Smith in St. Louis.", "It rained."]
    assert sentences("Use a cache, e.g. Redis. Or not.") == ["Use a cache, e.g. Redis.", "Or not."]
    assert sentences("Standup at 9 a.m. Then the review.") == ["Standup at 9 a.m.", "Then the review."]
    assert sentences("Call Dr.\n- then the pharmacy") == ["Call Dr.", "then the pharmacy"]     # a line ends it
    assert title_for("Dentist appointment with Dr. Patel. Bring the forms.") == "Dentist appointment with Dr. Patel."


def test_a_title_name_in_every_memory_of_the_scope_weighs_nothing_in_the_plural_too():
    """Names are matched singular ("user"); their rarity is the scope's for the words as written
    ("users", in every memory here): a word the whole scope uses never titles a group."""
    from tidemind.metabolism.extract import shared_names

    group = [(1, "The Kestrel export failed for users in Berlin."), (2, "Kestrel export retried for users overnight."),
             (3, "The Kestrel export now skips inactive users.")]
    assert shared_names(group, {"users": 0.0, "kestrel": 3.0, "export": 2.0, "berlin": 5.0}) == ["Kestrel export"]


TALK = [  # two events of one conversation, one session, with chatter between them
    "Tim: I started learning the ukulele last month; the chord shapes for G and C hurt my fingers.",
    "John: Nice job, Tim!",
    "Tim: My ukulele teacher says the calluses come after three weeks of daily chord practice.",
    "John: Wow! The chord changes on a ukulele get easier once the calluses come, keep at it.",
    "John: Meanwhile my basketball team lost the playoff game against the Hornets by two points.",
    "Tim: Oh no! Was the Hornets game close until the end?",
    "John: The Hornets scored a three pointer in the last second of the playoff game.",
    "Tim: A playoff loss to the Hornets by two points must sting, what a basketball season.",
]


def test_a_crystal_is_about_one_thing_keeps_who_said_it_and_drops_the_chatter(mem):
    """One event or topic a crystal (issue 23): a session linked end to end is one component, but
    two groups about two things; each sentence names its speaker; 'Nice job, Tim!' is not quoted."""
    ids = [mem.digest(t, scope="talk", session="s1")["node_ids"][0] for t in TALK]
    with immediate(mem.conn):
        # one chain of confirmed links through both events, as the linker leaves neighbouring turns:
        # strong within an event, weak where the talk moves on (ukulele -> playoff game)
        for a, b in zip(ids, ids[1:]):
            links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now(),
                      strength=0.2 if (a, b) == (ids[3], ids[4]) else 0.9)
        for a, b in [(ids[0], ids[2]), (ids[0], ids[3]), (ids[2], ids[3]),
                     (ids[4], ids[6]), (ids[4], ids[7]), (ids[6], ids[7]), (ids[5], ids[6])]:
            links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now(), strength=0.5)
    run_due(mem, only=["crystallize"], force=True)
    crystals = _current(mem, "crystal")
    assert len(crystals) == 2, [c["members"] for c in crystals]
    ukulele, playoff = set(ids[:4]), set(ids[4:])
    for crystal in crystals:
        members = set(crystal["members"])
        assert members <= ukulele or members <= playoff, crystal["members"]
        assert ids[1] not in members                          # the chatter is no member
        for line in crystal["text"].splitlines():
            sentence, cited = CITED.match(line).groups()
            speaker = mem.show(int(cited))["content"].split(":")[0]
            assert sentence.startswith(speaker + ": "), line   # who said it
            assert "Nice job" not in sentence and sentence != f"{speaker}: Wow!"


def test_a_crystal_whose_group_came_apart_is_withdrawn_and_an_approved_one_stays(mem):
    ids = _three_topics(mem)
    run_due(mem, only=["crystallize"], force=True)
    by_topic = {k: next(c for c in _current(mem, "crystal") if set(c["members"]) == set(chain))
                for k, chain in ids.items()}
    mem.review_decide(next(i["id"] for i in mem.review_list() if i["payload"].get("synthesis") == by_topic["fish"]["id"]),
                      "approved")
    for topic in ("pg", "fish"):                 # a person rejects the links that held two groups together
        marks = ",".join("?" * len(ids[topic]))
        for (lid,) in mem.conn.execute(f"SELECT id FROM links WHERE source_id IN ({marks})", ids[topic]).fetchall():
            mem.link_decide(lid, "rejected_by_user")
    report = run_due(mem, only=["crystallize"], force=True)[0]
    assert report["dissolved"] == 1
    current = {c["id"] for c in _current(mem, "crystal")}
    assert by_topic["pg"]["id"] not in current                   # withdrawn: nothing holds it together
    assert by_topic["fish"]["id"] in current                     # a person approved it: it stays
    assert by_topic["bread"]["id"] in current


def test_a_summary_quotes_sentences_not_headings_and_a_day_of_headings_gets_no_digest(mem):
    """Seen on the Obsidian help vault: crystals quoted 'View types' and 'Start a time-lapse
    animation' (section headings) as if they were sentences."""
    notes = ["## Kanban board cards by due date\nSorting puts overdue kanban cards first, then by title.",
             "## Kanban board cards by status column\nGrouping keeps kanban cards in column order, then by title.",
             "## Kanban board cards past their due date\nFiltering hides overdue kanban cards until cleared."]
    ids = [mem.digest(t, scope="vault:help", session="kanban")["node_ids"][0] for t in notes]
    with immediate(mem.conn):
        for a, b in [(ids[0], ids[1]), (ids[1], ids[2]), (ids[0], ids[2])]:
            links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now(), strength=0.8)
    heading_only = [mem.digest(t, scope="vault:empty", valid_at="2026-03-03T10:00:00Z")["node_ids"][0]
                    for t in ("## Kanban board settings", "## Kanban board archive")]
    run_due(mem, only=["crystallize", "temporal"], force=True)
    crystal = next(c for c in _current(mem, "crystal") if c["scope"] == "vault:help")
    quoted = [CITED.match(line).group(1) for line in crystal["text"].splitlines()]
    assert quoted and not any(q.startswith(("Kanban board", "#")) for q in quoted), quoted
    assert not [d for kind in ("daily", "weekly") for d in _current(mem, kind) if d["scope"] == "vault:empty"]
    assert heading_only


def test_a_persons_decision_made_while_the_pass_runs_is_never_withdrawn(mem):
    """Found by review: the pass withdrew what it had read as unreviewed, even when a person had
    approved it since; and a crystal a grown group replaced in the same run was withdrawn again,
    losing what replaced it."""
    from tidemind.metabolism.synthesize import CrystallizeTask

    _three_topics(mem)
    run_due(mem, only=["crystallize"], force=True)
    stale = {c["subject"]: dict(c) for c in _current(mem, "crystal")}          # as the pass read them
    approved = next(iter(stale.values()))
    item = next(i["id"] for i in mem.review_list() if i["payload"].get("synthesis") == approved["id"])
    mem.review_decide(item, "approved")                                        # meanwhile, a person decides
    with immediate(mem.conn):
        syntheses.withdraw(mem.conn, list(stale.values())[1]["id"], "its cluster grew", mem.now(), replaced_by=None)

    class Ctx:
        conn, now = mem.conn, staticmethod(mem.now)

    gone = CrystallizeTask._withdraw_dissolved(Ctx(), stale, [])               # every group "came apart"
    rows = {r["id"]: r for r in mem.conn.execute("SELECT id, status, withdrawn_why FROM syntheses").fetchall()
            for r in [dict(zip(("id", "status", "withdrawn_why"), r))]}
    assert rows[approved["id"]]["status"] == "approved"
    assert rows[list(stale.values())[1]["id"]]["withdrawn_why"] == "its cluster grew"
    assert gone == 1 and rows[list(stale.values())[2]["id"]]["withdrawn_why"] == "its group came apart"


def test_equally_weighted_topics_joined_by_bridges_stay_apart():
    """Found by review: an imported vault's links all weigh the same, and label propagation
    flooded the smallest label across a bridge, merging two topics into one crystal."""
    from tidemind.metabolism import clusters

    topics = [list(range(1, 7)), list(range(7, 13)), list(range(13, 19))]
    edges = [(a, b, 1.0) for t in topics for a in t for b in t if a < b] + [(6, 7, 1.0), (12, 13, 1.0)]
    assert sorted(clusters.groups(edges)) == topics


def test_a_theme_talked_about_session_after_session_is_no_crystal_an_event_is(mem):
    """An event is told in a session and recalled in another; a theme ("camping" with the family)
    comes back in session after session. A group held together only by a theme's words is a chat
    about a subject, not one thing to keep a note of (on conversations-dev such groups were most of
    the crystals' strays: purity 0.71, 0.84 once their words had to be local to two sessions)."""
    theme = ["Melanie: Camping with the family by the lake is how we unwind.",
             "Caroline: Camping by a lake sounds peaceful for a family.",
             "Melanie: The family loves camping; the lake mornings are quiet.",
             "Caroline: Lake camping with family must be such a reset."]
    event = ["Melanie: Last August we watched the Perseid meteor shower from the campsite.",
             "Caroline: The Perseid meteor shower! How many meteors did you count?",
             "Melanie: Forty Perseid meteors in an hour; the kids counted every meteor."]
    themed = [mem.digest(t, scope="conv:cm", session=f"s{k}")["node_ids"][0] for k, t in enumerate(theme)]
    told = [mem.digest(t, scope="conv:cm", session="s9")["node_ids"][0] for t in event]
    # a long conversation: more sessions, each with its own linked pair (too few for a crystal)
    others = [[mem.digest(f"{who}: The {thing} {what}.", scope="conv:cm", session=f"t{k}")["node_ids"][0]
               for who, what in (("Melanie", "was repaired"), ("Caroline", "being repaired is good news"))]
              for k, thing in enumerate(["violin", "kiln", "bicycle", "oven", "roof", "piano"])]
    with immediate(mem.conn):
        for chain in (themed, told, *others):
            for a, b in zip(chain, chain[1:]):
                links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now())
    run_due(mem, only=["crystallize"], force=True)
    crystals = _current(mem, "crystal")
    assert [sorted(c["members"]) for c in crystals] == [sorted(told)]


def test_a_piece_of_work_over_a_few_sessions_is_still_a_crystal(mem):
    """Found by review: an agent's runs are sessions, and a bug worked on over three of them is one
    thing; the rule that an event's words stay in two sessions holds only where a scope has enough
    sessions for a theme to come back in."""
    work = [("s1", "The sqlite-vec nightly migration test found a corrupted index."),
            ("s1", "The corrupted index came from the sqlite-vec migration skipping a rebuild."),
            ("s2", "Patched the sqlite-vec migration to rebuild the corrupted index."),
            ("s3", "The nightly migration test passes: no corrupted index with sqlite-vec.")]
    ids = [mem.digest(t, scope="project:x", session=s)["node_ids"][0] for s, t in work]
    with immediate(mem.conn):
        for a, b in zip(ids, ids[1:]):
            links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now())
    run_due(mem, only=["crystallize"], force=True)
    assert [sorted(c["members"]) for c in _current(mem, "crystal")] == [sorted(ids)]


def test_a_reaction_naming_the_other_speaker_is_left_out_of_a_crystal(mem):
    """A crystal speaks for what carries content; "Wow, Mel, meteors!" is a reaction: its one
    word beside Melanie's short name is no note."""
    told = ["Melanie: Last August we watched the Perseid meteor shower from the campsite.",
            "Caroline: The Perseid meteor shower! How many meteors did you count?",
            "Melanie: Forty Perseid meteors in an hour; the kids counted every meteor.",
            "Caroline: Wow, Mel, meteors!"]
    ids = [mem.digest(t, scope="conv:cm", session="s9")["node_ids"][0] for t in told]
    with immediate(mem.conn):
        for a, b in zip(ids, ids[1:]):
            links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now())
    run_due(mem, only=["crystallize"], force=True)
    assert [sorted(c["members"]) for c in _current(mem, "crystal")] == [sorted(ids[:3])]

