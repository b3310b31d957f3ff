"""One offline judgement of whether a unit carries content, used by every metabolism pass
(issue 23): greetings, empty journal pages, headings, images and table headers stay stored and
recallable, but no pass links, tags, merges, contradicts, crystallises or digests them."""
import pytest

from tidemind.metabolism.contradict import disagreement
from tidemind.metabolism.dedup import duplicate
from tidemind.metabolism.pairs import numbers, word_overlap
from tidemind.substance import carries_content, specific_words

EMPTY = [
    "Hey Mel! How are you?",
    "Melanie: Take care, bye!",
    "Caroline: Thanks so much, that means a lot. Keep it up, you've got this!",
    "Jolene: Where is it?",                                    # a speaker's name says nothing of a topic
    "---\ntitle: Oct 6th, 2020\n---\n",                        # an empty journal page
    "title:: Oct 16th, 2020\n",
    "## General",                                             # a heading alone
    "![[Pasted image 20230101.png]]",                         # an image, an embed, a link
    "{{youtube https://www.youtube.com/watch?v=abc}}",
    "- [[Core plugins]]",
    "https://obsidian.md/help",
    "TODO",
    "- [ ]",
    "| Field | Type | Description |\n|---|---|---|",           # a table's header row
    "John: Thanks! Your encouragement means a lot to me. I'm feeling motivated and ready to keep pushing.",
    # small talk inflected, and what is left of a contraction ("haven't" -> "haven")
    "Nate: Hey Joanna, what's been up? Haven't seen you since we last talked.",
    "Tim: Hey John, been a while since we chatted. How's it going?",
    # a shared photo's caption describes every photo: people, poses, colours, places in the frame
    "Tim: Thanks! [shares a photo: a photo of a man and a woman standing next to a white table]",
    # markup of notes apps: org blocks and drawers, Logseq block attributes, callouts, hashtags
    "#+BEGIN_TIP\n#+END_TIP",
    "## NOW :PROPERTIES: :now: 1614348097567 :END:",
    "![demo.gif](../assets/demo.gif){:height 538, :width 485}",
    "> [!example] Variables",
    "#docs #card #ff0000",
    # small talk's set phrases: their words can name a topic elsewhere, not here
    "Jon: Knowing you've got my back really helps keep me going. I won't let you down!",
    "Tim: Thanks! Appreciate the offer. Let me know if you can lend a hand. Bye!",
    "Joanna: Yea, no worries! It was great catching up. Take it easy!",
    "Melanie: Great chatting with you! Feel free to reach out any time.",
]
FULL = [
    "The staging database listens on port 5433 behind PgBouncer.",
    "Caroline: I went to the LGBTQ support group yesterday and the transgender stories were inspiring.",
    "## Deploys\n\nRun the migrations inside BEGIN IMMEDIATE before restarting the web workers.",
    "| Field | Type |\n|---|---|\n| port | integer |",
    "- TODO renew the TLS certificate for the billing gateway",
    "Nate: Look at him! [shares a photo: a photo of a turtle sitting on a rock next to a lettuce leaf]",
]


@pytest.mark.parametrize("text", EMPTY)
def test_units_without_content(text):
    assert not carries_content(text), specific_words(text)


@pytest.mark.parametrize("text", FULL)
def test_units_with_content(text):
    assert carries_content(text), specific_words(text)


def test_speaker_names_are_not_content_words():
    assert "jolene" not in specific_words("Jolene: Where is it?")
    assert word_overlap("Jolene: Where is it?", "Jolene: What time is it there?") == 0.0
    assert "maria" not in specific_words("Thanks, Maria! The food drive starts Monday.", names=["maria", "john"])


def test_ordinals_dates_and_file_names_are_not_values():
    assert numbers("10. You're done!") == set()
    assert numbers("title: Oct 6th, 2020") == set()
    assert numbers("![[image-2020-10-06.png]]") == set()
    assert numbers("The staging database listens on port 5433.") == {"5433"}
    # so step lines of two guides are no contradiction, and two speakers' sign-offs no merge
    assert disagreement("10. You're done!", "8. You're done!") is None
    assert duplicate("Tim: Take care, bye!", "John: Take care, bye!", 0.99) is None
    # while a changed value and a plain negation still are
    assert disagreement("The staging database listens on port 5433.",
                        "The staging database listens on port 6432.") == "different_values"
    assert disagreement("The billing service is deployed to production.",
                        "The billing service is not deployed to production any more.") == "negation"


