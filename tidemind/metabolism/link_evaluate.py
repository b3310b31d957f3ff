"""`link-evaluate`: the judge. Pending links are confirmed or rejected, rejections stay as rows
with their reason, and pending links nobody judged within EXPIRE_DAYS become `expired` (a later,
stronger proposal may bring the pair back).

With an LLM the judge is the `strategies/link-evaluate.md` prompt (validated JSON; anything else
falls back). Offline it confirms the clear ones and leaves the rest pending: a pair's score is its
relatedness (the proposal's strength) plus the partners the two memories have in common among
their proposals and confirmed links (two memories that relate to the same others belong
together), and pairs are confirmed strongest first while both ends have fewer than MAX_LINKS
confirmed links, so each memory keeps its best few. A graph of everything-to-everything helps
no one: the cap is what makes the judge choose.
"""
from __future__ import annotations

import datetime as dt

from ..store import audit, immediate, links
from ..timeutil import from_iso, to_iso
from . import TaskContext, register

SCHEMA = {
    "verdict": {"type": "str", "required": True, "enum": ["confirm", "reject"]},
    "relation": {"type": "str", "enum": ["related", "updates", "contradicts", "explains", "example-of"]},
    "reason": {"type": "str", "required": True, "max": 300},
}
CONFIRM_AT = 0.25
MAX_LINKS = 6               # confirmed links per memory
# relative to each memory's own candidates: two memories that are each other's closest few are
# linked even where absolute scores are low (a small scope, short notes)
MUTUAL_TOP = 3
MUTUAL_AT = 0.10
SHARED_PARTNERS = 0.5       # weight of the share of proposals two memories have in common
EXPIRE_DAYS = 7


def judge(strength: float, shared_partners: int) -> float:
    from .link_propose import PROPOSE

    return strength + SHARED_PARTNERS * min(shared_partners, PROPOSE) / PROPOSE


class LinkEvaluateTask:
    name = "link-evaluate"
    interval_s = 600
    batch_size = 500
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        todo = links.pending(ctx.conn, ctx.batch or self.batch_size, strongest_first=True, room_below=MAX_LINKS)
        ids = sorted({i for l in todo for i in (l["source_id"], l["target_id"])})
        counts = {"confirmed": 0, "rejected_by_model": 0, "undecided": 0}
        verdicts = self._ask_model(ctx, todo) if ctx.llm is not None else {}
        # what each memory itself proposed, best first: its own best candidates, whatever became of them
        proposed = links.proposals(ctx.conn, ids, "link-propose")
        related = {i: set(p) for i, p in proposed.items()}
        mutual = lambda a, b: b in proposed[a][:MUTUAL_TOP] and a in proposed[b][:MUTUAL_TOP]
        degree = {i: len(p) for i, p in links.partners(ctx.conn, ids, ("confirmed",)).items()}
        common = {l["id"]: len((related[l["source_id"]] & related[l["target_id"]]) - {l["source_id"], l["target_id"]})
                  for l in todo}
        scored = sorted(((judge(l["strength"] or 0.0, common[l["id"]]), l) for l in todo),
                        key=lambda x: (-x[0], x[1]["id"]))
        now = ctx.now()
        with immediate(ctx.conn):
            for score, l in scored:
                a, b = l["source_id"], l["target_id"]
                if l["id"] in verdicts:
                    status, reason = verdicts[l["id"]]
                    if status == "confirmed" and max(degree[a], degree[b]) >= MAX_LINKS:
                        counts["undecided"] += 1             # the model agrees, but each end has its best few
                        continue
                elif max(degree[a], degree[b]) < MAX_LINKS and (score >= CONFIRM_AT or (
                        mutual(a, b) and common[l["id"]] and (l["strength"] or 0.0) >= MUTUAL_AT)):
                    status = "confirmed"
                    reason = (f"offline judge: score {score:.2f} (related {l['strength'] or 0:.2f},"
                              f" {common[l['id']]} partner(s) in common"
                              + (", each among the other's closest" if mutual(a, b) else "") + ")")
                else:
                    counts["undecided"] += 1
                    continue
                if not links.judge(ctx.conn, l["id"], status, now, reason):
                    continue                         # decided by someone else meanwhile
                if status == "confirmed":
                    degree[a] += 1
                    degree[b] += 1
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action=f"link_{status}",
                             node_id=a, other=b, link=l["id"], score=round(score, 3),
                             **({"judge": ctx.llm.name} if l["id"] in verdicts else {}))
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
