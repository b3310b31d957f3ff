"""A day's composition: which workstreams its memories belong to, and how much of the day each is.

Sources, in order (the first that places a memory wins):
- a confirmed tag (a person's, or one a judge confirmed) whose name is a codebook slug or alias;
- an imported note whose path has a folder or file name that is a codebook slug or alias
  (`Projects/recipe-site/deploy.md` belongs to `recipe-site`);
- offline, without a model: a confirmed tag, or the folder an imported note sits in, that is
  not in the codebook but recurs on at least two days of the scope. That name is an *unknown*
  workstream (a person's own tag on six days outside the codebook is work nobody has named
  yet), and it ripens and is decided like any other unknown. A name on one day is a label,
  not a workstream: it places nothing;
- with an LLM, `strategies/compose.md`: the model places the memories nothing else placed,
  and may invent a slug when nothing in the codebook fits; that name is an *unknown*
  workstream until someone mints, aliases or dismisses it. Its answers are kept
  (ws_assignments), so recomposing a day never asks again.
Each live memory of the day counts once, split evenly over the workstreams it belongs to; a
weight is a share of all the day's live memories, so the weights of a day where some memories
belong to no workstream sum to less than 1, and decoding reports the rest as unexplained
(renormalising the placed part to 100% made a day with one tagged memory in ten look like a
whole day of that work). Names are recorded as found (an alias stays an alias), so resolving
them at query time lets an alias join history retroactively. Proposed and rejected tags never
count: a composition is only as sure as what it is made from.
"""
from __future__ import annotations

import re

from ..importers import store as import_store
from ..store import nodes, tags
from . import hypervector, store

GENERATOR = "compose/offline-v3"      # v2: shares of the whole day; v3: recurring tags and folders as unknowns
CANDIDATE_DAYS = 2                    # an offline unknown recurs on at least this many days
MARKER_TAGS = frozenset({"project-note"})   # tags that say something about a memory, not which work it is
_SLUG = re.compile(r"[^a-z0-9]+")
_SLUG_OK = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
# a note named by its date is a journal page (Obsidian's daily notes, 2026-03-02; Logseq's journals,
# 2026_03_02; "Mar 2nd, 2026"): its folder holds days, not a piece of work, so it is never an unknown
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
# the whole name is the date: "2026-03-02 sync with Anna.md" is a note about something, in a folder
# that may well be a piece of work
_DATED = re.compile(rf"^(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}|\d{{1,2}}-\d{{1,2}}-\d{{4}}"
                    rf"|{_MONTH}-\d{{1,2}}(?:st|nd|rd|th)?-\d{{4}}|\d{{4}}-w\d{{1,2}})$")