def test_a_tag_names_something():
    """Issue 23: the offline tagger's least coherent tags on conversations-dev were small talk and
    vague nouns ("difference" on 37 turns about different things, "world", "challenges")."""
    from tidemind.substance import says_a_topic

    for vague in ("difference", "world", "challenges", "positive-changes", "opportunities", "the-world", "2023",
                  "struggles", "forces", "compassion", "enthusiasm", "worlds", "action"):      # life advice's nouns
        assert not says_a_topic(vague), vague
    for topic in ("pottery", "camping-trip", "lgbtq-support-group", "staging-database", "sourdough", "armed-forces",
                  "action-movies"):
        assert says_a_topic(topic), topic


def test_a_full_metabolism_over_notes_files_nothing_about_boilerplate(tmp_path):
    """As a new user met it on the Obsidian help vault and the Logseq docs graph: contradictions
    between step lines of two guides ("10. You're done!" / "8. You're done!") and between empty
    journal pages, merges of identical headings of different notes ("## General") and of two
    image-only blocks. Imported, metabolised to rest: none of those, and no link or tag on them,
    while the notes that say something are linked."""
    from tidemind.importers.engine import sync
    from tidemind.memory import Memory
    from tidemind.metabolism.scheduler import run_due

    vault = tmp_path / "vault"
    (vault / "Daily").mkdir(parents=True)
    steps = "\n".join(f"{n}. Step {n} of installing the {{app}} plugin." for n in range(1, 10))
    for app, last in (("sync", 10), ("publish", 8)):
        (vault / f"Install {app}.md").write_text(
            f"# Install {app}\n\n{steps.replace('{app}', app)}\n\n## Done\n\n{last}. You're done!\n\n"
            f"## General\n\n![[screenshot-{app}.png]]\n")
    for day in ("2020-10-06", "2020-10-16", "2020-10-26"):
        (vault / "Daily" / f"{day}.md").write_text(f"---\ntitle: Oct {int(day[-2:])}th, 2020\n---\n")
    (vault / "Staging.md").write_text("# Staging\n\nThe staging Postgres database listens on port 5433 behind"
                                      " PgBouncer with 40 server connections.\n")
    (vault / "Staging pool.md").write_text("# Staging pool\n\nPgBouncer pools the staging Postgres connections:"
                                           " 40 server connections on port 5433.\n")
    with Memory.open(tmp_path / "home") as m:
        sync(m, "obsidian", vault, "vault:help")
        for _ in range(4):
            run_due(m, force=True)
        content = dict(m.conn.execute("SELECT id, content FROM nodes WHERE status='live'"))
        boiler = {i for i, text in content.items() if not carries_content(text)}
        # the done lines and the image sections (an empty journal page is not even a memory)
        assert {i for i, text in content.items() if "done!" in text or "![[" in text} == boiler, boiler
        pairs = m.conn.execute("SELECT kind, node_id, other_node_id FROM review_items WHERE other_node_id IS NOT"
                               " NULL").fetchall()
        assert not [p for p in pairs if p[1] in boiler or p[2] in boiler], pairs
        linked = m.conn.execute("SELECT source_id, target_id FROM links WHERE status IN ('confirmed','pending')"
                                ).fetchall()
        assert not [l for l in linked if set(l) & boiler], [(content[a][:30], content[b][:30]) for a, b in linked]
        tagged = {n for (n,) in m.conn.execute("SELECT node_id FROM node_tags WHERE status='proposed'")}
        assert not tagged & boiler
        staging = {i for i, text in content.items() if "PgBouncer" in text}
        assert any(set(l) == staging for l in linked)        # what says something is still linked


def test_tasks_are_no_claims_and_a_not_must_deny_what_the_other_says():
    """Seen on the Logseq docs graph: two journal tasks with other version numbers filed as a
    contradiction, and a guide's 'is not shown by default' against another's text without it."""
    assert disagreement("## NOW Write changelog for v0.0.10 today for the release",
                        "## DONE Write changelog for v0.0.9 today for the release") is None
    assert disagreement("- [ ] renew the billing gateway certificate on port 443",
                        "- [x] renew the billing gateway certificate on port 8443") is None
    cloze = "For example, {{cloze something}}, you can click it to reveal its content. You can have many in a block."
    assert disagreement(cloze, "The content in a cloze is not shown by default. " + cloze) is None
    # plain negation and other values stay contradictions
    assert disagreement("The nightly deploy runs on Fridays from the build box.",
                        "The nightly deploy does not run on Fridays from the build box.") == "negation"
    assert disagreement("The staging database listens on port 5433.",
                        "The staging database listens on port 6432.") == "different_values"
    # found by review: inflections ("retry" / "retries") and a note that merely starts with a task
    assert disagreement("Payments: The webhook does not retry. It logs the failure.",
                        "Payments: The webhook retries. It logs the failure.") == "negation"
    assert disagreement("- [x] renew the cert\nThe billing gateway listens on port 443 and serves the shop.",
                        "- [ ] renew the cert\nThe billing gateway listens on port 8443 and serves the shop.") \
        == "different_values"


