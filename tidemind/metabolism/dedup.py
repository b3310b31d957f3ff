"""`dedup`: near-duplicates become a `merge` review item naming both nodes, never an automatic
merge. Approving it (a person's decision) supersedes the older node by the newer, keeping both
texts as versions; reopening or rejecting it later restores the older one."""
from __future__ import annotations

from ..store import audit, immediate, review, task_runs, vectors
from ..text import sha256
from . import TaskContext, register
from .pairs import nearest, numbers, word_overlap

MIN_COSINE = 0.92
MIN_OVERLAP = 0.6


def pair_digest(kind: str, a: int, b: int) -> str:
    lo, hi = sorted((a, b))
    return sha256(f"{kind}:{lo}:{hi}")


class DedupTask:
    name = "dedup"
    interval_s = 600
    batch_size = 200
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        emb = ctx.memory.embedder
        cursor = task_runs.get_cursor(ctx.conn, self.name)
        todo = vectors.embedded_after(ctx.conn, cursor, emb.name, ctx.batch or self.batch_size)
        filed = done = 0
        for node_id, scope, query in todo:
            if ctx.stopping():
                break
            done += 1
            me = ctx.conn.execute("SELECT content FROM nodes WHERE id=?", (node_id,)).fetchone()[0]
            found = []
            for other, cos in nearest(ctx, node_id, scope, query, 3, MIN_COSINE):
                text = ctx.conn.execute("SELECT content FROM nodes WHERE id=?", (other,)).fetchone()[0]
                overlap = word_overlap(me, text)
                # same words but other numbers is a contradiction candidate, not a duplicate
                if overlap >= MIN_OVERLAP and numbers(me) == numbers(text):
                    found.append((other, cos, overlap))
            now = ctx.now()
            with immediate(ctx.conn):
                for other, cos, overlap in found:
                    digest = pair_digest("merge", node_id, other)
                    if review.exists_with_digest(ctx.conn, digest):
                        continue
                    newer, older = max(node_id, other), min(node_id, other)
                    item = review.file(ctx.conn, "merge", node_id=newer, other_node_id=older, at=now, scope=scope,
                                       digest=digest, similarity=round(cos, 4), word_overlap=round(overlap, 3))
                    audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="merge_proposed",
                                 node_id=newer, other=older, review_item=item)
                    filed += 1
                task_runs.set_cursor(ctx.conn, self.name, node_id)
        return {"nodes": done, "merge_items": filed}


register(DedupTask())
