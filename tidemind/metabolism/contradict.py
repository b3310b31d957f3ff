"""`contradict`: pairs about the same subject that disagree — the same words with other numbers
("port 5433" / "port 6432"), or one negating the other — become a `contradiction` review item;
recall flags both nodes while it is open."""
from __future__ import annotations

from . import TaskContext, register
from .pairs import file_pair_items, negated, numbers, word_overlap

MIN_COSINE = 0.6
MIN_OVERLAP = 0.5


def disagreement(a: str, b: str) -> str | None:
    overlap = word_overlap(a, b)
    na, nb = numbers(a), numbers(b)
    if overlap >= MIN_OVERLAP and na and nb and na != nb:
        return "different_values"
    if overlap >= 0.6 and negated(a) != negated(b):
        return "negation"
    return None


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
