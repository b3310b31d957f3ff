"""The desktop's views driven as a person would: the sidebar, links and backlinks, the quick
switcher and the keyboard, the review inbox, the graph browser, the background import, dark
mode and a small window. The real window on a real store, offscreen."""
import re

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage, QMouseEvent  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QLabel  # noqa: E402

from tidemind.memory import Memory  # noqa: E402
from tidemind.store import audit, immediate, links, tags  # noqa: E402

from .desktop_helpers import click, opened, settle, window  # noqa: E402,F401
from .test_browse import _contradictions, _pairs  # noqa: E402


def _link(mem, a, b, status="confirmed"):
    with immediate(mem.conn):
        made = links.add(mem.conn, a, b, status=status, proposed_by="t", at=mem.now())
        audit.record(mem.conn, at=mem.now(), actor="daemon:test", action="link_proposed", node_id=a, link=made)
    return made


def test_the_sidebar_browses_without_a_query(window, mem, qtbot):
    kept = [mem.digest(f"Deploy note number {i} about the harbour crane", scope="project:port")["node_ids"][0]
            for i in range(60)]
    other = mem.digest("A personal note about bread", scope="personal")["node_ids"][0]
    mem.tag_add(kept[0], "cranes")
    mem.archive(kept[1])
    window.refresh_all()
    settle(window, qtbot)
    bar = window.sidebar
    assert bar.items["recent"].text(1) == "60" and bar.items["archived"].text(1) == "1"
    assert {bar.scopes_item.child(i).text(0): bar.scopes_item.child(i).text(1)
            for i in range(bar.scopes_item.childCount())} == {"personal": "1", "project:port": "59"}
    bar.itemClicked.emit(bar.items["recent"], 0)
    settle(window, qtbot)
    assert window.results.count() == 50 and window.results.total == 60 - 1 + 1
    window.results.scrollToBottom()                          # the next page comes when the end is reached
    settle(window, qtbot)
    assert window.results.count() == 60
    bar.itemClicked.emit(bar.scopes_item.child(0), 0)        # personal
    settle(window, qtbot)
    assert [window.results.item(i).data(256) for i in range(window.results.count())] == [other]
    bar.itemClicked.emit(bar.items["archived"], 0)
    settle(window, qtbot)
    assert [window.results.item(i).data(256) for i in range(window.results.count())] == [kept[1]]
    window.results.setCurrentRow(0)
    assert window.node_view.node.get("archived")             # shown from its row, with the way back
    click(window.node_view, "node-restore")
    settle(window, qtbot)
    assert mem.show(kept[1])["status"] == "live" and window.results.count() == 0


def test_links_and_backlinks_show_titles_and_open(window, mem, qtbot):
    a = mem.digest("The harbour crane runbook")["node_ids"][0]
    b = mem.digest("Crane maintenance schedule")["node_ids"][0]
    c = mem.digest("Incident: the crane stopped at noon")["node_ids"][0]
    _link(mem, a, b)
    _link(mem, c, a, "pending")
    opened(window, qtbot, a)
    label = window.node_view.findChild(QLabel, "links")
    text = label.text()
    links_part, back_part = text.split("Backlinks")
    assert "Crane maintenance schedule" in links_part and f"node:{b}" in links_part
    assert "Incident: the crane stopped at noon" in back_part and "pending" in back_part
    label.linkActivated.emit(f"node:{c}")
    settle(window, qtbot)
    assert window.node_view.node_id == c


def test_a_tag_chip_opens_the_tag_view(window, mem, qtbot):
    a, b, _ = (mem.digest(t)["node_ids"][0] for t in ("Crane one", "Crane two", "Bread"))
    mem.tag_add(a, "cranes")
    mem.tag_add(b, "cranes")
    opened(window, qtbot, a)
    window.node_view.chips["cranes"].label.click()
    settle(window, qtbot)
    assert {window.results.item(i).data(256) for i in range(window.results.count())} == {a, b}
    assert window.results.source == {"view": "tag", "tag": "cranes"}


def test_keyboard_search_into_results_and_the_quick_switcher(window, mem, qtbot):
    target = mem.digest("The lighthouse keeper logs the fog horn every night.")["node_ids"][0]
    mem.digest("Bread rises best overnight in a cool kitchen.")
    mem.embed_pending()
    QTest.keyClick(window, Qt.Key_F, Qt.ControlModifier)
    assert window.query.hasFocus() or QApplication.focusWidget() is window.query
    QTest.keyClicks(window.query, "lighthouse fog horn")
    QTest.keyClick(window.query, Qt.Key_Return)
    settle(window, qtbot)
    QTest.keyClick(window.query, Qt.Key_Down)                 # arrows go into the results
    settle(window, qtbot)
    assert window.results.currentRow() == 0 and window.node_view.node_id == target
    window.node_view.show_message("")
    QTest.keyClick(window, Qt.Key_K, Qt.ControlModifier)
    assert window.switcher.isVisible()
    QTest.keyClicks(window.switcher.text, "lighthouse")
    qtbot.waitUntil(lambda: window.switcher.list.count() >= 1, timeout=20000)
    QTest.keyClick(window.switcher.text, Qt.Key_Return)
    settle(window, qtbot)
    assert not window.switcher.isVisible() and window.node_view.node_id == target
    assert window.tabs.currentWidget() is window.node_view


