"""`contradict`: pairs about the same subject that disagree — the same words with other numbers
("port 5433" / "port 6432"), or one negating the other — become a `contradiction` review item;
recall flags both nodes while it is open."""
from __future__ import annotations

import re

from . import TaskContext, register
from ..substance import specific_words
from .extract import sentences
from .pairs import file_pair_items, negated, numbers, word_overlap

MIN_COSINE = 0.6
MIN_OVERLAP = 0.5


# a task line is something to do, not a claim: "NOW write changelog for v0.0.10" and "DONE write
# changelog for v0.0.9" are two tasks, not one fact with two values
_TASK = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(?:#{1,6}[ \t]+)?(?:TODO|DONE|NOW|LATER|DOING|WAITING|WAIT|CANCELED|CANCELLED|"
                   r"IN-PROGRESS|\[[ xX]\])(?=[ \t]|$)", re.MULTILINE)


def _task(text: str) -> bool:
    """A to-do and nothing else: every line a task, or a task's own indented lines."""
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and _TASK.match(lines[0]) is not None and all(
        _TASK.match(line) or line[:1] in (" ", "\t") for line in lines[1:])


def disagreement(a: str, b: str) -> str | None:
    if _task(a) or _task(b):
        return None
    overlap = word_overlap(a, b)
    na, nb = numbers(a), numbers(b)
    if overlap >= MIN_OVERLAP and na and nb and na != nb:
        return "different_values"
    if overlap >= 0.6 and negated(a) != negated(b) and _negated_sentence(a, b):
        return "negation"
    return None


def _negated_sentence(a: str, b: str) -> bool:
    """One says a sentence the other says without its negation ("the deploy runs on Fridays" /
    "the deploy does not run on Fridays"); a 'not' in a sentence the other does not say at all is
    no contradiction (a guide's "The content in a cloze is not shown by default. For example..."
    against another's "For example...")."""
    def pairs(x: str, y: str) -> bool:
        plain = [_roots(s) for s in sentences(y) if not negated(s)]
        denied = [_roots(s) for s in sentences(x) if negated(s)]
        return any(d and p and len(d & p) / len(d | p) >= 0.6 for d in denied for p in plain)
    return pairs(a, b) or pairs(b, a)


def _roots(sentence: str) -> set[str]:
    """The sentence's specific words with their inflections folded ("retries" and "retry" are one
    word: "The webhook does not retry" denies "The webhook retries")."""
    return {_root(w) for w in specific_words(sentence) if not w.isdigit()}


def _root(word: str) -> str:
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)] + repl
    return word


class ContradictTask:
    name = "contradict"
    interval_s = 600
    batch_size = 200
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        def judge(a: str, b: str, cos: float) -> dict | None:
            why = disagreement(a, b)
            return {"reason": why, "similarity": round(cos, 4)} if why else None

        done, filed = file_pair_items(ctx, self.name, "contradiction", 5, MIN_COSINE, judge,
                                      ctx.batch or self.batch_size)
        return {"backlog": done >= (ctx.batch or self.batch_size), "nodes": done, "contradictions": filed}


register(ContradictTask())
