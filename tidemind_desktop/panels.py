"""Import and metabolism panels: bring a vault in, and see (and run) the background tasks."""
from __future__ import annotations

import json

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QComboBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)


class ImportPanel(QWidget):
    requested = Signal(str, str)        # source, folder

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.source = QComboBox()
        self.source.addItems(["obsidian", "logseq"])
        self.folder = QLineEdit()
        self.folder.setPlaceholderText("Vault or graph folder")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.go = QPushButton("Import")
        self.go.clicked.connect(lambda: self.requested.emit(self.source.currentText(), self.folder.text().strip()))
        for w in (self.source, self.folder, browse, self.go):
            row.addWidget(w)
        layout.addLayout(row)
        self.report = QLabel("Imports are batches: `tidemind import rollback BATCH` undoes one.")
        self.report.setWordWrap(True)
        layout.addWidget(self.report)
        layout.addStretch(1)

    def _browse(self):
        chosen = QFileDialog.getExistingDirectory(self, "Choose a vault or graph folder")
        if chosen:
            self.folder.setText(chosen)


class MetabolismPanel(QWidget):
    run_requested = Signal(str)

    COLUMNS = ("task", "last finished", "status", "counts", "error")

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectRows)
        layout.addWidget(self.table)
        self.run = QPushButton("Run selected task now")
        self.run.clicked.connect(self._run)
        layout.addWidget(self.run)

    def load(self, names: list[str], state: dict):
        self.table.setRowCount(len(names))
        for row, name in enumerate(names):
            s = state.get(name, {})
            values = (name, (s.get("last_finished") or "never")[:19], s.get("status") or "",
                      json.dumps(s.get("counts") or {}), s.get("error") or "")
            for col, value in enumerate(values):
                self.table.setItem(row, col, QTableWidgetItem(value))
        self.table.resizeColumnsToContents()

    def _run(self):
        row = self.table.currentRow()
        if row >= 0:
            self.run_requested.emit(self.table.item(row, 0).text())