def test_the_review_inbox_pages_counts_titles_advances_and_undoes(window, mem, qtbot):
    items = _contradictions(mem, 60)
    window.refresh_all()
    window.tabs.setCurrentWidget(window.review_view)
    settle(window, qtbot)
    view = window.review_view
    tabs = [view.kinds.tabText(i) for i in range(view.kinds.count())]
    assert "Contradictions 60" in tabs and "All 60" in tabs
    assert view.items.count() == 50 and view.page_label.text() == "1–50 of 60"
    assert "cache TTL" in view.items.item(0).text()                              # rows have titles
    view.next_page.click()
    settle(window, qtbot)
    assert view.items.count() == 10 and view.page_label.text() == "51–60 of 60"
    view.prev_page.click()
    settle(window, qtbot)
    view.items.setCurrentRow(0)
    view.items.setFocus()
    first, second, third = (view.items.item(i).data(256) for i in range(3))
    QTest.keyClick(view.items, Qt.Key_A)                     # approve: the next one comes up by itself
    assert view.items.currentItem().data(256) == second
    settle(window, qtbot)
    assert mem.review_show(first)["status"] == "approved"
    QTest.keyClick(view.items, Qt.Key_J)                     # pass
    assert view.items.currentItem().data(256) == third
    QTest.keyClick(view.items, Qt.Key_K)                     # back
    assert view.items.currentItem().data(256) == second
    QTest.keyClick(view.items, Qt.Key_R)
    settle(window, qtbot)
    assert mem.review_show(second)["status"] == "rejected"
    QTest.keyClick(view.items, Qt.Key_U)                     # undo, one decision at a time
    settle(window, qtbot)
    assert mem.review_show(second)["status"] == "open"
    window.undo()
    settle(window, qtbot)
    assert mem.review_show(first)["status"] == "open" and mem.review_show(first)["payload"].get("stands") is None
    assert sorted(r["id"] for r in mem.review_page(limit=100)["items"]) == sorted(items)       # all open again


def test_the_inbox_sorts_narrows_and_decides_a_memorys_links_in_one_step(window, mem, qtbot):
    made = _pairs(mem, [0.62, 0.95, 0.80], scope="project:port")
    _pairs(mem, [0.99], scope="personal")
    (_, _, tagged), (strong, _, _), _ = made
    mem.tag_add(tagged, "cranes")
    hub, *ends = (mem.digest(f"crane {w} of the hub", scope="project:port")["node_ids"][0]
                  for w in ("hub", "one", "two", "three"))
    spokes = [_link(mem, hub, e, status="pending") for e in ends]
    elsewhere = _link(mem, ends[0], ends[1], status="pending")
    window.refresh_all()
    window.tabs.setCurrentWidget(window.review_view)
    settle(window, qtbot)
    view = window.review_view
    view.select_kind("merge")
    settle(window, qtbot)
    shown = lambda: [view.items.item(i).data(256) for i in range(view.items.count())]
    assert len(shown()) == 4
    view.sort.setCurrentIndex(view.sort.findData("strongest"))
    settle(window, qtbot)
    scores = [mem.review_show(i)["payload"]["similarity"] for i in shown()]
    assert scores == sorted(scores, reverse=True) == [0.99, 0.95, 0.80, 0.62]
    window.scope.setCurrentText("project:port")              # the scope box narrows the inbox too
    settle(window, qtbot)
    assert shown()[0] == strong and len(shown()) == 3 and view.page_label.text() == "1–3 of 3"
    view.tag.setCurrentText("cranes")
    QTest.keyClick(view.tag.lineEdit(), Qt.Key_Return)
    settle(window, qtbot)
    assert shown() == [made[0][0]]
    tabs = [view.kinds.tabText(i) for i in range(view.kinds.count())]
    assert "Merges 1" in tabs and "Links 0" in tabs            # the counts are of what is listed
    view.tag.setCurrentText("any tag")
    QTest.keyClick(view.tag.lineEdit(), Qt.Key_Return)
    view.select_kind("link")
    settle(window, qtbot)
    assert sorted(shown()) == sorted([*spokes, elsewhere])
    view.items.setCurrentRow(shown().index(spokes[1]))
    view.narrow_button.click()                                # only what names the hub
    settle(window, qtbot)
    assert sorted(shown()) == sorted(spokes) and view.at_node.isVisible()
    assert view.accept_all.isVisible() and "3" in view.accept_all.text()
    view.accept_all.click()
    settle(window, qtbot)
    assert [links.get(mem.conn, i)["status"] for i in spokes] == ["confirmed"] * 3
    assert links.get(mem.conn, elsewhere)["status"] == "pending"
    assert shown() == [] and not view.accept_all.isVisible()
    window.undo()                                             # one undo for the group
    settle(window, qtbot)
    assert [links.get(mem.conn, i)["status"] for i in spokes] == ["pending"] * 3
    view.at_node.click()                                      # everything again
    settle(window, qtbot)
    assert sorted(shown()) == sorted([*spokes, elsewhere]) and not view.at_node.isVisible()


def test_a_decision_stays_undoable_after_the_window_is_closed_and_opened_again(window, mem, qtbot):
    from tidemind_desktop.main_window import MainWindow

    items = _contradictions(mem, 2)
    window.refresh_all()
    window.tabs.setCurrentWidget(window.review_view)
    settle(window, qtbot)
    view = window.review_view
    view.items.setCurrentRow(0)
    view.items.setFocus()
    first = view.items.currentItem().data(256)
    QTest.keyClick(view.items, Qt.Key_R)
    settle(window, qtbot)
    assert mem.review_show(first)["status"] == "rejected"
    window.close()                                            # the window, its undo list with it
    again = Memory.open(mem.settings.home, clock=mem.clock, actor=mem.actor)
    second = MainWindow(again, poll_ms=200)
    qtbot.addWidget(second)
    second.show()
    try:
        second.refresh_all()
        settle(second, qtbot)
        assert second.undo_button.isVisible() and "1 review item(s) set rejected (earlier)" in second.undo_button.text()
        second.undo_button.click()
        settle(second, qtbot)
        assert mem.review_show(first)["status"] == "open"
        second.refresh_all()
        settle(second, qtbot)
        assert not second.undo_button.isVisible()            # nothing of this person's left to undo
        assert {mem.review_show(i)["status"] for i in items} == {"open"}
    finally:
        second.close()
        again.close()


