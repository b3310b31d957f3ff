"""Offline tags are a vocabulary: names and noun phrases that recur in a scope, reused across its
memories, each proposal `proposed` with its generator and a confidence. A person's "no", on one
memory or for a whole scope, holds in every pass that proposes tags until it is lifted."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from tidemind.llm import Completion
from tidemind.metabolism.annotate import GENERATOR
from tidemind.metabolism.reconsolidate import TAG_SOURCE
from tidemind.metabolism.scheduler import run_due
from tidemind.store import immediate, tags
from tidemind.text import sha256

from .conftest import ROOT, cli_json

# the example: three topics, six short memories each, in one scope
TOPICS = {
    "postgres": ["The staging Postgres database runs version 16 on port 5433.",
                 "Backups of the staging database run nightly with pg_dump.",
                 "PgBouncer pools connections in front of the staging Postgres.",
                 "The staging database was restored from last night's backup after the failed migration.",
                 "Slow queries on staging Postgres came from a missing index on orders.",
                 "We raised max_connections on the staging database to 200; PgBouncer still pools."],
    "bread": ["Fed the sourdough starter with rye flour; it doubled in six hours.",
              "The sourdough loaf was dense because the bulk fermentation was too short.",
              "Sourdough starter smells of acetone when it is hungry.",
              "Baked two sourdough loaves at 250 degrees in the Dutch oven.",
              "Bulk fermentation takes longer in a cold kitchen.",
              "Discard from the sourdough starter makes good pancakes."],
    "fish": ["The aquarium ammonia reading was 0.25 after adding the neon tetras.",
             "Weekly water change of 25 percent keeps the aquarium nitrate low.",
             "Neon tetras school better in groups of eight or more.",
             "Cleaned the aquarium filter in tank water to keep the bacteria.",
             "The aquarium heater keeps the water at 25 degrees for the tetras.",
             "Nitrate test after the water change: 10 ppm, fine for the tetras."],
}


def _digest_topics(mem, scope=None) -> dict[int, str]:
    return {mem.digest(text, **({"scope": scope} if scope else {}))["node_ids"][0]: topic
            for topic, texts in TOPICS.items() for text in texts}


def _authored(mem):
    return {i: (c, h) for i, c, h in mem.conn.execute("SELECT id, content, content_hash FROM nodes")}


def _proposals(mem, node_id) -> dict[str, tuple[str, str, float]]:
    return {n: (s, src, c) for n, s, src, c in mem.conn.execute(
        "SELECT t.name, nt.status, nt.source, nt.confidence FROM node_tags nt JOIN tags t ON t.id = nt.tag_id"
        " WHERE nt.node_id = ?", (node_id,))}


def _names(mem, node_id, status="proposed") -> set[str]:
    return {t["name"] for t in tags.for_nodes(mem.conn, [node_id])[node_id] if t["status"] == status}


def _proposed_in(mem, scope: str, texts: list[str]) -> set[str]:
    """Every name the offline tagger proposes on these memories, digested into one scope."""
    ids = [mem.digest(t, scope=scope)["node_ids"][0] for t in texts]
    run_due(mem, only=["annotate"], force=True)
    return set().union(*(_names(mem, n) for n in ids))


def test_offline_tags_are_names_that_recur_in_the_scope_and_never_cross_topics(mem):
    topic_of = _digest_topics(mem)
    before = _authored(mem)
    report = run_due(mem, only=["annotate"], force=True)[0]
    assert report["status"] == "ok" and report["annotated"] == len(topic_of)
    carriers: dict[str, set[int]] = defaultdict(set)
    for node_id in topic_of:
        for name, (status, source, confidence) in _proposals(mem, node_id).items():
            assert status == "proposed" and source == GENERATOR and 0 < confidence <= 1
            carriers[name].add(node_id)
    assert all(carriers[n] for n in carriers)
    for topic in TOPICS:                           # every topic's memories carry its names...
        tagged = [n for n, t in topic_of.items() if t == topic and _names(mem, n)]
        assert len(tagged) >= 5, topic
    for name, holders in carriers.items():         # ...and no name is shared across topics
        assert len({topic_of[n] for n in holders}) == 1, name
    reused = [n for n, holders in carriers.items() if len(holders) >= 2]
    assert len(reused) >= 0.75 * len(carriers)     # a vocabulary, not a name per memory
    assert _authored(mem) == before and all(sha256(c) == h for c, h in before.values())


def test_a_name_in_every_memory_of_a_scope_tags_nothing(mem):
    """The issue's junk: 'database-listens' or 'server-number' on every node of a 40-node store."""
    ids = [mem.digest(f"The staging database number {n} listens on port {5400 + n}.", scope="project:a")["node_ids"][0]
           for n in range(40)]
    run_due(mem, only=["annotate"], force=True)
    counts: dict[str, int] = defaultdict(int)
    for node_id in ids:
        for name in _names(mem, node_id):
            counts[name] += 1
    assert all(n <= len(ids) / 2 for n in counts.values()), counts


