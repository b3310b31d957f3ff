"""`tidemind desktop`: open the window, or render one view to a PNG (`--screenshot`)."""
from __future__ import annotations

import os
import sys

from tidemind.memory import Memory


def run(home: str | None, screenshot: str | None = None, view: str = "search", node: int | None = None,
        query: str | None = None) -> int:
    if screenshot:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from .main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    memory = Memory.open(home, actor="person:desktop")
    window = MainWindow(memory)
    if query:
        window.query.setText(query)
        window.search()
        window.pool.waitForDone(10000)          # the search runs on the worker thread
        app.processEvents()
    if node is not None:
        window.open_node(node)
    if view == "graph" and node is not None:
        window.show_graph(node)
        window.pool.waitForDone(10000)
        app.processEvents()
    if view == "review":
        window.tabs.setCurrentWidget(window.review_view)
        if window.review_view.items.count():
            window.review_view.items.setCurrentRow(0)
    window.show()
    if screenshot:
        app.processEvents()
        window.grab().save(screenshot)
        window.close()
        memory.close()
        return 0
    code = app.exec()
    window.close()
    memory.close()
    return code
