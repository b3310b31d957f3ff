"""`contradict`: pairs about the same subject that disagree — the same words with other numbers
("port 5433" / "port 6432"), or one negating the other — become a `contradiction` review item;
recall flags both nodes while it is open."""
from __future__ import annotations

from ..store import audit, immediate, review, task_runs, vectors
from . import TaskContext, register
from .dedup import pair_digest
from .pairs import nearest, negated, numbers, word_overlap

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
            for other, cos in nearest(ctx, node_id, scope, query, 5, MIN_COSINE):
                text = ctx.conn.execute("SELECT content FROM nodes WHERE id=?", (other,)).fetchone()[0]
                why = disagreement(me, text)
                if why:
                    found.append((other, cos, why))
            now = ctx.now()
            with immediate(ctx.conn):
                for other, cos, why in found:
                    digest = pair_digest("contradiction", node_id, other)
                    if review.exists_with_digest(ctx.conn, digest) or review.open_between(ctx.conn, node_id, other):
                        continue
                    item = review.file(ctx.conn, "contradiction", node_id=max(node_id, other),
                                       other_node_id=min(node_id, other), at=now, scope=scope, digest=digest,
                                       reason=why, similarity=round(cos, 4))
                    audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="contradiction_flagged",
                                 node_id=node_id, other=other, review_item=item, reason=why)
                    filed += 1
                task_runs.set_cursor(ctx.conn, self.name, node_id)
        return {"nodes": done, "contradictions": filed}


register(ContradictTask())
