"""The proposed-tags queue: the names the passes proposed, grouped, each with how many memories
carry it and in which scopes. One decision per name: Reject everywhere says "never this tag
here" in each of those scopes (no pass proposes it there again, its proposals are withdrawn; a
person's own tags of that name stay), and Undo lifts it, putting the proposals back exactly.
Open shows the memories that carry the name. Built on `Memory.tag_listing`,
`Memory.tag_reject_everywhere` and `Memory.tag_unreject_everywhere`."""
from __future__ import annotations

import html
from urllib.parse import quote, unquote

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton,
                               QVBoxLayout, QWidget)

from . import theme


def group(per_scope: dict[str, dict]) -> list[dict]:
    """Per-scope listings of proposed names into one row per name: its count in each scope."""
    names: dict[str, dict] = {}
    for scope, listing in per_scope.items():
        for t in listing.get("tags", []):
            if t.get("status", "proposed") != "proposed":
                continue
            row = names.setdefault(t["name"], {"name": t["name"], "count": 0, "scopes": {}})
            row["count"] += t["count"]
            row["scopes"][scope] = row["scopes"].get(scope, 0) + t["count"]
    return sorted(names.values(), key=lambda r: (-r["count"], r["name"]))


class TagsQueue(QWidget):
    reject_requested = Signal(str, list)          # name, scopes
    accept_requested = Signal(str, list)          # name, scopes: every proposal of it there confirmed
    lift_requested = Signal(str, list)            # name, scopes (undo a "never here")
    open_requested = Signal(str)                  # show the memories carrying the name

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.intro = QLabel("Names the passes proposed, most used first. Accept everywhere: every proposal of the"
                            " name in those scopes becomes your tag. Reject everywhere: no pass proposes the name"
                            " in those scopes again and its proposals are withdrawn (your own tags of that name"
                            " stay). Undo puts everything back.")
        self.intro.setWordWrap(True)
        layout.addWidget(self.intro)
        self.list = QListWidget()
        self.list.setObjectName("proposed-tags")
        self.list.setWordWrap(True)
        self.list.setAlternatingRowColors(True)
        self.list.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        layout.addWidget(self.list, 1)
        row = QHBoxLayout()
        self.accept = QPushButton("Accept everywhere  (A)")
        self.accept.setObjectName("tags-accept-everywhere")
        self.accept.setToolTip("Confirm this name on every memory it is proposed on, in those scopes (undoable)")
        self.reject = QPushButton("Reject everywhere  (R)")
        self.reject.setObjectName("tags-reject-everywhere")
        self.open = QPushButton("Show its memories")
        self.open.setObjectName("tags-open")
        for b in (self.accept, self.reject, self.open):
            row.addWidget(b)
        row.addStretch(1)
        layout.addLayout(row)
        self.rejected = QLabel("")
        self.rejected.setObjectName("rejected-everywhere")
        self.rejected.setWordWrap(True)
        self.rejected.setTextFormat(Qt.RichText)
        self.rejected.linkActivated.connect(self._lift)
        layout.addWidget(self.rejected)
        self.reject.clicked.connect(self._reject)
        self.accept.clicked.connect(self._accept)
        self.open.clicked.connect(self._open)
        self.list.itemActivated.connect(lambda _: self._open())
        self.list.installEventFilter(self)
        self.rows: list[dict] = []
        self.tombstones: list[dict] = []

    def eventFilter(self, obj, event):
        # R on the list (which would otherwise jump to a name starting with r)
        if obj is self.list and event.type() == event.Type.KeyPress and event.key() in (Qt.Key_R, Qt.Key_A) \
                and not event.modifiers():
            (self._reject if event.key() == Qt.Key_R else self._accept)()
            return True
        return super().eventFilter(obj, event)

    def load(self, rows: list[dict], tombstones: list[dict]) -> None:
        shown = [(r["name"], r["count"], tuple(sorted(r["scopes"].items()))) for r in rows]
        if shown != [(r["name"], r["count"], tuple(sorted(r["scopes"].items()))) for r in self.rows]:
            current = self.list.currentItem().data(256) if self.list.currentItem() else None
            row_at = self.list.currentRow()
            self.list.clear()
            for r in rows:
                where = ", ".join(f"{n:,} in {s}" for s, n in sorted(r["scopes"].items(), key=lambda x: -x[1]))
                item = QListWidgetItem(f"#{r['name']} · {r['count']:,} proposal(s)\n{where}")
                item.setData(256, r["name"])
                self.list.addItem(item)
            names = [r["name"] for r in rows]
            if current in names:
                self.list.setCurrentRow(names.index(current))
            elif rows:
                self.list.setCurrentRow(min(max(row_at, 0), len(rows) - 1))      # the next name comes up
            self.rows = rows
        self.tombstones = tombstones
        if tombstones:
            lines = [f"#{html.escape(t['name'])} in {html.escape(t['scope'])} · "
                     f"<a href='lift/{quote(t['scope'], safe='')}/{quote(t['name'], safe='')}'>lift</a>"
                     for t in tombstones]
            self.rejected.setText("<b>Rejected everywhere</b><br>" + "<br>".join(lines))
        else:
            self.rejected.setText(theme.muted("No name is rejected everywhere."))

    def _chosen(self) -> list[dict]:
        names = {i.data(256) for i in self.list.selectedItems()} or (
            {self.list.currentItem().data(256)} if self.list.currentItem() else set())
        return [r for r in self.rows if r["name"] in names]

    def _reject(self):
        for r in self._chosen():
            self.reject_requested.emit(r["name"], sorted(r["scopes"]))

    def _accept(self):
        for r in self._chosen():
            self.accept_requested.emit(r["name"], sorted(r["scopes"]))

    def _open(self):
        chosen = self._chosen()
        if chosen:
            self.open_requested.emit(chosen[0]["name"])

    def _lift(self, href: str):
        _, scope, name = href.split("/", 2)
        self.lift_requested.emit(unquote(name), [unquote(scope)])
