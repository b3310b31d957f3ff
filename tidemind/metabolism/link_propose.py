"""`link-propose`: each newly embedded node proposes `pending` links to the few memories of its
scope it is most related to (`relate`: specific words read with the memories around them, both
ends contributing, adjacency in a session or note), strongest first, at most PROPOSE per node and
only above MIN_STRENGTH: a proposal is something a person would look at, and the judge
(`link-evaluate`) confirms the clear ones. A pair that already has a link in any status (a
rejection included) is not proposed again; an expired proposal may be, when it comes back
stronger than it was.
"""
from __future__ import annotations

from ..store import audit, immediate, links, task_runs, vectors
from . import TaskContext, register
from .relate import PassScopes

PROPOSE = 6
MIN_STRENGTH = 0.15        # fitted with the judge's bars on three conversations of conversations-dev


class LinkProposeTask:
    name = "link-propose"
    interval_s = 300
    batch_size = 200
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        emb = ctx.memory.embedder
        cursor = task_runs.get_cursor(ctx.conn, self.name)
        todo = vectors.embedded_after(ctx.conn, cursor, emb.name, ctx.batch or self.batch_size)
        new: dict[str, int] = {}
        for _, scope, _ in todo:
            new[scope] = new.get(scope, 0) + 1
        scopes = PassScopes(ctx.conn, emb, new)
        proposed = done = 0
        last = cursor
        for node_id, scope, query in todo:
            if ctx.stopping():
                break
            done += 1
            rel = scopes[scope]
            scored = rel.ranked(node_id, query, PROPOSE * 2)
            now = ctx.now()
            with immediate(ctx.conn):
                chosen = [(s, o) for s, o in scored if s >= MIN_STRENGTH][:PROPOSE]
                offers = []
                for strength, other in chosen:
                    shared = rel.shared_words(node_id, other)[:4]
                    offers.append((other, round(strength, 4),
                                   f"relatedness {strength:.2f}" + (f"; shared: {', '.join(shared)}" if shared else "")))
                made = [list(m) for m in links.propose_many(ctx.conn, node_id, offers, proposed_by=self.name, at=now)]
                if made:            # one audit row per memory, naming every link it proposed
                    proposed += len(made)
                    audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="link_proposed",
                                 node_id=node_id, links=made)
                task_runs.set_cursor(ctx.conn, self.name, node_id)
            last = node_id
        return {"nodes": done, "proposed": proposed, "cursor": last,
                "backlog": bool(todo) and done == (ctx.batch or self.batch_size)}


register(LinkProposeTask())
