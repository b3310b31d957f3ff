"""Syntheses (derived text citing member ids, regenerable, served as `unreviewed` until a person
approves them):

- `crystallize`: a connected cluster of confirmed links (3-12 live nodes in one scope) becomes a
  crystal listing its members' titles, and a `crystal` review item;
- `temporal`: a daily digest of each complete day and a weekly digest of each complete ISO week
  that has memories in a scope;
- `lessons`: each correction in a scope becomes a lesson in affirmative form ("Use: <the
  corrected text>") naming the superseded node (not quoting it: superseded text is served only
  to an as-of read), and a `lesson` review item; `brain_prepare` shows approved lessons, and
  unreviewed ones labelled as such.
"""
from __future__ import annotations

import datetime as dt

from ..store import audit, immediate, nodes, review, syntheses
from ..text import sha256
from ..timeutil import from_iso
from . import TaskContext, register

GENERATOR = "synthesize/offline-v1"
MIN_CLUSTER, MAX_CLUSTER = 3, 12


def _title(conn, node_id: int) -> str:
    row = conn.execute("SELECT value FROM derived WHERE node_id=? AND field='title'", (node_id,)).fetchone()
    if row:
        return row[0]
    content = conn.execute("SELECT content FROM nodes WHERE id=?", (node_id,)).fetchone()[0]
    first = " ".join(content.split())
    return first[:79] + "…" if len(first) > 80 else first


class CrystallizeTask:
    name = "crystallize"
    interval_s = 3600
    batch_size = 50
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        edges = nodes.confirmed_edges_live(ctx.conn)
        graph: dict[int, set[int]] = {}
        scope_of: dict[int, str] = {}
        for a, b, scope_a, scope_b in edges:
            if scope_a != scope_b:
                continue
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set()).add(a)
            scope_of[a] = scope_of[b] = scope_a
        seen: set[int] = set()
        made = 0
        for start in sorted(graph):
            if start in seen or made >= (ctx.batch or self.batch_size):
                continue
            component, stack = [], [start]
            while stack:
                n = stack.pop()
                if n in seen:
                    continue
                seen.add(n)
                component.append(n)
                stack.extend(graph[n] - seen)
            if not MIN_CLUSTER <= len(component) <= MAX_CLUSTER:
                continue
            members = sorted(component)
            digest = sha256(f"crystal:{members}")
            if syntheses.exists(ctx.conn, digest):
                continue
            text = f"{len(members)} connected memories: " + "; ".join(f"[{m}] {_title(ctx.conn, m)}" for m in members)
            now = ctx.now()
            with immediate(ctx.conn):
                if not nodes.none_forgotten(ctx.conn, members):
                    continue
                sid = syntheses.add(ctx.conn, kind="crystal", scope=scope_of[start], members=members, text=text,
                                    generator=GENERATOR, at=now, digest=digest)
                if sid:
                    review.file(ctx.conn, "crystal", node_id=members[0], other_node_id=None, at=now,
                                scope=scope_of[start], digest=digest, synthesis=sid, members=members)
                    audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="crystal_proposed",
                                 node_id=members[0], synthesis=sid, members=members)
                    made += 1
        return {"crystals": made}


