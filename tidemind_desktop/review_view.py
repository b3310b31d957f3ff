"""The review inbox: everything that waits for a person, a page at a time, with the count of
each kind and the titles of the memories each item names. Select an item and its details load
(both texts side by side, the words that differ marked); approve, reject or pass with the
buttons or A / R / J (next) / K (previous); the next item comes up by itself, and Undo (U,
Ctrl+Z) puts back exactly what was there before. A contradiction is approved by saying which
memory stands. The inbox sorts by age or strength and narrows to a tag or to one memory (the
window's scope box narrows it to a scope); narrowed to a memory, its pending links are accepted
or rejected in one step. Beside the items: the questions memories wait on, and the proposed tags."""
from __future__ import annotations

import difflib
import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
                               QListWidget, QListWidgetItem, QPushButton, QSplitter, QStackedWidget,
                               QTabBar, QTextBrowser, QVBoxLayout, QWidget)

from . import theme

MAX_SUGGESTIONS = 4
SORTS = (("Newest first", "newest"), ("Oldest first", "oldest"), ("Strongest first", "strongest"),
         ("Weakest first", "weakest"))
ANY_TAG = "any tag"


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


KINDS = {"all": "All", "contradiction": "Contradictions", "merge": "Merges", "crystal": "Crystals",
         "proposed_lesson": "Lessons", "workstream": "Workstreams", "link": "Links", "questions": "Questions",
         "tags": "Tags"}
PAGE = 50
KEYS = {Qt.Key_A: "approved", Qt.Key_R: "rejected", Qt.Key_J: "next", Qt.Key_K: "previous", Qt.Key_U: "undo"}


def differing(a: str, b: str) -> tuple[str, str]:
    """Both texts as HTML with the words that differ between them marked (the palette's
    selection colours): "port 5433" / "port 6432" shows at a glance what disagrees."""
    wa, wb = a.split(), b.split()
    out_a, out_b = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        left, right = html.escape(" ".join(wa[i1:i2])), html.escape(" ".join(wb[j1:j2]))
        if op == "equal":
            out_a.append(left)
            out_b.append(right)
        else:
            if left:
                out_a.append(theme.mark(left))
            if right:
                out_b.append(theme.mark(right))
    return " ".join(out_a), " ".join(out_b)


def row_text(r: dict) -> str:
    """Two lines: what and its standing, then the titles it is about."""
    kind = "pending link" if r["kind"] == "link" else r["kind"].replace("_", " ")
    label = f"link {r['id']}" if r["kind"] == "link" else f"#{r['id']}"
    payload = r.get("payload") or {}
    names = [f"{_clip((r.get('titles') or {}).get(i) or '(not visible)', 64)} #{i}"
             for i in (r["node_id"], r["other_node_id"]) if i]
    about = " ⟷ ".join(names) or str(payload.get("name") or payload.get("said") or "")[:140]
    strength = payload.get("strength") if r["kind"] == "link" else payload.get("similarity")
    measure = f" · {'strength' if r['kind'] == 'link' else 'similarity'} {strength:.2f}" \
        if isinstance(strength, (int, float)) else ""
    return f"{label} {kind} · {r['status']}{measure}\n{about}"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


class InboxList(QListWidget):
    key_action = Signal(str)

    def keyPressEvent(self, event):
        action = KEYS.get(event.key()) if not event.modifiers() & ~Qt.ShiftModifier else None
        if action:
            self.key_action.emit(action)
            return
        super().keyPressEvent(event)


