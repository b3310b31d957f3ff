"""Back and forward in the window (issue 25): across the memories a person opened, the graphs they
drew and the searches they ran, by Alt+arrows, the buttons and the mouse's side buttons; nothing
the window does by itself (a refresh, a redraw) becomes a place to go back to."""
import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QEvent, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QMouseEvent  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tidemind.memory import Memory  # noqa: E402

from .desktop_helpers import opened, settle, window  # noqa: F401,E402


def _side_button(widget, button):
    press = QMouseEvent(QEvent.MouseButtonPress, QPointF(5, 5), QPointF(5, 5), button, button, Qt.NoModifier)
    QApplication.sendEvent(widget, press)


def test_back_and_forward_through_memories_searches_and_graphs(window, mem, qtbot):
    a, b, c, d = (mem.digest(text)["node_ids"][0] for text in (
        "The lighthouse keeper logs the fog horn every night.",
        "Bread rises best overnight in a cool kitchen.",
        "The ferry to the island leaves at seven from pier four.",
        "Tomatoes want six hours of sun and deep watering."))
    mem.embed_pending()
    assert not window.back_button.isEnabled() and not window.forward_button.isEnabled()
    for node in (a, b, c):
        opened(window, qtbot, node)
    window.activateWindow()                           # (shortcuts reach the active window only)
    qtbot.waitUntil(window.isActiveWindow, timeout=60000)
    QTest.keyClick(window, Qt.Key_Left, Qt.AltModifier)
    settle(window, qtbot)
    assert window.node_view.node_id == b
    window.back_button.click()
    settle(window, qtbot)
    assert window.node_view.node_id == a and not window.back_button.isEnabled()
    QTest.keyClick(window, Qt.Key_Right, Qt.AltModifier)
    settle(window, qtbot)
    assert window.node_view.node_id == b and window.forward_button.isEnabled()
    opened(window, qtbot, d)                         # a new place drops what was ahead (c)
    assert not window.forward_button.isEnabled()
    window.back_button.click()
    settle(window, qtbot)
    assert window.node_view.node_id == b

    # a search is a place too: back brings its words and its results back
    window.query.setText("ferry island pier")
    window.search()
    settle(window, qtbot)
    window.query.setText("tomatoes sun")
    window.search()
    settle(window, qtbot)
    window.go_back()
    settle(window, qtbot)
    assert window.query.text() == "ferry island pier"
    from tidemind_desktop.results import ID

    assert c in [window.results.item(n).data(ID) for n in range(window.results.count())]

    # a graph: the local graph of a memory, then back to the search before it, forward to the graph
    window.show_graph(a)
    settle(window, qtbot)
    assert window.tabs.currentWidget() is window.graph_view
    _side_button(window.node_view, Qt.BackButton)            # the mouse's back button, over any part of the window
    settle(window, qtbot)
    assert window.query.text() == "ferry island pier"
    _side_button(window.results.viewport(), Qt.ForwardButton)
    settle(window, qtbot)
    assert window.tabs.currentWidget() is window.graph_view and window.graph_view.request.get("center") == a


def test_refreshes_and_forgotten_memories_leave_no_place_behind(window, mem, home, qtbot):
    a = mem.digest("The lighthouse keeper logs the fog horn every night.")["node_ids"][0]
    b = mem.digest("Bread rises best overnight in a cool kitchen.")["node_ids"][0]
    opened(window, qtbot, a)
    opened(window, qtbot, b)
    places = list(window.history.places)
    with Memory.open(home) as other:                 # another connection changes the memory on screen
        other.tag_add(b, "baking")
    qtbot.waitUntil(lambda: "baking" in window.node_view.chips, timeout=60000)
    settle(window, qtbot)
    assert window.history.places == places          # the refresh went nowhere new
    window.forget_node(a)
    settle(window, qtbot)
    assert {"node": a} not in window.history.places and not window.back_button.isEnabled()