def test_a_contradiction_is_approved_by_saying_which_memory_stands(window, mem, qtbot):
    item = _contradictions(mem, 1)[0]
    row = mem.review_show(item)
    window.refresh_all()
    window.tabs.setCurrentWidget(window.review_view)
    settle(window, qtbot)
    view = window.review_view
    view.items.setCurrentRow(0)
    settle(window, qtbot)
    detail = view.detail.toHtml()
    marked = re.findall(r"<span style=\"[^\"]*background-color:[^\"]*\"[^>]*>([^<]+)</span>", detail)
    assert sorted(marked) == ["300", "60"]                   # what disagrees is marked, nothing else
    a, b = view.stands_buttons
    assert a.isVisible() and b.isVisible() and f"#{row['node_id']}" in a.text() + b.text()
    chosen = next(x for x in (a, b) if x.property("node") == row["other_node_id"])
    chosen.click()
    settle(window, qtbot)
    decided = mem.review_show(item)
    assert decided["status"] == "approved" and decided["payload"]["stands"] == row["other_node_id"]
    window.undo()
    settle(window, qtbot)
    back = mem.review_show(item)
    assert back["status"] == "open" and back["payload"].get("stands") is None


def _graph_store(mem):
    hubs = []
    for s, scope in enumerate(("project:port", "project:bakery")):
        hub = mem.digest(f"Hub of {scope}", scope=scope)["node_ids"][0]
        mem.tag_add(hub, "hub")
        hubs.append(hub)
        for i in range(12):
            spoke = mem.digest(f"Spoke {i} of {scope}", scope=scope)["node_ids"][0]
            mem.tag_add(spoke, "even" if i % 2 == 0 else "odd")
            _link(mem, hub, spoke, "confirmed" if i % 3 else "pending")
    return hubs


def _whole_graph_laid_out(window, mem, qtbot):
    """The graph store, its whole graph on screen with the layout finished: (hubs, the graph panel)."""
    hubs = _graph_store(mem)
    window.refresh_all()
    window.tabs.setCurrentWidget(window.graph_view)
    settle(window, qtbot)
    panel = window.graph_view
    qtbot.waitUntil(lambda: panel.progress >= 1.0, timeout=30000)
    return hubs, panel


def _viewport_point(panel, node_id) -> QPoint:
    return panel.view.mapFromScene(panel.items[node_id].scenePos())


def test_the_whole_graph_filters_colours_and_answers_the_pointer(window, mem, qtbot):
    hubs, panel = _whole_graph_laid_out(window, mem, qtbot)
    assert len(panel.items) == 26 and len(panel.edge_layer.edges) == 24
    assert "project:port (13)" in panel.legend.text() and "project:bakery (13)" in panel.legend.text()
    panel.scope.setCurrentText("project:port")
    settle(window, qtbot)
    assert {i for i in panel.items} == {hubs[0], *range(hubs[0] + 1, hubs[0] + 13)}
    panel.status_actions["pending"].setChecked(False)        # link status filter
    settle(window, qtbot)
    assert {s for _, _, s in panel.edge_layer.edges} == {"confirmed"}
    panel.colour_by.setCurrentIndex(1)
    assert "even (6)" in panel.legend.text() and "odd (6)" in panel.legend.text()
    colours = {panel.items[i].colour.name() for i in panel.items}
    assert len(colours) == 3                                 # hub, even, odd
    panel.flagged.setChecked(True)                           # the memory-status filter: nothing is flagged here
    settle(window, qtbot)
    assert panel.items == {} and "0 memories" in panel.info.text()
    panel.flagged.setChecked(False)
    panel.status_actions["pending"].setChecked(True)
    settle(window, qtbot)
    qtbot.waitUntil(lambda: panel.progress >= 1.0, timeout=30000)
    panel.view.resetTransform()
    panel.view.centerOn(panel.items[hubs[0]])
    QApplication.processEvents()
    # the pointer's move delivered to the view itself: QTest's synthetic pointer, left on this very
    # spot by the same test on the other backend, brought no hover to the second window
    point = _viewport_point(panel, hubs[0])
    QApplication.sendEvent(panel.view.viewport(), QMouseEvent(
        QEvent.MouseMove, QPointF(point), QPointF(panel.view.viewport().mapToGlobal(point)), Qt.NoButton,
        Qt.NoButton, Qt.NoModifier))
    qtbot.waitUntil(lambda: panel.focus is not None, timeout=20000)
    assert panel.focus == set(panel.items)                   # the hub and all its neighbours stand out
    assert all(panel.items[i].label.isVisible() for i in panel.focus)
    spoke = next(i for i in panel.items if i != hubs[0])
    QTest.mouseClick(panel.view.viewport(), Qt.LeftButton, Qt.NoModifier, _viewport_point(panel, spoke))
    assert panel.selected == spoke and f"#{spoke}" in window.message.text()
    before = panel.items[spoke].pos()
    start = _viewport_point(panel, spoke)
    QTest.mousePress(panel.view.viewport(), Qt.LeftButton, Qt.NoModifier, start)
    QTest.mouseMove(panel.view.viewport(), start + QPoint(60, 40))
    QTest.mouseRelease(panel.view.viewport(), Qt.LeftButton, Qt.NoModifier, start + QPoint(60, 40))
    qtbot.waitUntil(lambda: panel.items[spoke].pos() != before, timeout=20000)
    assert spoke in panel.pinned
    QTest.mouseDClick(panel.view.viewport(), Qt.LeftButton, Qt.NoModifier, _viewport_point(panel, spoke))
    settle(window, qtbot)
    assert window.node_view.node_id == spoke and window.tabs.currentWidget() is window.node_view


