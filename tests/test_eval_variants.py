"""The robustness suite's variants (issue 24): made at run time from a set, stable from run to
run, and scored by the same evaluation."""
import datetime as dt

import pytest

from tidemind.errors import InvalidInput
from tidemind.eval_variants import apply
from tidemind.search.when import window

MEMORIES = [
    {"id": "t1", "text": "Caroline: Hey Mel! I went to a pottery class yesterday. It was fun.", "valid_at": "2023-05-08T13:56:00",
     "scope": "c", "session": "c:1"},
    {"id": "t2", "text": "Melanie: Wow, that's cool! What did you make?", "valid_at": "2023-05-08T13:56:00",
     "scope": "c", "session": "c:1"},
    {"id": "t3", "text": "Caroline: A bowl.", "valid_at": "2023-05-09T10:00:00", "scope": "c", "session": "c:2"},
]
QUERIES = [{"id": f"q{n}", "query": f"What did Caroline make on {day}?", "scope": "c", "evidence": ["t3"]}
           for n, day in enumerate(["8 May, 2023", "May 8, 2023", "2023-05-08", "October 13, 2023", "1 February, 2023",
                                    "May 23, 2023", "3 May, 2023", "25 May, 2023"])]


def test_chat_makes_a_message_of_each_sentence_keeping_its_turn_and_session_in_order():
    memories, queries, info = apply("chat", MEMORIES, QUERIES)
    assert queries == QUERIES and info["changed"] == 2
    assert [m["text"] for m in memories][:4] == ["Caroline: Hey Mel!", "Caroline: I went to a pottery class yesterday.",
                                                 "Caroline: It was fun.", "Melanie: Wow, that's cool!"]
    assert {m["id"] for m in memories} == {"t1", "t2", "t3"} and all(m["session"] for m in memories)
    times = [dt.datetime.fromisoformat(m["valid_at"]) for m in memories if m["session"] == "c:1"]
    assert times == sorted(times) and times[-1] - times[0] < dt.timedelta(minutes=10)      # minutes apart, one day


def test_dates_are_rewritten_in_every_form_and_read_back_as_the_same_day():
    _, queries, info = apply("dates", MEMORIES, QUERIES)
    assert info["changed"] == len(QUERIES) and apply("dates", MEMORIES, QUERIES)[1] == queries     # stable
    forms = {q["query"].split(" on ")[1].rstrip("?") for q in queries}
    assert len({("." in f, "/" in f, "-" in f, "of" in f) for f in forms}) >= 4, forms
    for original, changed in zip(QUERIES, queries):
        before, after = window(original["query"]), window(changed["query"])
        month_day = (after.day.month, after.day.day) if after.kind == "day" else (after.month, after.day_of_month)
        assert month_day == (before.day.month, before.day.day), changed["query"]


def test_names_are_respelled_as_people_write_them():
    queries = [{"id": f"n{n}", "query": "What did Caroline tell Melanie about pottery?", "scope": "c"} for n in range(12)]
    _, changed, info = apply("names", MEMORIES, queries)
    assert info["changed"] == 12
    spelled = {q["query"].split()[2] for q in changed}
    assert "Caroline" not in spelled and len(spelled) >= 3
    assert all(abs(len(s) - len("Caroline")) <= 1 or s == "Caro" for s in spelled), spelled


def test_listener_names_who_a_turn_was_said_to():
    queries = [{"id": "a", "query": "What did Caroline make?", "scope": "c", "evidence": ["t3"]},
               {"id": "b", "query": "What was Caroline's first class?", "scope": "c", "evidence": ["t1"]},
               {"id": "c", "query": "What did Melanie ask Caroline?", "scope": "c", "evidence": ["t2"]},   # both named
               {"id": "d", "query": "What did Caroline make?", "scope": "c", "evidence": ["t2", "t3"]}]  # two speakers
    _, changed, info = apply("listener", MEMORIES, queries)
    assert info["changed"] == 2
    assert [q["query"] for q in changed] == ["What did Melanie's friend make?", "What was Melanie's friend's first class?",
                                             "What did Melanie ask Caroline?", "What did Caroline make?"]


def test_an_unknown_variant_is_refused():
    with pytest.raises(InvalidInput, match="the variants are chat, dates, listener, names"):
        apply("tabs", MEMORIES, QUERIES)
