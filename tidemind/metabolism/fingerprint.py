"""`fingerprint`: keep each day's workstream composition and fingerprint current.

Which days: on the first run, every day of every scope; afterwards, the days of every node a
mutation touched since the last run (every mutation writes an audit row, so archive, forget,
correction, a confirmed or rejected tag and an import all count) and every day of a scope whose
codebook changed (a mint or alias recomposes its scope at once, see `workstreams`). Writes only
the workstream tables; never authored content.
"""
from __future__ import annotations

from ..store import audit, immediate, nodes, task_runs
from ..workstreams.compose import compose_day
from . import TaskContext, register


class FingerprintTask:
    name = "fingerprint"
    interval_s = 900
    batch_size = 0             # a run takes every changed day (composing one is a few queries)
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        conn = ctx.conn
        actor = f"daemon:{self.name}"
        cursor = task_runs.get_cursor(conn, self.name)    # 0: never ran; else 1 + the last audit id accounted for
        upto = audit.last_id(conn)
        if cursor == 0:
            todo = nodes.all_scope_days(conn)
        else:
            todo = nodes.scope_days(conn, audit.nodes_touched_between(conn, cursor - 1, upto, exclude_actor=actor))
        done = 0
        for scope, day in sorted(todo):
            if ctx.stopping():
                return {"days": done, "pending": len(todo) - done}     # the cursor stays: next run redoes them
            with immediate(conn):
                compose_day(conn, scope, day, ctx.now())
            done += 1
        with immediate(conn):
            task_runs.set_cursor(conn, self.name, upto + 1)
            if done:
                audit.record(conn, at=ctx.now(), actor=actor, action="fingerprint", days=done)
        return {"days": done, "pending": 0}


register(FingerprintTask())