def test_graph_positions_are_kept_per_scope_and_a_newcomer_moves_in(window, mem, qtbot):
    hubs, panel = _whole_graph_laid_out(window, mem, qtbot)
    kept = {i: (it.pos().x(), it.pos().y()) for i, it in panel.items.items()}
    panel.scope.setCurrentText("project:port")
    settle(window, qtbot)
    qtbot.waitUntil(lambda: panel.progress >= 1.0, timeout=30000)
    panel.scope.setCurrentIndex(0)                           # back to every scope: drawn where it was
    settle(window, qtbot)
    assert {i: (it.pos().x(), it.pos().y()) for i, it in panel.items.items()} == kept
    with Memory(mem.settings) as agent:                      # another process's connection, as the daemon's
        new = agent.digest("A newcomer linked to the port hub", scope="project:port")["node_ids"][0]
        _link(agent, hubs[0], new)
    qtbot.waitUntil(lambda: new in panel.items and (hubs[0], new, "confirmed") in panel.edge_layer.edges,
                    timeout=60000)                            # the poll noticed, the graph reloaded
    qtbot.waitUntil(lambda: panel.progress >= 1.0, timeout=30000)
    hub = panel.items[hubs[0]].pos()
    assert (panel.items[new].pos() - hub).manhattanLength() < (panel.scene_rect().width() + panel.scene_rect().height()) / 2
    moved = [abs(panel.items[i].pos().x() - x) + abs(panel.items[i].pos().y() - y) for i, (x, y) in kept.items()]
    assert sorted(moved)[len(moved) // 2] < 46 * 1.5           # most stay about where they were (a link length)


def test_the_local_graph_follows_its_depth(window, mem, qtbot):
    a, b, c, d = (mem.digest(f"chain link {n}")["node_ids"][0] for n in "abcd")
    _link(mem, a, b)
    _link(mem, b, c)
    _link(mem, c, d)
    window.show_graph(a)
    settle(window, qtbot)
    panel = window.graph_view
    assert panel.mode.currentIndex() == 1 and set(panel.items) == {a, b, c}          # depth 2 by default
    panel.depth.setValue(1)
    settle(window, qtbot)
    assert set(panel.items) == {a, b}
    panel.depth.setValue(3)
    settle(window, qtbot)
    assert set(panel.items) == {a, b, c, d} and panel.center == a


def test_the_local_graph_hides_what_only_hidden_links_reach_says_its_cap_and_draws_arrows(window, mem, qtbot,
                                                                                            tmp_path):
    """Issue 25: turning pending links off left memories reached only through them as loose dots;
    the cap was silent; a note's link to another had no direction."""
    from tidemind.importers.engine import sync

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Harbour.md").write_text("The harbour links to [[Crane]].\n")
    (vault / "Crane.md").write_text("The crane is on the east quay.\n")
    sync(mem, "obsidian", vault, "vault:v")
    unit = lambda key: mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key = ?", (key,)).fetchone()[0]
    harbour, crane = unit("Harbour.md#"), unit("Crane.md#")
    loose = mem.digest("a memory a pass proposed to link", scope="vault:v")["node_ids"][0]
    _link(mem, harbour, loose, status="pending")
    window.show_graph(harbour)
    settle(window, qtbot)
    panel = window.graph_view
    assert set(panel.items) == {harbour, crane, loose}
    panel.wait_layout()
    assert (harbour, crane) in panel.edge_layer.directed and (harbour, loose) not in panel.edge_layer.directed
    assert len(panel.edge_layer._lines["confirmed"]) == 3                   # the link and its arrowhead's two strokes
    panel.status_actions["pending"].setChecked(False)
    settle(window, qtbot)
    assert set(panel.items) == {harbour, crane}                             # not a loose dot: gone with its link
    panel.status_actions["pending"].setChecked(True)
    settle(window, qtbot)
    many = [mem.digest(f"spoke {i} of the harbour", scope="vault:v")["node_ids"][0] for i in range(520)]
    with immediate(mem.conn):
        for i in many:
            links.add(mem.conn, harbour, i, status="confirmed", proposed_by="t", at=mem.now())
    window.show_graph(harbour)
    settle(window, qtbot)
    assert len(panel.items) == 500 and "capped at 500 of at least 523 within depth 2" in panel.info.text()


def test_the_graph_opens_a_memory_on_a_click_when_the_person_set_it_so(qtbot, tmp_path):
    """Issue 25: a single click selects; opening follows the person's setting ([desktop] graph_open)."""
    from tidemind_desktop.main_window import MainWindow

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[desktop]\ngraph_open = "click"\n')
    m = Memory.open(home)
    a, b = (m.digest(f"graph click memory {w}")["node_ids"][0] for w in ("one", "two"))
    _link(m, a, b)
    w = MainWindow(m, poll_ms=200)
    qtbot.addWidget(w)
    w.show()
    try:
        settle(w, qtbot)
        assert w.graph_view.open_on_click
        w.show_graph(a)
        settle(w, qtbot)
        w.graph_view.wait_layout()
        assert w.graph_view.info.text().endswith("· click opens")
        item = w.graph_view.items[b]
        view = w.graph_view.view
        at = view.mapFromScene(item.pos())
        QTest.mouseClick(view.viewport(), Qt.LeftButton, Qt.NoModifier, at)
        settle(w, qtbot)
        qtbot.waitUntil(lambda: w.node_view.node_id == b, timeout=60000)
    finally:
        w.close()
        m.close()
    (home / "config.toml").write_text('[desktop]\ngraph_open = "hover"\n')
    from tidemind.config import load_settings
    from tidemind.errors import InvalidInput
    from tidemind_desktop.main_window import graph_opening
    with pytest.raises(InvalidInput, match="graph_open"):
        graph_opening(load_settings(home))


def test_the_graph_filters_by_a_query_and_colours_groups_by_query(window, mem, qtbot):
    """Issue 25: a text filter and colour groups by query, as in Obsidian's graph."""
    cranes = [mem.digest(f"Crane {i} serviced on the quay", scope="project:port")["node_ids"][0] for i in range(3)]
    bread = [mem.digest(f"Bread recipe {i} with rye", scope="project:bakery")["node_ids"][0] for i in range(2)]
    mem.tag_add(cranes[0], "heavy")
    _link(mem, cranes[0], cranes[1])
    _link(mem, cranes[1], bread[0])
    window.load_graph(window.graph_view.current_request())
    settle(window, qtbot)
    panel = window.graph_view
    assert set(panel.items) >= {*cranes, *bread}
    before = {i: panel.items[i].pos() for i in cranes}
    panel.filter.setText("crane")
    QTest.keyClick(panel.filter, Qt.Key_Return)
    settle(window, qtbot)
    assert set(panel.items) == set(cranes) and "filtered: 3 of" in panel.info.text()
    assert panel.edge_layer.edges == [(cranes[0], cranes[1], "confirmed")]    # a link to a hidden memory goes too
    assert all(panel.items[i].pos() == before[i] for i in cranes)            # the same graph: nothing moved
    panel.filter.setText("scope:project tag:heavy")
    QTest.keyClick(panel.filter, Qt.Key_Return)
    settle(window, qtbot)
    assert set(panel.items) == {cranes[0]}
    panel.filter.clear()                                                    # cleared: everything again
    settle(window, qtbot)
    assert set(panel.items) >= {*cranes, *bread}
    panel.groups.setText("tag:heavy; scope:project:bakery")
    QTest.keyClick(panel.groups, Qt.Key_Return)
    settle(window, qtbot)
    colour = lambda i: panel.items[i].colour.name()
    assert colour(cranes[0]) != colour(bread[0]) and colour(cranes[1]) == colour(cranes[2]) != colour(cranes[0])
    assert colour(bread[0]) == colour(bread[1])
    legend = panel.legend.text()
    assert "tag:heavy (1)" in legend and "scope:project:bakery (2)" in legend and "no group" in legend


def test_import_runs_in_the_background_with_progress_cancel_and_undo(window, mem, qtbot, tmp_path):
    from tidemind_desktop.probe import LatencyProbe

    vault = tmp_path / "Harbour"
    vault.mkdir()
    for i in range(300):
        (vault / f"Note {i}.md").write_text(f"# Note {i}\nThe harbour crane {i} was serviced.\n\n"
                                            f"## Follow-up\nCheck crane {i} again next month. #cranes\n")
    panel = window.import_panel
    window.tabs.setCurrentWidget(panel)
    seen = []
    panel.bar.valueChanged.connect(lambda v: seen.append((v, panel.bar.maximum())))
    probe = LatencyProbe().start()
    assert window.import_folder("obsidian", str(vault))
    assert panel.bar.isVisible() and panel.cancel.isEnabled() and not panel.go.isEnabled()
    settle(window, qtbot, timeout=60000)
    probe.stop()
    r = window.last_import
    assert r["created"] == 600 and r["batch"] is not None and not panel.bar.isVisible()
    assert seen and seen[-1] == (600, 600)                   # the bar was drawn as it went
    assert probe.stats()["n"] > 20 and probe.stats()["p95_ms"] < 100       # the window kept answering
    assert panel.undo.isEnabled()
    scope = r["scope"]
    window.undo_import(r["batch"])
    settle(window, qtbot, timeout=60000)
    assert mem.stats(scopes=[scope])["nodes"]["live"] == 0 and "rolled back" in panel.report.text()
    assert window.import_folder("obsidian", str(vault))
    panel.cancel.click()                                      # at once: stopped before the first chunk
    settle(window, qtbot, timeout=60000)
    assert window.last_import["cancelled"] and mem.stats(scopes=[scope])["nodes"]["live"] < 600


def _declared_colours(html: str) -> list[tuple[str, str | None]]:
    """(text colour, its own background or None) of every styled span in rich text."""
    out = []
    for style in re.findall(r"style=[\"']([^\"']*)[\"']", html):
        fg = re.search(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{6})", style)
        bg = re.search(r"background-color:\s*(#[0-9a-fA-F]{6})", style)
        if fg:
            out.append((fg.group(1), bg.group(1) if bg else None))
    return out


def _text_contrast(widget) -> float:
    """The best contrast between the widget's most common colour (its background) and any of
    its pixels: text a person can read reaches well above 4.5 somewhere in its glyphs."""
    image = widget.grab().toImage().convertToFormat(QImage.Format_RGB32)
    counts = {}
    for y in range(0, image.height(), 2):
        for x in range(0, image.width(), 2):
            p = image.pixel(x, y)
            counts[p] = counts.get(p, 0) + 1
    background = QColor(max(counts, key=counts.get))
    from tidemind_desktop.theme import contrast

    return max(contrast(background, QColor(p)) for p in counts)


@pytest.mark.parametrize("dark", [True, False])
def test_every_view_is_legible_in_the_palette(window, mem, qtbot, dark):
    """A dark palette made the derived box white on near-white: text is drawn in the palette's
    colours (and rich text in colours chosen for its background)."""
    from tidemind.metabolism.scheduler import run_due
    from tidemind_desktop.app import dark_palette
    from tidemind_desktop.theme import contrast

    app = QApplication.instance()
    before = app.palette()
    if dark:
        app.setPalette(dark_palette())
    try:
        node = mem.digest("The staging database runs PostgreSQL 16 on port 5433.")["node_ids"][0]
        newer = mem.correct(node, "The staging database runs PostgreSQL 16 on port 6432.")["node_ids"][0]
        _contradictions(mem, 1)
        run_due(mem, only=["embed", "annotate"], force=True)
        mem.tag_add(newer, "databases")
        window.refresh_all()
        opened(window, qtbot, newer)
        window.review_view.items.setCurrentRow(0)
        settle(window, qtbot)
        base = QColor(app.palette().color(app.palette().ColorRole.Base))
        window_bg = QColor(app.palette().color(app.palette().ColorRole.Window))
        checked = 0
        for tab in (window.node_view, window.review_view):
            window.tabs.setCurrentWidget(tab)
            QApplication.processEvents()
            for label in tab.findChildren(QLabel):
                if not label.isVisible() or not label.text().strip() or label.width() < 20:
                    continue
                assert _text_contrast(label) >= 4.5, (label.objectName(), label.text()[:80])
                for fg, bg in _declared_colours(label.text()):
                    assert contrast(QColor(fg), QColor(bg) if bg else window_bg) >= 3.0, (fg, bg, label.text()[:80])
                checked += 1
        derived = window.node_view.findChild(QLabel, "derived")
        assert derived is not None and _text_contrast(derived) >= 4.5
        marks = _declared_colours(window.review_view.detail.toHtml())
        assert any(bg for _, bg in marks)                    # the differing values are marked...
        for fg, bg in marks:                                 # ...legibly, like every other coloured word
            assert contrast(QColor(fg), QColor(bg) if bg else base) >= 3.0, (fg, bg)
        assert checked >= 6
    finally:
        app.setPalette(before)


def test_the_window_fits_800_by_500_without_sideways_scrolling(window, mem, qtbot):
    for i in range(5):
        nid = mem.digest(f"A rather long memory number {i} " + "with many words that must wrap instead of scrolling "
                         * 6)["node_ids"][0]
        with immediate(mem.conn):        # proposed tags: chips with confirm and reject, the widest there are
            for name in ("reporting-queue-retention", "sqlite-message-store"):
                tags.assign(mem.conn, nid, name, status="proposed", source="annotate/offline-v3", at=mem.now())
    _contradictions(mem, 2)
    window.refresh_all()
    window.query.setText("memory words wrap")
    window.search()
    settle(window, qtbot)
    window.resize(800, 500)
    QApplication.processEvents()
    assert (window.width(), window.height()) == (800, 500)
    window.results.setCurrentRow(0)
    settle(window, qtbot)
    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)
        settle(window, qtbot)
        QApplication.processEvents()
        for area in window.findChildren(QAbstractScrollArea):
            if area.isVisible() and area.window() is window and area is not window.graph_view.view:
                assert not area.horizontalScrollBar().isVisible(), (window.tabs.tabText(index), type(area).__name__,
                                                                     area.objectName())
                inner = area.widget() if hasattr(area, "widget") else None
                if inner is not None and area.horizontalScrollBarPolicy() == Qt.ScrollBarAlwaysOff:
                    # no bar to see, but nothing may be cut at the right edge either
                    assert inner.width() <= area.viewport().width(), (window.tabs.tabText(index),
                                                                              type(area).__name__)
    assert (window.width(), window.height()) == (800, 500)
    # a memory opened wide, then the window narrowed: its chips follow, nothing is cut
    window.resize(1200, 760)
    window.tabs.setCurrentIndex(0)
    window.results.setCurrentRow(1)
    settle(window, qtbot)
    assert window.node_view.chips_per_row == 2 and len(window.node_view.chips) == 2
    window.resize(800, 500)
    settle(window, qtbot)
    assert window.node_view.chips_per_row == 1
    qtbot.waitUntil(lambda: window.node_view.widget().width() <= window.node_view.viewport().width(), timeout=20000)


