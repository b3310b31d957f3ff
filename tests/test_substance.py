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
]
FULL = [
    "The staging database listens on port 5433 behind PgBouncer.",
    "Caroline: I went to the LGBTQ support group yesterday and the transgender stories were inspiring.",
    "## Deploys\n\nRun the migrations inside BEGIN IMMEDIATE before restarting the web workers.",
    "| Field | Type |\n|---|---|\n| port | integer |",
    "- TODO renew the TLS certificate for the billing gateway",
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

    for vague in ("difference", "world", "challenges", "positive-changes", "opportunities", "the-world", "2023"):
        assert not says_a_topic(vague), vague
    for topic in ("pottery", "camping-trip", "lgbtq-support-group", "staging-database", "sourdough"):
        assert says_a_topic(topic), topic