def test_who_speaks_is_not_a_tag_but_what_they_talk_about_is(mem):
    turns = ["Maria: I started volunteering at the homeless shelter on Sundays.",
             "John: That's great, Maria! I just got back from Kyoto with the kids.",
             "Maria: Kyoto! Did you see the temples, John?",
             "John: So many temples. The kids loved the bamboo forest.",
             "Maria: The homeless shelter needs tinned food for its food drive.",
             "John: Mari, I can bring tinned food for the food drive.",
             "Maria: The food drive collected 900 cans for the shelter!",
             "John: Kyoto was the best trip we ever made."]
    ids = [mem.digest(t, scope="conv:mj")["node_ids"][0] for t in turns]
    run_due(mem, only=["annotate"], force=True)
    proposed = set().union(*(_names(mem, n) for n in ids))
    assert not proposed & {"maria", "john", "mari"}          # speakers, and what one calls the other
    assert {"kyoto", "food-drive", "homeless-shelter"} <= proposed


def test_a_tag_names_a_thing_not_what_someone_does_or_an_interjection(mem):
    """Tags a person would use: never a verb ("watching", "winning"), an interjection ("woah") or
    an abstract noun of no topic ("importance", "obstacles") -- all seen on conversations-dev."""
    turns = ["Tim: I was watching the Lakers game; winning the playoffs would mean a lot to the team.",
             "John: Woah, watching the Lakers in the playoffs is intense. Winning matters, obstacles too.",
             "Tim: The importance of the Lakers bench showed in the playoffs: winning is a team habit.",
             "John: Woah! I keep watching Lakers highlights; the playoffs importance is huge, obstacles aside.",
             "Tim: Winning streaks and obstacles: the Lakers face the Celtics in the playoffs next."]
    proposed = _proposed_in(mem, "conv:tj", turns)
    assert not proposed & {"watching", "winning", "woah", "importance", "obstacles", "obstacle"}, proposed
    assert {"lakers", "playoffs"} <= proposed, proposed


def test_buttons_and_keys_are_no_tags(mem):
    """Seen on the Obsidian help vault: 'delete', 'enter', 'ctrl', 'shift' (buttons and keys,
    capitalised mid-sentence) were tags."""
    steps = ["To remove the Kanban plugin, open Settings, click **Delete** and press **Enter** to confirm.",
             "To rename a Kanban board, press Ctrl+Shift+R, type the name and click **Delete** on the old one.",
             "The Kanban plugin keeps boards in Markdown; press **Enter** on a card to open it, Ctrl+Shift+E to edit.",
             "Kanban cards move with Ctrl+Shift+Up; click **Delete** to drop a card and **Enter** to add one.",
             "Archive a Kanban board from its menu; press Ctrl+Shift+A, then **Enter**."]
    proposed = _proposed_in(mem, "vault:help", steps)
    assert not proposed & {"delete", "enter", "ctrl", "shift", "ctrl-shift"}, proposed
    assert "kanban" in proposed, proposed