class ReviewView(QWidget):
    decided = Signal(list, str, dict)   # item ids, decision, {"kind": ..., "stands": ...}
    page_wanted = Signal(dict)          # {"kind", "status", "offset"}: the window loads the page
    detail_wanted = Signal(dict)        # the row whose details to load
    undo_requested = Signal()
    node_opened = Signal(int)
    filter_changed = Signal()
    links_at_decided = Signal(int, str, object)   # memory, "approved" | "rejected", the tag narrowing the inbox

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.kinds = QTabBar()
        self.kinds.setExpanding(False)
        self.kinds.setUsesScrollButtons(True)          # too many kinds for the width: arrows, no sideways scroll
        self.kinds.setDocumentMode(True)
        self.kind_keys: list[str] = []
        self.counts: dict[str, int] = {}
        self.has_tags_page = False
        self._set_kinds({})
        layout.addWidget(self.kinds)
        nav = QHBoxLayout()
        self.show_decided = QCheckBox("show decided (history)")
        nav.addWidget(self.show_decided)
        self.sort = QComboBox()
        self.sort.setObjectName("inbox-sort")
        self.sort.setToolTip("Order: by age, or by strength (a pair's similarity, a link's strength)")
        for label, key in SORTS:
            self.sort.addItem(label, key)
        nav.addWidget(self.sort)
        self.tag = QComboBox()
        self.tag.setObjectName("inbox-tag")
        self.tag.setToolTip("Only what names a memory carrying this tag")
        self.tag.setEditable(True)
        self.tag.setInsertPolicy(QComboBox.NoInsert)
        self.tag.setMinimumContentsLength(12)
        self.tag.addItem(ANY_TAG)
        nav.addWidget(self.tag)
        nav.addStretch(1)
        group = QHBoxLayout()                    # narrowed to one memory, and what is decided for all of it
        self.narrow_button = QPushButton("Only this memory")
        self.narrow_button.setObjectName("inbox-narrow")
        self.narrow_button.setToolTip("Show only what names the selected item's first memory (its links together)")
        group.addWidget(self.narrow_button)
        self.at_node = QPushButton()
        self.at_node.setObjectName("inbox-at-node")
        self.at_node.setToolTip("Shown: only what names this memory. Click to show everything again")
        self.at_node.hide()
        group.addWidget(self.at_node)
        self.accept_all = QPushButton("Accept all links")
        self.reject_all = QPushButton("Reject all links")
        for b, decision in ((self.accept_all, "approved"), (self.reject_all, "rejected")):
            b.setObjectName(f"inbox-links-{decision}")
            b.hide()
            b.clicked.connect(lambda _=False, d=decision: self._links_at(d))
            group.addWidget(b)
        group.addStretch(1)
        self.page_label = QLabel("")
        nav.addWidget(self.page_label)
        self.prev_page = QPushButton("‹")
        self.next_page = QPushButton("›")
        for b, tip in ((self.prev_page, "previous page"), (self.next_page, "next page")):
            b.setFixedWidth(32)
            b.setToolTip(tip)
            nav.addWidget(b)
        layout.addLayout(nav)
        layout.addLayout(group)
        self.stack = QStackedWidget()
        layout.addWidget(self.stack, 1)

        inbox = QWidget()
        box = QVBoxLayout(inbox)
        box.setContentsMargins(0, 0, 0, 0)
        split = QSplitter()
        split.setChildrenCollapsible(False)
        self.items = InboxList()
        self.items.setSelectionMode(QAbstractItemView.ExtendedSelection)     # bulk decisions
        self.items.setWordWrap(True)
        self.items.setAlternatingRowColors(True)        # two-line rows: where one ends and the next begins
        self.items.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.items.setMinimumWidth(160)
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.detail.anchorClicked.connect(lambda url: self.node_opened.emit(int(url.toString().split(":", 1)[1])))
        self.detail.setMinimumWidth(200)
        self.detail.setHtml("Nothing selected.")
        right = QWidget()
        rlay = QVBoxLayout(right)
        rlay.setContentsMargins(0, 0, 0, 0)
        rlay.addWidget(self.detail, 1)
        self.stands_row = QHBoxLayout()
        self.stands_buttons = []
        for side in ("a", "b"):
            b = QPushButton()
            b.setObjectName(f"stands-{side}")
            b.hide()
            b.clicked.connect(lambda _=False, b=b: self._stands(b.property("node")))
            self.stands_row.addWidget(b)
            self.stands_buttons.append(b)
        self.stands_row.addStretch(1)
        rlay.addLayout(self.stands_row)
        split.addWidget(self.items)
        split.addWidget(right)
        split.setSizes([300, 460])
        box.addWidget(split, 1)
        buttons = QGridLayout()
        for n, (label, decision, key) in enumerate((("Approve", "approved", "A"), ("Reject", "rejected", "R"),
                                                    ("Next", "defer", "J"), ("Reopen", "open", ""),
                                                    ("Undo", "undo", "U"))):
            b = QPushButton(label + (f"  ({key})" if key else ""))
            b.setObjectName(f"review-{decision}")
            b.clicked.connect(lambda _=False, d=decision: self._decide(d))
            buttons.addWidget(b, 0, n)
        box.addLayout(buttons)
        self.stack.addWidget(inbox)
        self.questions = QuestionsPanel()
        self.stack.addWidget(self.questions)
        self.tags_page = QWidget()                 # the proposed-tags queue (tags_queue.TagsQueue)
        self.stack.addWidget(self.tags_page)

        self.items.currentItemChanged.connect(self._selected)
        self.items.key_action.connect(self._key)
        self.kinds.currentChanged.connect(lambda _: self._kind_changed())
        self.show_decided.toggled.connect(lambda _: self._ask(0))
        self.sort.currentIndexChanged.connect(lambda _: self._ask(0))
        self.tag.activated.connect(lambda _: self._tag_chosen())
        self.tag.lineEdit().returnPressed.connect(self._tag_chosen)
        self.at_node.clicked.connect(lambda: self.narrow_to(None))
        self.narrow_button.clicked.connect(self._narrow_to_current)
        self.prev_page.clicked.connect(lambda: self._ask(max(0, self.offset - PAGE)))
        self.next_page.clicked.connect(lambda: self._ask(self.offset + PAGE))
        self.offset = 0
        self.total = 0
        self.kind = "all"
        self.node: int | None = None       # narrowed to what names this memory
        self.tag_filter: str | None = None
        self._data: dict[int, dict] = {}
        self._details: dict[int, dict] = {}
        self.shown_detail: int | None = None

    # -- kinds and pages ----------------------------------------------------------------------------
    def set_tags_page(self, widget: QWidget) -> None:
        self.stack.removeWidget(self.tags_page)
        self.tags_page = widget
        self.stack.addWidget(widget)
        self.has_tags_page = True
        self._set_kinds(self.counts)

    def _set_kinds(self, counts: dict[str, int]) -> None:
        """Tabs for the kinds that have items (and the ones always there), each with its count;
        updated in place, so a refresh never moves the person off their kind."""
        order = ["all", *[k for k in KINDS if k not in ("all", "link", "questions", "tags") and counts.get(k)],
                 *sorted(k for k in counts if k not in KINDS and counts[k]), "link", "questions",
                 *(["tags"] if self.has_tags_page else [])]
        total = sum(v for k, v in counts.items() if k not in ("link", "questions", "tags"))
        labels = [f"{KINDS.get(k, k.replace('_', ' ').title())} {total if k == 'all' else counts.get(k, 0):,}"
                  if k != "tags" or counts.get("tags") is not None else "Tags" for k in order]
        if order != self.kind_keys:
            current = self.kind_keys[self.kinds.currentIndex()] if self.kind_keys else "all"
            self.kinds.blockSignals(True)
            while self.kinds.count():
                self.kinds.removeTab(0)
            for label in labels:
                self.kinds.addTab(label)
            self.kind_keys = order
            self.kinds.setCurrentIndex(order.index(current) if current in order else 0)
            self.kinds.blockSignals(False)
            if current not in order:
                self._kind_changed()
        else:
            for i, label in enumerate(labels):
                if self.kinds.tabText(i) != label:
                    self.kinds.setTabText(i, label)
        self.counts = counts

    def _kind_changed(self):
        self.kind = self.kind_keys[self.kinds.currentIndex()] if self.kind_keys else "all"
        page = {"questions": 1, "tags": 2}.get(self.kind, 0)
        self.stack.setCurrentIndex(page)
        for w in (self.show_decided, self.page_label, self.prev_page, self.next_page, self.sort, self.tag,
                  self.narrow_button):
            w.setVisible(page == 0)
        self.at_node.setVisible(page == 0 and self.node is not None)
        self._ask(0)

    def request(self, offset: int | None = None) -> dict:
        return {"kind": None if self.kind == "all" else self.kind, "status": None if self.show_decided.isChecked()
                else "open", "offset": self.offset if offset is None else offset, "view": self.kind,
                "sort": self.sort.currentData(), "tag": self.tag_filter, "node": self.node}

    # -- narrowing ------------------------------------------------------------------------------------
    def set_tag_names(self, names: list[str]) -> None:
        """The tags to narrow by (the sidebar's), the one chosen kept."""
        current = self.tag.currentText()
        wanted = [ANY_TAG, *names]
        if [self.tag.itemText(i) for i in range(self.tag.count())] != wanted:
            self.tag.blockSignals(True)
            self.tag.clear()
            self.tag.addItems(wanted)
            self.tag.setCurrentText(current)
            self.tag.blockSignals(False)

    def _tag_chosen(self) -> None:
        text = self.tag.currentText().strip().lstrip("#")
        chosen = None if text in ("", ANY_TAG) else text
        if chosen != self.tag_filter:
            self.tag_filter = chosen
            self._ask(0)

    def narrow_to(self, node: int | None) -> None:
        """Only what names memory `node` (None: everything again)."""
        self.node = node
        self.at_node.setText(f"only #{node}  ✕" if node is not None else "")
        self.at_node.setVisible(node is not None)
        self._group_buttons()
        self._ask(0)

    def _narrow_to_current(self) -> None:
        r = self.current_row_data()
        if r is not None and r.get("node_id"):
            self.narrow_to(r["node_id"])

    def _group_buttons(self) -> None:
        """Accept / reject all links: on the links of one memory, with their count."""
        n = self.counts.get("link", 0) if self.node is not None and self.kind == "link" else 0
        for b, verb in ((self.accept_all, "Accept"), (self.reject_all, "Reject")):
            b.setText(f"{verb} all {n:,} links of #{self.node}" if n else "")
            b.setVisible(bool(n) and not self.show_decided.isChecked())

    def _links_at(self, decision: str) -> None:
        if self.node is not None:
            self.items.clear()
            self.detail.setHtml("Decided. Loading the next items…")
            self._stands_for(None)
            self.links_at_decided.emit(self.node, decision, self.tag_filter)

    def _ask(self, offset: int):
        self.offset = max(0, offset)
        self.page_wanted.emit(self.request())
        self.filter_changed.emit()

    def select_kind(self, kind: str) -> None:
        if kind in self.kind_keys:
            self.kinds.setCurrentIndex(self.kind_keys.index(kind))

    def load(self, page: dict) -> None:
        """A page from `Memory.review_page`: rows in place, the selection kept (by id, else by row)."""
        counts = dict(page["counts"])
        counts["questions"] = self.counts.get("questions", 0)
        counts["tags"] = self.counts.get("tags")
        self._set_kinds(counts)
        self._group_buttons()
        if self.kind in ("questions", "tags") or page.get("view", self.kind) != self.kind:
            return
        current = self.items.currentItem().data(256) if self.items.currentItem() else None
        row = self.items.currentRow()
        ids = [r["id"] for r in page["items"]]
        if ids == [self.items.item(i).data(256) for i in range(self.items.count())] and \
                all(self._data.get(r["id"], {}).get("status") == r["status"] for r in page["items"]):
            self._data.update({r["id"]: r for r in page["items"]})
            self._page_label(page)
            return                                  # nothing changed here: leave the rows alone
        shown = [self.items.item(i).data(256) for i in range(self.items.count())]
        self.items.blockSignals(True)
        if shown and ids[:len(shown)] == shown and all(self._data.get(i, {}).get("status") == r["status"]
                                                       for i, r in zip(shown, page["items"])):
            fresh = page["items"][len(shown):]      # after a decision: the rows that moved up into the page
        else:
            self.items.clear()
            fresh = page["items"]
        self._data = {r["id"]: r for r in page["items"]}
        for r in fresh:
            item = QListWidgetItem(row_text(r))
            item.setData(256, r["id"])
            item.setToolTip(row_text(r))
            self.items.addItem(item)
        self.items.blockSignals(False)
        if current in self._data:
            self.items.setCurrentRow(ids.index(current))
        elif self.items.count():
            self.items.setCurrentRow(min(max(row, 0), self.items.count() - 1))
        else:
            self.shown_detail = None
            self.detail.setHtml("The review queue is empty." if not page["total"] else "Nothing selected.")
            self._stands_for(None)
        self._page_label(page)

    def _page_label(self, page: dict):
        self.total = page["total"]
        shown = len(page["items"])
        self.page_label.setText(f"{self.offset + 1:,}–{self.offset + shown:,} of {self.total:,}" if shown
                                else f"0 of {self.total:,}")
        self.prev_page.setEnabled(self.offset > 0)
        self.next_page.setEnabled(self.offset + shown < self.total)

    def set_tags_count(self, n: int) -> None:
        counts = dict(self.counts)
        counts["tags"] = n
        self._set_kinds(counts)

    def set_question_count(self, n: int) -> None:
        counts = dict(self.counts)
        counts["questions"] = n
        self._set_kinds(counts)

    # -- one item -----------------------------------------------------------------------------------
    def current_row_data(self) -> dict | None:
        item = self.items.currentItem()
        return self._data.get(item.data(256)) if item is not None else None

    def _selected(self, item, _previous=None):
        r = self._data.get(item.data(256)) if item is not None else None
        if r is None:
            return
        self.shown_detail = None
        self.detail.setHtml(f"<b>{html.escape(row_text(r)).replace(chr(10), '<br>')}</b><br>{theme.muted('loading…')}")
        self._stands_for(None)
        self.detail_wanted.emit(r)              # the details load on the worker, only for this one

    def show_detail(self, item_id: int, r: dict) -> None:
        current = self.current_row_data()
        if current is None or current["id"] != item_id:
            return                              # the person moved on meanwhile
        if "error" in r:
            self.detail.setHtml(html.escape(r["error"]))
            return
        self.shown_detail = item_id
        kind = "pending link" if current["kind"] == "link" else current["kind"].replace("_", " ")
        parts = [f"<h3>{html.escape(kind)} {'link ' if current['kind'] == 'link' else '#'}{item_id}"
                 f" <small>({html.escape(r.get('status', current['status']))})</small></h3>"]
        if r.get("synthesis"):
            parts.append(f"<i>derived text ({html.escape(r['synthesis']['status'])}):</i> "
                         f"{html.escape(r['synthesis']['text'][:800])}")
        nodes = r.get("nodes", [])
        if len(nodes) == 2:            # merges, contradictions and links: both texts side by side, what differs marked
            a, b = differing(nodes[0]["content"][:900], nodes[1]["content"][:900])
            titles = r.get("titles") or {}
            cells = ""
            for n, text in ((nodes[0], a), (nodes[1], b)):
                dates = theme.muted(f"valid {n['valid_from'][:10]}, recorded {n['recorded_at'][:16]}")
                name = html.escape(titles.get(n["id"]) or "")
                cells += (f"<td width='50%' valign='top'><a href='node:{n['id']}'><b>{name} #{n['id']}</b></a>"
                          f"<br>{dates}<br>{text}</td>")
            parts.append(f"<table width='100%' cellspacing='6'><tr>{cells}</tr></table>")
        else:
            for n in nodes:
                parts.append(f"<hr><a href='node:{n['id']}'><b>#{n['id']}</b></a> "
                             f"{theme.muted('recorded ' + n['recorded_at'][:16])}<br>{html.escape(n['content'][:900])}")
        for key, value in sorted((r.get("payload") or {}).items()):
            parts.append(f"{theme.muted(html.escape(key))}: {html.escape(str(value))[:300]}")
        if r.get("resolved_at"):
            parts.append(theme.muted(f"decided {html.escape(r['status'])} by {html.escape(str(r.get('resolved_by')))}"
                                     f" at {r['resolved_at'][:19]} (reopen to change it)"))
        self.detail.setHtml("<br>".join(parts))
        self._stands_for(r if current["kind"] == "contradiction" and len(nodes) == 2 else None)

    def _stands_for(self, r: dict | None) -> None:
        for n, b in enumerate(self.stands_buttons):
            if r is None:
                b.hide()
                continue
            node = r["nodes"][n]
            name = (r.get("titles", {}).get(node["id"]) or node["content"])[:40]
            b.setText(f"#{node['id']} stands")
            b.setToolTip(f"Approve: “{name}” (#{node['id']}) is right; the other is served after it, flagged")
            b.setProperty("node", node["id"])
            b.show()

    # -- decisions ----------------------------------------------------------------------------------
    def _key(self, action: str):
        if action == "next":
            self._decide("defer")
        elif action == "previous":
            self.items.setCurrentRow(max(0, self.items.currentRow() - 1))
        elif action == "undo":
            self.undo_requested.emit()
        else:
            self._decide(action)

    def _stands(self, node_id) -> None:
        r = self.current_row_data()
        if r is not None and node_id:
            self._send([r["id"]], "approved", {"kind": r["kind"], "stands": int(node_id)})

    def _decide(self, decision: str):
        if decision == "undo":
            self.undo_requested.emit()
            return
        if decision == "defer":            # leave it open, look at the next one
            row = self.items.currentRow()
            if row + 1 < self.items.count():
                self.items.setCurrentRow(row + 1)
            return
        chosen = self.items.selectedItems() or ([self.items.currentItem()] if self.items.currentItem() else [])
        ids = [item.data(256) for item in chosen]
        if ids:
            self._send(ids, decision, {"kind": self._data[ids[0]]["kind"] if ids[0] in self._data else None})

    def _send(self, ids: list[int], decision: str, extra: dict):
        """The decided rows leave an inbox of open items at once and the next one comes up (the
        window reloads the page after the decision is written, and undo brings them back)."""
        if not self.show_decided.isChecked():
            row = self.items.currentRow()
            self.items.blockSignals(True)
            for i in reversed(range(self.items.count())):
                if self.items.item(i).data(256) in ids:
                    self.items.takeItem(i)
            self.items.blockSignals(False)
            if self.items.count():
                self.items.setCurrentRow(min(max(row, 0), self.items.count() - 1))
                self._selected(self.items.currentItem())
            else:
                self.detail.setHtml("Decided. Loading the next items…")
                self._stands_for(None)
        self.decided.emit(ids, decision, extra)
