"""The main window: search (the agents' hybrid recall and abstention), a sidebar to browse
without a query, the memory view, the graph browser, the daily and weekly digests, the review
inbox, import and metabolism, a quick switcher (Ctrl+K) and a status bar.

The UI thread never touches the database: every read and every decision runs on the window's
worker thread (its own connection, in order) and long jobs (an import, its rollback, a
metabolism task) on threads of their own. After a change only what it touched is read again
(the audit log says what changed), and a refresh updates lists in place: it never moves the
person's tab, focus or selection. Every decision offers an Undo that puts back the state
before it.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (QApplication, QComboBox, QHBoxLayout, QLabel, QLineEdit, QMainWindow, QMessageBox,
                               QToolButton,
                               QPushButton, QSplitter, QStatusBar, QTabWidget, QVBoxLayout, QWidget)

from tidemind.errors import InvalidInput, TideMindError
from tidemind.importers import engine as import_engine       # loaded now, not on the UI thread mid-session
from tidemind.memory import Memory
from tidemind.metabolism import scheduler
from tidemind.views import title_of

from .digests_view import NEWEST, DigestsView
from .commands import Command, CommandPalette, ShortcutsSheet, bind
from .graph_view import GraphView
from .history import History
from .markdown import embedded_images
from .node_view import NodeView
from .panels import ImportPanel, MetabolismPanel
from .results import ID, ROW, ResultList
from .review_view import PAGE, ReviewView
from .sidebar import Sidebar
from .switcher import QuickSwitcher, TitleIndex, merged
from .tags_queue import TagsQueue, group
from .worker import Background, Worker

ALL = "all scopes"
LIGHT = ("status", "sidebar", "review", "questions", "runs")       # cheap to read again after any change
UNDO_DEPTH = 50
# what a digest listing may follow: a synthesis written or withdrawn, a member hidden, revived or
# replaced, a new title for a memory it cites
DIGEST_FOLLOWS = ("archive", "unarchive", "forget", "correct", "superseded", "merge", "annotat", "title")
LOCAL_LIMIT = 500           # memories in a local graph: the nearest beyond that (it says so)
GRAPH_LIMIT = 2000          # memories in a whole graph: the best linked beyond that (it says so; a scope or tag narrows)


def graph_opening(settings) -> str:
    """The person's `[desktop] graph_open`: "double-click" (the default) or "click"."""
    chosen = (settings.extra.get("desktop") or {}).get("graph_open", "double-click")
    if chosen not in ("double-click", "click"):
        raise InvalidInput(f'setting desktop.graph_open must be "double-click" or "click", got {chosen!r}')
    return chosen


IMAGE_WIDTH = 720            # a note's image is shown at most this wide (scaled on the worker)
IMAGES_PER_PAGE = 40


def _note_images(memory: Memory, node_id: int, sections: list[dict]) -> dict:
    """The images a note's page embeds, read from its vault and scaled, on the worker thread
    (QImage, unlike QPixmap, may be made off the UI thread): {name as written: QImage}."""
    from PySide6.QtGui import QImage

    from tidemind.importers.attachments import read_image

    out = {}
    names = [n for s in sections for n in embedded_images(s["content"])]
    for name in list(dict.fromkeys(names))[:IMAGES_PER_PAGE]:
        path = memory.note_image(node_id, name)
        data = read_image(Path(path)) if path else None
        image = QImage.fromData(data) if data else QImage()
        if not image.isNull():
            if image.width() > IMAGE_WIDTH:
                image = image.scaledToWidth(IMAGE_WIDTH, Qt.SmoothTransformation)
            out[name] = image
    return out