def test_a_name_a_person_confirmed_in_the_scope_comes_first_in_their_spelling(mem):
    first = mem.digest("Ana asked for a pull request per feature.")["node_ids"][0]
    mem.tag_add(first, "pull-request")
    later = [mem.digest(t)["node_ids"][0] for t in
             ("Small pull requests get reviewed the same day.", "CI runs the tests on every pull request.")]
    run_due(mem, only=["annotate"], force=True)
    for node_id in later:
        found = _proposals(mem, node_id)
        assert found["pull-request"][0] == "proposed"       # the person's name, not "pull-requests"
        assert found["pull-request"][2] >= max(c for _, _, c in found.values())
    assert "pull-requests" not in {n for node_id in later for n in _proposals(mem, node_id)}


def test_the_first_memories_of_a_scope_are_tagged_again_as_it_grows(mem):
    first = mem.digest("Booked the Kyoto trip for April.", scope="travel")["node_ids"][0]
    run_due(mem, only=["annotate"], force=True)
    assert not _names(mem, first)                 # nothing recurs in a scope of one memory
    for text in ("The Kyoto hotel is near the station.", "Kyoto temples open at eight.",
                 "A day trip from Kyoto to Nara by train."):
        mem.digest(text, scope="travel")
    report = run_due(mem, only=["annotate"], force=True)[0]
    assert report["retagged"] >= 1 and "kyoto" in _names(mem, first)
    retags = [json.loads(d) for (d,) in mem.conn.execute(
        "SELECT details FROM audit_log WHERE action = 'retag' AND node_id = ?", (first,))]
    assert retags and "kyoto" in retags[-1]["tags"]
    again = run_due(mem, only=["annotate"], force=True)[0]
    assert again["annotated"] == 0 and again["retagged"] == 0          # settles until the scope doubles again
    # the scope size annotate keeps to know when to retag is its bookkeeping, not a reading of the memory
    assert mem.conn.execute("SELECT count(*) FROM derived WHERE node_id = ? AND field = 'vocabulary_size'",
                            (first,)).fetchone()[0] == 1
    shown = mem.show(first)
    assert "vocabulary_size" not in shown["derived"] and "title" in shown["derived"]
    assert all("vocabulary_size" not in i["derived"] for i in mem.recall("Kyoto trip", scopes=["travel"])["items"])


def test_a_fresh_offline_pass_replaces_only_the_old_keyword_guesses(mem):
    topic_of = _digest_topics(mem)
    node_id = next(iter(topic_of))
    with immediate(mem.conn):       # what the YAKE tagger and others left on the node before
        tags.assign(mem.conn, node_id, "postgres-database-runs", status="proposed", source="annotate/offline-v1",
                    at=mem.now(), confidence=0.4)
        tags.assign(mem.conn, node_id, "port-number", status="proposed", source="annotate/anthropic/annotate@1",
                    at=mem.now(), confidence=0.8)
        tags.assign(mem.conn, node_id, "version-bump", status="proposed", source="annotate/offline-v1",
                    at=mem.now(), confidence=0.4)
    mem.tag_decide(node_id, "version-bump", reject=True)
    mem.tag_add(node_id, "infra")
    run_due(mem, only=["annotate"], force=True)
    found = _proposals(mem, node_id)
    assert "postgres-database-runs" not in found                             # the old guess is gone
    assert found["port-number"][:2] == ("proposed", "annotate/anthropic/annotate@1")   # another pass's stays
    assert found["version-bump"][0] == "rejected_by_user" and found["infra"][0] == "confirmed"
    assert any(src == GENERATOR for _, src, _ in found.values())
    details = json.loads(mem.conn.execute("SELECT details FROM audit_log WHERE action = 'annotate' AND node_id = ?",
                                          (node_id,)).fetchone()[0])
    assert details["withdrawn"] == ["postgres-database-runs"]


