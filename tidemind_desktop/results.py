"""The list on the left: search results (title, where from, a snippet with the matched words
marked) or a browsed list (recent, all, a scope, a tag, archived, flagged) a page at a time.
Rows are rich text drawn by a delegate in the palette's colours."""
from __future__ import annotations

import contextlib
import html
import re

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAbstractTextDocumentLayout, QPalette, QTextDocument
from PySide6.QtWidgets import QAbstractItemView, QListWidget, QListWidgetItem, QStyle, QStyledItemDelegate

from . import theme

ID, HTML, ROW = 256, 257, 258          # item data roles: node id, row text, the row's data
_WORD = re.compile(r"\w{2,}", re.UNICODE)


def terms_of(query: str) -> list[str]:
    """The words of a query worth marking (two letters or more), longest first."""
    return sorted({w.casefold() for w in _WORD.findall(query or "")}, key=len, reverse=True)


def marked(text: str, terms: list[str]) -> str:
    """`text` as HTML with every word that starts with one of `terms` marked."""
    if not terms:
        return html.escape(text)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\w*", re.IGNORECASE | re.UNICODE)
    out, at = [], 0
    for m in pattern.finditer(text):
        out.append(html.escape(text[at:m.start()]))
        out.append(theme.mark(html.escape(m.group(0))))
        at = m.end()
    out.append(html.escape(text[at:]))
    return "".join(out)


def snippet(content: str, terms: list[str], width: int = 170) -> str:
    """A window of the text around the first matched word, the matches marked (HTML)."""
    flat = " ".join(content.split())
    first = None
    if terms:
        found = re.search(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")", flat, re.IGNORECASE | re.UNICODE)
        first = found.start() if found else None
    start = max(0, (first or 0) - width // 3)
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    piece = flat[start:start + width]
    return ("…" if start else "") + marked(piece, terms) + ("…" if start + width < len(flat) else "")


def _beyond(content: str, title: str) -> str:
    """The text a row shows under its title: what the title does not already say."""
    flat = " ".join(content.split())
    head = title.rstrip("…").rstrip(".")
    return flat[len(head):].lstrip(" .:—-") if head and flat.startswith(head) else flat


class RichDelegate(QStyledItemDelegate):
    """Draws a row's HTML with the palette's text colour (the selection's, when selected)."""

    def paint(self, painter, option, index):
        self.initStyleOption(option, index)
        style = option.widget.style() if option.widget else None
        text_html = index.data(HTML)
        option.text = ""
        if style is not None:
            style.drawControl(QStyle.CE_ItemViewItem, option, painter, option.widget)
        doc = QTextDocument()
        doc.setDocumentMargin(4)
        doc.setDefaultFont(option.font)
        doc.setHtml(text_html or "")
        doc.setTextWidth(max(80, option.rect.width()))
        ctx = QAbstractTextDocumentLayout.PaintContext()
        selected = bool(option.state & QStyle.State_Selected)
        ctx.palette.setColor(QPalette.Text, option.palette.color(QPalette.HighlightedText if selected else QPalette.Text))
        painter.save()
        painter.translate(option.rect.topLeft())
        painter.setClipRect(option.rect.translated(-option.rect.topLeft()))
        doc.documentLayout().draw(painter, ctx)
        painter.restore()

    def __init__(self, parent=None):
        super().__init__(parent)
        self._heights: dict[tuple[str, int], int] = {}

    def sizeHint(self, option, index):
        """Heights are kept per text and width: a list re-lays out every row when a page is added,
        and laying out hundreds of rich-text rows each time stalled the window."""
        width = option.widget.viewport().width() if option.widget else 300
        text = index.data(HTML) or ""
        key = (text, width)
        height = self._heights.get(key)
        if height is None:
            self.initStyleOption(option, index)
            doc = QTextDocument()
            doc.setDocumentMargin(4)
            doc.setDefaultFont(option.font)
            doc.setHtml(text)
            doc.setTextWidth(max(80, width))
            height = int(doc.size().height()) + 2
            if len(self._heights) > 4000:
                self._heights.clear()
            self._heights[key] = height
        return QSize(width, height)


class ResultList(QListWidget):
    more_wanted = Signal()              # scrolled to the end of a list that has more

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setItemDelegate(RichDelegate(self))
        self.setWordWrap(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)      # rows wrap: never sideways
        self.setVerticalScrollMode(QAbstractItemView.ScrollPerPixel)
        self.setUniformItemSizes(False)
        self.total = 0
        self.source: dict = {}          # what the list shows: {"search": query} or a browse request
        self.verticalScrollBar().valueChanged.connect(self._scrolled)

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self.doItemsLayout()            # rows re-wrap to the new width

    def _scrolled(self, value: int):
        bar = self.verticalScrollBar()
        if self.count() < self.total and value >= bar.maximum() - 40:
            self.more_wanted.emit()

    def _row(self, item: dict, body: str) -> QListWidgetItem:
        meta = theme.muted(f"#{item['id']} · {html.escape(item['scope'])}"
                           + (f" · {item['recorded_at'][:10]}" if item.get("recorded_at") else "")
                           + (f" · score {item['score']}" if item.get("score") is not None else "")
                           + (" · archived" if item.get("status") == "archived" else ""))
        row = QListWidgetItem()
        row.setData(ID, item["id"])
        row.setData(HTML, f"<b>{body}</b><br>{meta}" + (f"<br>{item['snippet']}" if item.get("snippet") else ""))
        row.setData(ROW, {k: item.get(k) for k in ("id", "title", "scope", "status", "content")})
        row.setToolTip(item.get("title") or "")
        row.setText(f"#{item['id']} {item.get('title', '')}")       # plain text: accessibility, find, tests
        return row

    @contextlib.contextmanager
    def _filling(self, keep_current: bool = False):
        """The list changed by the program, not by the person: no row becomes current on its own
        (the window opens the current row: a refill that left the old row number current opened
        another memory, and moved the window to it), and no signal says so."""
        current = self.currentItem() if keep_current else None
        blocked = self.blockSignals(True)
        try:
            yield
        finally:
            if current is not None and self.row(current) >= 0:
                self.setCurrentItem(current)
            else:
                self.setCurrentRow(-1)
            self.blockSignals(blocked)

    def clear(self) -> None:
        with self._filling():           # (emptied, the rows after the current one became current in turn)
            super().clear()

    def show_search(self, query: str, items: list[dict]) -> None:
        terms = terms_of(query)
        with self._filling():
            self.clear()
            self.source, self.total = {"search": query}, len(items)
            for item in items:
                title = item.get("title") or ""
                more = _beyond(item["content"], title)
                self.addItem(self._row({**item, "snippet": snippet(item["content"], terms) if more else ""},
                                       marked(title[:120], terms)))

    def show_page(self, request: dict, page: dict, append: bool = False) -> None:
        with self._filling(keep_current=append):
            if not append:
                self.clear()
            self.source, self.total = request, page["total"]
            for item in page["items"]:
                rest = _beyond(item["content"], item["title"])
                self.addItem(self._row({**item, "snippet": html.escape(rest[:170]) + ("…" if len(rest) > 170 else "")},
                                       html.escape(item["title"][:120])))

    def drop(self, node_ids) -> None:
        gone = set(node_ids)
        with self._filling(keep_current=True):
            for row in reversed(range(self.count())):
                if self.item(row).data(ID) in gone:
                    self.takeItem(row)
                    self.total = max(0, self.total - 1)