class MainWindow(QMainWindow):
    def __init__(self, memory: Memory, poll_ms: int = 1000):
        super().__init__()
        self.memory = memory
        self.setWindowTitle("TideMind")
        self.resize(1180, 760)
        self.setMinimumSize(800, 500)
        self.worker = Worker(memory.settings, actor=memory.actor, parent=self)
        self.pool = self.worker.pool
        self.background = Background(memory.settings, actor=memory.actor, parent=self)

        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(6, 6, 6, 2)
        bar = QHBoxLayout()
        self.back_button, self.forward_button = QToolButton(), QToolButton()
        for button, arrow, tip in ((self.back_button, Qt.LeftArrow, "Back (Alt+←, or the mouse's back button)"),
                                   (self.forward_button, Qt.RightArrow, "Forward (Alt+→)")):
            button.setArrowType(arrow)
            button.setToolTip(tip)
            button.setEnabled(False)
            button.setAutoRaise(True)
            bar.addWidget(button)
        self.query = QLineEdit()
        self.query.setPlaceholderText("Search your memory…  (Ctrl+F; ↓ into the results)")
        self.query.setClearButtonEnabled(True)
        self.scope = QComboBox()
        self.scope.setToolTip("Search and browse in this scope")
        self.scope.setMinimumContentsLength(10)
        self.go = QPushButton("Search")
        self.goto = QPushButton("Go to…")
        self.goto.setToolTip("Quick switcher: a memory, a scope or a tag by name (Ctrl+K)")
        bar.addWidget(self.query, 1)
        bar.addWidget(self.scope)
        bar.addWidget(self.go)
        bar.addWidget(self.goto)
        outer.addLayout(bar)

        self.sidebar = Sidebar()
        self.results = ResultList()
        left = QSplitter(Qt.Vertical)
        left.addWidget(self.sidebar)
        left.addWidget(self.results)
        left.setSizes([230, 470])
        left.setMinimumWidth(220)
        self.tabs = QTabWidget()
        self.tabs.setUsesScrollButtons(True)
        self.tabs.setMinimumWidth(440)
        self.node_view = NodeView()
        self.graph_view = GraphView()
        self.graph_view.open_on_click = graph_opening(memory.settings) == "click"
        self.digests_view = DigestsView()
        self.review_view = ReviewView()
        self.tags_queue = TagsQueue()
        self.review_view.set_tags_page(self.tags_queue)
        self.import_panel = ImportPanel()
        self.metabolism_panel = MetabolismPanel()
        for widget, label in ((self.node_view, "Memory"), (self.graph_view, "Graph"), (self.digests_view, "Digests"),
                              (self.review_view, "Review"),
                              (self.import_panel, "Import"), (self.metabolism_panel, "Metabolism")):
            self.tabs.addTab(widget, label)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.tabs)
        split.setStretchFactor(1, 1)
        split.setSizes([330, 850])
        split.setChildrenCollapsible(False)
        outer.addWidget(split, 1)
        foot = QHBoxLayout()
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setObjectName("undo")
        self.undo_button.setToolTip("Put back what was there before the last decision (Ctrl+Z)")
        self.undo_button.hide()
        foot.addWidget(self.message, 1)
        foot.addWidget(self.undo_button)
        outer.addLayout(foot)
        self.setCentralWidget(central)
        self.setStatusBar(QStatusBar())
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.statusBar().addWidget(self.status, 1)
        self.switcher = QuickSwitcher(self)

        # state: the UI thread's view of things; read on the UI thread only
        self._seen_version = None
        self._seen_mark = None
        self._refreshing = False
        self.graph_pending = False
        self.graph_stale = False
        self.digests_stale = False
        self.task_pending = False
        self.last_task_report: dict | None = None
        self.last_import: dict | None = None
        self._import_cancel: threading.Event | None = None
        self.undo_stack: list[tuple[str, object]] = []
        self._stored_decision: dict | None = None
        self._titles: tuple | None = None        # the switcher's title index (the worker's: see _switcher_lookup)     # the store's latest decision of this person (after a restart)
        self.history = History()               # memories, graphs and searches a person went to
        self.list_request: dict = {}
        self._sidebar: dict = {"scopes": {}, "tags": []}
        self.refreshes = 0                     # gathers applied (the idle tests count them)

        self.go.clicked.connect(self.search)
        self.goto.clicked.connect(self.open_switcher)
        self.query.returnPressed.connect(self.search)
        self.query.installEventFilter(self)
        self.results.installEventFilter(self)
        self.results.currentItemChanged.connect(lambda item, _prev=None: item and self._result_chosen(item))
        self.results.more_wanted.connect(self._more)
        self.sidebar.chosen.connect(self.browse)
        self.node_view.tag_toggled.connect(self.toggle_tag)
        self.node_view.tag_confirmed.connect(self.confirm_tag)
        self.node_view.tag_opened.connect(lambda name: self.browse({"view": "tag", "tag": name}))
        self.node_view.node_opened.connect(self.open_node)
        self.node_view.note_link_opened.connect(self.open_note_link)
        self.node_view.action.connect(self.node_action)
        self.review_view.decided.connect(self._decided)
        self.review_view.page_wanted.connect(lambda r: self.refresh(("review", "tags") if r["view"] == "tags"
                                                                     else ("review",)))
        self.review_view.detail_wanted.connect(self._load_detail)
        self.review_view.undo_requested.connect(self.undo)
        self.review_view.links_at_decided.connect(self._links_at_decided)
        self.review_view.node_opened.connect(self.open_node)
        self.review_view.questions.answered.connect(self.answer_question)
        self.review_view.questions.skipped.connect(self.skip_question)
        self.tags_queue.reject_requested.connect(self.reject_tag_everywhere)
        self.tags_queue.accept_requested.connect(self.accept_tag_everywhere)
        self.tags_queue.lift_requested.connect(self.lift_tag_everywhere)
        self.tags_queue.open_requested.connect(lambda name: self.browse({"view": "tag", "tag": name}))
        self.graph_view.wanted.connect(self.load_graph)
        self.graph_view.node_opened.connect(self.open_node)
        self.graph_view.node_selected.connect(self._graph_selected)
        self.digests_view.wanted.connect(self.load_digests)
        self.digests_view.node_opened.connect(self.open_node)
        self.show_rejected = self.graph_view.status_actions["rejected"]
        self.import_panel.requested.connect(self.import_folder)
        self.import_panel.cancel_requested.connect(self.cancel_import)
        self.import_panel.undo_requested.connect(self.ask_undo_import)
        self.metabolism_panel.run_requested.connect(self.run_task)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.undo_button.clicked.connect(self.undo)
        self.back_button.clicked.connect(self.go_back)
        self.forward_button.clicked.connect(self.go_forward)
        QApplication.instance().installEventFilter(self)       # the mouse's back and forward buttons, anywhere in it
        self.switcher.lookup.connect(self._switcher_lookup)
        self.switcher.chosen.connect(self._switched)
        self.scope.currentIndexChanged.connect(lambda _: self._scope_changed())
        self.commands = self._commands()
        bind(self, self.commands)
        self.palette_dialog = CommandPalette(self.commands, self)
        self.shortcuts_sheet = ShortcutsSheet(self.commands, self)
        for standard, slot in ((QKeySequence.Back, self.go_back), (QKeySequence.Forward, self.go_forward)):
            # the platform's own keys for it too (Cmd+[ on macOS), where they are not Alt+arrows already:
            # the same keys twice would be an ambiguous shortcut, and neither would fire
            # nor Backspace (Linux lists it for Back: it would go back when a person meant to delete)
            keys = [k for k in QKeySequence.keyBindings(standard)
                    if k.toString() not in ("Alt+Left", "Alt+Right") and "Backspace" not in k.toString()]
            for k in keys:
                QShortcut(k, self, activated=slot)

        self.refresh_all()
        self.browse({"view": "recent"})
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.poll)
        self.timer.start(poll_ms)

    def _commands(self) -> list[Command]:
        """Every action a person can take from the keyboard or the command palette."""
        def local_graph():
            if self.node_view.node_id is not None:
                self.show_graph(self.node_view.node_id)
            else:
                self.message.setText("Open a memory first: its local graph is drawn around it.")

        def tags_inbox():
            self.tabs.setCurrentWidget(self.review_view)
            self.review_view.select_kind("tags")

        commands = [
            Command("Search your memory", ("Ctrl+F", "Ctrl+L"), self.focus_search),
            Command("Go to a memory, scope or tag", ("Ctrl+K",), self.open_switcher),
            Command("Go back", ("Alt+Left",), self.go_back),
            Command("Go forward", ("Alt+Right",), self.go_forward),
            Command("Undo the last decision", ("Ctrl+Z",), self.undo),
            Command("Run a command", ("Ctrl+Shift+P",), lambda: self.palette_dialog.open_fresh()),
            Command("Keyboard shortcuts", ("F1", "Ctrl+/"), lambda: self.shortcuts_sheet.show()),
        ]
        commands += [Command(f"Show the {self.tabs.tabText(n)} tab", (f"Ctrl+{n + 1}",),
                             lambda n=n: self.tabs.setCurrentIndex(n)) for n in range(self.tabs.count())]
        commands += [
            Command("Local graph of this memory", (), local_graph),
            Command("Whole graph", (), self.graph_view.show_overview),
            Command("Recent memories", (), lambda: self.browse({"view": "recent"})),
            Command("All memories by title", (), lambda: self.browse({"view": "all"})),
            Command("Archived memories", (), lambda: self.browse({"view": "archived"})),
            Command("Flagged memories (open contradictions)", (), lambda: self.browse({"view": "flagged"})),
            Command("Proposed tags", (), tags_inbox),
            Command("Digests of days and weeks", (), self.show_digests),
            Command("Refresh everything", (), self.refresh_all),
        ]
        return commands

    # -- the worker ---------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """Something asked for has not come back yet (tests and --screenshot wait for this)."""
        return (self.worker.pending > 0 or self.background.running > 0 or self.graph_pending
                or bool(self.graph_view._pending_nodes))

    def wait_idle(self, timeout_s: float = 30.0) -> None:
        """Process events until everything asked for has arrived and been drawn (for --screenshot
        and scripts; the window itself never waits)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            QApplication.processEvents()
            if not self.busy:
                self.graph_view.wait_layout(int(max(0.0, end - time.monotonic()) * 1000))
                QApplication.processEvents()
                if not self.busy:
                    return
            time.sleep(0.005)

    def _submit(self, job, on_done, key=None):
        return self.worker.submit(job, on_done, key)

    def scopes(self) -> list[str] | None:
        chosen = self.scope.currentText()
        return None if chosen in ("", ALL) else [chosen]

    # -- keyboard -----------------------------------------------------------------------------------
    def eventFilter(self, obj, event):
        if (event.type() == QEvent.MouseButtonPress and event.button() in (Qt.BackButton, Qt.ForwardButton)
                and isinstance(obj, QWidget) and obj.window() is self):
            (self.go_back if event.button() == Qt.BackButton else self.go_forward)()
            return True
        if event.type() == QEvent.KeyPress:
            if obj is self.query and event.key() == Qt.Key_Down and self.results.count():
                self.results.setFocus()
                if self.results.currentRow() < 0:
                    self.results.setCurrentRow(0)
                return True
            if obj is self.results and event.key() == Qt.Key_Escape:
                self.focus_search()
                return True
            if obj is self.results and event.key() in (Qt.Key_Return, Qt.Key_Enter) and self.results.currentItem():
                self._result_chosen(self.results.currentItem(), focus=True)
                return True
        return super().eventFilter(obj, event)

    def focus_search(self):
        self.query.setFocus()
        self.query.selectAll()

    # -- lists: search and browse -------------------------------------------------------------------
    def search(self, visit: bool = True):
        """Recall runs on the worker thread; results arrive through a signal."""
        text = self.query.text().strip()
        if not text:
            return
        scopes = self.scopes()
        self.message.setText("searching…")
        self.list_request = {"search": text}

        def job(reader):
            r = reader.recall(text, scopes=scopes, all_scopes=scopes is None, limit=30)
            for item in r.get("items", []):
                item["title"] = title_of(item)
            return r

        self._submit(job, lambda r: self._show_results(text, r, visit), key="list")

    def _show_results(self, text: str, r: dict, visit: bool = False):
        self.results.clear()
        self.sidebar.clearSelection()
        if "error" in r:
            self.message.setText(r["error"])
            return
        if visit:
            self._visit({"search": text, "scope": self.scope.currentText()})
        if r["abstained"]:
            self.message.setText(f"No answer: {r['message']}")
            self.results.source, self.results.total = {"search": text}, 0
            return
        self.message.setText(f"{len(r['items'])} memories · best evidence {r['best_evidence']}")
        self.results.show_search(text, r["items"])

    def browse(self, request: dict, offset: int = 0):
        """A list without a query (recent, all, a scope, a tag, archived, flagged), a page at a time."""
        request = dict(request)
        if request.get("view") == "digests":          # not a list of memories: the Digests tab
            self.show_digests()
            return
        self.list_request = request
        scope = request.get("scope")
        scopes = [scope] if scope else self.scopes()
        self.sidebar.select_request(request)

        def job(reader):
            return reader.browse(request["view"], tag=request.get("tag"), scopes=scopes, offset=offset, limit=PAGE)

        def shown(page):
            if "error" in page:
                self.message.setText(page["error"])
                return
            self.results.show_page(request, page, append=offset > 0)
            what = {"recent": "recent", "all": "all memories by title", "archived": "archived",
                    "flagged": "flagged (one side of an open contradiction)"}.get(request["view"], "")
            if request.get("tag"):
                what = f"tagged #{request['tag']}"
            if scope:
                what += f" in {scope}"
            self.message.setText(f"{page['total']:,} {what}")

        self._submit(job, shown, key="list" if offset == 0 else "more")

    def _more(self):
        if "view" in self.results.source and self.results.count() < self.results.total:
            self.browse(self.results.source, offset=self.results.count())

    def _scope_changed(self):
        self.review_view.offset = 0
        self.refresh(("review",))              # the inbox follows the scope box too
        if self.list_request.get("search"):
            self.search()
        elif self.list_request:
            self.browse(self.list_request)
        if self.digests_view.loaded:
            self.load_digests(self.digests_view.request())

    def _result_chosen(self, item, focus: bool = False):
        node_id, row = item.data(ID), item.data(ROW) or {}
        if node_id is None:
            return
        if row.get("status") == "archived":                  # not visible: shown from the list's own row
            self.node_view.show_archived(row)
            self.tabs.setCurrentWidget(self.node_view)
            return
        self.request_node(node_id)
        if focus:
            self.node_view.setFocus()

    # -- one memory ---------------------------------------------------------------------------------
    @staticmethod
    def _node_payload(memory: Memory, node_id: int) -> dict:
        try:
            node = memory.show(node_id)
            node["import_file"] = memory.import_file_of(node_id)
            node["page"] = memory.note_page(node_id) if node.get("note") else None
            node["mentions"] = memory.unlinked_mentions(node_id) if node.get("note") else []
            node["images"] = _note_images(memory, node_id, node["page"] or [node]) if node.get("note") else {}
            node["conversation"] = memory.conversation(node_id) if node["source"].get("session") else None
            titles = memory.titles([link["target"] for link in node["links"]])
            return {"node": node, "tags": memory.tags_of(node_id), "titles": titles}
        except TideMindError as exc:
            return {"error": str(exc), "node_id": node_id}

    def request_node(self, node_id: int, switch: bool = True, visit: bool = True):
        """Selecting a result or a link: the reads run on the worker thread."""
        self._submit(lambda reader: self._node_payload(reader, node_id),
                     lambda payload: self._apply_node(payload, switch, visit=visit), key="node")

    def open_node(self, node_id: int):
        self.request_node(node_id, switch=True)

    def open_note_link(self, node_id: int, name: str):
        """A [[link]] clicked in a note: the note it names in the same folder, found on the worker."""
        scopes = self.scopes()

        def found(target):
            if isinstance(target, int):
                self.open_node(target)
            else:
                self.message.setText(target)

        def job(reader):
            try:
                target = reader.note_link(node_id, name, scopes=scopes)
            except TideMindError as exc:
                return str(exc)
            return target if target is not None else f"no note named {name!r} is imported here"

        self._submit(job, found, key="note-link")

    def _apply_node(self, payload: dict, switch: bool = True, keep_scroll: bool = False, visit: bool = False):
        if "error" in payload:
            self.node_view.show_message(payload["error"])
            return
        if visit:
            self._visit({"node": payload["node"]["id"]})
        bar = self.node_view.verticalScrollBar()
        at = bar.value()
        self.node_view.show_node(payload["node"], payload["tags"], payload.get("titles"))
        if keep_scroll:
            QTimer.singleShot(0, lambda: bar.setValue(at))
        if switch:
            self.tabs.setCurrentWidget(self.node_view)
        if self.graph_view.request.get("mode") == "local" and self.tabs.currentWidget() is self.graph_view:
            self.show_graph(payload["node"]["id"])

    # -- back and forward ---------------------------------------------------------------------------
    def _visit(self, place: dict) -> None:
        self.history.visit(place)
        self._history_buttons()

    def _history_buttons(self) -> None:
        self.back_button.setEnabled(self.history.can_go_back)
        self.forward_button.setEnabled(self.history.can_go_forward)

    def go_back(self):
        self._go(self.history.back())

    def go_forward(self):
        self._go(self.history.forward())

    def _go(self, place: dict | None) -> None:
        """Show a place of the history again without making it a new entry."""
        self._history_buttons()
        if place is None:
            return
        if "node" in place:
            self.request_node(place["node"], switch=True, visit=False)
        elif "graph" in place:
            self.load_graph(place["graph"], switch=True, visit=False)
        elif "search" in place:
            found = self.scope.findText(place.get("scope") or "")
            if found >= 0 and found != self.scope.currentIndex():
                self.scope.blockSignals(True)            # (a scope change would search again on its own)
                self.scope.setCurrentIndex(found)
                self.scope.blockSignals(False)
            self.query.setText(place["search"])
            self.search(visit=False)

    # -- graph ----------------------------------------------------------------------------------------
    def show_graph(self, node_id: int):
        """The local graph of a memory (its Local graph button, or a memory opened from the graph)."""
        self.graph_view.show_local(node_id)

    def load_graph(self, request: dict, switch: bool = True, visit: bool | None = None):
        """The graph read runs on the worker; the layout on the graph's own thread."""
        def job(reader):
            if request["mode"] == "local":
                return reader.graph(request["center"], depth=request["depth"], link_statuses=request["statuses"],
                                    scopes=[request["scope"]] if request.get("scope") else None, limit=LOCAL_LIMIT)
            return reader.graph_overview(scopes=[request["scope"]] if request.get("scope") else None,
                                         tag=request.get("tag"), link_statuses=request["statuses"],
                                         orphans=request["orphans"], limit=GRAPH_LIMIT,
                                         flagged=bool(request.get("flagged")))

        def drawn(graph):
            self.graph_pending = False
            if "error" in graph:
                self.message.setText(graph["error"])
                return
            self.graph_stale = False
            self.graph_view.show_graph(graph, request=request)
            if switch if visit is None else visit:      # (a redraw after a change goes nowhere new)
                self._visit({"graph": request})
            if switch:
                self.tabs.setCurrentWidget(self.graph_view)

        self.graph_pending = True
        self.graph_view.info.setText("reading the graph…")
        self._submit(job, drawn, key="graph")

    def _graph_selected(self, node_id: int):
        item = self.graph_view.items.get(node_id)
        if item is not None and not self.graph_view.open_on_click:
            self.message.setText(f"#{node_id} {item.title} · double-click to open")

    # -- digests ---------------------------------------------------------------------------------------
    def show_digests(self):
        """The Digests tab (the sidebar's entry, or the switcher's), loaded if it never was."""
        self.sidebar.select_request({"view": "digests"})
        if not self.digests_view.loaded or self.digests_stale:
            self.load_digests(self.digests_view.request())
        self.tabs.setCurrentWidget(self.digests_view)

    def load_digests(self, period: str = ""):
        """The digests of the chosen scope (the newest, or of the period named) and the titles of
        the memories they cite, read on the worker."""
        scopes = self.scopes()

        def job(reader):
            if period:
                r = reader.period_digests(period, scopes=scopes, limit=100)
                if r is None:
                    return {"error": f"{period!r} names no week or day (try 2026-W10, last week, 2026-03-09,"
                                     " yesterday)"}
            else:
                r = reader.digests(scopes=scopes, limit=NEWEST)
            cited = sorted({i for d in r["digests"] for i in d["members"]})
            return {**r, "titles": reader.titles(cited)}

        def shown(r):
            self.digests_stale = False
            self.digests_view.load(r)

        self.digests_view.info.setText("reading the digests…")
        self._submit(job, shown, key="digests")

    def _tab_changed(self, index: int):
        widget = self.tabs.widget(index)
        if widget is self.graph_view and (self.graph_view.graph is None or self.graph_stale):
            if self.graph_view.mode.currentIndex() == 1 and self.node_view.node_id is not None:
                self.graph_view.show_local(self.node_view.node_id)
            else:
                self.load_graph(self.graph_view.current_request(), switch=False)
        if widget is self.digests_view and (not self.digests_view.loaded or self.digests_stale):
            self.load_digests(self.digests_view.request())
        if widget is self.metabolism_panel:
            self.refresh(("runs",))

    # -- the person's actions: on the worker, then an undo offer and a refresh of what they touched ----
    def _act(self, do, *, undo=None, after=None, parts=LIGHT, node: int | None = None):
        """`do(memory)` on the worker. Then, on the UI thread: its message, `undo(result)` ->
        (label, fn) offered as Undo, `after(result)`, and a refresh of `parts` (and of memory
        `node` in the memory view)."""
        def done(r):
            if "error" in r:
                self.message.setText(r["error"])
            else:
                self.message.setText(r.get("done", ""))
                if undo is not None:
                    offer = undo(r)
                    if offer:
                        self.undo_stack = (self.undo_stack + [offer])[-UNDO_DEPTH:]
                if after is not None:
                    after(r)
                self._digests_changed()
            self._show_undo()
            self.refresh(parts, node=node)
        self._submit(do, done)

    def _decide(self, do, label, *, after=None, parts=LIGHT, node: int | None = None):
        """A person's decision on the worker, undone later from the audit log: exactly the
        decisions `do` wrote (`Memory.undo_last(expect=...)`, newest first), refused if a second
        window of the same person decided since. After a restart the store still knows them
        (`_stored_decision`)."""
        def run(m):
            mark = m.change_mark()[0]
            r = do(m)
            return {**r, "decisions": m.decisions_after(mark)}

        def undo(r):
            groups = r.get("decisions") or []
            if not groups:
                return None

            def put_back(m):
                return {"done": "; ".join(m.undo_last(expect=g)["done"] for g in groups)}
            return (label(r) if callable(label) else label, put_back)

        self._act(run, undo=undo, after=after, parts=parts, node=node)

    def _show_undo(self):
        if self.undo_stack:
            self.undo_button.setText(f"Undo: {self.undo_stack[-1][0]}")
            self.undo_button.show()
        elif self._stored_decision:
            self.undo_button.setText(f"Undo: {self._stored_decision['label']} (earlier)")
            self.undo_button.show()
        else:
            self.undo_button.hide()

    def undo(self):
        """Put back the state before the last decision (each undo goes one further back): this
        window's, then the ones before it, read from the store's audit log."""
        if not self.undo_stack:
            stored = self._stored_decision
            if not stored:
                self.message.setText("Nothing to undo.")
                return
            self._stored_decision = None
            self._show_undo()
            self._act(lambda m: m.undo_last(expect=stored["rows"]), parts=LIGHT, node=self.node_view.node_id)
            return
        label, fn = self.undo_stack.pop()
        self._stored_decision = None            # (read again after this undo: it may be the same decision)
        self._show_undo()

        def after(r):
            self.message.setText(f"Undone: {label}")
            if r.get("supersedes") is not None and self.node_view.node_id == r["supersedes"]:
                self.open_node(r["node_ids"][0])            # an edit undone by a correction: show the words back

        self._act(fn, parts=LIGHT, node=self.node_view.node_id, after=after)

    def node_action(self, verb: str, node_id: int):
        from PySide6.QtWidgets import QInputDialog

        node = self.node_view.node if self.node_view.node_id == node_id else None
        if verb == "graph":
            self.show_graph(node_id)
        elif verb == "edit" and node is not None:
            text, ok = QInputDialog.getMultiLineText(self, "Edit memory", "The corrected text (a new version):",
                                                     node["content"])
            if ok:
                self.edit_node(node_id, text)
        elif verb == "tag":
            name, ok = QInputDialog.getText(self, "Add tag", "Tag:")
            if ok and name.strip():
                self.confirm_tag(node_id, name)
        elif verb == "archive":
            self.archive_node(node_id)
        elif verb == "restore":
            self.restore_node(node_id)
        elif verb == "forget":
            if self.forget_dialog(node_id).exec() == QMessageBox.Yes:
                self.forget_node(node_id)

    def forget_dialog(self, node_id: int):
        """Names the memory it erases, and Cancel is the default: Enter must never erase."""
        node = self.node_view.node if self.node_view.node_id == node_id else None
        title = (title_of(node) if node and not node.get("archived") else (node or {}).get("title", "")) or ""
        if not title:
            row = next((self.results.item(i).data(ROW) for i in range(self.results.count())
                        if self.results.item(i).data(ID) == node_id), None)
            title = (row or {}).get("title") or ""
        box = QMessageBox(QMessageBox.Warning, f"Forget memory #{node_id}?",
                          f"Forget memory #{node_id}: “{title[:120]}”?\n\nForgetting erases the text of this memory and"
                          " of every earlier version from the store, its indexes and the stream files. Only a hash"
                          " remains. This cannot be undone.", QMessageBox.Yes | QMessageBox.Cancel, self)
        box.button(QMessageBox.Yes).setText("Forget")
        box.setDefaultButton(QMessageBox.Cancel)
        box.setEscapeButton(QMessageBox.Cancel)
        return box

    def _drop_rows(self, node_ids) -> None:
        """A forgotten or archived memory leaves every list at once (its title is its words)."""
        gone = set(node_ids)
        self.results.drop(gone)
        for node_id in gone:                              # no place to go back to either
            self.history.forget_node(node_id)
        self._history_buttons()
        if self.node_view.node_id in gone:
            self.node_view.show_message(self.message.text())
        if gone & self.graph_view.node_ids:
            self.graph_view.clear_graph()
            self.graph_stale = True
        self.digests_view.drop(gone)                      # a digest quotes its memories' words

    def archive_node(self, node_id: int):
        self._drop_rows([node_id])
        self._decide(lambda m: m.archive(node_id), f"archive #{node_id}")

    def restore_node(self, node_id: int):
        def after(_r):
            if self.list_request.get("view") == "archived":
                self.results.drop([node_id])              # it is no longer archived
            self.open_node(node_id)

        self._decide(lambda m: m.unarchive(node_id), f"restore #{node_id}", after=after)

    def edit_node(self, node_id: int, text: str):
        """An edit is a correction: a new version supersedes the old one (no similarity merge);
        undo is a correction back to the words before (the history keeps both)."""
        old = (self.node_view.node or {}).get("content") if self.node_view.node_id == node_id else None

        def undo(r):
            new = r["node_ids"][0]
            return (f"edit of #{node_id}", lambda m: m.correct(new, old)) if old else None

        def after(r):
            self._drop_rows([node_id])                    # the old version's words leave the lists
            self.open_node(r["node_ids"][0])

        self._act(lambda m: m.correct(node_id, text), undo=undo, after=after)

    def forget_node(self, node_id: int):
        """Irreversible by design (the dialog says so): the rows go at once."""
        self._act(lambda m: m.forget(node_id), after=lambda r: self._drop_rows(r["node_ids"]))
        self._drop_rows([node_id])

    def toggle_tag(self, node_id: int, name: str, reject: bool):
        verb = "reject" if reject else "undo the rejection of"
        self._decide(lambda m: m.tag_decide(node_id, name, reject=reject), f"{verb} #{name} on #{node_id}",
                     node=node_id, parts=("sidebar", "status"))

    def confirm_tag(self, node_id: int, name: str):
        self._decide(lambda m: m.tag_add(node_id, name), f"tag #{name} on #{node_id}", node=node_id,
                     parts=("sidebar", "status"))

    def reject_tag_everywhere(self, name: str, scopes: list[str]):
        """"Never this tag here" in each scope where it is proposed: one decision for a name that
        was proposed on hundreds of memories; undo lifts it and the proposals come back as they were."""
        def do(m):
            touched = [n for s in scopes for n in m.tag_reject_everywhere(name, s)["node_ids"]]
            return {"done": f"#{name} rejected everywhere in {', '.join(scopes)}: {len(touched)} proposal(s)"
                            " withdrawn; no pass proposes it there again", "node_ids": touched}

        self._decide(do, f"#{name} rejected everywhere", parts=(*LIGHT, "tags"), node=self.node_view.node_id)

    def accept_tag_everywhere(self, name: str, scopes: list[str]):
        """Every proposal of the name in those scopes confirmed in one step; undo proposes them again."""
        def do(m):
            previous = {}
            for s in scopes:
                previous.update(m.tag_accept_everywhere(name, s)["previous"])
            return {"done": f"#{name} accepted on {len(previous)} memories in {', '.join(scopes)}",
                    "node_ids": list(previous), "previous": previous}

        self._decide(do, f"#{name} accepted everywhere", parts=(*LIGHT, "tags"), node=self.node_view.node_id)

    def lift_tag_everywhere(self, name: str, scopes: list[str]):
        self._decide(lambda m: self._lift(m, name, scopes), f"#{name} allowed again", parts=(*LIGHT, "tags"),
                     node=self.node_view.node_id)

    @staticmethod
    def _lift(m: Memory, name: str, scopes: list[str]) -> dict:
        restored = [n for s in scopes for n in m.tag_unreject_everywhere(name, s)["node_ids"]]
        return {"done": f"#{name} may be proposed again in {', '.join(scopes)}; {len(restored)} proposal(s) back",
                "node_ids": restored}

    def answer_question(self, question_id: int, answer: str):
        self._act(lambda m: m.clarify_answer(question_id, answer))

    def skip_question(self, question_id: int):
        self._act(lambda m: m.clarify_skip(question_id))

    def decide(self, item_id: int, decision: str):
        """One review item (a pending link when negative, as the CLI of the queue once showed them)."""
        if item_id < 0:
            self._decided([-item_id], decision, {"kind": "link"})
        else:
            self._decided([item_id], decision, {})

    def _decided(self, ids: list[int], decision: str, extra: dict):
        """Decisions from the inbox: all of them in one transaction, one refresh, one undo."""
        if extra.get("kind") == "link":
            status = {"approved": "confirmed", "rejected": "rejected_by_user", "open": "pending"}[decision]
            self._decide(lambda m: m.link_decide_many(ids, status), f"{len(ids)} link(s) {status}")
            return
        if extra.get("stands"):
            stands = extra["stands"]
            self._decide(lambda m: m.review_decide(ids[0], "approved", stands=stands), f"#{ids[0]}: #{stands} stands")
            return
        self._decide(lambda m: m.review_decide_many(ids, decision), f"{len(ids)} item(s) {decision}")

    def _links_at_decided(self, node: int, decision: str, tag: str | None = None):
        """Every pending link of one memory the inbox lists (its scope box and tag), in one step, one undo."""
        status = {"approved": "confirmed", "rejected": "rejected_by_user"}[decision]
        scopes = self.scopes()
        self._decide(lambda m: m.link_decide_at(node, status, scopes=scopes, tag=tag),
                     lambda r: f"{len(r['links'])} link(s) of #{node} {status}")

    def _load_detail(self, row: dict):
        """Review details load on selection only (one item, not the whole page)."""
        def job(reader):
            if row["kind"] == "link":
                nodes = [reader.show(i) for i in (row["node_id"], row["other_node_id"])]
                return {**row, "nodes": nodes}
            return {**reader.review_show(row["id"]), "titles": row.get("titles") or {}}

        self._submit(job, lambda r: self.review_view.show_detail(row["id"], r), key="detail")

    # -- import and metabolism: background threads of their own --------------------------------------
    def import_folder(self, source: str, folder: str) -> bool | None:
        """Starts the import in the background (None when the folder is refused)."""
        # an empty box once imported the working directory (from a launcher: the home folder)
        path = Path(folder.strip()).expanduser() if folder.strip() else None
        if path is None or not path.is_absolute() or not path.is_dir():
            self.import_panel.report.setText(
                "Choose the vault or graph folder first (Browse…)." if path is None else
                f"{folder.strip()} is not a folder (give its full path, or use Browse…); nothing was imported.")
            return None
        if self.import_panel.running:
            self.import_panel.report.setText("An import is running; wait for it or cancel it.")
            return None
        cancel = threading.Event()
        self._import_cancel = cancel
        self.last_import = None
        self.import_panel.set_running(True, f"reading {path.name}…")
        self.import_panel.report.setText(f"reading and parsing the notes of {path}…")

        def job(memory, report):
            memory.actor = f"importer:{source}"
            return import_engine.sync(memory, source, path, progress=lambda done, total: report((done, total)),
                                      cancelled=cancel.is_set)

        self.background.start(job, self._imported, on_progress=lambda v: self.import_panel.progress(*v))
        return True

    def cancel_import(self):
        if self._import_cancel is not None:
            self._import_cancel.set()
            self.import_panel.report.setText("cancelling after the chunk being written…")

    def _imported(self, r: dict):
        self.last_import = r
        self._import_cancel = None
        if "error" in r:
            self.import_panel.finished(r["error"], self.import_panel.batch)
            return
        skipped = "".join(f"<br>skipped {s['path']}: {s['reason']}" for s in r["skipped"][:20])
        if r.get("cancelled"):
            done = (f"cancelled: batch {r['batch']} wrote {r['created']} created, {r['updated']} updated before it"
                    " stopped; Undo this import removes them" if r["batch"] is not None
                    else "cancelled before anything was written")
        else:
            done = (f"batch {r['batch']} into {r['scope']}: {r['created']} created, {r['updated']} updated,"
                    f" {r['unchanged']} unchanged, {r['archived']} archived, {r['moved']} moved"
                    if r["batch"] is not None else f"nothing changed in {r['scope']}")
        self.import_panel.finished(done + skipped, r["batch"])
        self.refresh(LIGHT)
        self.graph_stale = True
        self._digests_changed()

    def ask_undo_import(self, batch: int):
        box = QMessageBox(QMessageBox.Warning, f"Undo import batch {batch}?",
                          f"Roll back import batch {batch}? The memories it created are removed, the ones it changed"
                          " go back to their earlier text, and the store is as it was before the import.",
                          QMessageBox.Yes | QMessageBox.Cancel, self)
        box.button(QMessageBox.Yes).setText("Undo the import")
        box.setDefaultButton(QMessageBox.Cancel)
        box.setEscapeButton(QMessageBox.Cancel)
        if box.exec() == QMessageBox.Yes:
            self.undo_import(batch)

    def undo_import(self, batch: int):
        self.import_panel.set_running(True, f"rolling back batch {batch}…")
        self.import_panel.cancel.setEnabled(False)

        def done(r):
            self.last_import = {"rolled_back": r}
            self.import_panel.finished(r.get("error") or r["done"], None if "error" not in r else batch)
            self.refresh(LIGHT)
            self.graph_stale = True
            self._digests_changed()

        self.background.start(lambda memory, _report: import_engine.rollback(memory, batch), done)

    def run_task(self, name: str) -> None:
        """On a thread of its own (an LLM pass can take minutes): searches and decisions go on."""
        from tidemind.llm import choose_or_offline

        task = next(t for t in scheduler.ordered_tasks() if t.name == name)
        self.message.setText(f"{name}: running…")
        self.task_pending = True
        self.background.start(lambda memory, _report: scheduler.run_task(memory, task, scheduler.owner_id(),
                                                                          llm=choose_or_offline(memory.settings)[0]),
                              self._task_done)

    def _task_done(self, report: dict):
        self.task_pending = False
        self._digests_changed()
        self.last_task_report = report
        self.message.setText(f"{report.get('task', '?')}: {report.get('status', 'error')} " + ", ".join(
            f"{k}={v}" for k, v in report.items() if k not in ("task", "status")))
        self.refresh((*LIGHT, "runs"))

    # -- quick switcher ------------------------------------------------------------------------------
    def open_switcher(self):
        places = [(label, request) for label, request in (("Recent", {"view": "recent"}),
                                                          ("All memories", {"view": "all"}),
                                                          ("Flagged", {"view": "flagged"}),
                                                          ("Archived", {"view": "archived"}),
                                                          ("Digests", {"view": "digests"}))]
        places += [(f"scope {s}", {"view": "recent", "scope": s}) for s in self._sidebar.get("scopes", {})]
        places += [(f"#{t}", {"view": "tag", "tag": t}) for t, _ in self._sidebar.get("tags", [])]
        self.switcher.open_with(places)

    def _switcher_lookup(self, text: str):
        if not text:
            return

        def job(reader):
            # every title, made ready for matching once per change of the store (the worker's
            # own: only ever read and written on the worker thread)
            mark = reader.change_mark()
            if self._titles is None or self._titles[0] != mark:
                self._titles = (mark, TitleIndex(reader.title_index()))
            r = reader.recall(text, all_scopes=True, limit=20, use_vectors=False, record=False)
            hits = [{"id": i["id"], "title": title_of(i), "scope": i["scope"]} for i in r.get("items", [])]
            return merged(text, self._titles[1], hits)

        self._submit(job, lambda items: self.switcher.show_memories(text, items if isinstance(items, list) else []),
                     key="switcher")

    def _switched(self, target: dict):
        if "node" in target:
            self.open_node(target["node"])
        else:
            self.browse(target)

    # -- refresh --------------------------------------------------------------------------------------
    def _want(self, parts, node: int | None = None, since: int | None = None) -> dict:
        """What to read, decided on the UI thread (the worker never reads a widget)."""
        review = {**self.review_view.request(), "scopes": self.scopes()}
        parts = set(parts) | ({"tags"} if review["view"] == "tags" else set())
        return {"parts": parts, "review": review, "node": node, "since": since,
                "shown_node": self.node_view.node_id if not (self.node_view.node or {}).get("archived") else None,
                "link_ends": {link["target"] for link in (self.node_view.node or {}).get("links", [])}}

    def _gather(self, memory: Memory, with_decided: bool | None = None, want: dict | None = None) -> dict:
        """Read what `want` names, on the worker thread."""
        want = want or self._want(LIGHT)
        parts, out = want["parts"], {"mark": memory.change_mark(), "parts": want["parts"]}
        node = want.get("node")
        if want.get("since") is not None:
            changes = memory.changes_since(want["since"])
            out["changes"] = changes
            touched = set(changes["nodes"])
            shown = want.get("shown_node")
            if shown is not None and (shown in touched or touched & want["link_ends"] or not changes["complete"]):
                node = shown
        if "status" in parts:
            out["stats"] = memory.stats()
            out["last_decision"] = memory.last_decision()
        if "sidebar" in parts:
            out["sidebar"] = memory.sidebar()
        if "review" in parts:
            r = want["review"]
            if with_decided is not None:
                r = {**r, "status": None if with_decided else "open"}
            listed = r["kind"] not in ("questions", "tags")
            out["review"] = {**memory.review_page(r["status"], r["kind"] if listed else None, offset=r["offset"],
                                                  limit=PAGE if listed else 1, sort=r.get("sort"), tag=r.get("tag"),
                                                  node=r.get("node"), scopes=r.get("scopes")), "view": r["view"]}
        if "questions" in parts:
            out["questions"] = memory.clarify_questions(limit=200)
        if "tags" in parts:                      # the proposed-tags queue: names grouped, per scope counted
            listed = {s: memory.tag_listing(status="proposed", scopes=[s])
                      for s in memory.read_scopes(None, all_scopes=True)}
            out["tags"] = {"rows": group(listed),
                           "tombstones": [t for one in listed.values() for t in one["rejected_everywhere"]]}
        if "runs" in parts:
            out["runs"] = memory.task_state()
            out["tasks"] = [t.name for t in scheduler.ordered_tasks()]
        if node is not None:
            out["node"] = self._node_payload(memory, node)
        return out

    def refresh(self, parts=LIGHT, node: int | None = None):
        """Read `parts` again (and memory `node`) on the worker and apply them in place."""
        want = self._want(parts, node=node if node is not None else (self.node_view.node_id if "node" in parts else None))
        self._submit(lambda reader: self._gather(reader, None, want), self._applied)

    def refresh_all(self):
        self.refresh((*LIGHT, "node"))

    def refresh_review(self):
        self.refresh(("review",))

    def poll(self):
        """Another process (an agent, the daemon, the CLI) committed: read what changed on the
        worker, apply it in place (never switching the person's tab, focus or selection)."""
        if self._refreshing or self.worker.pending:
            return                          # our own work is in flight: its refresh reads the news too
        try:
            version = self.memory.data_version()
            if version == self._seen_version:
                return                      # nobody committed since the last look: no query at all
            self._seen_version = version
            if self.memory.change_mark() == self._seen_mark:
                return                      # a commit that changed nothing shown (a search's hit counts)
        except Exception:            # the store went away (closed, deleted): stop polling, keep the window
            self.timer.stop()
            self.message.setText("The store is no longer reachable; reopen TideMind.")
            return
        self._refreshing = True
        with_decided = self.review_view.show_decided.isChecked()
        want = self._want(LIGHT, since=self._seen_mark[0] if self._seen_mark else 0)
        self._submit(lambda reader: self._gather(reader, with_decided, want), self._applied_from_poll)

    def _applied_from_poll(self, data: dict):
        self._refreshing = False
        self._applied(data, keep_scroll=True)
        changes = data.get("changes") or {}
        if not changes.get("complete", True) or any("synthes" in a or a.startswith(DIGEST_FOLLOWS)
                                                    for a in changes.get("actions", [])):
            self._digests_changed()
        if set(changes.get("nodes", [])) & self.graph_view.node_ids or any(
                a.startswith(("link", "digest", "import", "archive", "unarchive", "forget", "correct"))
                for a in changes.get("actions", [])):
            self.graph_stale = True
            if self.tabs.currentWidget() is self.graph_view and self.graph_view.graph is not None:
                self.load_graph(self.graph_view.request, switch=False)      # kept positions: only newcomers move

    def _digests_changed(self):
        """Something was written that a digest may follow: read them again if they are in view
        (in place: the selected digest stays selected), else when the tab is next shown."""
        if not self.digests_view.loaded:
            return
        self.digests_stale = True
        if self.tabs.currentWidget() is self.digests_view:
            self.load_digests(self.digests_view.request())

    def _applied(self, data: dict, keep_scroll: bool = False):
        if "error" in data:
            self.message.setText(data["error"])
            return
        self.refreshes += 1
        if "last_decision" in data:
            self._stored_decision = data["last_decision"]
            self._show_undo()
        if "stats" in data:
            st = data["stats"]
            nodes = st["nodes"]
            self.status.setText(f"{self.memory.settings.store_location} · {nodes['live']} live, {nodes['archived']} archived,"
                                f" {nodes['superseded']} superseded · LLM {'on' if st.get('llm') else 'off'}"
                                f" · {sum(st['review'].values())} review items")
            known = [self.scope.itemText(i) for i in range(self.scope.count())]
            wanted = [ALL] + st["scopes"]
            if known != wanted:
                current = self.scope.currentText()
                self.scope.blockSignals(True)
                self.scope.clear()
                self.scope.addItems(wanted)
                if current in wanted:
                    self.scope.setCurrentText(current)
                self.scope.blockSignals(False)
        if "sidebar" in data:
            self._sidebar = data["sidebar"]
            self.sidebar.load(data["sidebar"])
            self.graph_view.set_choices(list(data["sidebar"]["scopes"]), [t for t, _ in data["sidebar"]["tags"]])
            self.review_view.set_tag_names([t for t, _ in data["sidebar"]["tags"]])
        if "review" in data:
            self.review_view.load(data["review"])
        if "tags" in data:
            self.tags_queue.load(data["tags"]["rows"], data["tags"]["tombstones"])
            self.review_view.set_tags_count(len(data["tags"]["rows"]))
        if "questions" in data:
            self.review_view.questions.load(data["questions"])
            self.review_view.set_question_count(len(data["questions"]))
        if "runs" in data:
            self.metabolism_panel.load(data["tasks"], data["runs"])
            last = max((r["last_finished"] for r in data["runs"].values() if r.get("last_finished")), default=None)
            self.statusBar().setToolTip(f"daemon last run {last[:19] if last else 'never'}")
        payload = data.get("node")
        if payload is not None and payload.get("node", {}).get("id", payload.get("node_id")) == self.node_view.node_id:
            self._apply_node(payload, switch=False, keep_scroll=keep_scroll)      # in place: never switch the tab
        self._seen_mark = data["mark"]

    def closeEvent(self, event):
        QApplication.instance().removeEventFilter(self)
        self.timer.stop()
        self.graph_view.stop()
        self.background.close()
        self.worker.close()
        super().closeEvent(event)