def test_forget_leaves_no_tag_name_of_the_memory_in_the_audit_log(mem):
    topic_of = _digest_topics(mem)
    node_id = next(iter(topic_of))
    with immediate(mem.conn):
        tags.assign(mem.conn, node_id, "zephyrine-courier", status="proposed", source="annotate/offline-v1",
                    at=mem.now(), confidence=0.4)
    run_due(mem, only=["annotate"], force=True)
    names = [n for n in _proposals(mem, node_id)] + ["zephyrine-courier"]
    trail = [d for (d,) in mem.conn.execute("SELECT details FROM audit_log WHERE node_id = ?", (node_id,))]
    assert any("zephyrine-courier" in d for d in trail)          # annotate said what it withdrew...
    mem.forget(node_id)
    trail = [d for (d,) in mem.conn.execute("SELECT details FROM audit_log WHERE node_id = ?", (node_id,))]
    assert not any(n in d for n in names for d in trail)         # ...and forget takes it away


def _reject_and_tombstone(mem, topic_of) -> tuple[int, str, str]:
    """On one memory a person rejects its best name; for the scope, another of its names."""
    run_due(mem, only=["annotate"], force=True)
    node_id = next(n for n in topic_of if len(_names(mem, n)) >= 2)
    best, other = sorted(_proposals(mem, node_id).items(), key=lambda p: -p[1][2])[:2]
    mem.tag_decide(node_id, best[0], reject=True)
    mem.tag_reject_everywhere(other[0], "personal")
    return node_id, best[0], other[0]


def _force_annotation(mem, node_ids):
    with immediate(mem.conn):
        for node_id in node_ids:
            mem.conn.execute("DELETE FROM derived WHERE node_id = ?", (node_id,))


def test_annotate_and_its_retag_never_propose_a_rejected_name(mem):
    topic_of = _digest_topics(mem)
    node_id, rejected, everywhere = _reject_and_tombstone(mem, topic_of)
    _force_annotation(mem, topic_of)                          # annotated afresh...
    assert run_due(mem, only=["annotate"], force=True)[0]["annotated"] == len(topic_of)
    for text in list(TOPICS["postgres"]) * 4:                 # ...and retagged once the scope has grown
        mem.digest(text + " (again)")
    assert run_due(mem, only=["annotate"], force=True)[0]["retagged"] >= len(topic_of)
    assert _proposals(mem, node_id)[rejected][0] == "rejected_by_user"
    for other in mem.conn.execute("SELECT id FROM nodes WHERE status = 'live'"):
        assert everywhere not in _names(mem, other[0])
    assert _names(mem, node_id)                               # the next names in line fill the places


def test_reconsolidate_never_proposes_a_rejected_name(mem):
    topic_of = _digest_topics(mem)
    node_id, rejected, everywhere = _reject_and_tombstone(mem, topic_of)
    text = mem.conn.execute("SELECT content FROM nodes WHERE id = ?", (node_id,)).fetchone()[0]
    run_due(mem, only=["embed"], force=True)
    for _ in range(3):
        assert node_id in {i["id"] for i in mem.recall(text, limit=5)["items"]}
    report = run_due(mem, only=["reconsolidate"], force=True)[0]
    assert report["refreshed"] >= 1
    found = _proposals(mem, node_id)
    assert found[rejected][0] == "rejected_by_user" and everywhere not in _names(mem, node_id)
    assert any(src == TAG_SOURCE for _, src, _ in found.values())    # it did propose, under its own label


class _Model:
    """An LLM that names exactly what a person refused, and records what it was told."""
    name = "stub/refused"

    def __init__(self, names, fail=False):
        self.names, self.fail, self.prompts = names, fail, []

    def complete(self, system, prompt, max_tokens=800):
        self.prompts.append(prompt)
        if self.fail:
            raise ConnectionError("model away")
        return Completion(json.dumps({"title": "Staging", "tags": self.names, "kind": "fact"}))


@pytest.mark.parametrize("fail", [False, True], ids=["model", "offline-fallback"])
def test_annotate_with_a_model_never_stores_a_rejected_name(mem, fail):
    topic_of = _digest_topics(mem)
    node_id, rejected, everywhere = _reject_and_tombstone(mem, topic_of)
    _force_annotation(mem, topic_of)
    model = _Model([rejected, everywhere, "fresh-name"], fail=fail)
    assert run_due(mem, only=["annotate"], force=True, llm=model)[0]["status"] == "ok"
    assert _proposals(mem, node_id)[rejected][0] == "rejected_by_user"
    for other in topic_of:
        assert everywhere not in _names(mem, other)
    assert any(everywhere in p and rejected in p for p in model.prompts)   # told, so it spends its tags elsewhere
    if not fail:
        assert "fresh-name" in _names(mem, node_id)


