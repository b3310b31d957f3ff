"""The review queue: what waits for a person, with approve / reject / reopen."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QSplitter, QVBoxLayout,
                               QWidget)


class ReviewView(QWidget):
    decided = Signal(int, str)          # item id, decision

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        split = QSplitter()
        self.items = QListWidget()
        self.detail = QLabel("Nothing selected.")
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.detail.setMinimumWidth(320)
        split.addWidget(self.items)
        split.addWidget(self.detail)
        split.setSizes([320, 560])
        layout.addWidget(split)
        buttons = QHBoxLayout()
        for label, decision in (("Approve", "approved"), ("Reject", "rejected"), ("Reopen", "open")):
            b = QPushButton(label)
            b.setObjectName(f"review-{decision}")
            b.clicked.connect(lambda _=False, d=decision: self._decide(d))
            buttons.addWidget(b)
        layout.addLayout(buttons)
        self.items.currentItemChanged.connect(self._show)
        self._data: dict[int, dict] = {}

    def load(self, items: list[dict], details: dict[int, dict]):
        current = self.items.currentItem().data(256) if self.items.currentItem() else None
        self.items.clear()
        self._data = details
        for r in items:
            item = QListWidgetItem(f"#{r['id']} {r['kind']} · {r['status']} · nodes "
                                   + ", ".join(str(i) for i in (r["node_id"], r["other_node_id"]) if i))
            item.setData(256, r["id"])
            self.items.addItem(item)
            if r["id"] == current:
                self.items.setCurrentItem(item)
        if not items:
            self.detail.setText("The review queue is empty.")

    def _show(self, item, _previous=None):
        if item is None:
            return
        r = self._data.get(item.data(256))
        if not r:
            return
        parts = [f"<b>#{r['id']} {html.escape(r['kind'])}</b> ({html.escape(r['status'])})"]
        if r.get("synthesis"):
            parts.append(f"<i>derived text ({html.escape(r['synthesis']['status'])}):</i> "
                         f"{html.escape(r['synthesis']['text'][:600])}")
        for key, value in sorted(r["payload"].items()):
            parts.append(f"{html.escape(key)}: {html.escape(str(value))[:300]}")
        for node in r.get("nodes", []):
            parts.append(f"<hr><b>node {node['id']}</b> recorded {node['recorded_at'][:19]}<br>"
                         f"{html.escape(node['content'][:600])}")
        self.detail.setText("<br>".join(parts))

    def _decide(self, decision: str):
        item = self.items.currentItem()
        if item is not None:
            self.decided.emit(item.data(256), decision)