class TemporalTask:
    name = "temporal"
    interval_s = 3600
    batch_size = 60
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        now = ctx.now()
        today = now[:10]
        this_week = "%04d-W%02d" % from_iso(now).isocalendar()[:2]
        made = 0
        for scope in nodes.scopes_in_use(ctx.conn):
            days = nodes.live_ids_by_day(ctx.conn, scope)
            # a period with a unit awaiting clarification waits for it: a digest is written once
            waiting = nodes.days_with_held(ctx.conn, scope)
            waiting_weeks = {"%04d-W%02d" % dt.date.fromisoformat(d).isocalendar()[:2] for d in waiting}
            done_days = syntheses.periods_done(ctx.conn, "daily", scope)
            weeks: dict[str, list[int]] = {}
            for day, ids in sorted(days.items()):
                week = "%04d-W%02d" % dt.date.fromisoformat(day).isocalendar()[:2]
                weeks.setdefault(week, []).extend(ids)
                if day >= today or day in done_days or day in waiting or made >= (ctx.batch or self.batch_size):
                    continue
                made += self._write(ctx, "daily", scope, day, ids, now)
            done_weeks = syntheses.periods_done(ctx.conn, "weekly", scope)
            for week, ids in sorted(weeks.items()):
                if week >= this_week or week in done_weeks or week in waiting_weeks \
                        or made >= (ctx.batch or self.batch_size):
                    continue
                made += self._write(ctx, "weekly", scope, week, ids, now)
        return {"digests": made}

    def _write(self, ctx, kind, scope, period, ids, now) -> int:
        shown = ids[:12]
        text = (f"{period} in {scope}: {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}. "
                + "; ".join(f"[{i}] {_title(ctx.conn, i)}" for i in shown)
                + (f"; and {len(ids) - len(shown)} more" if len(ids) > len(shown) else ""))
        with immediate(ctx.conn):
            if not nodes.none_forgotten(ctx.conn, ids):
                return 0
            sid = syntheses.add(ctx.conn, kind=kind, scope=scope, members=ids, text=text, generator=GENERATOR, at=now,
                                digest=sha256(f"{kind}:{scope}:{period}"), period=period)
            if sid:
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action=f"{kind}_digest", synthesis=sid,
                             scope=scope, period=period)
        return 1 if sid else 0


class LessonsTask:
    """Corrections about one subject (their texts share most words) are consolidated into one
    principle: the latest corrected text in affirmative form, citing every correction and what
    each replaced. Tool errors the stop hook saw repeat become "Avoid:" lessons."""

    name = "lessons"
    interval_s = 3600
    batch_size = 200
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        from .pairs import word_overlap

        made = 0
        by_scope: dict[str, list[tuple[int, int, str]]] = {}
        for new_id, old_id, scope in nodes.corrections(ctx.conn, ctx.batch or self.batch_size):
            text = ctx.conn.execute("SELECT content FROM nodes WHERE id=?", (new_id,)).fetchone()[0]
            by_scope.setdefault(scope, []).append((new_id, old_id, text))
        for scope, items in by_scope.items():
            groups: list[list[tuple[int, int, str]]] = []
            for item in sorted(items):
                home = next((g for g in groups if any(word_overlap(item[2], o[2]) >= 0.5 for o in g)), None)
                if home is None:
                    groups.append([item])
                else:
                    home.append(item)
            for group in groups:
                members = sorted({i for new_id, old_id, _ in group for i in (new_id, old_id)})
                digest = sha256(f"lesson:{scope}:{members}")
                if syntheses.exists(ctx.conn, digest):
                    continue
                latest = max(group)[2]
                # the replaced text is not quoted: superseded content is served only to an
                # explicit as-of read, never as current knowledge, so the lesson names its ids
                replaced = ", ".join(str(old) for _, old, _ in group)
                text = (f"Use: {' '.join(latest.split())[:300]}  (rule from {len(group)} correction"
                        f"{'s' if len(group) > 1 else ''}; superseded: node {replaced})")
                made += self._file(ctx, scope, members, text, digest, max(group)[0])
        for scope, said, times, item_ids in review.repeated_failures(ctx.conn):
            digest = syntheses.failure_lesson_digest(scope, said)
            if syntheses.exists(ctx.conn, digest):
                continue
            text = f"Avoid: {' '.join(said.split())[:300]}  (seen {times} times in sessions; review items {item_ids})"
            made += self._file(ctx, scope, [], text, digest, None)
        return {"lessons": made}

    def _file(self, ctx, scope, members, text, digest, node_id) -> int:
        now = ctx.now()
        with immediate(ctx.conn):
            if not nodes.none_forgotten(ctx.conn, members):
                return 0
            sid = syntheses.add(ctx.conn, kind="lesson", scope=scope, members=members, text=text,
                                generator=GENERATOR, at=now, digest=digest)
            if not sid:
                return 0
            review.file(ctx.conn, "lesson", node_id=node_id, other_node_id=None, at=now, scope=scope,
                        digest=digest, synthesis=sid)
            audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="lesson_proposed",
                         node_id=node_id, synthesis=sid)
        return 1


register(CrystallizeTask())
register(TemporalTask())
register(LessonsTask())