def test_lifting_a_scope_rejection_lets_the_name_be_proposed_again(mem):
    topic_of = _digest_topics(mem)
    _, _, everywhere = _reject_and_tombstone(mem, topic_of)
    _force_annotation(mem, topic_of)
    run_due(mem, only=["annotate"], force=True)
    assert not any(everywhere in _names(mem, n) for n in topic_of)
    mem.tag_unreject_everywhere(everywhere, "personal")
    _force_annotation(mem, topic_of)
    run_due(mem, only=["annotate"], force=True)
    assert any(everywhere in _names(mem, n) for n in topic_of)


def test_a_name_rejected_on_two_memories_is_not_offered_on_the_others_until_confirmed(mem):
    topic_of = _digest_topics(mem)
    run_due(mem, only=["annotate"], force=True)
    name = "sourdough-starter"
    holders = [n for n in topic_of if name in _names(mem, n)]
    assert len(holders) >= 3
    for node_id in holders[:2]:
        mem.tag_decide(node_id, name, reject=True)
    fresh = mem.digest("The sourdough starter lives in the fridge over the holidays.")["node_ids"][0]
    run_due(mem, only=["annotate"], force=True)
    assert name not in _names(mem, fresh)
    assert name in _names(mem, holders[2])                    # what was proposed before stays proposed
    mem.tag_add(holders[2], name)                             # a person's yes elsewhere lifts it
    _force_annotation(mem, [fresh])
    run_due(mem, only=["annotate"], force=True)
    assert name in _names(mem, fresh)


@pytest.mark.parametrize("labelled", ["tagging-memories.jsonl", "tagging-holdout.jsonl"])
def test_eval_reports_tagging_precision_on_the_labelled_sets(home, labelled):
    """`tidemind eval retrieval` scores the offline tags when memories name the tags a person wants."""
    report = cli_json(home, "eval", "retrieval", "--memories", str(ROOT / "tests" / "eval" / labelled))
    tagging = report["tagging"]
    assert tagging["memories"] > 30 and tagging["proposed"] >= tagging["memories"]
    assert tagging["precision"] >= 0.7 and tagging["recall"] >= 0.6
    assert tagging["tagged_share"] >= 0.9 and tagging["memories_per_name"] >= 1.5
    kinds = {"infra", "house", "conv"} if "holdout" in labelled else {"shop", "personal", "conv", "work"}
    assert all(any(k in scope for scope in tagging["by_scope"]) for k in kinds)     # every kind of text measured


def test_undoing_a_rejection_restores_the_whole_row_it_replaced(mem):
    """Undo is exact: a person's own tag and a pass's proposal come back with their status, source,
    confidence and the time they were decided, after a rejection on the node or for the scope."""
    own = mem.digest("Ferry timetable for the island trip in June.")["node_ids"][0]
    mem.tag_add(own, "ferries")
    proposed = mem.digest("The ferry to the island leaves at nine.")["node_ids"][0]
    with immediate(mem.conn):
        tags.assign(mem.conn, proposed, "island", status="proposed", source="annotate/offline-v3", at=mem.now(),
                    confidence=0.7)

    def row(node_id, name):
        return mem.conn.execute("SELECT nt.status, nt.source, nt.confidence, nt.created_at, nt.decided_at"
                                " FROM node_tags nt JOIN tags t ON t.id = nt.tag_id WHERE nt.node_id=? AND t.name=?",
                                (node_id, name)).fetchone()

    before = row(own, "ferries"), row(proposed, "island")
    mem.tag_decide(own, "ferries", reject=True)
    mem.tag_decide(own, "ferries", reject=True)           # twice: the first rejection's memory holds
    mem.tag_decide(own, "ferries", reject=False)
    mem.tag_reject_everywhere("island", "personal")
    assert row(proposed, "island")[0] == "rejected_by_user"
    mem.tag_unreject_everywhere("island", "personal")
    assert (row(own, "ferries"), row(proposed, "island")) == before
    # a person's tag added over a rejection, then taken back (the desktop's undo), keeps it too
    mem.tag_add(proposed, "island")
    decided = row(proposed, "island")
    mem.tag_decide(proposed, "island", reject=True)
    added = mem.tag_add(proposed, "island")
    mem.tag_restore(proposed, "island", added["previous"])
    mem.tag_decide(proposed, "island", reject=False)
    assert row(proposed, "island") == decided


