"""The quick switcher (Ctrl+K): type a few words, arrow to a memory, a scope or a tag, Enter.

Memories are found by the same full-text search the agents use (words only: it answers as
you type, in milliseconds), on the window's worker thread; scopes and tags come from the
sidebar's counts. Nothing is recorded as a search hit.
"""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QDialog, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout

from . import theme
from .results import HTML, RichDelegate, marked, terms_of

TARGET = 259


class QuickSwitcher(QDialog):
    chosen = Signal(dict)               # {"node": id} | {"view": ..., "scope"/"tag": ...}
    lookup = Signal(str)                # the window searches; answers with `show_memories`

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Go to…")
        self.setModal(True)
        self.resize(560, 380)
        layout = QVBoxLayout(self)
        self.text = QLineEdit()
        self.text.setPlaceholderText("Go to a memory, scope or #tag…")
        self.list = QListWidget()
        self.list.setItemDelegate(RichDelegate(self.list))
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        layout.addWidget(self.text)
        layout.addWidget(self.list, 1)
        self.places: list[tuple[str, dict]] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)       # one search when typing pauses, not one per key
        self._timer.timeout.connect(lambda: self.lookup.emit(self.text.text().strip()))
        self.text.textChanged.connect(self._typed)
        self.text.returnPressed.connect(self._accept)
        self.list.itemActivated.connect(lambda _: self._accept())
        self.text.installEventFilter(self)
        self.memories: list[dict] = []

    def open_with(self, places: list[tuple[str, dict]]) -> None:
        self.places = places
        self.text.clear()
        self._show([])
        self.show()
        self.raise_()
        self.text.setFocus()

    def eventFilter(self, obj, event):
        if obj is self.text and event.type() == event.Type.KeyPress and event.key() in (Qt.Key_Down, Qt.Key_Up):
            row = self.list.currentRow() + (1 if event.key() == Qt.Key_Down else -1)
            self.list.setCurrentRow(max(0, min(self.list.count() - 1, row)))
            return True
        return super().eventFilter(obj, event)

    def _typed(self, text: str):
        self._show(self.memories)
        if text.strip():
            self._timer.start()

    def show_memories(self, query: str, items: list[dict]) -> None:
        if query == self.text.text().strip():
            self.memories = items
            self._show(items)

    def _show(self, memories: list[dict]) -> None:
        query = self.text.text().strip()
        terms = terms_of(query)
        needle = query.lstrip("#").casefold()
        self.list.clear()
        places = [(label, target) for label, target in self.places if needle and needle in label.casefold()][:6]
        for item in memories[:20]:
            row = QListWidgetItem(f"#{item['id']} {item['title']}")
            where = theme.muted(f"#{item['id']} · {html.escape(item['scope'])}")
            row.setData(HTML, f"{marked(item['title'][:100], terms)} {where}")
            row.setData(TARGET, {"node": item["id"]})
            self.list.addItem(row)
        for label, target in places:
            row = QListWidgetItem(label)
            row.setData(HTML, f"{marked(label, terms)} {theme.muted('· list')}")
            row.setData(TARGET, target)
            self.list.addItem(row)
        if self.list.count():
            self.list.setCurrentRow(0)

    def _accept(self):
        item = self.list.currentItem()
        if item is not None:
            self.chosen.emit(dict(item.data(TARGET)))
            self.hide()
