"""Force-directed layout for the graph browser, in numpy, meant for a thread of its own.

Fruchterman-Reingold forces with the ideal link length as the unit: linked memories pull
together (d²), every pair pushes apart (1/d) and a weak pull to the middle keeps unlinked ones
near. As in ForceAtlas2, a memory pushes (and is pulled to the middle) in proportion to how
linked it is, relative to the graph's mean, so a dense topic spreads out instead of collapsing
into a blob. Space therefore grows with the number of memories (about √n units across), and
the view scales the units to pixels.

Repulsion of every pair costs n² (80 ms an iteration at 2,000 memories here), so pairs are
exact only between neighbouring cells of a grid; farther cells push as their centre of mass
(5-20 ms at 2,000, more the more evenly they spread; a whole layout of 2,000 memories, 120
iterations, about 2 s on a shared 2-core machine). Deterministic for the same graph and
starting positions.

Incremental: positions from an earlier layout (the cache of a scope's graph) are kept, a new
memory starts beside its linked neighbours, and a cooler, shorter run settles the change.
"""
from __future__ import annotations

import math
import time

import numpy as np
import numpy.random  # noqa: F401  (loaded with the window, not on its UI thread at the first graph)

GRAVITY = 2.0
CELL = 0.5            # memories per grid cell if spread evenly: they are not, and the fullest cell sets the cost
NEAR_ELEMENTS = 60_000   # pairs the near field takes in one go (a few milliseconds of numpy holding the GIL)


