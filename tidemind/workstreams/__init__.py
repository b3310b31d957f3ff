"""Workstream fingerprints: a codebook of workstreams per scope, each day composed from them,
and exact questions over that composition ("every day that touched X", "when did X start,
under its old name", "active then, gone now", "worked on with no project note").

The composition table answers membership exactly; the day fingerprints (weighted sums of
deterministic ±1 hypervectors, see `hypervector`) answer what a vector can: decode a day from
its vector alone, the unexplained residual, similar days. Nothing here writes authored content.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import InvalidInput, NotFound
from ..store import audit, immediate, nodes
from ..timeutil import parse_iso
from . import hypervector, store
from .compose import compose_day, known_names

if TYPE_CHECKING:
    from ..memory import Memory

_SLUG_OK = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def _check_slug(name: str) -> str:
    name = (name or "").strip()
    if not _SLUG_OK.match(name):
        raise InvalidInput(f"{name!r} is not a workstream slug (lowercase letters, digits and '-', up to 63)")
    return name


def _day(value: str) -> str:
    try:
        return parse_iso(value)[:10]
    except Exception:
        raise InvalidInput(f"{value!r} is not a date (use e.g. 2026-03-01)") from None


class Workstreams:
    """The workstream view of one store, for one scope at a time (the caller's readable scopes)."""

    def __init__(self, memory: "Memory", dim: int = hypervector.DEFAULT_DIM, seed: str = hypervector.DEFAULT_SEED):
        self.m = memory
        self.dim, self.seed = dim, seed

    @property
    def conn(self):
        return self.m.conn

    def _scope(self, scope: str | None) -> str:
        read = self.m.read_scopes([scope] if scope else None)
        return read[0]

    # -- the codebook -----------------------------------------------------------------------

    def mint(self, slug: str, *, scope: str | None = None, aliases: tuple[str, ...] = (), note: str | None = None,
             undo: bool = False) -> dict:
        """Add a slug to the codebook (or, with undo, take it out again; its history stays)."""
        slug, scope = _check_slug(slug), self._scope(scope)
        now = self.m.now()
        with immediate(self.conn):
            row = store.slug_row(self.conn, scope, slug)
            if undo:
                if row is None or row["status"] != "active":
                    raise NotFound(f"{slug} is not minted in {scope}")
                store.set_status(self.conn, scope, slug, "unminted")
            else:
                if slug in store.aliases(self.conn, scope):
                    raise InvalidInput(f"{slug} is an alias of {store.aliases(self.conn, scope)[slug]}; remove the"
                                       " alias first")
                store.put_slug(self.conn, scope, slug, dim=self.dim, seed=self.seed, at=now, by=self.m.actor,
                               has_note=note is not None, note=note)
                for alias in aliases:
                    store.put_alias(self.conn, scope, _check_slug(alias), slug, now, self.m.actor)
            audit.record(self.conn, at=now, actor=self.m.actor, action="ws_unmint" if undo else "ws_mint",
                         scope=scope, slug=slug, aliases=list(aliases))
            changed = self._recompute(scope, now)
        return {"slug": slug, "scope": scope, "minted": not undo, "days_recomposed": changed}

    def alias(self, alias: str, slug: str, *, scope: str | None = None, undo: bool = False) -> dict:
        """Another name for a slug: a rename, or an unknown folded into a project. Undo splits it again."""
        alias, slug, scope = _check_slug(alias), _check_slug(slug), self._scope(scope)
        now = self.m.now()
        with immediate(self.conn):
            if undo:
                if not store.drop_alias(self.conn, scope, alias):
                    raise NotFound(f"{alias} is not an alias in {scope}")
            else:
                target = store.slug_row(self.conn, scope, slug)
                if target is None or target["status"] != "active":
                    raise NotFound(f"{slug} is not minted in {scope}; mint it first")
                own = store.slug_row(self.conn, scope, alias)
                if own is not None and own["status"] == "active":
                    raise InvalidInput(f"{alias} is itself a minted slug; `mint {alias} --undo` first")
                store.put_alias(self.conn, scope, alias, slug, now, self.m.actor)
            audit.record(self.conn, at=now, actor=self.m.actor, action="ws_unalias" if undo else "ws_alias",
                         scope=scope, alias=alias, slug=slug)
            changed = self._recompute(scope, now)
        return {"alias": alias, "slug": slug, "scope": scope, "aliased": not undo, "days_recomposed": changed}

    def mark_note(self, slug: str, note: str, *, scope: str | None = None) -> dict:
        slug, scope = _check_slug(slug), self._scope(scope)
        with immediate(self.conn):
            if store.slug_row(self.conn, scope, slug) is None:
                raise NotFound(f"{slug} is not minted in {scope}")
            store.mark_note(self.conn, scope, slug, note)
            audit.record(self.conn, at=self.m.now(), actor=self.m.actor, action="ws_note", scope=scope, slug=slug)
        return {"slug": slug, "scope": scope, "has_note": True}

    def codebook(self, scope: str | None = None) -> dict:
        scope = self._scope(scope)
        return {"scope": scope, "dim": self.dim, "seed": self.seed, "slugs": store.codebook(self.conn, scope)}

    def _recompute(self, scope: str, at: str) -> int:
        days = sorted(d for s, d in nodes.all_scope_days(self.conn, [scope]))
        for day in days:
            compose_day(self.conn, scope, day, at, self.dim, self.seed)
        return len(days)

    def recompose(self, scope: str | None = None) -> dict:
        scope = self._scope(scope)
        with immediate(self.conn):
            return {"scope": scope, "days_recomposed": self._recompute(scope, self.m.now())}

    # -- exact questions over the composition table ----------------------------------------

    def _names_of(self, scope: str, name: str) -> tuple[str, list[str]]:
        """The slug a name resolves to, and every name recorded for it (the slug and its aliases)."""
        name = _check_slug(name)
        known = known_names(self.conn, scope)
        slug = known.get(name, name)
        every = sorted({n for n, s in known.items() if s == slug} | {slug})
        return slug, every

    def where(self, name: str, scope: str | None = None) -> dict:
        scope = self._scope(scope)
        slug, names = self._names_of(scope, name)
        by_day: dict[str, dict] = {}
        for r in store.rows_for(self.conn, scope, names):     # one entry a day, whatever names it was under
            d = by_day.setdefault(r["day"], {"day": r["day"], "weight": 0.0, "as": [], "source": []})
            d["weight"] = round(d["weight"] + r["weight"], 6)
            d["as"].append(r["slug"])
            d["source"] = sorted(set(d["source"]) | set(r["source"].split("+")))
        return {"slug": slug, "names": names, "scope": scope, "days": [by_day[k] for k in sorted(by_day)]}

    def first(self, name: str, scope: str | None = None) -> dict:
        r = self.where(name, scope)
        if not r["days"]:
            return {**r, "first": None, "days": []}
        first = r["days"][0]
        return {"slug": r["slug"], "names": r["names"], "scope": r["scope"], "first": first["day"],
                "as": first["as"][0] if len(first["as"]) == 1 else first["as"], "days_total": len(r["days"])}

    def window(self, start: str, end: str, scope: str | None = None) -> dict:
        scope, start, end = self._scope(scope), _day(start), _day(end)
        known = known_names(self.conn, scope)
        totals: dict[str, dict] = {}
        for r in store.all_rows(self.conn, scope, start, end):
            slug = known.get(r["slug"], r["slug"])
            t = totals.setdefault(slug, {"slug": slug, "days": set(), "mass": 0.0})
            t["days"].add(r["day"])
            t["mass"] += r["weight"]
        out = sorted(({"slug": t["slug"], "days": len(t["days"]), "mass": round(t["mass"], 4)} for t in totals.values()),
                     key=lambda t: (-t["mass"], t["slug"]))
        return {"scope": scope, "from": start, "to": end, "workstreams": out}

    def diff(self, a_start: str, a_end: str, b_start: str, b_end: str, scope: str | None = None) -> dict:
        a = {w["slug"] for w in self.window(a_start, a_end, scope)["workstreams"]}
        b = {w["slug"] for w in self.window(b_start, b_end, scope)["workstreams"]}
        return {"scope": self._scope(scope), "a": [_day(a_start), _day(a_end)], "b": [_day(b_start), _day(b_end)],
                "only_in_a": sorted(a - b), "only_in_b": sorted(b - a), "in_both": sorted(a & b)}

    def gaps(self, scope: str | None = None) -> dict:
        """Workstreams with recorded work and no project note; names nobody minted are marked."""
        scope = self._scope(scope)
        known = known_names(self.conn, scope)
        book = {row["slug"]: row for row in store.codebook(self.conn, scope)}
        totals: dict[str, dict] = {}
        for r in store.all_rows(self.conn, scope):
            slug = known.get(r["slug"], r["slug"])
            if slug in book and book[slug]["has_note"]:
                continue
            t = totals.setdefault(slug, {"slug": slug, "days": set(), "mass": 0.0, "first": r["day"],
                                         "in_codebook": slug in book})
            t["days"].add(r["day"])
            t["mass"] += r["weight"]
            t["first"] = min(t["first"], r["day"])
        out = sorted(({**t, "days": len(t["days"]), "mass": round(t["mass"], 4)} for t in totals.values()),
                     key=lambda t: (-t["mass"], t["slug"]))
        return {"scope": scope, "gaps": out}

    # -- what the vectors add ---------------------------------------------------------------

    def decode(self, day: str, scope: str | None = None) -> dict:
        """Recover the day's composition from its fingerprint alone, beside what was recorded."""
        scope, day = self._scope(scope), _day(day)
        row = store.day_row(self.conn, scope, day)
        if row is None:
            raise NotFound(f"no composed day {day} in {scope} (run `tidemind metabolize --task fingerprint`)")
        known = known_names(self.conn, scope)
        # every name the codebook knows has a vector; a recorded name it does not know stays unexplained
        decoded = hypervector.decode(row["fingerprint"], sorted(known), row["dim"], row["seed"])
        recorded = {r["slug"]: r["weight"] for r in store.composition(self.conn, scope, day)}
        estimates: dict[str, float] = {}
        for name, weight in decoded.weights.items():
            estimates[known.get(name, name)] = round(estimates.get(known.get(name, name), 0.0) + weight, 4)
        actual: dict[str, float] = {}
        for name, weight in recorded.items():
            actual[known.get(name, name)] = round(actual.get(known.get(name, name), 0.0) + weight, 4)
        return {"scope": scope, "day": day, "nodes": row["nodes"], "assigned": row["assigned"],
                "decoded": [{"slug": s, "estimated": w, "recorded": actual.get(s)} for s, w in estimates.items()],
                "recorded_only": sorted(set(actual) - set(estimates)),
                "residual": decoded.residual, "unexplained_weight": decoded.residual_weight}

    def similar(self, day: str, scope: str | None = None, limit: int = 5) -> dict:
        scope, day = self._scope(scope), _day(day)
        target = store.day_row(self.conn, scope, day)
        if target is None:
            raise NotFound(f"no composed day {day} in {scope}")
        scored = [(hypervector.similarity(target["fingerprint"], other["fingerprint"]), other["day"])
                  for other in store.days(self.conn, scope) if other["day"] != day and other["assigned"]]
        scored.sort(key=lambda p: (-p[0], p[1]))
        return {"scope": scope, "day": day, "similar": [{"day": d, "cosine": round(c, 4)} for c, d in scored[:limit]]}
