"""`link-propose`: each newly embedded node's nearest neighbours in its scope become `pending`
links with their cosine as strength. A pair that already has a link in any status — including
`rejected_by_user`, `rejected_by_model` and `expired` — is never proposed again."""
from __future__ import annotations

from ..store import audit, immediate, links, task_runs, vectors
from . import TaskContext, register
from .pairs import nearest

NEIGHBOURS = 5
MIN_COSINE = 0.55


class LinkProposeTask:
    name = "link-propose"
    interval_s = 300
    batch_size = 200
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        memory = ctx.memory
        emb = memory.embedder
        cursor = task_runs.get_cursor(ctx.conn, self.name)
        todo = vectors.embedded_after(ctx.conn, cursor, emb.name, ctx.batch or self.batch_size)
        proposed = 0
        last = cursor
        done = 0
        for node_id, scope, query in todo:
            if ctx.stopping():
                break
            done += 1
            near = nearest(ctx, node_id, scope, query, NEIGHBOURS, MIN_COSINE)
            now = ctx.now()
            with immediate(ctx.conn):
                for other, cos in near:
                    link = links.add(ctx.conn, node_id, other, status="pending", strength=round(cos, 4),
                                     proposed_by=self.name, at=now)
                    if link is not None:
                        proposed += 1
                        audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="link_proposed",
                                     node_id=node_id, other=other, link=link, strength=round(cos, 4))
                task_runs.set_cursor(ctx.conn, self.name, node_id)
            last = node_id
        return {"nodes": done, "proposed": proposed, "cursor": last}


register(LinkProposeTask())
