"""Import and metabolism panels: bring a vault in (in the background, with a progress bar, a
cancel and an undo of the whole import), and see (and run) the background tasks."""
from __future__ import annotations

import json

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QProgressBar,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)


class ImportPanel(QWidget):
    requested = Signal(str, str)        # source, folder
    cancel_requested = Signal()
    undo_requested = Signal(int)        # batch

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.source = QComboBox()
        self.source.addItems(["obsidian", "logseq"])
        self.folder = QLineEdit()
        self.folder.setPlaceholderText("Vault or graph folder (full path)")
        row.addWidget(self.source)
        row.addWidget(self.folder, 1)
        layout.addLayout(row)
        buttons = QHBoxLayout()
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.go = QPushButton("Import")
        self.go.setObjectName("import-go")
        self.go.clicked.connect(lambda: self.requested.emit(self.source.currentText(), self.folder.text().strip()))
        self.cancel = QPushButton("Cancel")
        self.cancel.setObjectName("import-cancel")
        self.cancel.setToolTip("Stop after the chunk being written; what was written stays until you undo it")
        self.cancel.clicked.connect(self.cancel_requested)
        self.undo = QPushButton("Undo this import")
        self.undo.setObjectName("import-undo")
        self.undo.setToolTip("Roll the import back: the store as it was before it")
        self.undo.clicked.connect(lambda: self.batch is not None and self.undo_requested.emit(self.batch))
        for w in (browse, self.go, self.cancel, self.undo):
            buttons.addWidget(w)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.bar = QProgressBar()
        self.bar.setObjectName("import-progress")
        layout.addWidget(self.bar)
        self.report = QLabel("Imports are batches: Undo this import (or `tidemind import rollback BATCH`) undoes one.")
        self.report.setWordWrap(True)
        self.report.setTextInteractionFlags(Qt.TextSelectableByMouse)
        layout.addWidget(self.report)
        layout.addStretch(1)
        self.batch: int | None = None
        self.running = False
        self.set_running(False)

    def _browse(self):
        chosen = QFileDialog.getExistingDirectory(self, "Choose a vault or graph folder")
        if chosen:
            self.folder.setText(chosen)

    def set_running(self, running: bool, what: str = "") -> None:
        self.running = running
        self.go.setEnabled(not running)
        self.cancel.setEnabled(running)
        self.undo.setEnabled(not running and self.batch is not None)
        self.bar.setVisible(running)
        if running:
            self.bar.setRange(0, 0)             # busy until the first count arrives (reading the notes)
            self.bar.setFormat(what)

    def progress(self, done: int, total: int) -> None:
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        self.bar.setFormat("writing %v / %m units (%p%)")
        self.report.setText(f"importing… {done:,} / {total:,} units")

    def finished(self, text: str, batch: int | None) -> None:
        self.batch = batch
        self.set_running(False)
        self.report.setText(text)


class MetabolismPanel(QWidget):
    run_requested = Signal(str)

    COLUMNS = ("task", "last finished", "status", "counts", "error")

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        header = self.table.horizontalHeader()
        for col in range(3):
            header.setSectionResizeMode(col, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.Stretch)            # long counts elide; the tooltip has them
        header.setSectionResizeMode(4, QHeaderView.Stretch)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectRows)
        layout.addWidget(self.table)
        self.run = QPushButton("Run selected task now")
        self.run.clicked.connect(self._run)
        layout.addWidget(self.run)
        self._shown = None

    def load(self, names: list[str], state: dict):
        shown = (tuple(names), json.dumps(state, sort_keys=True, default=str))
        if shown == self._shown:
            return                              # unchanged: keep the selection and the scroll
        self._shown = shown
        self.table.setRowCount(len(names))
        for row, name in enumerate(names):
            s = state.get(name, {})
            values = (name, (s.get("last_finished") or "never")[:19], s.get("status") or "",
                      json.dumps(s.get("counts") or {}), s.get("error") or "")
            for col, value in enumerate(values):
                cell = QTableWidgetItem(value)
                cell.setToolTip(value)
                self.table.setItem(row, col, cell)

    def _run(self):
        row = self.table.currentRow()
        if row >= 0:
            self.run_requested.emit(self.table.item(row, 0).text())
