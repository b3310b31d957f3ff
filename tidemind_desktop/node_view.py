"""One memory: authored text as written, the derived layer labelled with its generator, tags as
chips that show their status (confirm / reject / undo; the name opens the tag's list), links
and backlinks by title (click to open), provenance, both clocks, and the version history."""
from __future__ import annotations

import html
from urllib.parse import unquote

from PySide6.QtCore import QEvent, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (QFrame, QGridLayout, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QScrollArea,
                               QSizePolicy, QTextBrowser, QToolButton, QVBoxLayout, QWidget)

from tidemind.views import title_of

from . import theme
from .markdown import HERE, IMAGE_SCHEME, link_target, page_markdown, to_markdown


def version_diff(old: str, new: str) -> str:
    """A word-level diff as HTML: removed words struck through, added ones bold, in colours
    chosen for the palette's background."""
    import difflib

    a, b = old.split(), new.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(html.escape(" ".join(a[i1:i2])))
        if op in ("delete", "replace"):
            out.append(f"<span style='color:{theme.colour('removed')};text-decoration:line-through'>"
                       f"{html.escape(' '.join(a[i1:i2]))}</span>")
        if op in ("insert", "replace"):
            out.append(f"<span style='color:{theme.colour('added')};font-weight:bold'>"
                       f"{html.escape(' '.join(b[j1:j2]))}</span>")
    return " ".join(out)


def _label(text: str, rich: bool = True) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextFormat(Qt.RichText if rich else Qt.PlainText)
    label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)     # wraps instead of widening the view
    return label


class NoteBrowser(QTextBrowser):
    """The rendered text. QTextBrowser keeps a history of its own and claims Alt+Left/Right for
    it, which took the window's back and forward away whenever the text had the focus: left to
    the window (it never navigates itself: every link is handled by the node view)."""

    images: dict = {}         # name as the note wrote it -> QImage read from the vault (on the worker)

    def loadResource(self, kind, url):
        # the vault's images come read and scaled already: nothing is read from disk here
        if url.scheme() == IMAGE_SCHEME:
            image = self.images.get(unquote(url.toString(QUrl.FullyEncoded).split(":", 1)[1]))
            room = max(120, self.viewport().width() - 24)
            if image is not None and image.width() > room:       # (the page narrower than the image)
                image = image.scaledToWidth(room, Qt.SmoothTransformation)
            return image
        if url.scheme() in ("http", "https", "file"):
            return None                               # (a note's remote image is named, never fetched)
        return super().loadResource(kind, url)

    def event(self, event):
        if (event.type() == QEvent.ShortcutOverride and event.modifiers() & Qt.AltModifier
                and event.key() in (Qt.Key_Left, Qt.Key_Right)):
            event.ignore()
            return False
        return super().event(event)


def _scroll_to_here(view: QTextBrowser) -> None:
    if view.find(HERE):
        cursor = view.textCursor()
        cursor.clearSelection()
        view.setTextCursor(cursor)
        bar = view.verticalScrollBar()             # its line at the top, the section below it in view
        bar.setValue(min(bar.maximum(), view.cursorRect().top() + bar.value() - 4))


def page_title(node: dict) -> str:
    """An imported section is titled by its note and the headings it sits under ("Core plugins ›
    Graph view"), not by its first sentence; any other memory by its title."""
    note = node.get("note")
    if note and note.get("note"):
        parts: list[str] = []
        for part in [note["note"], *note.get("headings", [])]:
            if part and (not parts or part.casefold() != parts[-1].casefold()):   # (a note's H1 is often its name)
                parts.append(part)
        return " › ".join(parts)
    return title_of(node)


CHIP_WIDTH = 300          # about what a proposed chip with confirm and reject takes
CHIP_NAME = 28            # characters of a tag's name on its chip (the tooltip has it whole)


class TagChip(QWidget):
    toggled = Signal(str, bool)          # name, reject?
    confirmed = Signal(str)
    opened = Signal(str)                 # the name was clicked: open the tag's list

    def __init__(self, name: str, status: str, parent=None):
        super().__init__(parent)
        self.name, self.status = name, status
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 6, 0)
        shown = name if len(name) <= CHIP_NAME else name[:CHIP_NAME - 1] + "…"     # a chip never outgrows the view
        self.label = QPushButton(f"#{shown} · {status.replace('_by_user', '')}")
        self.label.setFlat(True)
        self.label.setCursor(Qt.PointingHandCursor)
        self.label.setToolTip(f"Show every memory tagged {name}")      # the whole name, however long
        self.label.setStyleSheet(theme.CHIP.get(status, ""))
        self.label.clicked.connect(lambda: self.opened.emit(name))
        row.addWidget(self.label)
        if status == "proposed":
            self.confirm_button = QToolButton()           # compact: chips sit two to a row in a narrow window
            self.confirm_button.setText("confirm")
            self.confirm_button.setAutoRaise(True)
            self.confirm_button.clicked.connect(lambda: self.confirmed.emit(name))
            row.addWidget(self.confirm_button)
        self.button = QToolButton()
        self.button.setText("undo" if status == "rejected_by_user" else "reject")
        self.button.setAutoRaise(True)
        self.button.clicked.connect(lambda: self.toggled.emit(name, status != "rejected_by_user"))
        row.addWidget(self.button)


