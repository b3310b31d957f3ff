"""`decay`: heat halves every HALF_LIFE_DAYS. A cold node ranks a little lower (see
search.fusion's heat prior); it is never hidden or deleted."""
from __future__ import annotations

import math

from ..store import audit, immediate, nodes
from ..timeutil import from_iso
from . import TaskContext, register

HALF_LIFE_DAYS = 30.0


class DecayTask:
    name = "decay"
    interval_s = 3600
    batch_size = 0
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        now = ctx.now()
        last = ctx.last_finished          # the first run only starts the clock
        days = (from_iso(now) - from_iso(last)).total_seconds() / 86400 if last else 0.0
        factor = math.exp(-math.log(2) * max(days, 0.0) / HALF_LIFE_DAYS)
        with immediate(ctx.conn):
            changed = nodes.decay_heat(ctx.conn, factor) if days > 0 else 0
            audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="decay", factor=round(factor, 6),
                         nodes=changed)
        return {"factor": round(factor, 6), "nodes": changed}


register(DecayTask())