def test_a_notes_labels_are_nobody_speaking():
    """Found by review: a crystal quoted 'Warning: Upgrade the PostgreSQL driver first.' as said by
    'Warning', and the speaker feature would lift it for a question about warnings."""
    from tidemind.text import speaker

    assert speaker("Warning: Upgrade the PostgreSQL driver first.") is None
    assert speaker("Note: backups run at 02:00") is None
    assert speaker("Caroline: I went to the support group.") == "Caroline"


def test_long_hostile_units_stay_linear():
    """Found by review: an opening with no close, repeated through a long note, made the caption,
    drawer and yearless-date patterns quadratic (6 s, 3 s and 56 s on these inputs; a pass over one
    such note took seconds where it took 0.01)."""
    import time

    from tidemind.search.when import window

    start = time.perf_counter()
    assert not carries_content("[shares a photo: " * 8000 + "x")
    assert not carries_content(":PROPERTIES: x " * 8000)
    assert window("May 3" + " " * 100_000) is not None
    assert time.perf_counter() - start < 10


def test_a_photo_that_rides_along_with_encouragement_is_not_content():
    """A caption is a model's description of a photo: it is content when the speaker shows the
    photo, not when a photo comes with a cheer."""
    assert not carries_content("Tim: You rock! Keep it up! [shares a photo: a photo of a basketball ball and a book"
                               " on a court]")
    assert carries_content("Tim: Check out my new bookcase! [shares a photo: a bookcase filled with dvds and games]")
    assert carries_content("Tim: Keep it up! I finished the pottery class and glazed the vase."
                           " [shares a photo: a vase]")


def test_a_short_form_of_a_speakers_name_is_their_name():
    words = specific_words("Caroline: Wow, Mel, family love is the best!", {"melanie", "caroline"})
    assert "mel" not in words and "family" in words
    assert not carries_content("Caroline: Wow, Mel, family love is the best!", {"melanie", "caroline"})
    # only a capitalised short form: "car" is no Caroline
    assert "car" in specific_words("Melanie: My car broke down on the way.", {"caroline", "melanie"})
    # only a short form that addresses someone (found by review): "Robert" is no Roberta, a list's
    # "France" no Francesca
    assert "robert" in specific_words("Tim: Robert fixed the boiler yesterday.", {"roberta", "tim"})
    assert "france" in specific_words("Tim: We toured Italy, France and Spain.", {"francesca", "tim"})



def test_a_negative_contraction_is_not_its_stem():
    # "won't" says nothing of winning; "won" does
    assert "won" not in specific_words("Jon: Thanks, Gina! I won't quit, even when it's hard.")
    assert "won" in specific_words("Jon: We won the regional dance battle on Saturday!")


def test_a_set_phrase_hides_only_itself():
    # "back" in "got my back" is no topic; "back pain" is one, and the rest of the sentence stays
    assert "back" not in specific_words("Gina: I've got your back, always.")
    said = specific_words("John: My back pain is better since the physiotherapy; thanks for having my back!")
    assert {"back", "pain", "physiotherapy"} <= set(said)


def test_no_cache_of_this_process_keeps_a_forgotten_memorys_text(mem):
    """Every pass judges texts through caches kept per text (`text.TextMemo`): forget drops the
    memory's text from each of them, so nothing of it stays in this process's memory either."""
    import gc

    from tidemind.metabolism.scheduler import run_due
    from tidemind.text import TextMemo

    gc.unfreeze()          # (the desktop's quiet_gc froze what existed: get_objects() skips frozen objects)
    # (a cache full of earlier tests' texts empties itself whole when it reaches its size: start empty)
    for memo in [o for o in gc.get_objects() if type(o).__name__ == TextMemo.__name__ and hasattr(o, "_kept")]:
        memo._kept.clear()
    secret = "Caroline: the safe in the attic opens with the combination hidden behind the clock."
    node_id = mem.digest(secret)["node_ids"][0]
    for n in range(3):
        mem.digest(f"Caroline: the attic clock {n} was my grandmother's, wound every Sunday.")
    mem.recall("what opens the safe in the attic")
    run_due(mem, force=True)
    from tidemind import substance

    substance.carries_content(secret, kept=True)            # (at least one cache holds it, whatever ran)
    # found by what they are, not by class identity (a test that reloads a module makes a new class)
    memos = [o for o in gc.get_objects() if type(o).__name__ == TextMemo.__name__ and hasattr(o, "_kept")]
    memos.append(substance._CARRIES)
    assert secret in substance._CARRIES and any(secret in memo for memo in memos)   # (read through them)
    mem.forget(node_id)
    # nor any part of it (review: sentences were kept under their own keys, which forget never drops)
    assert not [key for memo in memos for key in memo._kept if len(key) > 20 and key in secret]