def slugify(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-")


def path_names(path: str) -> list[str]:
    """The slug-shaped names a note's path offers: each folder, and the file without .md."""
    return [slugify(part[:-3] if part.endswith(".md") else part) for part in path.replace("\\", "/").split("/")]


def known_names(conn, scope: str) -> dict[str, str]:
    """Every name that resolves in the scope's codebook: active slugs, and aliases followed
    (through other aliases, e.g. after a second rename) to an active slug."""
    active = {row["slug"] for row in store.codebook(conn, scope)}
    names = {slug: slug for slug in active}
    aliases = store.aliases(conn, scope)
    for alias in aliases:
        if alias in active:
            continue              # a minted slug is itself, whatever an old alias row says
        target, seen = aliases[alias], {alias}
        while target not in active and target in aliases and target not in seen:
            seen.add(target)
            target = aliases[target]
        if target in active:
            names[alias] = target
    return names


def offline_unknowns(conn, scope: str, names: dict[str, str] | None = None) -> dict[int, dict[str, str]]:
    """node id -> {name: "tag" | "folder"} for the scope's visible memories that a confirmed tag or
    the folder of their note names outside the codebook, keeping only the names that recur on
    `CANDIDATE_DAYS` days or more. A memory the codebook places is left out (the codebook wins)."""
    names = known_names(conn, scope) if names is None else names
    found: dict[int, dict[str, str]] = {}
    days: dict[str, set[str]] = {}
    placed: set[int] = set()
    for node_id, name, day in tags.confirmed_in_scope(conn, scope):
        slug = slugify(name)
        if slug in names:
            placed.add(node_id)
        elif _SLUG_OK.match(slug) and slug not in MARKER_TAGS:
            found.setdefault(node_id, {}).setdefault(slug, "tag")
            days.setdefault(slug, set()).add(day)
    for node_id, path, day in import_store.paths_in_scope(conn, scope):
        parts = path_names(path)
        if any(p in names for p in parts):
            placed.add(node_id)
            continue
        folder = parts[-2] if len(parts) > 1 else ""        # the deepest folder: the most specific
        if _SLUG_OK.match(folder) and not _DATED.match(parts[-1]):
            found.setdefault(node_id, {}).setdefault(folder, "folder")
            days.setdefault(folder, set()).add(day)
    recurring = {n for n, d in days.items() if len(d) >= CANDIDATE_DAYS}
    out = {}
    for node_id, named in found.items():
        kept = {n: s for n, s in named.items() if n in recurring}
        if kept and node_id not in placed:
            out[node_id] = kept
    return out


def _placed(conn, scope: str, ids: list[int], names: dict[str, str]) -> dict[int, dict[str, str]]:
    """node id -> {name: source} from confirmed tags and imported note paths."""
    tag_map = tags.for_nodes(conn, ids)
    paths = import_store.paths_of(conn, ids)
    out: dict[int, dict[str, str]] = {}
    for node_id in ids:
        found: dict[str, str] = {}
        for t in tag_map[node_id]:
            slug = slugify(t["name"])          # a person's "Recipe Site" is recipe-site
            if t["status"] == "confirmed" and slug in names:
                found.setdefault(slug, "tag")
        if node_id in paths:
            for name in path_names(paths[node_id]):
                if name in names:
                    found.setdefault(name, "import")
        out[node_id] = found
    return out


def unplaced(conn, scope: str, day: str, unknowns: dict[int, dict[str, str]] | None = None) -> list[int]:
    """Live memories of the day that no tag, note or kept model answer places (what to ask about)."""
    ids = nodes.live_on_day(conn, scope, day)
    names = known_names(conn, scope)
    placed = _placed(conn, scope, ids, names)
    unknowns = offline_unknowns(conn, scope, names) if unknowns is None else unknowns
    asked = store.assignments(conn, ids)
    return [i for i in ids if not placed[i] and i not in unknowns and i not in asked]


def compose_day(conn, scope: str, day: str, at: str, dim: int = hypervector.DEFAULT_DIM,
                seed: str = hypervector.DEFAULT_SEED, unknowns: dict[int, dict[str, str]] | None = None) -> dict:
    """Recompute one day's rows and fingerprint from its live memories (replacing what was there).
    `unknowns`: `offline_unknowns` of the scope, when the caller composes many days."""
    ids = nodes.live_on_day(conn, scope, day)
    names = known_names(conn, scope)
    placed = _placed(conn, scope, ids, names)
    unknowns = offline_unknowns(conn, scope, names) if unknowns is None else unknowns
    asked = store.assignments(conn, ids)
    shares: dict[str, float] = {}
    sources: dict[str, set[str]] = {}
    evidence: dict[str, set[int]] = {}
    assigned = 0
    for node_id in ids:
        found = placed[node_id] or unknowns.get(node_id) or ({asked[node_id]: "llm"} if asked.get(node_id) else {})
        if not found:
            continue
        assigned += 1
        for name, source in found.items():
            shares[name] = shares.get(name, 0.0) + 1.0 / len(found)
            sources.setdefault(name, set()).add(source)
            evidence.setdefault(name, set()).add(node_id)
    total = len(ids)          # a share of the whole day: what nothing places is not stretched over the rest
    parts = [{"slug": name, "weight": round(share / total, 6), "source": "+".join(sorted(sources[name])),
              "evidence": evidence[name], "generator": GENERATOR} for name, share in sorted(shares.items())]
    fingerprint = hypervector.compose({p["slug"]: p["weight"] for p in parts}, dim, seed)
    store.replace_day(conn, scope, day, parts, nodes=len(ids), assigned=assigned, dim=dim, seed=seed,
                      fingerprint=fingerprint, at=at, composer=GENERATOR)
    return {"day": day, "scope": scope, "nodes": len(ids), "assigned": assigned, "parts": len(parts)}


def stale_days(conn, scope: str, unknowns: dict[int, dict[str, str]]) -> set[str]:
    """Days whose recorded offline unknowns no longer match the scope's: a tag confirmed on a
    second day makes its name recur, so its first day must record it too (and one unconfirmed
    back to a single day takes it off the other)."""
    names = known_names(conn, scope)
    expected: set[tuple[str, str]] = set()
    day_of = nodes.days_of(conn, list(unknowns))
    for node_id, named in unknowns.items():
        expected |= {(day_of[node_id], name) for name in named if node_id in day_of}
    recorded = {(r["day"], r["slug"]) for r in store.all_rows(conn, scope)
                if r["slug"] not in names and set(r["source"].split("+")) & {"tag", "folder"}}
    return {day for day, _ in expected ^ recorded}