def test_the_proposed_tags_queue_rejects_a_useless_name_everywhere_and_undoes_it(window, mem, qtbot):
    """One decision for a name the passes put on many memories, in every scope it was proposed."""
    from tidemind.metabolism.scheduler import run_due
    from tidemind.store import tags as tag_store

    ids = [mem.digest(f"Runbook step {i}: restart the {w} worker and watch the queue drain.", scope=scope)["node_ids"][0]
           for i, (w, scope) in enumerate((("billing", "project:a"), ("search", "project:b"), ("mail", "project:a")))]
    run_due(mem, only=["embed", "annotate"], force=True)
    mine = ids[0]
    with immediate(mem.conn):                                # one memory's own proposal, for a name it keeps
        tag_store.assign(mem.conn, ids[1], "useless", status="proposed", source="t", at=mem.now())
        tag_store.assign(mem.conn, ids[2], "useless", status="proposed", source="t", at=mem.now())
        tag_store.assign(mem.conn, mine, "useless", status="proposed", source="t", at=mem.now())
    mem.tag_add(mine, "useless")                             # a person's own tag of that name stays
    before = {i: {t["name"]: t["status"] for t in mem.tags_of(i)} for i in ids}
    window.tabs.setCurrentWidget(window.review_view)
    window.review_view.select_kind("tags")
    settle(window, qtbot)
    queue = window.tags_queue
    rows = {queue.list.item(i).data(256): queue.list.item(i).text() for i in range(queue.list.count())}
    assert "useless" in rows and "2 proposal(s)" in rows["useless"] and "project:a" in rows["useless"] \
        and "project:b" in rows["useless"]
    assert any(t.startswith("Tags ") for t in (window.review_view.kinds.tabText(i)
                                                for i in range(window.review_view.kinds.count())))
    queue.list.setCurrentRow(list(rows).index("useless"))
    queue.list.setFocus()
    QTest.keyClick(queue.list, Qt.Key_R)
    settle(window, qtbot)
    after = {i: {t["name"]: t["status"] for t in mem.tags_of(i)} for i in ids}
    assert after[ids[1]]["useless"] == after[ids[2]]["useless"] == "rejected_by_user"
    assert after[mine]["useless"] == "confirmed"
    assert "useless" not in [queue.list.item(i).data(256) for i in range(queue.list.count())]
    assert "#useless in project:a" in queue.rejected.text() and "#useless in project:b" in queue.rejected.text()
    fresh = mem.digest("Runbook step 9: a new memory in the same scope.", scope="project:b")["node_ids"][0]
    with immediate(mem.conn):                                # no pass proposes it there again
        assert not tag_store.assign(mem.conn, fresh, "useless", status="proposed", source="t", at=mem.now())
    window.undo()
    settle(window, qtbot)
    assert {i: {t["name"]: t["status"] for t in mem.tags_of(i)} for i in ids} == before
    assert "useless" in [queue.list.item(i).data(256) for i in range(queue.list.count())]


