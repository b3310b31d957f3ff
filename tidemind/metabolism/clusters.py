"""Groups of linked memories a crystal can speak for: one event or topic each.

A connected component of the confirmed links was the old crystal. As the graph fills, a
conversation's components run into one another (neighbouring turns are linked, and a session
moves from one event to the next), so a component is either a few memories or hundreds; on
conversations-dev the crystals made on the way there held 0.53, later 0.72, of their members on
their main event. Here a group is a community of the link graph (weighted label propagation:
each memory joins the group its links pull hardest towards), a community too large for one
summary is split by dropping its weakest links, and a member stays only when it shares a word
rare in its scope with a third of the others (`tighten`; the crystallize task counts, for a
conversation's turns, only words used in at most two sessions: an event's, not a theme's): the
words are what makes a group about one thing, the links only say who is near whom.

Pure functions over ids and weights: the crystallize task reads the links and the words.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable, Sequence

MIN_SIZE, MAX_SIZE = 3, 12
TIE_BREAK = 0.05              # of a link's weight, for each neighbour its two ends share
ROUNDS = 20                    # of label propagation; it settles in a handful on real graphs
SHARE_WITH = 1 / 3             # a member shares a rare word with this share of the others, and two

Edge = tuple[int, int, float]


def _components(edges: Sequence[Edge]) -> list[list[int]]:
    graph: dict[int, set[int]] = defaultdict(set)
    for a, b, _ in edges:
        graph[a].add(b)
        graph[b].add(a)
    seen: set[int] = set()
    out = []
    for start in sorted(graph):
        if start in seen:
            continue
        component, stack = [], [start]
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                component.append(n)
                stack.extend(graph[n] - seen)
        out.append(sorted(component))
    return out


def communities(edges: Sequence[Edge]) -> list[list[int]]:
    """Weighted label propagation, in id order (the same graph gives the same groups). A link
    weighs a little more for each neighbour its two ends share (TIE_BREAK): where links weigh
    the same (a vault's own links), a bridge between two topics shares none and a link inside a
    topic many, so labels do not flood across bridges."""
    graph: dict[int, dict[int, float]] = defaultdict(dict)
    for a, b, w in edges:
        graph[a][b] = graph[b][a] = max(w, graph[a].get(b, 0.0))
    for a in graph:
        near = set(graph[a])
        for b in list(graph[a]):
            if a < b:
                shared = len(near & set(graph[b]))
                graph[a][b] = graph[b][a] = graph[a][b] * (1 + TIE_BREAK * shared)
    label = {n: n for n in graph}
    for _ in range(ROUNDS):
        changed = False
        for n in sorted(graph):
            pull: dict[int, float] = defaultdict(float)
            for m, w in graph[n].items():
                pull[label[m]] += w
            # on a tie a memory keeps its label (a flood of the smallest label across a bridge
            # merged two topics of equally weighted links: an imported vault's)
            best = max(pull.items(), key=lambda kv: (kv[1], kv[0] == label[n], -kv[0]))[0]
            if best != label[n]:
                label[n], changed = best, True
        if not changed:
            break
    groups: dict[int, list[int]] = defaultdict(list)
    for n, lab in label.items():
        groups[lab].append(n)
    return [sorted(g) for g in groups.values()]


def _split(edges: Sequence[Edge], low: int, high: int) -> list[list[int]]:
    """Components of these links; one too large loses its weakest quarter of links until its
    parts fit."""
    out = []
    for component in _components(edges):
        if len(component) <= high:
            if len(component) >= low:
                out.append(component)
            continue
        inside = set(component)
        own = sorted((e for e in edges if e[0] in inside and e[1] in inside), key=lambda e: (e[2], e[0], e[1]))
        out.extend(_split(own[max(1, len(own) // 4):], low, high))
    return out


def groups(edges: Sequence[Edge], low: int = MIN_SIZE, high: int = MAX_SIZE) -> list[list[int]]:
    """Communities of `low` to `high` memories, large ones split by their weakest links."""
    out = []
    for community in communities(edges):
        if len(community) < low:
            continue
        if len(community) <= high:
            out.append(community)
            continue
        inside = set(community)
        out.extend(_split([e for e in edges if e[0] in inside and e[1] in inside], low, high))
    return out


def tighten(members: Iterable[int], rare_words: Callable[[int], set[str]], low: int = MIN_SIZE) -> list[int]:
    """The members that share a rare word with SHARE_WITH of the others and at least two (all of
    them in a group of three), dropping the least connected one at a time; [] when fewer than
    `low` remain."""
    kept = list(members)
    words = {n: rare_words(n) for n in kept}
    while len(kept) >= low:
        def sharing(n: int) -> int:
            return sum(1 for o in kept if o != n and words[n] & words[o])
        needed = min(len(kept) - 1, max(2.0, SHARE_WITH * (len(kept) - 1)))
        loose = [n for n in kept if sharing(n) < needed]
        if not loose:
            return kept
        worst = min(loose, key=lambda n: (sharing(n), sum(len(words[n] & words[o]) for o in kept if o != n), -n))
        kept.remove(worst)
    return []
