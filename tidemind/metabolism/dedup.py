"""`dedup`: near-duplicates become a `merge` review item naming both nodes, never an automatic
merge. Approving it (a person's decision) supersedes the older node by the newer, keeping both
texts as versions; reopening or rejecting it later restores the older one."""
from __future__ import annotations

from . import TaskContext, register
from .pairs import file_pair_items, negated, numbers, word_overlap

MIN_COSINE = 0.92
MIN_OVERLAP = 0.6


def duplicate(a: str, b: str, cos: float) -> dict | None:
    overlap = word_overlap(a, b)
    # the same words with other numbers, or with one of them negated ("is deployed" / "is not
    # deployed any more"), is a contradiction candidate, not a duplicate: approving a merge would
    # file the correction as a copy of what it corrects
    if overlap >= MIN_OVERLAP and numbers(a) == numbers(b) and negated(a) == negated(b):
        return {"similarity": round(cos, 4), "word_overlap": round(overlap, 3)}
    return None


class DedupTask:
    name = "dedup"
    interval_s = 600
    batch_size = 200
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        done, filed = file_pair_items(ctx, self.name, "merge", 3, MIN_COSINE, duplicate, ctx.batch or self.batch_size)
        return {"backlog": done >= (ctx.batch or self.batch_size), "nodes": done, "merge_items": filed}


register(DedupTask())