def _repulsion(pos: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """mᵢ Σ mⱼ (pᵢ - pⱼ)/|pᵢ - pⱼ|² over j ≠ i: exact for the 3×3 cells around i, each farther
    cell pushing as its total mass at its centre of mass."""
    n = len(pos)
    px, py = pos[:, 0], pos[:, 1]
    lo = pos.min(axis=0)
    span = float(max(np.ptp(px), np.ptp(py), 1e-3))
    g = int(min(64, max(1, math.sqrt(n / CELL))))
    cell = np.minimum(((pos - lo) / span * g).astype(np.int64), g - 1)
    cid = cell[:, 1] * g + cell[:, 0]
    counts = np.bincount(cid, minlength=g * g)
    cmass = np.bincount(cid, weights=mass, minlength=g * g).astype(np.float32)
    safe = np.maximum(cmass, np.float32(1e-9))
    cx = (np.bincount(cid, weights=px * mass, minlength=g * g) / safe).astype(np.float32)
    cy = (np.bincount(cid, weights=py * mass, minlength=g * g) / safe).astype(np.float32)
    filled = np.nonzero(counts)[0]
    fx, fy = np.zeros(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
    step = max(64, NEAR_ELEMENTS // max(1, len(filled)))      # (in short operations: see the near field)
    fcx, fcy, fm = cx[filled][None, :], cy[filled][None, :], cmass[filled][None, :]
    for s in range(0, n, step):                     # far field: every node against every cell's centre
        dx = px[s:s + step, None] - fcx
        dy = py[s:s + step, None] - fcy
        w = fm / (dx * dx + dy * dy + np.float32(0.01))
        fx[s:s + step] += (w * dx).sum(axis=1)
        fy[s:s + step] += (w * dy).sum(axis=1)
        time.sleep(0)
    # near field: the 3×3 cells around each node, their centres taken back out, their members one by one
    order = np.argsort(cid, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    members = np.full((g * g, int(counts.max())), -1, dtype=np.int64)
    members[cid[order], np.arange(n) - starts[cid[order]]] = order
    near = []
    for ox in (-1, 0, 1):
        for oy in (-1, 0, 1):
            nx, ny = cell[:, 0] + ox, cell[:, 1] + oy
            ok = (nx >= 0) & (nx < g) & (ny >= 0) & (ny < g)
            nc = np.where(ok, ny * g + nx, 0)
            m = np.where(ok, cmass[nc], np.float32(0))
            dx, dy = px - cx[nc], py - cy[nc]
            w = m / (dx * dx + dy * dy + np.float32(0.01))
            fx -= w * dx
            fy -= w * dy
            near.append(np.where(ok[:, None], members[nc], -1))
    idx = np.concatenate(near, axis=1)                              # (n, 9 × the fullest cell)
    # a few hundred rows at a time: fancy indexing holds the GIL for the whole of one operation,
    # and over every row of a clumped scatter (2,000 × 9 × a full cell) that was long enough to
    # stall the window's UI thread (a graph shown while another still settled: 160-270 ms)
    rows_at_once = max(64, NEAR_ELEMENTS // max(1, idx.shape[1]))
    for s in range(0, n, rows_at_once):
        part = idx[s:s + rows_at_once]
        valid = (part >= 0) & (part != np.arange(s, s + len(part))[:, None])
        safe_idx = np.maximum(part, 0)
        dx = px[s:s + len(part), None] - px[safe_idx]
        dy = py[s:s + len(part), None] - py[safe_idx]
        w = np.where(valid, mass[safe_idx] / (dx * dx + dy * dy + np.float32(0.01)), np.float32(0))
        fx[s:s + len(part)] += (w * dx).sum(axis=1)
        fy[s:s + len(part)] += (w * dy).sum(axis=1)
        time.sleep(0)           # the GIL handed over: a UI thread waiting on it runs now, not in 5 ms
    return np.stack([fx, fy], axis=1) * mass[:, None]


def _attraction(pos: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    disp = np.zeros_like(pos)
    if len(a):
        delta = pos[a] - pos[b]
        pull = delta * np.sqrt(np.einsum("ij,ij->i", delta, delta))[:, None]
        for k in range(2):
            disp[:, k] -= np.bincount(a, weights=pull[:, k], minlength=len(pos))
            disp[:, k] += np.bincount(b, weights=pull[:, k], minlength=len(pos))
    return disp


def initial(ids: list[int], edges: list[tuple[int, int]], start: dict | None, seed: int) -> tuple[np.ndarray, float]:
    """Starting positions and how much of them was known before (0 to 1)."""
    n = len(ids)
    rng = np.random.default_rng(seed)
    radius = math.sqrt(n) + 1
    angle = rng.uniform(0, 2 * math.pi, n)
    r = radius * np.sqrt(rng.uniform(0, 1, n))
    pos = np.stack([r * np.cos(angle), r * np.sin(angle)], axis=1).astype(np.float32)
    if not start:
        return pos, 0.0
    index = {i: k for k, i in enumerate(ids)}
    known = np.zeros(n, dtype=bool)
    for i, xy in start.items():
        if i in index:
            pos[index[i]] = xy
            known[index[i]] = True
    if known.any() and not known.all():                # (all known: a return, nothing to place)
        neighbours: dict[int, list[int]] = {}
        for x, y in edges:
            if x in index and y in index:
                neighbours.setdefault(index[x], []).append(index[y])
                neighbours.setdefault(index[y], []).append(index[x])
        placed = pos[known]
        middle, spread = placed.mean(axis=0), float(np.abs(placed - placed.mean(axis=0)).max() + 1)
        for k in np.nonzero(~known)[0]:                # a newcomer starts beside what it links to
            near = [j for j in neighbours.get(k, []) if known[j]]
            base = pos[near].mean(axis=0) if near else middle + rng.uniform(-spread, spread, 2) * 0.8
            pos[k] = base + rng.uniform(-0.7, 0.7, 2)
    return pos, float(known.mean())


def run(ids: list[int], edges: list[tuple[int, int]], start: dict | None = None, seed: int = 7,
        iterations: int | None = None, on_frame=None, frame_s: float = 0.12, cancelled=lambda: False) -> dict:
    """Lay out the graph; `on_frame(progress, positions)` is called every `frame_s` seconds of
    work with a copy of the positions so far. Returns {id: (x, y)} in link-length units."""
    n = len(ids)
    if n == 0:
        return {}
    index = {i: k for k, i in enumerate(ids)}
    pairs = np.array([(index[x], index[y]) for x, y in edges if x in index and y in index and x != y],
                     dtype=np.int64).reshape(-1, 2)
    pos, known = initial(ids, edges, start, seed)
    # a memory pushes as hard as it is linked (relative to the graph's mean): a well-linked hub
    # keeps its many neighbours apart instead of pulling them into one blob (ForceAtlas2's idea)
    degree = np.bincount(pairs.ravel(), minlength=n).astype(np.float32)
    mass = (1 + degree / max(float(degree.mean()), 1.0)).astype(np.float32)
    fresh = known < 0.8
    if iterations is None:
        iterations = (300 if n <= 300 else 180 if n <= 1500 else 120) if fresh else 50
    hot = max(1.0, math.sqrt(n) / 4) if fresh else 0.6
    last = time.monotonic()
    for step in range(iterations):
        if cancelled():
            break
        disp = _repulsion(pos, mass) + _attraction(pos, pairs[:, 0], pairs[:, 1]) - GRAVITY * mass[:, None] * pos
        length = np.sqrt(np.einsum("ij,ij->i", disp, disp))[:, None] + np.float32(1e-9)
        temperature = hot * (1 - step / iterations) + 0.02
        pos += (disp / length * np.minimum(length, np.float32(temperature))).astype(np.float32)
        if on_frame is not None and time.monotonic() - last >= frame_s:
            last = time.monotonic()
            on_frame((step + 1) / iterations, {i: (float(pos[k, 0]), float(pos[k, 1])) for i, k in index.items()})
    return {i: (float(pos[k, 0]), float(pos[k, 1])) for i, k in index.items()}