def test_a_name_made_of_a_verb_stays_a_name(mem):
    """Found by review: making 'watch', 'rush' and 'count' verbs lost 'Apple Watch' and the band
    'Rush' as tags."""
    proposed = _proposed_in(mem, "personal", [
        "My Apple Watch tracks the morning runs and the resting heart rate.",
        "The Apple Watch battery lasts two days on the long runs.",
        "Synced the Apple Watch heart rate data with the running app.",
        "Bought tickets to see Rush play the old arena in March.",
        "Rush played the whole Moving Pictures album at the arena."])
    assert "apple-watch" in proposed and "rush" in proposed, proposed


def test_a_reaction_that_names_the_other_speaker_is_still_small_talk(mem):
    """"Caroline: Wow, Mel, family love is the best!" names one thing (family) beside the other
    speaker's short name: it is a reaction, and no pass files it under "family" (on
    conversations-dev, tags on such turns were half of those on content-free turns)."""
    turns = ["Melanie: We took the family to the lake; the family camping trip was the best.",
             "Caroline: Family trips to the lake sound lovely, Melanie.",
             "Melanie: The family loved the lake, and the camping trip gave us a week together.",
             "Caroline: My family never went camping, but the lake sounds perfect.",
             "Melanie: The lake at sunrise is where our family unwinds.",
             "Caroline: Wow, Mel, family love is the best!"]
    ids = [mem.digest(t, scope="conv:cm")["node_ids"][0] for t in turns]
    run_due(mem, only=["annotate"], force=True)
    assert "family" in set().union(*(_names(mem, n) for n in ids[:5]))     # the topic is a tag here
    assert _names(mem, ids[-1]) == set()


def test_a_tag_name_with_a_control_character_is_refused_on_every_path(mem):
    """Found by review: a NUL went into a SQLite store's tag names, and a PostgreSQL store (and so
    `migrate --to`) refused it with a bare driver error."""
    from tidemind.errors import InvalidInput

    node = mem.digest("The kiln fires to cone 6.")["node_ids"][0]
    for bad in ("ta\x00g", "ta\x07g", "\ud800x"):
        for call in (lambda: mem.tag_add(node, bad), lambda: mem.tag_decide(node, bad, reject=True),
                     lambda: mem.tag_reject_everywhere(bad, "personal")):
            with pytest.raises(InvalidInput, match="printable"):
                call()
    assert mem.tag_add(node, "#kiln")["tag"] == "kiln"


def test_in_a_scope_of_hundreds_a_word_two_memories_share_is_a_tag(mem):
    """A single word recurs when 2 memories of a scope under 1,000 share it (3 from 1,000): at 3
    from 100, turns about a lake or a library in a conversation of 500 turns stayed untagged."""
    filler = [f"The item{n}x shipped with the widget{n}q in crate{n}z." for n in range(120)]
    ids = [mem.digest(t, scope="project:lakes")["node_ids"][0] for t in filler]
    about = [mem.digest(t, scope="project:lakes")["node_ids"][0]
             for t in ("Melanie painted the lake at sunrise last summer.", "The lake froze over in January.")]
    run_due(mem, only=["annotate"], force=True)
    assert all("lake" in _names(mem, n) for n in about), [_names(mem, n) for n in about]
    assert not any("lake" in _names(mem, n) for n in ids)
