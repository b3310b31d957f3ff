"""`reconsolidate`: a node that recall keeps returning, in new company, gets its derived layer
refreshed with that context — never its authored text. Its title and tags are re-derived (the
previous title moves to `derived_history`; the tags are chosen again from the scope's vocabulary
as it is now, replacing only the offline taggers' own proposals, never proposing a name a person
rejected on the node or for the scope), and the nodes it keeps being recalled beside (at least
MIN_CO_RECALLS times) become `pending` link proposals for the judge: at most CO_RECALL_LINKS per
node, the most frequent first, each as strong as the pair is related plus a little for every
recall they shared. A model's rejection of such a pair lapses after REJECTION_LAPSES_DAYS, so a
later, stronger signal may propose it again (a person's never does). Recall itself only recorded
the hits."""
from __future__ import annotations

import datetime as dt

from ..store import audit, derived, immediate, links, recall_hits, tags
from ..timeutil import from_iso, to_iso
from . import TaskContext, register
from .annotate import ScopeTagging, put_offline_tags, title_for
from .relate import Relatedness

TAG_SOURCE = "reconsolidate/offline-v2"

MIN_HITS = 3
MIN_CO_RECALLS = 2
CO_RECALL_LINKS = 3
CO_RECALL_BONUS = 0.05      # per shared recall beyond the first, up to 0.2
REJECTION_LAPSES_DAYS = 30


class ReconsolidateTask:
    name = "reconsolidate"
    interval_s = 1800
    batch_size = 50
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        hot = recall_hits.hot_since(ctx.conn, MIN_HITS, ctx.batch or self.batch_size)
        refreshed = proposed = tagged = 0
        scopes: dict[str, ScopeTagging] = {}
        for entry in hot:
            if ctx.stopping():
                break
            node_id = entry["node_id"]
            row = ctx.conn.execute("SELECT content, scope FROM nodes WHERE id=?", (node_id,)).fetchone()
            if row[1] not in scopes:
                scopes[row[1]] = ScopeTagging(ctx.conn, row[1])
            title = title_for(row[0])
            slugs = scopes[row[1]].propose(row[0], tags.for_nodes(ctx.conn, [node_id])[node_id])
            company = [o for o, n in sorted(entry["company"].items()) if n >= MIN_CO_RECALLS]
            now = ctx.now()
            with immediate(ctx.conn):
                if ctx.conn.execute("SELECT status FROM nodes WHERE id=?", (node_id,)).fetchone()[0] != "live":
                    continue                  # archived or forgotten since its text was read
                derived.put(ctx.conn, node_id, "title", title, "reconsolidate/offline-v1", now)
                written, withdrawn = put_offline_tags(ctx.conn, node_id, slugs, TAG_SOURCE, now)
                tagged += written
                rel = Relatedness(ctx.conn, row[1], ctx.memory.embedder)
                lapsed = to_iso(from_iso(now) - dt.timedelta(days=REJECTION_LAPSES_DAYS))
                room = CO_RECALL_LINKS - links.open_by(ctx.conn, node_id, self.name)
                for other in sorted(company, key=lambda o: (-entry["company"][o], o)):
                    if room <= 0:
                        break
                    if other not in rel.rows([other]) or links.open_by(ctx.conn, other, self.name) >= CO_RECALL_LINKS:
                        continue                    # another scope, no longer visible, or its few are taken
                    times = entry["company"][other]
                    strength = round(rel.score(node_id, other) + min(0.2, CO_RECALL_BONUS * (times - 1)), 4)
                    if links.propose(ctx.conn, node_id, other, strength=strength, proposed_by=self.name, at=now,
                                     reason=f"recalled together {times} times", rejected_before=lapsed):
                        proposed += 1
                        room -= 1
                derived.put(ctx.conn, node_id, derived.RECONSOLIDATED_AT, now, self.name, now)
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="reconsolidate", node_id=node_id,
                             hits=entry["hits"], company=company, tags=[s for s, _ in slugs],
                             **({"withdrawn": withdrawn} if withdrawn else {}))
            refreshed += 1
        return {"refreshed": refreshed, "links_proposed": proposed, "tags_proposed": tagged}


register(ReconsolidateTask())
