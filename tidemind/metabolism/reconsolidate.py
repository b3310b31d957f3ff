"""`reconsolidate`: a node that recall keeps returning, in new company, gets its derived layer
refreshed with that context — never its authored text. Its title and tags are re-derived (the
previous values move to `derived_history`), and nodes it was recalled beside at least twice
that it has no link with become `pending` link proposals. Recall itself only recorded the hits."""
from __future__ import annotations

from ..store import audit, derived, immediate, links, recall_hits
from . import TaskContext, register
from .annotate import AnnotateTask

MIN_HITS = 3
MIN_CO_RECALLS = 2


class ReconsolidateTask:
    name = "reconsolidate"
    interval_s = 1800
    batch_size = 50
    needs_llm = False

    def __init__(self):
        self._annotate = AnnotateTask()

    def run(self, ctx: TaskContext) -> dict:
        hot = recall_hits.hot_since(ctx.conn, MIN_HITS, ctx.batch or self.batch_size)
        refreshed = proposed = 0
        for entry in hot:
            if ctx.stopping():
                break
            node_id = entry["node_id"]
            row = ctx.conn.execute("SELECT content, scope FROM nodes WHERE id=?", (node_id,)).fetchone()
            title, slugs = self._annotate._offline_title_tags(row[0])
            company = [o for o, n in sorted(entry["company"].items()) if n >= MIN_CO_RECALLS]
            now = ctx.now()
            with immediate(ctx.conn):
                if ctx.conn.execute("SELECT status FROM nodes WHERE id=?", (node_id,)).fetchone()[0] != "live":
                    continue                  # archived or forgotten since its text was read
                derived.put(ctx.conn, node_id, "title", title, "reconsolidate/offline-v1", now)
                from ..store import tags
                for slug, confidence in slugs:
                    tags.assign(ctx.conn, node_id, slug, status="proposed", source=self.name, at=now,
                                confidence=confidence)
                for other in company:
                    same_scope = ctx.conn.execute("SELECT scope = ? AND status = 'live' FROM nodes WHERE id=?",
                                                  (row[1], other)).fetchone()
                    if same_scope and same_scope[0] and links.add(ctx.conn, node_id, other, status="pending",
                                                                  proposed_by=self.name, at=now,
                                                                  reason="recalled together repeatedly"):
                        proposed += 1
                derived.put(ctx.conn, node_id, "reconsolidated_at", now, self.name, now)
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="reconsolidate", node_id=node_id,
                             hits=entry["hits"], company=company)
            refreshed += 1
        return {"refreshed": refreshed, "links_proposed": proposed}


register(ReconsolidateTask())
