"""Workstream fingerprints: a codebook of workstreams per scope, each day composed from them,
and exact questions over that composition ("every day that touched X", "when did X start,
under its old name", "active then, gone now", "worked on with no project note").

The composition table answers membership exactly; the day fingerprints (weighted sums of
deterministic ±1 hypervectors, see `hypervector`) answer what a vector can: decode a day from
its vector alone, the unexplained residual, similar days. Nothing here writes authored content.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import re
from typing import TYPE_CHECKING

from ..errors import InvalidInput, NotFound
from ..store import audit, immediate, nodes, tags
from ..timeutil import from_iso, parse_iso
from . import hypervector, store
from .compose import compose_day, known_names, offline_unknowns, path_names

if TYPE_CHECKING:
    from ..memory import Memory

# when an unknown workstream has earned a question (any one suffices)
RIPE_DAYS = 3            # recorded on this many days
RIPE_MASS = 1.5          # or this much weight summed over its days
RIPE_AGE_DAYS = 7        # or first seen this long ago and seen again since
ALIAS_SHARE = 0.5        # advise "fold it into X" when X holds this share of its (rarity-weighted) company
ALIAS_TOGETHER = 0.8     # and X was there on this share of its days (it travels with X)

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

    def __init__(self, memory: "Memory", dim: int = hypervector.DEFAULT_DIM, seed: str = hypervector.DEFAULT_SEED,
                 actor: str | None = None):
        self.m = memory
        self.dim, self.seed = dim, seed
        self.actor = actor or memory.actor
        # thresholds: module defaults, or a [workstreams] table in config.toml / config.json
        cfg = memory.settings.extra.get("workstreams") or {}
        if not isinstance(cfg, dict):
            raise InvalidInput("setting workstreams must be a table (ripe_days, ripe_mass, ripe_age_days, ...)")
        self.ripe_days = self._number(cfg, "ripe_days", RIPE_DAYS)
        self.ripe_mass = self._number(cfg, "ripe_mass", RIPE_MASS)
        self.ripe_age_days = self._number(cfg, "ripe_age_days", RIPE_AGE_DAYS)
        self.alias_share = self._number(cfg, "alias_share", ALIAS_SHARE)
        self.alias_together = self._number(cfg, "alias_together", ALIAS_TOGETHER)

    @staticmethod
    def _number(cfg: dict, key: str, default: float) -> float:
        value = cfg.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InvalidInput(f"setting workstreams.{key} must be a number ≥ 0, got {value!r}")
        return value

    @property
    def conn(self):
        return self.m.conn

    @contextlib.contextmanager
    def _write(self):
        """A write transaction, or the caller's when one is open (a review decision applies a
        recommendation inside its own transaction: all of it lands, or none)."""
        if self.conn.in_transaction:
            yield self.conn
        else:
            with immediate(self.conn):
                yield self.conn

    def _scope(self, scope: str | None) -> str:
        read = self.m.read_scopes([scope] if scope else None)
        return read[0]

    # -- the codebook -----------------------------------------------------------------------

    def mint(self, slug: str, *, scope: str | None = None, aliases: tuple[str, ...] = (), note: str | None = None,
             undo: bool = False) -> dict:
        """Add a slug to the codebook (or, with undo, take it out again; its history stays)."""
        slug, scope = _check_slug(slug), self._scope(scope)
        now = self.m.now()
        with self._write():
            row = store.slug_row(self.conn, scope, slug)
            if undo:
                if row is None or row["status"] != "active":
                    raise NotFound(f"{slug} is not minted in {scope}")
                store.set_status(self.conn, scope, slug, "unminted")
            else:
                if slug in store.aliases(self.conn, scope):
                    raise InvalidInput(f"{slug} is an alias of {store.aliases(self.conn, scope)[slug]}; remove the"
                                       " alias first")
                existing = store.aliases(self.conn, scope)
                for alias in aliases:
                    other = store.slug_row(self.conn, scope, _check_slug(alias))
                    if alias in existing or (other is not None and other["status"] == "active"):
                        raise InvalidInput(f"{alias} is already a name in {scope}; pick another alias")
                store.put_slug(self.conn, scope, slug, dim=self.dim, seed=self.seed, at=now, by=self.actor,
                               has_note=note is not None, note=note)
                for alias in aliases:
                    store.put_alias(self.conn, scope, alias, slug, now, self.actor)
            audit.record(self.conn, at=now, actor=self.actor, action="ws_unmint" if undo else "ws_mint",
                         scope=scope, slug=slug, aliases=list(aliases))
            changed = self._recompute(scope, now)
        return {"slug": slug, "scope": scope, "minted": not undo, "days_recomposed": changed}

    def alias(self, alias: str, slug: str, *, scope: str | None = None, undo: bool = False) -> dict:
        """Another name for a slug: a rename, or an unknown folded into a project. Undo splits it again."""
        alias, slug, scope = _check_slug(alias), _check_slug(slug), self._scope(scope)
        now = self.m.now()
        with self._write():
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
                current = store.aliases(self.conn, scope).get(alias)
                if current is not None:       # re-pointing would make the undo lose the old target
                    raise InvalidInput(f"{alias} is already an alias of {current}; `alias {alias} {current} --undo`"
                                       " first")
                store.put_alias(self.conn, scope, alias, slug, now, self.actor)
            audit.record(self.conn, at=now, actor=self.actor, action="ws_unalias" if undo else "ws_alias",
                         scope=scope, alias=alias, slug=slug)
            changed = self._recompute(scope, now)
        return {"alias": alias, "slug": slug, "scope": scope, "aliased": not undo, "days_recomposed": changed}

    def mark_note(self, slug: str, note: str, *, scope: str | None = None) -> dict:
        slug, scope = _check_slug(slug), self._scope(scope)
        with self._write():
            if store.slug_row(self.conn, scope, slug) is None:
                raise NotFound(f"{slug} is not minted in {scope}")
            store.mark_note(self.conn, scope, slug, note)
            audit.record(self.conn, at=self.m.now(), actor=self.actor, action="ws_note", scope=scope, slug=slug)
        return {"slug": slug, "scope": scope, "has_note": True}

    def codebook(self, scope: str | None = None) -> dict:
        scope = self._scope(scope)
        return {"scope": scope, "dim": self.dim, "seed": self.seed, "slugs": store.codebook(self.conn, scope)}

    def _recompute(self, scope: str, at: str) -> int:
        days = sorted(d for s, d in nodes.all_scope_days(self.conn, [scope]))
        unknowns = offline_unknowns(self.conn, scope)         # once for the scope, not once a day
        for day in days:
            compose_day(self.conn, scope, day, at, self.dim, self.seed, unknowns=unknowns)
        return len(days)

    def recompose(self, scope: str | None = None) -> dict:
        scope = self._scope(scope)
        with self._write():
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
        """Recover the day's composition from its fingerprint alone, beside what was recorded.
        Weights are shares of the whole day, so what the codebook does not explain is what is
        left of 1: memories no workstream places (`unplaced`, from the record) and names outside
        the codebook (`unnamed_weight`, from the vector's residual). The placed part is never
        stretched to 100%."""
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
        explained = sum(estimates.values())
        return {"scope": scope, "day": day, "nodes": row["nodes"], "assigned": row["assigned"],
                "decoded": [{"slug": s, "estimated": w, "recorded": actual.get(s)} for s, w in estimates.items()],
                "recorded_only": sorted(set(actual) - set(estimates)),
                "residual": decoded.residual, "unexplained_weight": round(max(0.0, 1.0 - explained), 4),
                "unplaced": round((row["nodes"] - row["assigned"]) / row["nodes"], 4) if row["nodes"] else 0.0,
                "unnamed_weight": decoded.residual_weight}

    def similar(self, day: str, scope: str | None = None, limit: int = 5) -> dict:
        scope, day = self._scope(scope), _day(day)
        target = store.day_row(self.conn, scope, day)
        if target is None:
            raise NotFound(f"no composed day {day} in {scope}")
        scored = [(hypervector.similarity(target["fingerprint"], other["fingerprint"]), other["day"])
                  for other in store.days(self.conn, scope) if other["day"] != day and other["assigned"]]
        scored.sort(key=lambda p: (-p[0], p[1]))
        return {"scope": scope, "day": day, "similar": [{"day": d, "cosine": round(c, 4)} for c, d in scored[:limit]]}

    def drift(self, name: str, scope: str | None = None) -> dict:
        """How a workstream's surroundings change, week by week: the days it appears on, its
        weight, its company, and how far the mean fingerprint of those days (its own vector taken
        out) moved from the week before (1 - cosine; 0 = the same mix of work around it)."""
        scope = self._scope(scope)
        r = self.where(name, scope)
        known = known_names(self.conn, scope)
        weeks: dict[str, dict] = {}
        for d in r["days"]:
            row = store.day_row(self.conn, scope, d["day"])
            if row is None:
                continue
            year, week, _ = from_iso(d["day"]).isocalendar()
            w = weeks.setdefault(f"{year}-W{week:02d}", {"days": 0, "mass": 0.0, "sum": None, "company": {}})
            parts = store.composition(self.conn, scope, d["day"])
            own = sum(p["weight"] * hypervector.vector_for(p["slug"], row["dim"], row["seed"]).astype("float32")
                      for p in parts if p["slug"] in d["as"])
            rest = row["fingerprint"] - own
            w["sum"] = rest if w["sum"] is None else w["sum"] + rest
            w["days"] += 1
            w["mass"] += d["weight"]
            for part in parts:
                other = known.get(part["slug"], part["slug"])
                if other != r["slug"]:
                    w["company"][other] = w["company"].get(other, 0.0) + part["weight"]
        out, previous = [], None
        for period in sorted(weeks):
            w = weeks[period]
            shift = None if previous is None else round(1 - hypervector.similarity(previous, w["sum"]), 4)
            out.append({"week": period, "days": w["days"], "mass": round(w["mass"], 4), "shift": shift,
                        "company": [k for k, _ in sorted(w["company"].items(), key=lambda kv: -kv[1])[:3]]})
            previous = w["sum"]
        return {"scope": scope, "slug": r["slug"], "weeks": out}

    # -- unknown workstreams: detect, ripen, decide, reverse -------------------------------

    def _unknown_stats(self, scope: str, upto: str | None = None) -> dict[str, dict]:
        known = known_names(self.conn, scope)
        stats: dict[str, dict] = {}
        for r in store.all_rows(self.conn, scope, None, upto):
            if r["slug"] in known:
                continue
            t = stats.setdefault(r["slug"], {"name": r["slug"], "days": set(), "mass": 0.0, "first": r["day"],
                                             "last": r["day"], "sources": set()})
            t["days"].add(r["day"])
            t["sources"] |= set(r["source"].split("+"))
            t["mass"] += r["weight"]
            t["first"], t["last"] = min(t["first"], r["day"]), max(t["last"], r["day"])
        return stats

    def _ripe(self, days: int, mass: float, first: str, last: str, today: str) -> bool:
        age = (from_iso(today) - from_iso(first)).days
        return days >= self.ripe_days or mass >= self.ripe_mass or (age >= self.ripe_age_days and last > first)

    def _days_by_slug(self, scope: str, known: dict[str, str]) -> dict[str, dict[str, float]]:
        """day -> {resolved slug: weight}, over the scope's whole composition table."""
        by_day: dict[str, dict[str, float]] = {}
        for r in store.all_rows(self.conn, scope):
            slug = known.get(r["slug"], r["slug"])
            by_day.setdefault(r["day"], {})
            by_day[r["day"]][slug] = by_day[r["day"]].get(slug, 0.0) + r["weight"]
        return by_day

    @staticmethod
    def _company(target: str, by_day: dict[str, dict[str, float]]) -> list[dict]:
        n_days = len(by_day) or 1
        presence: dict[str, int] = {}
        for parts in by_day.values():
            for slug in parts:
                presence[slug] = presence.get(slug, 0) + 1
        score: dict[str, float] = {}
        for parts in by_day.values():
            if target not in parts:
                continue
            for slug, weight in parts.items():
                if slug != target:
                    rarity = math.log((n_days + 1) / presence[slug])    # ~0 for a workstream present every day
                    score[slug] = score.get(slug, 0.0) + min(parts[target], weight) * rarity
        total = sum(score.values())
        own_days = [parts for parts in by_day.values() if target in parts]
        return sorted(({"slug": s, "share": round(v / total, 4),
                        "together": round(sum(s in parts for parts in own_days) / len(own_days), 4)}
                       for s, v in score.items()), key=lambda c: (-c["share"], c["slug"])) if total else []

    def tasteslike(self, name: str, scope: str | None = None) -> dict:
        """Who an (unknown) workstream keeps company with: co-occurrence on shared days, each
        companion weighted by its rarity (a workstream present every day says little)."""
        scope = self._scope(scope)
        name = _check_slug(name)
        known = known_names(self.conn, scope)
        target = known.get(name, name)
        company = self._company(target, self._days_by_slug(scope, known))
        return {"scope": scope, "name": target, "unknown": target not in set(known.values()), "company": company}

    def unknowns(self, scope: str | None = None) -> dict:
        """Names recorded in compositions that the codebook does not know, each with its size,
        whether it is ripe for a decision, its status and a recommendation (never a decision)."""
        scope = self._scope(scope)
        today = self.m.now()[:10]
        decided = store.decisions(self.conn, scope)
        by_day = self._days_by_slug(scope, known_names(self.conn, scope))     # read once for every unknown
        out = []
        for name, t in sorted(self._unknown_stats(scope).items()):
            days, mass = len(t["days"]), round(t["mass"], 4)
            ripe = self._ripe(days, mass, t["first"], t["last"], today)
            d = decided.get(name)
            status = "open"
            if d is not None:
                status = d["status"]
                if status == "dismissed" and (days >= d["days_at"] + self.ripe_days
                                              or mass >= 2 * max(d["mass_at"], 0.25)):
                    status = "revived"          # "not now" was not "never": it kept growing
            company = self._company(name, by_day)
            if status in ("dismissed", "watching"):
                advice = "none (decided)"
            elif status == "revived":
                advice = "watch"
            elif not ripe:
                advice = "wait (maturing)"
            elif days < self.ripe_days and mass < self.ripe_mass / 3:
                advice = "dismiss"              # ripe only by age, and thin: a one-off
            elif company and company[0]["share"] >= self.alias_share and company[0]["together"] >= self.alias_together:
                advice = f"alias->{company[0]['slug']}"
            else:
                advice = "mint"
            out.append({"name": name, "days": days, "mass": mass, "first": t["first"], "last": t["last"],
                        "ripe": ripe, "status": status, "recommendation": advice, "company": company[:3]})
        decide = [u for u in out if u["ripe"] and u["status"] in ("open", "revived")]
        return {"scope": scope, "decide": decide, "maturing": [u for u in out if not u["ripe"] and u["status"] == "open"],
                "watching": [u for u in out if u["status"] == "watching"],
                "dismissed": [u for u in out if u["status"] == "dismissed"]}

    def decide(self, name: str, status: str, *, scope: str | None = None, note: str | None = None,
               undo: bool = False) -> dict:
        """Dismiss ("not now") or watch an unknown; undo takes the decision back."""
        if status not in ("dismissed", "watching"):
            raise InvalidInput("an unknown workstream can be dismissed or watched (or minted, or aliased)")
        scope, name = self._scope(scope), _check_slug(name)
        now = self.m.now()
        with self._write():
            if undo:
                current = store.decisions(self.conn, scope).get(name)
                if current is None or current["status"] != status:
                    raise NotFound(f"{name} is not {status} in {scope}")
                store.drop_decision(self.conn, scope, name)
            else:
                stats = self._unknown_stats(scope).get(name)
                if stats is None:
                    raise NotFound(f"{name} is not an unknown workstream in {scope}")
                store.put_decision(self.conn, scope, name, status, note, len(stats["days"]), stats["mass"], now,
                                   self.actor)
            verb = {"dismissed": "dismiss", "watching": "watch"}[status]
            audit.record(self.conn, at=now, actor=self.actor, action=f"ws_{'un' if undo else ''}{verb}",
                         scope=scope, slug=name)
        return {"name": name, "scope": scope, "status": None if undo else status}

    def backtest(self, name: str, scope: str | None = None) -> dict:
        """Would the detector have flagged this workstream before it was minted, and how early?
        Its recorded days are replayed in order as if it were unknown."""
        scope = self._scope(scope)
        r = self.where(name, scope)
        row = store.slug_row(self.conn, scope, r["slug"])
        if row is None or row["status"] != "active":
            raise NotFound(f"{r['slug']} is not minted in {scope}; backtest replays a minted workstream")
        minted = row["created_at"][:10]
        flagged, mass, seen = None, 0.0, []
        for d in r["days"]:
            seen.append(d["day"])
            mass += d["weight"]
            if self._ripe(len(seen), mass, seen[0], d["day"], d["day"]):
                flagged = d["day"]
                break
        early = (from_iso(minted) - from_iso(flagged)).days if flagged else None
        return {"scope": scope, "slug": r["slug"], "first": seen[0] if seen else None, "flagged": flagged,
                "minted": minted, "days_early": early}

    def autofile(self, scope: str | None = None) -> dict:
        """Unknowns that already have a project note on disk (an imported note's folder or file
        is named like them) are minted without asking: a note means a person already judged it
        a project. Logged in the audit log; undone like any mint."""
        from ..importers import store as import_store

        scope = self._scope(scope)
        notes: dict[str, str] = {}
        files: set[str] = set()
        for path in import_store.note_paths(self.conn, scope):
            for name in path_names(path):
                notes.setdefault(name, path)
            files.add(path_names(path)[-1])
        filed, marked = [], []
        for name, stats in sorted(self._unknown_stats(scope).items()):
            # an unknown that is only a folder's name is named like a note's folder by definition:
            # that is the question to ask, not its answer; a note of its own name still answers it
            if stats["sources"] <= {"folder"} and name not in files:
                continue
            if name in notes and _SLUG_OK.match(name):
                decided = store.decisions(self.conn, scope).get(name)
                if decided is None:
                    self.mint(name, scope=scope, note=f"import:{notes[name]}")
                    filed.append(name)
        # a minted workstream gets its "has a project note" mark from an imported note named like
        # it (or like an alias), or from a memory a person tagged both with it and `project-note`
        known = known_names(self.conn, scope)
        tagged = tags.nodes_tagged_with(self.conn, "project-note", scope)
        for row in store.codebook(self.conn, scope):
            if row["has_note"]:
                continue
            names = {n for n, s in known.items() if s == row["slug"]}
            note = next((f"import:{notes[n]}" for n in sorted(names) if n in notes), None)
            if note is None:
                for node_id, node_tags in tagged.items():
                    if names & set(node_tags):
                        note = f"tag:node {node_id}"
                        break
            if note:
                self.mark_note(row["slug"], note, scope=scope)
                marked.append(row["slug"])
        return {"scope": scope, "filed": filed, "marked": marked}

    # -- the review queue: ripe unknowns as items a person approves (the recommendation) or rejects

    def file_ripe(self, scope: str | None = None) -> list[int]:
        """File each ripe unknown (once per name and status) as a `workstream` review item."""
        from ..store import review

        scope = self._scope(scope)
        filed = []
        with self._write():
            decided = store.decisions(self.conn, scope)
            for u in self.unknowns(scope)["decide"]:
                # one item per name, and one more each time a decision about it is outgrown (revived)
                since = decided[u["name"]]["decided_at"] if u["status"] == "revived" else ""
                digest = hashlib.sha256(f"workstream:{scope}:{u['name']}:{u['status']}:{since}".encode()).hexdigest()
                if review.exists_with_digest(self.conn, digest):
                    continue
                rec = u["recommendation"]
                filed.append(review.file(
                    self.conn, "workstream", node_id=None, other_node_id=None, at=self.m.now(), scope=scope,
                    digest=digest, name=u["name"], recommendation=rec, days=u["days"], mass=u["mass"],
                    first=u["first"], company=", ".join(f"{c['slug']} {c['share']:.2f}" for c in u["company"]),
                    approve=f"{rec.replace('->', ' into ')} (undo: reopen)", reject="dismiss: not now; it revives if it grows"))
        return filed

    def apply_review(self, item: dict, decision: str) -> None:
        """Inside the review decision's transaction: approve applies the recommendation, reject
        dismisses, reopen undoes whichever of those this item did. What an item did is recorded
        on it, so a reopen never undoes what a person did elsewhere (a mint from the CLI), and a
        recommendation the state has already satisfied is recorded as nothing done."""
        from ..store import review

        scope, name, rec = item["scope"], item["payload"]["name"], item["payload"]["recommendation"]
        book = {r["slug"] for r in store.codebook(self.conn, scope)}
        names = known_names(self.conn, scope)

        def apply(verdict: str) -> str | None:
            if verdict == "rejected":
                if name in names or not store.recorded(self.conn, scope, name):
                    return None
                self.decide(name, "dismissed", scope=scope)
                return "dismissed"
            if rec == "mint":
                if name in book or name in names:
                    return None
                self.mint(name, scope=scope)
                return "mint"
            if rec.startswith("alias->"):
                target = rec.split("->", 1)[1]
                if name in names or target not in book:
                    return None
                self.alias(name, target, scope=scope)
                return rec
            if rec == "watch":
                if name in names or not store.recorded(self.conn, scope, name):
                    return None
                self.decide(name, "watching", scope=scope)
                return "watching"
            return None

        def undo(done: str | None) -> None:
            if done == "dismissed" or done == "watching":
                self.decide(name, done, scope=scope, undo=True)
            elif done == "mint" and name in book:
                self.mint(name, scope=scope, undo=True)
            elif done and done.startswith("alias->") and store.aliases(self.conn, scope).get(name) == done[7:]:
                self.alias(name, done[7:], scope=scope, undo=True)

        applied = item["payload"].get("applied")
        if item["status"] in ("approved", "rejected") and decision != item["status"]:
            undo(applied)
            applied = None
            book = {r["slug"] for r in store.codebook(self.conn, scope)}
            names = known_names(self.conn, scope)
        if decision in ("approved", "rejected") and decision != item["status"]:
            applied = apply(decision)
        review.set_payload_key(self.conn, item["id"], "applied", applied)


def after_forget(conn, scope_days: set[tuple[str, str]], at: str) -> None:
    """Inside forget's transaction: recompose the forgotten nodes' days at once (not at the next
    task run), then drop what is left about unknown names no composition records any more
    (their names were made from the forgotten words): decisions, review items, audit details."""
    from ..store import review

    unknowns = {scope: offline_unknowns(conn, scope) for scope in {s for s, _ in scope_days}}
    for scope, day in sorted(scope_days):
        compose_day(conn, scope, day, at, unknowns=unknowns[scope])
    for scope in sorted({s for s, _ in scope_days}):
        known = known_names(conn, scope)
        for name in list(store.decisions(conn, scope)):
            if name not in known and not store.recorded(conn, scope, name):
                store.drop_name(conn, scope, name)
        for item_id, name in review.workstream_items(conn, scope):
            if name not in known and not store.recorded(conn, scope, name):
                review.scrub_item(conn, item_id)
                audit.scrub_named(conn, "ws_", name)
