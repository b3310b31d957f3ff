"""The main window: search (the same hybrid recall and abstention agents get), results, the
memory view, the review queue, and a status bar; it notices changes made by other processes."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem, QMainWindow,
                               QPushButton, QSplitter, QStatusBar, QTabWidget, QVBoxLayout, QWidget)

from tidemind.errors import TideMindError
from tidemind.memory import Memory
from tidemind.views import title_of

from .graph_view import GraphView
from .node_view import NodeView
from .panels import ImportPanel, MetabolismPanel
from .review_view import ReviewView

ALL = "all scopes"


class _Signals(QObject):
    done = Signal(object, object)          # callback, result: delivered on the UI thread


class _Job(QRunnable):
    def __init__(self, job, reader, on_done, signals: _Signals):
        super().__init__()
        self.job, self.reader, self.on_done, self.signals = job, reader, on_done, signals

    def run(self):
        try:
            result = self.job(self.reader)
        except Exception as exc:           # reported, never a crash of the worker
            result = {"error": f"{type(exc).__name__}: {exc}"}
        self.signals.done.emit(self.on_done, result)


class MainWindow(QMainWindow):
    def __init__(self, memory: Memory, poll_ms: int = 1000):
        super().__init__()
        self.memory = memory
        self.setWindowTitle("TideMind")
        self.resize(1100, 720)
        central = QWidget()
        outer = QVBoxLayout(central)
        bar = QHBoxLayout()
        self.query = QLineEdit()
        self.query.setPlaceholderText("Search your memory…")
        self.scope = QComboBox()
        self.go = QPushButton("Search")
        bar.addWidget(self.query, 1)
        bar.addWidget(self.scope)
        bar.addWidget(self.go)
        outer.addLayout(bar)
        split = QSplitter()
        self.results = QListWidget()
        self.results.setMinimumWidth(320)
        self.tabs = QTabWidget()
        self.node_view = NodeView()
        self.graph_view = GraphView()
        self.review_view = ReviewView()
        self.tabs.addTab(self.node_view, "Memory")
        self.tabs.addTab(self.graph_view, "Graph")
        self.tabs.addTab(self.review_view, "Review")
        self.import_panel = ImportPanel()
        self.metabolism_panel = MetabolismPanel()
        self.tabs.addTab(self.import_panel, "Import")
        self.tabs.addTab(self.metabolism_panel, "Metabolism")
        self.import_panel.requested.connect(self.import_folder)
        self.metabolism_panel.run_requested.connect(self.run_task)
        split.addWidget(self.results)
        split.addWidget(self.tabs)
        split.setSizes([360, 740])
        outer.addWidget(split, 1)
        self.message = QLabel("")
        outer.addWidget(self.message)
        self.setCentralWidget(central)
        self.setStatusBar(QStatusBar())
        self.status = QLabel()
        self.statusBar().addWidget(self.status, 1)

        self.go.clicked.connect(self.search)
        self.query.returnPressed.connect(self.search)
        self.results.currentItemChanged.connect(lambda item, _prev=None: item and self.request_node(item.data(256)))
        self.node_view.tag_toggled.connect(self.toggle_tag)
        self.review_view.decided.connect(self.decide)
        self.review_view.filter_changed.connect(self.refresh_review)
        self.review_view.questions.answered.connect(self.answer_question)
        self.review_view.questions.skipped.connect(self.skip_question)
        self.graph_view.node_selected.connect(self.show_graph)
        self.node_view.action.connect(self.node_action)
        self.node_view.tag_confirmed.connect(lambda node_id, name: self._run(lambda: self.memory.tag_add(node_id, name),
                                                                             node_id))
        restore = QPushButton("Restore…")
        restore.setToolTip("Restore an archived memory by its id")
        restore.clicked.connect(self._ask_restore)
        bar.addWidget(restore)
        self.show_rejected = QCheckBox("rejected links in graph")
        self.show_rejected.toggled.connect(lambda _: self.graph_view.center and self.show_graph(self.graph_view.center))
        bar.addWidget(self.show_rejected)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.graph_view.node_opened.connect(self.open_node)
        # live refresh compares like with like: this connection's data_version (did anyone commit?),
        # then the store's change mark (did anything a person sees change?). The worker's
        # data_version is another connection's counter and never equals this one's.
        self._seen_version = None
        self._seen_mark = None
        self._reader: Memory | None = None      # the worker thread's own connection
        self._refreshing = False
        self.graph_pending = False
        self.task_pending = False
        self.last_task_report: dict | None = None
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)          # one connection, used by one thread at a time
        self._signals = _Signals(self)
        self._signals.done.connect(lambda callback, result: callback(result))
        self.refresh_all()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.poll)
        self.timer.start(poll_ms)

    # -- reading ------------------------------------------------------------------------------
    def scopes(self) -> list[str] | None:
        chosen = self.scope.currentText()
        return None if chosen in ("", ALL) else [chosen]

    def search(self):
        """Recall runs on the worker thread; results arrive through a signal."""
        text = self.query.text().strip()
        self.results.clear()
        if not text:
            return
        scopes = self.scopes()
        self.message.setText("searching…")

        def job(reader):
            try:
                return reader.recall(text, scopes=scopes, all_scopes=scopes is None, limit=30)
            except TideMindError as exc:
                return {"error": str(exc)}

        self._submit(job, self._show_results)

    def _show_results(self, r: dict):
        self.results.clear()
        if "error" in r:
            self.message.setText(r["error"])
            return
        if r["abstained"]:
            self.message.setText(f"No answer: {r['message']}")
            return
        self.message.setText(f"{len(r['items'])} memories · best evidence {r['best_evidence']}")
        for item in r["items"]:
            row = QListWidgetItem(f"#{item['id']}  {title_of(item)[:80]}\n{item['scope']} · score {item['score']}")
            row.setData(256, item["id"])
            self.results.addItem(row)

    def _submit(self, job, on_done):
        """Run `job(reader)` on the single worker thread (its own connection); `on_done(result)`
        runs on the UI thread."""
        if self._reader is None:
            self._reader = Memory(self.memory.settings, actor="person:desktop")
        self.pool.start(_Job(job, self._reader, on_done, self._signals))

    @staticmethod
    def _node_payload(memory: Memory, node_id: int) -> dict:
        try:
            node = memory.show(node_id)
            node["import_file"] = memory.import_file_of(node_id)
            return {"node": node, "tags": memory.tags_of(node_id)}
        except TideMindError as exc:
            return {"error": str(exc)}

    def request_node(self, node_id: int):
        """Selecting a result: the reads run on the worker thread."""
        self._submit(lambda reader: self._node_payload(reader, node_id), self._apply_node)

    def _apply_node(self, payload: dict):
        if "error" in payload:
            self.node_view.show_message(payload["error"])
            return
        self.node_view.show_node(payload["node"], payload["tags"])
        self.tabs.setCurrentWidget(self.node_view)

    def open_node(self, node_id: int):
        """Synchronous: after the person's own change, show its result at once."""
        self._apply_node(self._node_payload(self.memory, node_id))

    def show_graph(self, node_id: int):
        """The neighbourhood query and the layout run on the worker thread; the scene is built here."""
        include_rejected = self.show_rejected.isChecked()

        def job(reader):
            from .graph_view import layout

            try:
                graph = reader.graph(node_id, include_rejected=include_rejected)
            except TideMindError as exc:
                return {"error": str(exc)}
            pos = layout([n["id"] for n in graph["nodes"]], [(e["source_id"], e["target_id"]) for e in graph["edges"]])
            return {"graph": graph, "pos": pos}

        self.graph_pending = True
        self._submit(job, self._draw_graph)

    def _draw_graph(self, result: dict):
        self.graph_pending = False
        self.task_pending = False
        self.last_task_report: dict | None = None
        if "error" in result:
            self.message.setText(result["error"])
            return
        graph = result["graph"]
        self.graph_view.show_graph(graph, result["pos"])
        self.tabs.setCurrentWidget(self.graph_view)
        self.message.setText(f"graph around #{graph['center']}: {len(graph['nodes'])} memories,"
                             f" {len(graph['edges'])} links")

    def _tab_changed(self, index: int):
        if self.tabs.widget(index) is self.graph_view and self.node_view.node_id is not None \
                and self.graph_view.center != self.node_view.node_id:
            self.show_graph(self.node_view.node_id)

    # -- editing: every change goes through the core, as a person ----------------------------------
    def node_action(self, verb: str, node_id: int):
        from PySide6.QtWidgets import QInputDialog, QMessageBox

        if verb == "graph":
            self.show_graph(node_id)
        elif verb == "edit":
            current = self.memory.show(node_id)["content"]
            text, ok = QInputDialog.getMultiLineText(self, "Edit memory", "The corrected text (a new version):",
                                                     current)
            if ok:
                self.edit_node(node_id, text)
        elif verb == "tag":
            name, ok = QInputDialog.getText(self, "Add tag", "Tag:")
            if ok and name.strip():
                self._run(lambda: self.memory.tag_add(node_id, name), node_id)
        elif verb == "archive":
            self._run(lambda: self.memory.archive(node_id), None)
            self._drop_rows([node_id])
        elif verb == "forget":
            if self.forget_dialog(node_id).exec() == QMessageBox.Yes:
                self.forget_node(node_id)

    def forget_dialog(self, node_id: int):
        """Names the memory it erases, and Cancel is the default: Enter must never erase."""
        from PySide6.QtWidgets import QMessageBox

        try:
            title = title_of(self.memory.show(node_id))
        except TideMindError:
            title = ""
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
        for row in reversed(range(self.results.count())):
            if self.results.item(row).data(256) in gone:
                self.results.takeItem(row)
        if self.node_view.node_id in gone:
            self.node_view.show_message(self.message.text())
        if gone & self.graph_view.node_ids:
            self.graph_view.clear_graph()

    def _run(self, fn, reopen: int | None):
        try:
            self.message.setText(fn()["done"])
        except TideMindError as exc:
            self.message.setText(str(exc))
        self.refresh_all()
        if reopen is not None:
            self.open_node(reopen)
        else:
            self.node_view.show_message(self.message.text())

    def _ask_restore(self):
        from PySide6.QtWidgets import QInputDialog

        node_id, ok = QInputDialog.getInt(self, "Restore", "Id of the archived memory:", 1, 1)
        if ok:
            self.restore_node(node_id)

    def restore_node(self, node_id: int):
        self._run(lambda: self.memory.unarchive(node_id), node_id)

    def edit_node(self, node_id: int, text: str) -> int | None:
        """An edit is a correction: a new version supersedes the old one, with no similarity merge."""
        try:
            r = self.memory.correct(node_id, text)
        except TideMindError as exc:
            self.message.setText(str(exc))
            return None
        self.message.setText(r["done"])
        self.refresh_all()
        self.open_node(r["node_ids"][0])
        return r["node_ids"][0]

    def forget_node(self, node_id: int):
        try:
            r = self.memory.forget(node_id)
            self.message.setText(r["done"])
            self._drop_rows(r["node_ids"])
        except TideMindError as exc:
            self.message.setText(str(exc))
        self.refresh_all()

    def import_folder(self, source: str, folder: str) -> dict | None:
        from tidemind.importers.engine import sync

        def progress(done, total):
            # no processEvents here: the import holds a write transaction, and a click handled
            # meanwhile would start another one on the same connection
            self.import_panel.report.setText(f"importing… {done:,} / {total:,} units")

        # an empty box once imported the working directory (from a launcher: the home folder)
        path = Path(folder.strip()).expanduser() if folder.strip() else None
        if path is None or not path.is_absolute() or not path.is_dir():
            self.import_panel.report.setText(
                "Choose the vault or graph folder first (Browse…)." if path is None else
                f"{folder.strip()} is not a folder (give its full path, or use Browse…); nothing was imported.")
            return None
        try:
            r = sync(self.memory, source, path, progress=progress)
        except TideMindError as exc:
            self.import_panel.report.setText(str(exc))
            return None
        skipped = "".join(f"<br>skipped {s['path']}: {s['reason']}" for s in r["skipped"][:20])
        done = (f"batch {r['batch']} into {r['scope']}" if r["batch"] is not None
                else f"nothing changed in {r['scope']}")
        self.import_panel.report.setText(
            f"{done}: {r['created']} created, {r['updated']} updated, {r['unchanged']}"
            f" unchanged, {r['archived']} archived, {r['moved']} moved{skipped}")
        self.refresh_all()
        return r

    def run_task(self, name: str) -> None:
        """Runs on the worker thread (an LLM pass can take minutes): the window stays responsive."""
        from tidemind.llm import choose
        from tidemind.metabolism.scheduler import ordered_tasks, owner_id, run_task

        task = next(t for t in ordered_tasks() if t.name == name)
        self.message.setText(f"{name}: running…")
        self.task_pending = True
        self._submit(lambda reader: run_task(reader, task, owner_id(), llm=choose(reader.settings)),
                     self._task_done)

    def _task_done(self, report: dict):
        self.task_pending = False
        self.last_task_report = report
        self.message.setText(f"{report.get('task', '?')}: {report.get('status', 'error')} " + ", ".join(
            f"{k}={v}" for k, v in report.items() if k not in ("task", "status")))
        self.refresh_all()

    def _gather(self, memory: Memory, with_decided: bool | None = None) -> dict:
        """Everything the status bar, review queue and metabolism panel show. On the worker thread
        no widget is read: the caller passes `with_decided`."""
        from tidemind.metabolism.scheduler import ordered_tasks

        if with_decided is None:
            with_decided = self.review_view.show_decided.isChecked()
        items = memory.review_list(status=None if with_decided else "open")
        details = {}
        for r in items[:200]:
            try:
                details[r["id"]] = memory.review_show(r["id"])
            except TideMindError:
                details[r["id"]] = {**r, "nodes": []}
        for link in memory.pending_links(limit=200):
            pseudo = -link["id"]               # pending links share the queue; negative ids mark them
            row = {"id": pseudo, "kind": f"pending link ({link['relation']})", "status": "open",
                   "node_id": link["source_id"], "other_node_id": link["target_id"],
                   "payload": {"strength": link["strength"], "proposed_by": link["proposed_by"]}}
            items.append(row)
            try:
                shown = [memory.show(i) for i in (link["source_id"], link["target_id"])]
            except TideMindError:
                shown = []
            details[pseudo] = {**row, "nodes": shown}
        return {"mark": memory.change_mark(), "stats": memory.stats(), "runs": memory.task_state(),
                "review": (items, details), "questions": memory.clarify_questions(limit=200),
                "tasks": [t.name for t in ordered_tasks()]}

    def _apply(self, data: dict):
        st, runs = data["stats"], data["runs"]
        last = max((r["last_finished"] for r in runs.values() if r.get("last_finished")), default=None)
        nodes = st["nodes"]
        self.status.setText(f"{self.memory.settings.db_path} · {nodes['live']} live, {nodes['archived']} archived,"
                            f" {nodes['superseded']} superseded · daemon last run {last[:19] if last else 'never'}"
                            f" · LLM {'on' if st.get('llm') else 'off'} · {sum(st['review'].values())} review items"
                            f" · {len(data['questions'])} open questions")
        known = [self.scope.itemText(i) for i in range(self.scope.count())]
        wanted = [ALL] + st["scopes"]
        if known != wanted:
            current = self.scope.currentText()
            self.scope.clear()
            self.scope.addItems(wanted)
            if current in wanted:
                self.scope.setCurrentText(current)
        self.review_view.load(*data["review"])
        self.review_view.questions.load(data["questions"])
        self.metabolism_panel.load(data["tasks"], runs)
        self._seen_mark = data["mark"]

    def refresh_review(self):
        self._apply(self._gather(self.memory))

    def refresh_all(self):
        """After the person's own action: refresh at once (the change was just made here)."""
        self._seen_version = self.memory.data_version()
        self._apply(self._gather(self.memory))

    def poll(self):
        """Another process (an agent, the daemon) committed: gather on the worker thread, apply on
        the UI thread, keeping the tab, the focus and the selection."""
        if self._refreshing:
            return
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
        self._submit(lambda reader: self._gather(reader, with_decided), self._applied_from_poll)

    def _applied_from_poll(self, data: dict):
        self._refreshing = False
        self.graph_pending = False
        self.task_pending = False
        self.last_task_report: dict | None = None
        self._apply(data)
        if self.node_view.node_id is not None:           # in place: never switch the person's tab
            payload = self._node_payload(self.memory, self.node_view.node_id)
            if "error" in payload:
                self.node_view.show_message(payload["error"])
            else:
                self.node_view.show_node(payload["node"], payload["tags"])

    def closeEvent(self, event):
        self.timer.stop()
        self.pool.waitForDone(5000)
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        super().closeEvent(event)

    # -- a person's decisions -----------------------------------------------------------------
    def toggle_tag(self, node_id: int, name: str, reject: bool):
        try:
            self.memory.tag_decide(node_id, name, reject=reject)
        except TideMindError as exc:
            self.message.setText(str(exc))
        self.open_node(node_id)
        self._seen_version = self.memory.data_version()
        self._seen_mark = self.memory.change_mark()

    def answer_question(self, question_id: int, answer: str):
        try:
            self.message.setText(self.memory.clarify_answer(question_id, answer)["done"])
        except TideMindError as exc:
            self.message.setText(str(exc))
        self.refresh_all()

    def skip_question(self, question_id: int):
        try:
            self.message.setText(self.memory.clarify_skip(question_id)["done"])
        except TideMindError as exc:
            self.message.setText(str(exc))
        self.refresh_all()

    def decide(self, item_id: int, decision: str):
        try:
            if item_id < 0:                    # a pending link: approve confirms it, reject rejects it
                status = {"approved": "confirmed", "rejected": "rejected_by_user", "open": "pending"}[decision]
                r = self.memory.link_decide(-item_id, status)
            else:
                r = self.memory.review_decide(item_id, decision)
            self.message.setText(r["done"])
        except TideMindError as exc:
            self.message.setText(str(exc))
        self.refresh_all()
