"""Every action of the window in one list: its name, its keys and what it does. The window's
shortcuts are made from this list, the command palette (Ctrl+Shift+P) runs any of them by name,
and the shortcuts sheet (F1, Ctrl+/) shows them all, so the three never disagree."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (QDialog, QLabel, QLineEdit, QListWidget, QListWidgetItem, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget, QAbstractItemView, QHeaderView)

from .switcher import match_rank


@dataclass
class Command:
    name: str                     # what a person would call it ("Go back", "Search your memory")
    keys: tuple[str, ...]         # its shortcuts, portable text ("Ctrl+K"); none: the palette only
    run: Callable[[], object]


def bind(window: QWidget, commands: list[Command]) -> list[QShortcut]:
    """One window shortcut per key of each command."""
    made = []
    for command in commands:
        for keys in command.keys:
            made.append(QShortcut(QKeySequence(keys), window, activated=command.run))
    return made


def shown_keys(command: Command) -> str:
    """The keys as this platform writes them (⌘ on macOS)."""
    return ", ".join(QKeySequence(k).toString(QKeySequence.NativeText) for k in command.keys)


class CommandPalette(QDialog):
    """Type part of an action's name (its words' starts, its initials, a letter off), Enter runs it."""

    def __init__(self, commands: list[Command], parent=None):
        super().__init__(parent)
        self.setWindowTitle("Run a command")
        self.setModal(True)
        self.resize(520, 360)
        self.commands = commands
        layout = QVBoxLayout(self)
        self.text = QLineEdit()
        self.text.setPlaceholderText("Type an action: search, back, graph, undo…")
        self.list = QListWidget()
        self.list.setObjectName("commands")
        layout.addWidget(self.text)
        layout.addWidget(self.list, 1)
        self.text.textChanged.connect(self._filter)
        self.text.returnPressed.connect(self._run_current)
        self.list.itemActivated.connect(lambda item: self._run(item.data(Qt.UserRole)))
        self.text.installEventFilter(self)
        self._filter("")

    def eventFilter(self, obj, event):
        if obj is self.text and event.type() == event.Type.KeyPress and event.key() in (Qt.Key_Down, Qt.Key_Up):
            step = 1 if event.key() == Qt.Key_Down else -1
            self.list.setCurrentRow(max(0, min(self.list.count() - 1, self.list.currentRow() + step)))
            return True
        return super().eventFilter(obj, event)

    def open_fresh(self) -> None:
        self.text.clear()
        self._filter("")
        self.show()
        self.raise_()
        self.text.setFocus()

    def _filter(self, typed: str) -> None:
        self.list.clear()
        if typed.strip():
            ranked = sorted(((rank, n, c) for n, c in enumerate(self.commands)
                             if (rank := match_rank(typed, c.name)) is not None), key=lambda t: (t[0], t[1]))
            chosen = [c for _, _, c in ranked]
        else:
            chosen = list(self.commands)
        for n, command in enumerate(chosen):
            keys = shown_keys(command)
            item = QListWidgetItem(f"{command.name}" + (f"    {keys}" if keys else ""))
            item.setData(Qt.UserRole, self.commands.index(command))
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)

    def _run_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self._run(item.data(Qt.UserRole))

    def _run(self, index: int) -> None:
        self.accept()
        self.commands[index].run()


class ShortcutsSheet(QDialog):
    """Every action with its keys, in the order of the list."""

    def __init__(self, commands: list[Command], parent=None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.resize(520, 480)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Every action is also in the command palette (Ctrl+Shift+P)."))
        keyed = [c for c in commands if c.keys]
        self.table = QTableWidget(len(keyed), 2)
        self.table.setObjectName("shortcuts")
        self.table.setHorizontalHeaderLabels(["Action", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeToContents)
        for row, command in enumerate(keyed):
            self.table.setItem(row, 0, QTableWidgetItem(command.name))
            self.table.setItem(row, 1, QTableWidgetItem(shown_keys(command)))
        layout.addWidget(self.table, 1)
