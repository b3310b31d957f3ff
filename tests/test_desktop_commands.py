"""The command palette and the shortcuts sheet (issue 25): every action by name, with its keys;
the window's shortcuts, the palette and the sheet come from one list, so they never disagree."""
import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QKeySequence, QShortcut  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from .desktop_helpers import opened, settle, window  # noqa: F401,E402


def _active(window, qtbot):
    window.activateWindow()                           # (shortcuts reach the active window only)
    qtbot.waitUntil(window.isActiveWindow, timeout=60000)


def test_the_palette_runs_an_action_by_part_of_its_name(window, mem, qtbot):
    a = mem.digest("The lighthouse keeper logs the fog horn every night.")["node_ids"][0]
    opened(window, qtbot, a)
    _active(window, qtbot)
    QTest.keyClick(window, Qt.Key_P, Qt.ControlModifier | Qt.ShiftModifier)
    palette = window.palette_dialog
    qtbot.waitUntil(palette.isVisible, timeout=60000)
    assert palette.list.count() == len(window.commands)          # every action, before anything is typed
    QTest.keyClicks(palette.text, "loc grap")                    # the starts of its words
    assert palette.list.item(0).text().startswith("Local graph of this memory")
    QTest.keyClick(palette.text, Qt.Key_Return)
    settle(window, qtbot)
    assert not palette.isVisible()
    assert window.tabs.currentWidget() is window.graph_view and window.graph_view.request.get("center") == a
    palette.open_fresh()
    QTest.keyClicks(palette.text, "prpsed tags")                # a letter off still finds it
    names = [palette.list.item(i).text() for i in range(palette.list.count())]
    assert names and names[0].startswith("Proposed tags")
    QTest.keyClick(palette.text, Qt.Key_Return)
    settle(window, qtbot)
    assert window.tabs.currentWidget() is window.review_view


def test_the_shortcuts_sheet_lists_every_key_the_window_answers_to(window, qtbot):
    _active(window, qtbot)
    QTest.keyClick(window, Qt.Key_F1)
    sheet = window.shortcuts_sheet
    qtbot.waitUntil(sheet.isVisible, timeout=60000)
    listed = {sheet.table.item(r, 1).text() for r in range(sheet.table.rowCount())}
    listed = {k.strip() for keys in listed for k in keys.split(",")}
    bound = {s.key().toString(QKeySequence.NativeText) for s in window.findChildren(QShortcut)
             if s.key().toString() not in ("Back", "Forward")}    # (the platform's media keys, bound beside Alt+arrows)
    assert bound and bound <= listed
    for name in ("Go back", "Go to a memory, scope or tag", "Run a command", "Undo the last decision"):
        assert name in {sheet.table.item(r, 0).text() for r in range(sheet.table.rowCount())}
