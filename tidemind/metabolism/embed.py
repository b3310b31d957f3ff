"""`embed`: backfill vectors for queued nodes (new, unarchived, or made by another embedder)."""
from __future__ import annotations

from . import TaskContext, register


class EmbedTask:
    name = "embed"
    interval_s = 60
    batch_size = 512
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        report = ctx.memory.embed_pending(batch=ctx.batch or self.batch_size, limit=(ctx.batch or self.batch_size) * 8)
        # more queued than one run takes (a fresh import): due again at once
        return {**report, "backlog": bool(report.get("embedded")) and bool(report.get("queue"))}


register(EmbedTask())
