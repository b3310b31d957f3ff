"""`fingerprint`: keep each day's workstream composition and fingerprint current.

Which days: on the first run, every day of every scope; afterwards, the days of every node a
mutation touched since the last run (every mutation writes an audit row, so archive, forget,
correction, a confirmed or rejected tag and an import all count), every day of a scope whose
codebook changed (a mint or alias recomposes its scope at once, see `workstreams`), days an
earlier composer made, and the days a name began or ceased to recur on (a tag confirmed on a
second day makes it an unknown workstream on the first day too). Writes only the workstream
tables; never authored content.
"""
from __future__ import annotations

import re

from ..store import audit, immediate, nodes, task_runs
from ..workstreams import store as ws_store
from ..workstreams.compose import GENERATOR as COMPOSER
from ..workstreams.compose import compose_day, known_names, offline_unknowns, stale_days, unplaced
from . import TaskContext, register

SCHEMA = {"assign": {"type": "list", "required": True, "max": 60, "items": {"type": "str", "max": 90}}}
_PAIR = re.compile(r"^\s*(\d+)\s*=\s*([a-z0-9][a-z0-9-]{0,62})\s*$")
ASK_AT_MOST = 40          # memories shown to the model per day


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
        todo |= ws_store.composed_by_other(conn, COMPOSER)
        unknowns: dict[str, dict] = {}

        def unknowns_of(scope: str) -> dict:
            """The scope's offline unknowns, read once a run (a scan of its confirmed tags and notes)."""
            if scope not in unknowns:
                unknowns[scope] = offline_unknowns(conn, scope)
            return unknowns[scope]

        done = asked = 0
        failed = False
        strategy = None
        if ctx.llm is not None:
            from ..llm import load_strategy

            strategy = load_strategy("compose", ctx.memory.settings.home)
        for scope, day in sorted(todo):
            if ctx.stopping():
                return {"days": done, "pending": len(todo) - done}     # the cursor stays: next run redoes them
            answers = self._ask(ctx, strategy, scope, day, unknowns_of(scope)) if strategy is not None else {}
            if answers is None:          # the model failed: compose without it, and keep the day pending
                failed, answers = True, {}
            asked += sum(1 for slug in answers.values() if slug)
            with immediate(conn):
                for node_id, slug in answers.items():
                    ws_store.put_assignment(conn, node_id, slug, f"compose/{ctx.llm.name}@{strategy.version}",
                                            ctx.now())
                compose_day(conn, scope, day, ctx.now(), unknowns=unknowns_of(scope))
            done += 1
        for scope in sorted({s for s, _ in todo}):
            for day in sorted(stale_days(conn, scope, unknowns_of(scope))):
                with immediate(conn):
                    compose_day(conn, scope, day, ctx.now(), unknowns=unknowns_of(scope))
                done += 1
        from ..workstreams import Workstreams

        ws = Workstreams(ctx.memory, actor=actor)
        filed = []
        for scope in sorted({s for s, _ in todo}):
            filed += ws.autofile(scope)["filed"]
        for scope in nodes.scopes_in_use(conn):     # every run: an unknown can ripen by age alone
            ws.file_ripe(scope)
        with immediate(conn):
            if not failed:               # else the next run goes over these days again
                task_runs.set_cursor(conn, self.name, upto + 1)
            if done:
                audit.record(conn, at=ctx.now(), actor=actor, action="fingerprint", days=done)
        return {"days": done, "pending": len(todo) if failed else 0, "model_assignments": asked, "autofiled": filed,
                **({"model_failed": True} if failed else {})}

    def _ask(self, ctx: TaskContext, strategy, scope: str, day: str, unknowns: dict) -> dict[int, str] | None:
        """The model's slug for each memory of the day nothing else places (outside any
        transaction); "" for one it was shown and left out (so it is not asked again); None
        when the call failed."""
        from ..llm import ask_json

        ids = unplaced(ctx.conn, scope, day, unknowns)[:ASK_AT_MOST]
        if not ids:
            return {}
        found = nodes.get_visible(ctx.conn, ids, [scope])
        book = known_names(ctx.conn, scope)
        by_slug: dict[str, list[str]] = {}
        for name, slug in book.items():
            by_slug.setdefault(slug, []).extend([] if name == slug else [name])
        codebook = "\n".join(f"- {s}: {', '.join(a) or '-'}" for s, a in sorted(by_slug.items())) or "(empty)"
        memories = "\n".join(f"[{i}] {' '.join(found[i]['content'].split())[:300]}" for i in ids if i in found)
        data = ask_json(ctx.conn, ctx.llm, self.name, strategy, SCHEMA, ctx.now(), scope=scope, day=day,
                        codebook=codebook, memories=memories)
        if data is None:
            return None
        out: dict[int, str] = {i: "" for i in ids if i in found}
        for pair in data["assign"]:
            m = _PAIR.match(pair) if isinstance(pair, str) else None
            if m and int(m.group(1)) in found:          # only the memories it was shown, only slug-shaped names
                out[int(m.group(1))] = m.group(2)
        return out


register(FingerprintTask())
