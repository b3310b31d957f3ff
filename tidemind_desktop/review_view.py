"""The review queue: what waits for a person, with approve / reject / reopen; above it, the
questions memories wait on (answer in your words, pick a suggestion, or skip)."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QListWidget,
                               QListWidgetItem, QPushButton, QSplitter, QVBoxLayout, QWidget)

MAX_SUGGESTIONS = 4


class QuestionsPanel(QGroupBox):
    """Open clarifying questions: the unit's own words, the question, its suggested answers."""
    answered = Signal(int, str)         # question id, answer
    skipped = Signal(int)

    def __init__(self, parent=None):
        super().__init__("Questions memories wait on", parent)
        layout = QHBoxLayout(self)
        self.list = QListWidget()
        self.list.setObjectName("questions")
        self.list.setMaximumWidth(240)
        layout.addWidget(self.list)
        right = QVBoxLayout()
        self.detail = QLabel("No open questions.")
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        right.addWidget(self.detail, 1)
        self.suggestions = QHBoxLayout()
        self.suggestion_buttons = []
        for n in range(MAX_SUGGESTIONS):
            b = QPushButton()
            b.setObjectName(f"suggestion-{n}")
            b.clicked.connect(lambda _=False, b=b: self.answer.setText(b.text()))
            b.hide()
            self.suggestions.addWidget(b)
            self.suggestion_buttons.append(b)
        self.suggestions.addStretch(1)
        right.addLayout(self.suggestions)
        row = QHBoxLayout()
        self.answer = QLineEdit()
        self.answer.setObjectName("answer")
        self.answer.setPlaceholderText("your answer (kept beside the memory; its text is never changed)")
        self.answer.returnPressed.connect(self._answer)
        row.addWidget(self.answer, 1)
        for label, slot in (("Answer", self._answer), ("Skip", self._skip)):
            b = QPushButton(label)
            b.setObjectName(f"question-{label.lower()}")
            b.clicked.connect(slot)
            row.addWidget(b)
        right.addLayout(row)
        layout.addLayout(right, 1)
        self.list.currentItemChanged.connect(self._show)
        self._data: dict[int, dict] = {}

    def load(self, questions: list[dict]):
        current = self.list.currentItem().data(256) if self.list.currentItem() else None
        self.list.clear()
        self._data = {q["id"]: q for q in questions}
        for q in questions:
            item = QListWidgetItem(f"node {q['node_id']}: {q['term']}" + (" (held)" if q["held"] else ""))
            item.setToolTip(q["question"])
            item.setData(256, q["id"])
            self.list.addItem(item)
            if q["id"] == current:
                self.list.setCurrentItem(item)
        if questions and self.list.currentItem() is None:
            self.list.setCurrentRow(0)
        if not questions:
            self.detail.setText("No open questions.")
            for b in self.suggestion_buttons:
                b.hide()

    def _show(self, item, _previous=None):
        q = self._data.get(item.data(256)) if item is not None else None
        if not q:
            return
        hold = (f"out of search until {q['hold_until'][:16].replace('T', ' ')} UTC unless answered or skipped"
                if q["held"] else "searchable already (its time limit passed); an answer still helps search")
        self.detail.setText(f"<b>{html.escape(q['question'])}</b><br><i>node {q['node_id']} · {html.escape(q['scope'])}"
                            f" · written {q['valid_from'][:10]} · {hold}</i><hr>{html.escape(q['content'][:800])}")
        for n, b in enumerate(self.suggestion_buttons):
            if n < len(q["options"]):
                b.setText(q["options"][n])
                b.show()
            else:
                b.hide()
        self.answer.clear()

    def _current(self) -> int | None:
        item = self.list.currentItem()
        return item.data(256) if item is not None else None

    def _answer(self):
        question = self._current()
        if question is not None and self.answer.text().strip():
            self.answered.emit(question, self.answer.text())

    def _skip(self):
        question = self._current()
        if question is not None:
            self.skipped.emit(question)


class ReviewView(QWidget):
    decided = Signal(int, str)          # item id, decision
    filter_changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.questions = QuestionsPanel()
        layout.addWidget(self.questions)
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
        layout.addWidget(split, 2)
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