def test_the_proposed_tags_queue_accepts_a_good_name_everywhere_and_undoes_it(window, mem, qtbot):
    """Issue 25: "accept everywhere" beside "reject everywhere": every proposal of the name in the
    scopes it was proposed in becomes a person's tag in one step; undo proposes them again, and a
    memory a person decided on by hand since keeps that decision."""
    from tidemind.store import audit as audit_store, tags as tag_store

    ids = [mem.digest(f"Kiln firing log {i}: cone 6 reached in {h} hours.", scope=scope)["node_ids"][0]
           for i, (h, scope) in enumerate(((9, "studio"), (10, "studio"), (11, "studio:b"), (12, "studio")))]
    with immediate(mem.conn):
        for node_id in ids[:3]:
            tag_store.assign(mem.conn, node_id, "kiln", status="proposed", source="t", at=mem.now())
    before = {i: {t["name"]: t["status"] for t in mem.tags_of(i)} for i in ids}
    window.tabs.setCurrentWidget(window.review_view)
    window.review_view.select_kind("tags")
    settle(window, qtbot)
    queue = window.tags_queue
    names = [queue.list.item(i).data(256) for i in range(queue.list.count())]
    queue.list.setCurrentRow(names.index("kiln"))
    queue.list.setFocus()
    QTest.keyClick(queue.list, Qt.Key_A)
    settle(window, qtbot)
    after = {i: {t["name"]: t["status"] for t in mem.tags_of(i)} for i in ids}
    assert [after[i].get("kiln") for i in ids] == ["confirmed", "confirmed", "confirmed", None]
    assert "kiln" not in [queue.list.item(i).data(256) for i in range(queue.list.count())]
    assert any(action == "tag_accept_everywhere" for action, _ in audit_store.after(mem.conn, 0))
    mem.tag_add(ids[3], "kiln")                              # unrelated: stays
    with immediate(mem.conn):                                # a person rejects one of them by hand since
        tag_store.reject(mem.conn, ids[1], "kiln", mem.now())
    window.undo()
    settle(window, qtbot)
    now = {i: {t["name"]: t["status"] for t in mem.tags_of(i)} for i in ids}
    assert now[ids[0]] == before[ids[0]] and now[ids[2]] == before[ids[2]]          # proposed again
    assert now[ids[1]]["kiln"] == "rejected_by_user" and now[ids[3]]["kiln"] == "confirmed"
    assert "kiln" in [queue.list.item(i).data(256) for i in range(queue.list.count())]


