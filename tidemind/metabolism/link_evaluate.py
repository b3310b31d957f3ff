"""`link-evaluate` (offline judge): pending links are confirmed or rejected by a multi-signal
heuristic, and the rejected ones stay as rows with their reason; pending links nobody judged
within EXPIRE_DAYS become `expired`. Signals: cosine of the two vectors, tags they share
(proposed or confirmed), and whether they come from one capture or one session."""
from __future__ import annotations

import datetime as dt

from ..store import audit, immediate, links, tags, vectors
from ..timeutil import from_iso, to_iso
from . import TaskContext, register

CONFIRM_AT = 0.62
REJECT_BELOW = 0.40
EXPIRE_DAYS = 7


def judge(cos: float, shared_tags: int, same_origin: bool) -> float:
    cos_part = min(1.0, max(0.0, (cos - 0.4) / 0.4))
    return 0.6 * cos_part + 0.25 * min(shared_tags, 2) / 2 + 0.15 * (1.0 if same_origin else 0.0)


class LinkEvaluateTask:
    name = "link-evaluate"
    interval_s = 600
    batch_size = 500
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        emb = ctx.memory.embedder
        todo = links.pending(ctx.conn, ctx.batch or self.batch_size)
        ids = sorted({i for l in todo for i in (l["source_id"], l["target_id"])})
        vecs = vectors.floats(ctx.conn, ids, emb.name)
        tag_map = tags.for_nodes(ctx.conn, ids)
        counts = {"confirmed": 0, "rejected_by_model": 0, "undecided": 0}
        now = ctx.now()
        with immediate(ctx.conn):
            for l in todo:
                a, b = vecs.get(l["source_id"]), vecs.get(l["target_id"])
                if a is None or b is None:
                    counts["undecided"] += 1
                    continue
                cos = float(a @ b)
                shared = len({t["name"] for t in tag_map[l["source_id"]] if t["status"] != "rejected_by_user"}
                             & {t["name"] for t in tag_map[l["target_id"]] if t["status"] != "rejected_by_user"})
                same = (l["source_session"] is not None and l["source_session"] == l["target_session"]) or \
                       (l["source_capture"] is not None and l["source_capture"] == l["target_capture"])
                score = judge(cos, shared, same)
                reason = f"offline judge: score {score:.2f} (cosine {cos:.2f}, shared tags {shared}, same origin {same})"
                if score >= CONFIRM_AT:
                    status = "confirmed"
                elif score < REJECT_BELOW:
                    status = "rejected_by_model"
                else:
                    counts["undecided"] += 1
                    continue
                links.set_status(ctx.conn, l["id"], status, now, reason)
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action=f"link_{status}",
                             node_id=l["source_id"], other=l["target_id"], link=l["id"], score=round(score, 3))
                counts[status] += 1
            cutoff = to_iso(from_iso(now) - dt.timedelta(days=EXPIRE_DAYS))
            counts["expired"] = links.expire_pending(ctx.conn, cutoff, now)
        return counts


register(LinkEvaluateTask())
