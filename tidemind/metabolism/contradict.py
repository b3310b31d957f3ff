"""`contradict`: pairs about the same subject that disagree — the same words with other numbers
("port 5433" / "port 6432"), or one negating the other — become a `contradiction` review item;
recall flags both nodes while it is open."""
from __future__ import annotations

import re

from . import TaskContext, register
from .extract import sentences
from .pairs import file_pair_items, negated, numbers, word_overlap

MIN_COSINE = 0.6
MIN_OVERLAP = 0.5


# a task line is something to do, not a claim: "NOW write changelog for v0.0.10" and "DONE write
# changelog for v0.0.9" are two tasks, not one fact with two values
_TASK = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(?:#{1,6}[ \t]+)?(?:TODO|DONE|NOW|LATER|DOING|WAITING|WAIT|CANCELED|CANCELLED|"
                   r"IN-PROGRESS|\[[ xX]\])(?=[ \t]|$)", re.MULTILINE)


def disagreement(a: str, b: str) -> str | None:
    if _TASK.match(a) or _TASK.match(b):
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
        plain = [s for s in sentences(y) if not negated(s)]
        return any(word_overlap(s, t) >= 0.6 for s in sentences(x) if negated(s) for t in plain)
    return pairs(a, b) or pairs(b, a)


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
