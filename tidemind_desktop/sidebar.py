"""Browse without a query: recent, all, flagged, archived, each scope and tag with its count, and
the digests (each day and week of the chosen scope, in the Digests tab).
Counts are updated in place (the tree is not rebuilt), so a refresh never moves the selection."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QTreeWidget, QTreeWidgetItem

REQUEST = 256


class Sidebar(QTreeWidget):
    chosen = Signal(dict)               # a browse request: {"view": ..., "scope"?: ..., "tag"?: ...}

    TOP = (("Recent", {"view": "recent"}), ("All memories", {"view": "all"}),
           ("Flagged", {"view": "flagged"}), ("Archived", {"view": "archived"}),
           ("Digests", {"view": "digests"}))        # each day and week summarised: opens the Digests tab

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setHeaderHidden(True)
        self.setColumnCount(2)
        self.setRootIsDecorated(True)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setUniformRowHeights(True)
        self.header().setStretchLastSection(False)
        self.header().setSectionResizeMode(0, self.header().ResizeMode.Stretch)
        # the counts' column is as wide as its widest count, hidden rows included: sized to its
        # contents Qt measured only the rows on screen, and a tag's "228" showed as "22" once expanded
        self.header().setSectionResizeMode(1, self.header().ResizeMode.Fixed)
        self.items: dict[str, QTreeWidgetItem] = {}
        for label, request in self.TOP:
            self.items[request["view"]] = self._add(self, label, request)
        self.scopes_item = self._add(self, "Scopes", None)
        self.tags_item = self._add(self, "Tags", None)
        self.scopes_item.setExpanded(True)
        self.itemActivated.connect(self._emit)
        self.itemClicked.connect(self._emit)

    @staticmethod
    def _add(parent, label: str, request: dict | None) -> QTreeWidgetItem:
        item = QTreeWidgetItem(parent, [label, ""])
        item.setData(0, REQUEST, request)
        item.setTextAlignment(1, Qt.AlignRight | Qt.AlignVCenter)
        if request is None:
            item.setFlags(item.flags() & ~Qt.ItemIsSelectable)
        return item

    def _emit(self, item, _column=0):
        request = item.data(0, REQUEST)
        if request:
            self.chosen.emit(dict(request))

    def _sync_children(self, parent: QTreeWidgetItem, wanted: list[tuple[str, int, dict]]):
        """Children in this order with these counts, updating rows in place where they exist."""
        for i, (label, count, request) in enumerate(wanted):
            child = parent.child(i)
            if child is None or child.text(0) != label:
                if child is not None:
                    for j in range(i + 1, parent.childCount()):      # moved further down: reuse it
                        if parent.child(j).text(0) == label:
                            child = parent.takeChild(j)
                            parent.insertChild(i, child)
                            break
                    else:
                        child = None
                if child is None:
                    child = QTreeWidgetItem([label, ""])
                    child.setData(0, REQUEST, request)
                    child.setTextAlignment(1, Qt.AlignRight | Qt.AlignVCenter)
                    parent.insertChild(i, child)
            if child.text(1) != f"{count:,}":
                child.setText(1, f"{count:,}")
        while parent.childCount() > len(wanted):
            parent.removeChild(parent.child(parent.childCount() - 1))

    def load(self, data: dict) -> None:
        for key, count in (("recent", data["live"]), ("all", data["live"]), ("flagged", data["flagged"]),
                           ("archived", data["archived"])):
            if self.items[key].text(1) != f"{count:,}":
                self.items[key].setText(1, f"{count:,}")
        self._sync_children(self.scopes_item, [(s, n, {"view": "recent", "scope": s})
                                               for s, n in data["scopes"].items()])
        self._sync_children(self.tags_item, [(f"#{t}", n, {"view": "tag", "tag": t}) for t, n in data["tags"]])
        self.scopes_item.setText(1, f"{len(data['scopes'])}")
        self.tags_item.setText(1, f"{len(data['tags'])}")
        self._fit_counts()

    def _fit_counts(self) -> None:
        counts = [self.topLevelItem(i).text(1) for i in range(self.topLevelItemCount())]
        counts += [parent.child(i).text(1) for parent in (self.scopes_item, self.tags_item)
                   for i in range(parent.childCount())]
        metrics = self.fontMetrics()
        width = max((metrics.horizontalAdvance(c) for c in counts if c), default=0) + 2 * metrics.averageCharWidth() + 4
        if self.header().sectionSize(1) != width:
            self.header().resizeSection(1, width)

    def select_request(self, request: dict) -> None:
        """Show which list is open (a tag chip clicked elsewhere opens its tag view)."""
        for item in [*self.items.values(), *(self.scopes_item.child(i) for i in range(self.scopes_item.childCount())),
                     *(self.tags_item.child(i) for i in range(self.tags_item.childCount()))]:
            if item.data(0, REQUEST) == request:
                self.blockSignals(True)
                self.setCurrentItem(item)
                self.blockSignals(False)
                return
        self.clearSelection()
