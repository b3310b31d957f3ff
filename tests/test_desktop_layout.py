"""The graph browser's force layout (tidemind_desktop/layout.py): pure numpy, no window."""
from __future__ import annotations

import random

import numpy as np

from tidemind_desktop import layout


def _topics(seed: int = 3):
    """One dense topic (300 memories, each linked to a dozen others in it) beside ten small,
    sparsely linked ones: the shape of a vault beside agent memories in the whole-store graph."""
    rng = random.Random(seed)
    ids = list(range(1, 601))
    edges = set()
    dense = ids[:300]
    for a in dense:
        for b in rng.sample(dense, 12):
            if a != b:
                edges.add((min(a, b), max(a, b)))
    for k in range(10):
        group = ids[300 + 30 * k: 330 + 30 * k]
        for a in group:
            for b in rng.sample(group, 2):
                if a != b:
                    edges.add((min(a, b), max(a, b)))
    return ids, sorted(edges), dense


def _nearest(out: dict, ids: list[int]) -> np.ndarray:
    xy = np.array([out[i] for i in ids])
    d = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    return d.min(axis=1)


def test_a_dense_topic_spreads_instead_of_collapsing_into_a_blob():
    ids, edges, dense = _topics()
    out = layout.run(ids, edges)
    nearest = _nearest(out, dense)
    # plain Fruchterman-Reingold put 280 of the 300 within 0.3 link lengths of another (median 0.2)
    assert float(np.median(nearest)) > 0.3
    assert (nearest < 0.3).sum() < len(dense) // 4
    # and the topic still reads as one: its members are nearer each other than the whole graph is wide
    xy = np.array([out[i] for i in ids])
    topic = np.array([out[i] for i in dense])
    assert np.ptp(topic, axis=0).max() < np.ptp(xy, axis=0).max() / 2


def test_the_layout_is_deterministic_and_keeps_known_positions_near():
    ids, edges, _ = _topics()
    first = layout.run(ids, edges)
    assert layout.run(ids, edges) == first
    friend = ids[310]                                                 # in one of the small topics
    again = layout.run(ids + [999], edges + [(friend, 999)], start=first)
    moved = np.array([np.hypot(again[i][0] - first[i][0], again[i][1] - first[i][1]) for i in ids])
    assert np.median(moved) < 1.0                                     # a newcomer does not reshuffle the graph
    x, y = again[friend]
    assert np.hypot(again[999][0] - x, again[999][1] - y) < 3         # and lands beside what it links to


def test_sidebar_counts_are_never_cut_even_for_rows_not_on_screen(qtbot):
    """Issue 25: "#page 22" for 228: the counts' column was sized to the rows on screen, and a
    collapsed tag's longer count was cut once expanded."""
    from PySide6.QtWidgets import QApplication

    from tidemind_desktop.sidebar import Sidebar

    bar = Sidebar()
    qtbot.addWidget(bar)
    bar.resize(260, 400)
    bar.show()
    # (a real store had 1,688 tag names: Qt sizes a column to its contents from the first thousand rows)
    names = [(f"t{n:04d}", 1 + n % 9) for n in range(1_500)] + [("page", 22_800)]
    bar.load({"live": 7, "flagged": 0, "archived": 0, "scopes": {"personal": 7}, "tags": names})
    bar.tags_item.setExpanded(True)
    bar.scrollToItem(bar.tags_item.child(bar.tags_item.childCount() - 1))
    qtbot.waitUntil(lambda: bar.tags_item.isExpanded(), timeout=60000)
    QApplication.processEvents()
    metrics = bar.fontMetrics()
    assert bar.columnWidth(1) >= metrics.horizontalAdvance("22,800")
    assert bar.columnWidth(0) + bar.columnWidth(1) <= bar.viewport().width() + 1      # nothing pushed out of view
