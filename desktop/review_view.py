"""The review queue: what waits for a person, with approve / reject / reopen."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QSplitter, QVBoxLayout,
                               QWidget)


class ReviewView(QWidget):
    decided = Signal(int, str)          # item id, decision
    filter_changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        split = QSplitter()
        self.items = QListWidget()
        self.items.setSelectionMode(QAbstractItemView.ExtendedSelection)     # bulk decisions
        self.detail = QLabel("Nothing selected.")
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.detail.setMinimumWidth(320)
        split.addWidget(self.items)
        split.addWidget(self.detail)
        split.setSizes([320, 560])
        layout.addWidget(split)
        buttons = QHBoxLayout()
        self.show_decided = QCheckBox("show decided (history)")
        self.show_decided.toggled.connect(lambda _: self.filter_changed.emit())
        buttons.addWidget(self.show_decided)
        for label, decision in (("Approve", "approved"), ("Reject", "rejected"), ("Defer", "defer"),
                                ("Reopen", "open")):
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
            label = f"link {-r['id']}" if r["id"] < 0 else f"#{r['id']}"
            node_ids = [str(i) for i in (r["node_id"], r["other_node_id"]) if i]
            about = ("nodes " + ", ".join(node_ids)) if node_ids else str((r.get("payload") or {}).get("name", ""))
            item = QListWidgetItem(f"{label} {r['kind']} · {r['status']} · {about}")
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
        nodes = r.get("nodes", [])
        if len(nodes) == 2:            # merges and contradictions: both texts side by side, with their dates
            cells = "".join(f"<td width='50%' valign='top'><b>node {n['id']}</b><br><i>valid {n['valid_from'][:10]},"
                            f" recorded {n['recorded_at'][:19]}</i><br>{html.escape(n['content'][:600])}</td>"
                            for n in nodes)
            parts.append(f"<table width='100%' cellspacing='8'><tr>{cells}</tr></table>")
        else:
            for node in nodes:
                parts.append(f"<hr><b>node {node['id']}</b> recorded {node['recorded_at'][:19]}<br>"
                             f"{html.escape(node['content'][:600])}")
        if r.get("resolved_at"):
            parts.append(f"<i>decided {html.escape(r['status'])} by {html.escape(str(r.get('resolved_by')))}"
                         f" at {r['resolved_at'][:19]} (reopen to change it)</i>")
        self.detail.setText("<br>".join(parts))

    def _decide(self, decision: str):
        chosen = self.items.selectedItems() or ([self.items.currentItem()] if self.items.currentItem() else [])
        if decision == "defer":            # leave it open, look at the next one
            row = self.items.currentRow()
            if row + 1 < self.items.count():
                self.items.setCurrentRow(row + 1)
            return
        ids = [item.data(256) for item in chosen]     # read before the first decision reloads the list
        for item_id in ids:
            self.decided.emit(item_id, decision)
