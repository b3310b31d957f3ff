"""A day's composition: which workstreams its memories belong to, and how much of the day each is.

Sources, in order (the first that places a memory wins):
- a confirmed tag (a person's, or one a judge confirmed) whose name is a codebook slug or alias;
- an imported note whose path has a folder or file name that is a codebook slug or alias
  (`Projects/recipe-site/deploy.md` belongs to `recipe-site`);
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

GENERATOR = "compose/offline-v2"      # v2: weights are shares of the whole day
_SLUG = re.compile(r"[^a-z0-9]+")


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


def _placed(conn, scope: str, ids: list[int], names: dict[str, str]) -> dict[int, dict[str, str]]:
    """node id -> {name: source} from confirmed tags and imported note paths."""
    tag_map = tags.for_nodes(conn, ids)
    paths = import_store.paths_of(conn, ids)
    out: dict[int, dict[str, str]] = {}
    for node_id in ids:
        found: dict[str, str] = {}
        for t in tag_map[node_id]:
            if t["status"] == "confirmed" and t["name"] in names:
                found.setdefault(t["name"], "tag")
        if node_id in paths:
            for name in path_names(paths[node_id]):
                if name in names:
                    found.setdefault(name, "import")
        out[node_id] = found
    return out


def unplaced(conn, scope: str, day: str) -> list[int]:
    """Live memories of the day that no tag, note or kept model answer places (what to ask about)."""
    ids = nodes.live_on_day(conn, scope, day)
    placed = _placed(conn, scope, ids, known_names(conn, scope))
    asked = store.assignments(conn, ids)
    return [i for i in ids if not placed[i] and i not in asked]


def compose_day(conn, scope: str, day: str, at: str, dim: int = hypervector.DEFAULT_DIM,
                seed: str = hypervector.DEFAULT_SEED) -> dict:
    """Recompute one day's rows and fingerprint from its live memories (replacing what was there)."""
    ids = nodes.live_on_day(conn, scope, day)
    names = known_names(conn, scope)
    placed = _placed(conn, scope, ids, names)
    asked = store.assignments(conn, ids)
    shares: dict[str, float] = {}
    sources: dict[str, set[str]] = {}
    evidence: dict[str, set[int]] = {}
    assigned = 0
    for node_id in ids:
        found = placed[node_id] or ({asked[node_id]: "llm"} if asked.get(node_id) else {})
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
