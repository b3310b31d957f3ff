"""`tidemind desktop`: open the window, or render one view to a PNG (`--screenshot`)."""
from __future__ import annotations

import os
import sys

from tidemind.config import load_settings
from tidemind.memory import Memory

VIEWS = ("search", "node", "graph", "local-graph", "review", "contradiction", "questions", "tags", "browse",
         "digests", "import", "switcher", "dark")


def dark_palette():
    """A dark palette like a desktop's dark theme (the screenshot of dark mode, and its tests)."""
    from PySide6.QtGui import QColor, QPalette

    pal = QPalette()
    for role, colour in ((QPalette.Window, "#202124"), (QPalette.WindowText, "#e8eaed"), (QPalette.Base, "#171717"),
                         (QPalette.AlternateBase, "#2a2b2e"), (QPalette.Text, "#e8eaed"), (QPalette.Button, "#303134"),
                         (QPalette.ButtonText, "#e8eaed"), (QPalette.Highlight, "#8ab4f8"),
                         (QPalette.HighlightedText, "#202124"), (QPalette.ToolTipBase, "#303134"),
                         (QPalette.ToolTipText, "#e8eaed"), (QPalette.Link, "#8ab4f8"), (QPalette.Mid, "#5f6368"),
                         (QPalette.PlaceholderText, "#9aa0a6"), (QPalette.BrightText, "#ffffff")):
        pal.setColor(role, QColor(colour))
    return pal


def quiet_gc() -> None:
    """Python's full garbage collections stop every thread while they scan every object: with the
    window's thousands of graph items and an import's parse trees that was up to 90 ms at a time
    (the UI thread's longest stalls). What exists once the window is up lives as long as it does:
    it is moved out of the collector's reach, and full collections become rarer."""
    import gc

    gc.collect()
    gc.freeze()
    gen0, gen1, _ = gc.get_threshold()
    gc.set_threshold(max(gen0, 5000), gen1, 50)


def run(home: str | None, screenshot: str | None = None, view: str = "search", node: int | None = None,
        query: str | None = None, size: tuple[int, int] | None = None) -> int:
    if screenshot:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from .main_window import MainWindow, graph_opening

    graph_opening(load_settings(home))          # a wrong [desktop] setting: one line, before any window
    app = QApplication.instance() or QApplication(sys.argv[:1])
    if view == "dark":
        app.setStyle("Fusion")
        app.setPalette(dark_palette())
    memory = Memory.open(home, actor="person:desktop")
    window = MainWindow(memory)
    window.resize(*(size or (1180, 760)))
    window.show()
    quiet_gc()
    if screenshot:
        shoot(window, view, node, query)
        app.processEvents()
        picture = window.grab()
        if view == "switcher":                   # a dialog is a window of its own: drawn where it sits
            from PySide6.QtGui import QPainter

            painter = QPainter(picture)
            dialog = window.switcher
            painter.drawPixmap((picture.width() - dialog.width()) // 2, 60, dialog.grab())
            painter.end()
        picture.save(screenshot, "PNG", 0)           # (0: the smallest file; the README carries a dozen)
        window.close()
        memory.close()
        return 0
    if query:
        window.query.setText(query)
        window.search()
    if node is not None:
        window.open_node(node)
    code = app.exec()
    window.close()
    memory.close()
    return code


def shoot(window, view: str, node: int | None, query: str | None) -> None:
    """Bring the window to `view`, waiting for every read and layout it needs."""
    window.wait_idle()
    if query and view != "switcher":
        window.query.setText(query)
        window.search()
        window.wait_idle()
        if window.results.count():
            window.results.setCurrentRow(0)
            window.wait_idle()
    if node is not None:
        window.open_node(node)
        window.wait_idle()
    if view == "graph":
        window.tabs.setCurrentWidget(window.graph_view)
    elif view == "local-graph" and node is not None:
        window.show_graph(node)
    elif view in ("review", "contradiction"):
        window.tabs.setCurrentWidget(window.review_view)
        window.wait_idle()
        if view == "contradiction":
            window.review_view.select_kind("contradiction")
            window.wait_idle()
        if window.review_view.items.count():
            window.review_view.items.setCurrentRow(0)
    elif view == "questions":
        window.tabs.setCurrentWidget(window.review_view)
        window.review_view.select_kind("questions")
        if window.review_view.questions.list.count():
            window.review_view.questions.list.setCurrentRow(0)
    elif view == "tags":
        window.tabs.setCurrentWidget(window.review_view)
        window.review_view.select_kind("tags")
    elif view == "browse":
        tags = window._sidebar.get("tags") or []
        if tags:
            window.browse({"view": "tag", "tag": tags[0][0]})
            window.sidebar.tags_item.setExpanded(True)
    elif view == "digests":
        window.show_digests()
        window.wait_idle()
        weekly = [i for i in range(window.digests_view.list.count())
                  if window.digests_view.list.item(i).text().startswith("Week ")]
        if weekly:                                                # a week reads best: its days follow it
            window.digests_view.list.setCurrentRow(weekly[0])
    elif view == "import":
        window.tabs.setCurrentWidget(window.import_panel)
    elif view == "switcher":
        window.open_switcher()
        window.switcher.text.setText(query or "deploy")
        window.wait_idle()
        import time

        time.sleep(0.3)                     # the switcher searches when typing pauses
        window.wait_idle()
    window.wait_idle()