class NodeView(QScrollArea):
    tag_toggled = Signal(int, str, bool)   # node id, tag, reject?
    tag_confirmed = Signal(int, str)
    tag_opened = Signal(str)
    node_opened = Signal(int)              # a link or backlink was clicked
    note_link_opened = Signal(int, str)    # a [[link]] in the text was clicked: this memory, the name it gives
    action = Signal(str, int)              # 'edit' | 'archive' | 'restore' | 'forget' | 'tag' | 'graph', node id

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)          # everything wraps
        self.node_id: int | None = None
        self.node: dict | None = None
        self.inner = QWidget()
        self.layout_ = QVBoxLayout(self.inner)
        self.layout_.setAlignment(Qt.AlignTop)
        self.setWidget(self.inner)
        self.chips: dict[str, TagChip] = {}
        self.chip_grid: QGridLayout | None = None
        self.chips_per_row: int | None = None
        self._shown: tuple | None = None          # what show_node was given (drawn again on a theme switch)
        self._restyling = False
        self.show_message("Select a memory to see it here: search above, browse on the left, or press Ctrl+K.")

    def _chips_per_row(self, width: int | None = None) -> int:
        # two to a row where two fit: in a narrow window two proposed chips set the page's width, and
        # the title and derived lines were cut at the right edge (there is no sideways bar to show it)
        return 2 if (self.viewport().width() if width is None else width) >= CHIP_WIDTH * 2 else 1

    def _place_chips(self, width: int | None = None) -> None:
        grid, per_row = self.chip_grid, self._chips_per_row(width)
        self.chips_per_row = per_row
        for chip in self.chips.values():
            grid.removeWidget(chip)
        for column in range(3):
            grid.setColumnStretch(column, 0)
        for i, chip in enumerate(self.chips.values()):
            grid.addWidget(chip, i // per_row, i % per_row)
        grid.setColumnStretch(per_row, 1)

    def resizeEvent(self, event):
        super().resizeEvent(event)
        # the width the viewport is getting (it may not have it yet): the area less its bar and frame
        width = event.size().width() - self.verticalScrollBar().sizeHint().width() - 2 * self.frameWidth()
        if self.chips and self.chips_per_row != self._chips_per_row(width):
            self._place_chips(width)     # narrowed or widened across the line: chips follow
            self.inner.updateGeometry()

    def _clear(self):
        while self.layout_.count():
            item = self.layout_.takeAt(0)
            if item.widget():
                item.widget().setParent(None)      # gone now, not at the next event loop turn
        self.chips = {}

    def show_message(self, text: str):
        self._clear()
        self._shown = None
        self.node_id, self.node = None, None
        self.layout_.addWidget(_label(text, rich=False))

    def _actions(self, verbs) -> QWidget:
        actions = QWidget()
        row = QGridLayout(actions)                  # two rows at most: fits a narrow window
        row.setContentsMargins(0, 0, 0, 0)
        row.setAlignment(Qt.AlignLeft)
        for i, (verb, label) in enumerate(verbs):
            button = QPushButton(label)
            button.setObjectName(f"node-{verb}")
            button.clicked.connect(lambda _=False, v=verb: self.action.emit(v, self.node_id))
            row.addWidget(button, i // 4, i % 4)
        return actions

    def show_archived(self, row: dict):
        """An archived memory (hidden from every read): its words and the way back."""
        self._clear()
        self._shown = None
        self.node_id, self.node = row["id"], {**row, "archived": True}
        self.layout_.addWidget(_label(f"<h3>{html.escape(row.get('title') or '')}</h3>"
                                      f"Memory {row['id']} · <b>archived</b> (hidden from search and agents)"
                                      f" · scope <code>{html.escape(row['scope'])}</code>"))
        self.layout_.addWidget(self._actions((("restore", "Restore"), ("forget", "Forget…"))))
        self.layout_.addWidget(_label(row.get("content") or "", rich=False))

    def _rendered(self, node: dict) -> "NoteBrowser":
        view = NoteBrowser()
        view.images = node.get("images") or {}
        view.setObjectName("rendered")
        view.setOpenLinks(False)                 # every link is handled here: memories, notes, tags, the web
        view.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        page = node.get("page") or []
        whole = len(page) > 1                    # a note of several sections reads as one page
        shown = frozenset(view.images)
        view.setMarkdown(page_markdown(page, node["id"], shown) if whole else to_markdown(node["content"], shown))
        view.anchorClicked.connect(lambda url, node_id=node["id"]: self._link_clicked(node_id, url.toString()))
        view.document().setTextWidth(max(200, self.viewport().width() - 40))
        tall = int(min(560 if whole else 480, view.document().size().height() + 16))
        view.setMaximumHeight(tall)
        view.setMinimumHeight(min(tall, 360) if whole else 60)     # (a page gets room to be read in)
        if whole:   # the section on screen in view, not the note's top: once the page has its size
            QTimer.singleShot(0, view, lambda: _scroll_to_here(view))
        return view

    def _link_clicked(self, node_id: int, url: str) -> None:
        kind, value = link_target(url)
        if kind == "wikilink":
            self.note_link_opened.emit(node_id, value)
        elif kind == "tag":
            self.tag_opened.emit(value)
        elif kind == "node" and value.isdigit():
            self.node_opened.emit(int(value))
        elif kind == "web" and url.startswith(("http://", "https://")):
            QDesktopServices.openUrl(QUrl(url))

    def _linked_label(self, text: str, name: str) -> QLabel:
        label = _label(text)
        label.setObjectName(name)
        label.setTextInteractionFlags(Qt.LinksAccessibleByMouse | Qt.LinksAccessibleByKeyboard)
        label.linkActivated.connect(lambda href: self.node_opened.emit(int(href.split(":", 1)[1])))
        return label

    @staticmethod
    def _conversation(turns: list[dict]) -> str:
        """The session around a turn, as said; the turn read marked, the others a click away."""
        lines, last = [], None
        for t in turns:
            minute = t["valid_from"][:16].replace("T", " ")
            if minute != last:              # the time once for turns said in the same minute
                lines.append(theme.muted(minute))
                last = minute
            text = html.escape(t["content"][:400]).replace("\n", "<br>")
            lines.append(f"<b>{text}</b>" if t["here"] else f"<a href='node:{t['id']}'>{text}</a>")
        return f"<b>Conversation</b> ({len(turns)} turns of its session; this one in bold)<br>" + "<br>".join(lines)

    @staticmethod
    def _mentions(found: list[dict]) -> str:
        rows = [f"<a href='node:{m['id']}'>{html.escape(m['title'][:90])}</a> " + theme.muted(f"#{m['id']}")
                for m in found]
        return f"<b>Unlinked mentions</b> ({len(found)})<br>" + ("<br>".join(rows) or theme.muted("none"))

    def _links(self, node: dict, titles: dict[int, str]) -> str:
        def line(link: dict) -> str:
            target = link["target"]
            name = titles.get(target)
            shown = (f"<a href='node:{target}'>{html.escape(name[:90])}</a> {theme.muted(f'#{target}')}" if name
                     else theme.muted(f"#{target} (not visible here)"))
            return f"{shown} {theme.muted('· ' + html.escape(link['relation']) + ' · ' + html.escape(link['status']))}"
        out = [line(x) for x in node["links"] if x.get("direction", "out") == "out"]
        back = [line(x) for x in node["links"] if x.get("direction") == "in"]
        return (f"<b>Links</b> ({len(out)})<br>" + ("<br>".join(out) or theme.muted("none"))
                + f"<br><b>Backlinks</b> ({len(back)})<br>" + ("<br>".join(back) or theme.muted("none")))

    def changeEvent(self, event):
        # rich text takes its colours (links too) when it is set, and a style sheet its palette roles
        # when it is applied: a theme switched while the page is open drew dark-blue links on dark
        # and a white Derived box. The page is drawn again from what it shows, once the switch is done.
        if event.type() == QEvent.PaletteChange and self._shown is not None and not self._restyling:
            self._restyling = True
            QTimer.singleShot(0, self._redraw)
        super().changeEvent(event)

    def _redraw(self) -> None:
        self._restyling = False
        if self._shown is not None:
            at = self.verticalScrollBar().value()
            self.show_node(*self._shown)
            QTimer.singleShot(0, lambda: self.verticalScrollBar().setValue(at))

    def show_node(self, node: dict, all_tags: list[dict], titles: dict[int, str] | None = None):
        self._clear()
        self._shown = (node, all_tags, titles)
        self.node_id, self.node = node["id"], node
        titles = titles or {}
        self.layout_.addWidget(_label(f"<h3>{html.escape(page_title(node))}</h3>Memory {node['id']} · {node['status']}"
                                      f" · scope <code>{html.escape(node['scope'])}</code>"))
        self.layout_.addWidget(self._actions((("edit", "Edit…"), ("tag", "Add tag…"), ("graph", "Local graph"),
                                              ("archive", "Archive"), ("forget", "Forget…"))))
        authored = QPlainTextEdit(node["content"])
        authored.setReadOnly(True)
        authored.setObjectName("authored")
        authored.setMinimumHeight(70)
        authored.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        lines = node["content"].count("\n") + 1 + len(node["content"]) // 90
        authored.setMaximumHeight(min(320, 40 + 18 * max(lines, 2)))
        rendered = self._rendered(node)
        # a note reads as a note (Markdown rendered, its links and tags clickable); the bytes as
        # written are one click away, and are what a conversation turn shows first
        as_note = bool(node.get("note"))
        toggle = QToolButton()
        toggle.setObjectName("as-written")
        toggle.setCheckable(True)
        toggle.setText("As written")
        toggle.setToolTip("Show the text exactly as it was written (the rendering changes nothing)")
        toggle.setChecked(not as_note)
        head = QWidget()
        row = QHBoxLayout(head)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(_label("<b>Authored</b> (only a correction makes a new version)"), 1)
        row.addWidget(toggle)
        self.layout_.addWidget(head)
        self.layout_.addWidget(rendered)
        self.layout_.addWidget(authored)
        # (shown or hidden once in the page: setVisible on a widget without a parent opens it as a
        # window of its own, which took the focus and the window's shortcuts away)
        rendered.setVisible(as_note)
        authored.setVisible(not as_note)
        toggle.toggled.connect(lambda exact: (authored.setVisible(exact), rendered.setVisible(not exact)))
        if node["derived"]:
            lines = "<br>".join(f"{html.escape(k)}: {html.escape(v['value'])} "
                                + theme.muted(f"— derived by {html.escape(v['generator'])}")
                                for k, v in sorted(node["derived"].items()))
            box = _label(f"<b>Derived</b> (regenerable, not authored)<br>{lines}")
            box.setObjectName("derived")
            box.setStyleSheet(theme.DERIVED_BOX)
            self.layout_.addWidget(box)
        for c in node.get("clarified", []):
            self.layout_.addWidget(_label(f"<b>Clarified</b> {html.escape(c['term'])}: {html.escape(c['answer'])} "
                                          + theme.muted(f"— answered by {html.escape(str(c['by']))}")))
        self.layout_.addWidget(_label("<b>Tags</b>"))
        chips = QWidget()
        grid = QGridLayout(chips)                  # chips wrap in rows instead of running off
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setAlignment(Qt.AlignLeft)
        self.chip_grid = grid
        for i, tag in enumerate(all_tags):
            chip = TagChip(tag["name"], tag["status"])
            chip.toggled.connect(lambda name, reject: self.tag_toggled.emit(self.node_id, name, reject))
            chip.confirmed.connect(lambda name: self.tag_confirmed.emit(self.node_id, name))
            chip.opened.connect(self.tag_opened)
            self.chips[tag["name"]] = chip
        self._place_chips()
        if not all_tags:
            grid.addWidget(_label(theme.muted("none")), 0, 0)
        self.layout_.addWidget(chips)
        links = _label(self._links(node, titles))
        links.setObjectName("links")
        links.setTextInteractionFlags(Qt.LinksAccessibleByMouse | Qt.LinksAccessibleByKeyboard)
        links.linkActivated.connect(lambda href: self.node_opened.emit(int(href.split(":", 1)[1])))
        self.layout_.addWidget(links)
        if node.get("conversation"):
            self.layout_.addWidget(self._linked_label(self._conversation(node["conversation"]), "conversation"))
        if node.get("note"):
            self.layout_.addWidget(self._linked_label(self._mentions(node.get("mentions") or []), "mentions"))
        src = node["source"]
        self.layout_.addWidget(_label(
            f"<b>Provenance</b> tool {html.escape(str(src['tool'] or '—'))} · session {html.escape(str(src['session'] or '—'))}"
            f" · capture {src['capture']}" + (f" · file {html.escape(node['import_file'])}" if node.get("import_file") else "")
            + f"<br><b>Valid</b> {node['valid_from']} → {node['valid_to'] or 'now'}"
            f" · <b>recorded</b> {node['recorded_at']}"))
        if len(node.get("versions", [])) > 1:
            rows = "<br>".join(f"v{v['version']} · node {v['id']} · {v['status']} · {v['reason']}: "
                               f"{html.escape((v['content'] or '(text not shown)')[:140])}" for v in node["versions"])
            shown = [v for v in node["versions"] if v["content"]]
            diff = version_diff(shown[-2]["content"], shown[-1]["content"]) if len(shown) >= 2 else ""
            self.layout_.addWidget(_label(f"<b>Versions</b><br>{rows}" + (f"<br><b>Last change</b><br>{diff}" if diff else "")))
        line = QFrame()
        line.setFrameShape(QFrame.HLine)
        self.layout_.addWidget(line)