def test_a_list_refilled_by_a_search_a_browse_or_the_scope_box_never_opens_a_memory(window, mem, qtbot):
    """Issue 25: search, open the 3rd result, go to another tab, search again: the window jumped to
    the Memory tab showing the new list's row under the old selection. Opening is the person's
    act (a click, Enter, an arrow key), never a list being filled."""
    ids = [mem.digest(f"Graph view note {n}: the local graph shows links of depth {n}.")["node_ids"][0]
           for n in range(6)]
    others = [mem.digest(f"Caroline adoption meeting {n}: the agency called about the papers.")["node_ids"][0]
              for n in range(6)]
    mem.embed_pending()
    window.refresh_all()
    settle(window, qtbot)
    window.query.setText("graph view local graph")
    window.search()
    qtbot.waitUntil(lambda: window.results.count() >= 4, timeout=20000)
    window.results.setCurrentRow(2)                          # the person opens the 3rd result
    qtbot.waitUntil(lambda: window.node_view.node_id in ids, timeout=20000)
    opened_id = window.node_view.node_id
    QTest.keyClick(window, Qt.Key_4, Qt.ControlModifier)     # another tab
    elsewhere = window.tabs.currentWidget()
    assert elsewhere is not window.node_view
    window.query.setText("Caroline adoption agency")
    window.search()
    qtbot.waitUntil(lambda: window.results.count() >= 4 and window.results.item(0).data(256) in others,
                    timeout=20000)
    settle(window, qtbot)
    assert window.tabs.currentWidget() is elsewhere and window.node_view.node_id == opened_id
    # the sidebar's Recent and the scope box refill the list the same way: nothing opens
    window.browse({"view": "recent"})
    settle(window, qtbot)
    window._scope_changed()
    settle(window, qtbot)
    assert window.tabs.currentWidget() is elsewhere and window.node_view.node_id == opened_id
    # and the person's own act still opens: an arrow key in the list
    window.results.setFocus()
    QTest.keyClick(window.results, Qt.Key_Down)
    settle(window, qtbot)
    assert window.node_view.node_id == window.results.currentItem().data(256)


def test_the_quick_switcher_opens_what_is_typed_not_the_rows_of_the_last_query(window, mem, qtbot):
    """Issue 25: Ctrl+K "Local Graph", Esc, Ctrl+K "canvas", Enter at once opened "Local Graph"
    (the rows of the last lookup were still on screen): Enter opens a row for what is typed, once
    its lookup is back."""
    graph = mem.digest("Local Graph: the local graph shows the links around one note.")["node_ids"][0]
    canvas = mem.digest("Canvas: a canvas lays notes out on an infinite board.")["node_ids"][0]
    mem.embed_pending()
    window.refresh_all()
    settle(window, qtbot)
    QTest.keyClick(window, Qt.Key_K, Qt.ControlModifier)
    QTest.keyClicks(window.switcher.text, "Local Graph")
    qtbot.waitUntil(lambda: window.switcher.list.count() >= 1, timeout=20000)
    QTest.keyClick(window.switcher.text, Qt.Key_Escape)
    assert not window.switcher.isVisible()
    window.open_switcher()                                       # (Ctrl+K's own slot: offscreen, the closed
    assert window.switcher.isVisible()                           # dialog leaves no window active for the key)
    QTest.keyClicks(window.switcher.text, "canvas")
    QTest.keyClick(window.switcher.text, Qt.Key_Return)          # at once: its lookup is not back yet
    qtbot.waitUntil(lambda: window.node_view.node_id == canvas, timeout=20000)
    settle(window, qtbot)
    assert window.node_view.node_id == canvas != graph and not window.switcher.isVisible()


