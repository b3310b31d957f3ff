"""`link-evaluate`: pending links are confirmed or rejected, and rejected ones stay as rows with
their reason; pending links nobody judged within EXPIRE_DAYS become `expired`.

The judge is the `strategies/link-evaluate.md` prompt when an LLM is configured (validated JSON;
anything else falls back), else an offline multi-signal heuristic: cosine of the two vectors,
tags they share (proposed or confirmed), and whether they come from one capture or session."""
from __future__ import annotations

import datetime as dt

from ..store import audit, immediate, links, tags, vectors
from ..timeutil import from_iso, to_iso
from . import TaskContext, register

SCHEMA = {
    "verdict": {"type": "str", "required": True, "enum": ["confirm", "reject"]},
    "relation": {"type": "str", "enum": ["related", "updates", "contradicts", "explains", "example-of"]},
    "reason": {"type": "str", "required": True, "max": 300},
}
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
        verdicts = self._ask_model(ctx, todo) if ctx.llm is not None else {}
        now = ctx.now()
        with immediate(ctx.conn):
            for l in todo:
                if l["id"] in verdicts:
                    status, reason = verdicts[l["id"]]
                    if not links.judge(ctx.conn, l["id"], status, now, reason):
                        continue                     # decided by someone else while the model thought
                    audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action=f"link_{status}",
                                 node_id=l["source_id"], other=l["target_id"], link=l["id"], judge=ctx.llm.name)
                    counts[status] += 1
                    continue
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
                if not links.judge(ctx.conn, l["id"], status, now, reason):
                    continue
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action=f"link_{status}",
                             node_id=l["source_id"], other=l["target_id"], link=l["id"], score=round(score, 3))
                counts[status] += 1
            cutoff = to_iso(from_iso(now) - dt.timedelta(days=EXPIRE_DAYS))
            counts["expired"] = links.expire_pending(ctx.conn, cutoff, now)
        return counts


    def _ask_model(self, ctx: TaskContext, todo: list[dict]) -> dict[int, tuple[str, str]]:
        """Model verdicts, asked outside any transaction; links it could not judge are left out."""
        from ..llm import ask_json, load_strategy
        from ..store import nodes

        strategy = load_strategy("link-evaluate", ctx.memory.settings.home)
        out = {}
        for l in todo:
            if ctx.stopping():
                break
            a, b = nodes.get_any(ctx.conn, l["source_id"]), nodes.get_any(ctx.conn, l["target_id"])
            data = ask_json(ctx.conn, ctx.llm, self.name, strategy, SCHEMA, ctx.now(), a=a["content"][:3000],
                            b=b["content"][:3000])
            if data is not None:
                status = "confirmed" if data["verdict"] == "confirm" else "rejected_by_model"
                out[l["id"]] = (status, f"{ctx.llm.name} ({strategy.name}@{strategy.version}):"
                                        f" {data.get('relation', 'related')}: {data['reason']}")
        return out


register(LinkEvaluateTask())
