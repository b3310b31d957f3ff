"""`link-evaluate`: the judge. Pending links are confirmed or rejected, rejections stay as rows
with their reason, and pending links nobody judged within EXPIRE_DAYS become `expired` (a later,
stronger proposal may bring the pair back).

With an LLM the judge is the `strategies/link-evaluate.md` prompt (validated JSON; anything else
falls back). Offline it confirms the clear ones and leaves the rest pending: a proposal whose
relatedness (`relate`, the proposal's strength) reaches CONFIRM_AT for two memories of one session
or note, CROSS_CONFIRM_AT across them, strongest first, while each end has room: at most
MAX_WITHIN confirmed links inside its session or note and MAX_ACROSS outside it. Fitted for
precision on three conversations of conversations-dev (docs/EVALUATION.md "Is the graph right?"): a link is
worth confirming when a person would keep it, and a graph of everything-to-everything helps no one.
"""
from __future__ import annotations

import datetime as dt

from ..store import audit, immediate, links, nodes
from ..timeutil import from_iso, to_iso
from . import TaskContext, register

SCHEMA = {
    "verdict": {"type": "str", "required": True, "enum": ["confirm", "reject"]},
    "relation": {"type": "str", "enum": ["related", "updates", "contradicts", "explains", "example-of"]},
    "reason": {"type": "str", "required": True, "max": 300},
}
CONFIRM_AT = 0.3            # two memories of one session or note (adjacency counts in their score)
CROSS_CONFIRM_AT = 0.15     # two memories of different sessions or notes
MAX_WITHIN, MAX_ACROSS = 3, 5
MAX_LINKS = MAX_WITHIN + MAX_ACROSS      # confirmed links per memory
EXPIRE_DAYS = 7


class LinkEvaluateTask:
    name = "link-evaluate"
    interval_s = 600
    batch_size = 500
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        todo = links.pending(ctx.conn, ctx.batch or self.batch_size, room_below=MAX_LINKS,
                             bars=(CONFIRM_AT, CROSS_CONFIRM_AT))
        ids = sorted({i for l in todo for i in (l["source_id"], l["target_id"])})
        counts = {"confirmed": 0, "rejected_by_model": 0, "undecided": 0, "expired": 0}
        verdicts = self._ask_model(ctx, todo) if ctx.llm is not None else {}
        confirmed = links.partners(ctx.conn, ids, ("confirmed",))
        group = nodes.groups(ctx.conn, [*ids, *(p for partners in confirmed.values() for p in partners)])
        within = lambda a, b: group.get(a) == group.get(b)
        # confirmed links each memory has, inside its session or note and outside it
        room: dict[tuple[int, bool], int] = {}
        for i, partners in confirmed.items():
            for p in partners:
                key = (i, within(i, p))
                room[key] = room.get(key, 0) + 1
        used = lambda i, inside: room.get((i, inside), 0)
        bar = lambda l: CONFIRM_AT if within(l["source_id"], l["target_id"]) else CROSS_CONFIRM_AT
        scored = sorted(todo, key=lambda l: (-((l["strength"] or 0.0) - bar(l)), l["id"]))
        now = ctx.now()
        with immediate(ctx.conn):
            for l in scored:
                a, b = l["source_id"], l["target_id"]
                inside = within(a, b)
                cap = MAX_WITHIN if inside else MAX_ACROSS
                full = max(used(a, inside), used(b, inside)) >= cap
                strength = l["strength"] or 0.0
                if l["id"] in verdicts:
                    status, reason = verdicts[l["id"]]
                    if status == "confirmed" and full:
                        counts["undecided"] += 1             # the model agrees, but each end has its best few
                        continue
                elif strength >= (CONFIRM_AT if inside else CROSS_CONFIRM_AT):
                    where = "in one session or note" if inside else "across sessions or notes"
                    if full:
                        # clear enough, but an end already has its best few of this kind: it leaves
                        # the inbox (a stronger proposal later may bring it back), and stops taking
                        # the place of weaker ones in the judge's strongest-first batch
                        status, reason = "expired", f"offline judge: related {strength:.2f} ({where}), but an end" \
                                                    " already has its best few links"
                    else:
                        status, reason = "confirmed", f"offline judge: related {strength:.2f} ({where})"
                else:
                    counts["undecided"] += 1
                    continue
                if not links.judge(ctx.conn, l["id"], status, now, reason):
                    continue                         # decided by someone else meanwhile
                if status == "confirmed":
                    room[(a, inside)] = used(a, inside) + 1
                    room[(b, inside)] = used(b, inside) + 1
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action=f"link_{status}",
                             node_id=a, other=b, link=l["id"], score=round(strength, 3),
                             **({"judge": ctx.llm.name} if l["id"] in verdicts else {}))
                counts[status] += 1
            cutoff = to_iso(from_iso(now) - dt.timedelta(days=EXPIRE_DAYS))
            counts["expired"] += links.expire_pending(ctx.conn, cutoff, now)
        # more to judge only when this batch was full and decided something (undecided ones wait)
        counts["backlog"] = len(todo) >= (ctx.batch or self.batch_size) and counts["confirmed"] + \
            counts["rejected_by_model"] + counts["expired"] > 0
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