def test_the_quick_switcher_finds_memories_by_their_titles_as_names_are_typed(window, mem, qtbot, tmp_path):
    """Issue 25: the switcher found memories by whole words only ("loc grap" found nothing); their
    titles are now matched as names are: word starts, initials, letters in order, a letter off,
    and an imported section by its note and heading."""
    from tidemind.importers.engine import sync

    graph = mem.digest("Local Graph: the local graph shows the links around one note.")["node_ids"][0]
    mem.digest("Canvas: a canvas lays notes out on an infinite board.")
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Shop.md").write_text("# Shop\nThe shop sells oil.\n\n## Payments\nCards are taken through the till.\n")
    sync(mem, "obsidian", vault, "vault:v")
    payments = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key = 'Shop.md#Payments'").fetchone()[0]
    window.refresh_all()
    settle(window, qtbot)

    def first_for(typed: str) -> int | None:
        window.open_switcher()
        QTest.keyClicks(window.switcher.text, typed)
        qtbot.waitUntil(lambda: window.switcher._answered == typed, timeout=60000)
        item = window.switcher.list.item(0)
        found = item.data(259).get("node") if item is not None else None
        QTest.keyClick(window.switcher.text, Qt.Key_Escape)
        return found

    assert first_for("loc grap") == graph                        # the starts of its words
    assert first_for("lclgrph") == graph                         # its letters in order
    assert first_for("Locl") == graph                            # a letter missed
    assert first_for("shop pay") == payments                     # a section by its note and heading
    assert first_for("till") == payments                         # and the words inside still find it
    mem.forget(graph)
    assert first_for("loc grap") != graph                        # a forgotten title is no name


def test_the_quick_switcher_ranks_places_by_how_well_they_match(window, mem, qtbot):
    """Issue 25: "graph" + Enter opened the #photography tag (a match inside a word came first);
    a name whose word starts with what is typed comes first, then initials and letters in order,
    and a place is found by the first letters of its words ("loc grap")."""
    from tidemind_desktop.switcher import match_rank

    assert match_rank("graph", "#graph-view") < match_rank("graph", "#photography")
    assert match_rank("loc grap", "Local Graph") is not None
    assert match_rank("lg", "Local Graph") is not None and match_rank("lg", "Local Graph") > match_rank("loc", "Local Graph")
    assert match_rank("photgraphy", "#photography") is not None          # a letter missed
    assert match_rank("canvas", "Local Graph") is None
    a = mem.digest("Shot the harbour at dusk with the old lens.")["node_ids"][0]
    mem.tag_add(a, "photography")
    mem.tag_add(a, "graph-view")
    window.refresh_all()
    settle(window, qtbot)
    QTest.keyClick(window, Qt.Key_K, Qt.ControlModifier)
    QTest.keyClicks(window.switcher.text, "graph")
    labels = [window.switcher.list.item(i).text() for i in range(window.switcher.list.count())]
    assert labels.index("#graph-view") < labels.index("#photography")
    window.switcher.hide()


def test_the_quick_switcher_forgets_a_cancelled_enter_and_opens_the_row_clicked(window, mem, qtbot):
    """Found by review: Enter then Esc before the lookup was back still opened a memory when it
    came; a double-click before it opened row 0 instead of the row clicked."""
    kiln = mem.digest("Kiln log: cone six reached at noon.")["node_ids"][0]
    mem.embed_pending()
    window.refresh_all()
    settle(window, qtbot)
    shown = window.node_view.node_id
    window.open_switcher()
    QTest.keyClicks(window.switcher.text, "kiln")
    QTest.keyClick(window.switcher.text, Qt.Key_Return)          # waits for the lookup
    QTest.keyClick(window.switcher.text, Qt.Key_Escape)          # ...and the person changes their mind
    qtbot.waitUntil(lambda: window.switcher._answered == "kiln", timeout=20000)
    settle(window, qtbot)
    assert window.node_view.node_id == shown != kiln
    window.open_switcher()
    QTest.keyClicks(window.switcher.text, "a")                    # "All memories", "Archived"
    rows = [window.switcher.list.item(i) for i in range(window.switcher.list.count())]
    places = [r for r in rows if "node" not in r.data(259)]
    assert len(places) >= 2
    window.switcher.list.itemActivated.emit(places[1])             # the second place, double-clicked
    settle(window, qtbot)
    assert not window.switcher.isVisible() and window.list_request == places[1].data(259)


def test_a_theme_switched_while_the_window_is_open_applies_everywhere_at_once(window, mem, qtbot):
    """Issue 25: dark mode switched while running left dark-blue link titles on dark, a white
    Derived box and black graph labels: each view takes the palette in use again (the memory's
    page is drawn again: rich text keeps the link colour of the palette it was set under)."""
    from tidemind_desktop.app import dark_palette

    app = QApplication.instance()
    before = app.palette()
    a = mem.digest("The staging database runs PostgreSQL 16 on port 5433, said yesterday.")["node_ids"][0]
    b = mem.digest("Staging backups run nightly at two.")["node_ids"][0]
    with immediate(mem.conn):
        links.add(mem.conn, a, b, status="confirmed", proposed_by="test", at=mem.now())
    opened(window, qtbot, a)
    window.show_graph(a)
    settle(window, qtbot)
    labels = [i.label for i in window.graph_view.items.values() if i.label is not None]
    assert labels
    window.tabs.setCurrentWidget(window.node_view)
    old_links = window.node_view.findChild(QLabel, "links")
    try:
        app.setPalette(dark_palette())
        qtbot.waitUntil(lambda: window.node_view.findChild(QLabel, "links") not in (None, old_links), timeout=60000)
        QApplication.processEvents()
        text = app.palette().color(app.palette().ColorRole.Text)
        assert all(label.brush().color() == text for label in labels)          # graph labels: the palette's text
        derived = window.node_view.findChild(QLabel, "derived")
        assert derived is not None and _text_contrast(derived) >= 4.5
        assert window.node_view.node_id == a
    finally:
        app.setPalette(before)
