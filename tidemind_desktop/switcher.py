"""The quick switcher (Ctrl+K): type a few words, arrow to a memory, a scope or a tag, Enter.

Memories are found two ways on the window's worker thread: their titles matched as names are
(the start, the starts of words, initials, letters in order, a letter off: "loc grap" and "lg"
find "Local Graph"), and the same full-text search the agents use (words only). Scopes and tags
come from the sidebar's counts and are matched the same way. Nothing is recorded as a search hit.
"""
from __future__ import annotations

import html
import re

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QDialog, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout

from . import theme
from .results import HTML, RichDelegate, marked, terms_of

TARGET = 259
_WORD = re.compile(r"\w+")


def match_rank(query: str, label: str) -> int | None:
    """How well a name matches what is typed, 0 best; None when it does not: the name itself (0),
    its start (1), the start of one of its words (2), the starts of its words in order ("loc
    grap" for "Local Graph", 3), its initials ("lg", 4), inside a word (5: "graph" in
    "photography" comes after "graph-view"), its letters in order (6), a word one letter off (7)."""
    return Typed(query).rank(Name(label))


class Name:
    """A name made ready to be matched many times (the switcher's thousands of titles)."""
    __slots__ = ("folded", "words", "initials", "letters")

    def __init__(self, label: str):
        self.folded = label.casefold().lstrip("#")
        self.words = _WORD.findall(self.folded)
        self.initials = "".join(w[0] for w in self.words)
        self.letters = frozenset(self.folded)


class Typed:
    """What is typed, made ready once for matching against many names."""

    def __init__(self, query: str):
        self.text = " ".join(query.casefold().lstrip("#").split())
        self.parts = _WORD.findall(self.text)
        self.letters = self.text.replace(" ", "")
        self.letter_set = frozenset(self.letters)
        self.near: frozenset[str] | None = None      # the words one letter off, when a vocabulary is known

    def knowing(self, vocabulary) -> "Typed":
        """Work out once which words of `vocabulary` are one letter off what is typed."""
        if len(self.parts) == 1 and len(self.parts[0]) >= 4:
            part = self.parts[0]
            self.near = frozenset(w for w in vocabulary if abs(len(w) - len(part)) <= 1 and _one_off(part, w))
        else:
            self.near = frozenset()
        return self

    def rank(self, name: Name) -> int | None:
        typed, words, parts = self.text, name.words, self.parts
        if not typed:
            return None
        folded = name.folded
        if folded == typed:
            return 0
        if folded.startswith(typed):
            return 1
        if len(parts) == 1 and any(w.startswith(parts[0]) for w in words):
            return 2
        if parts and _starts_in_order(parts, words):
            return 3
        if len(parts) == 1 and len(parts[0]) >= 2 and name.initials.startswith(parts[0]):
            return 4
        if typed in folded:
            return 5
        if len(self.letters) >= 3 and self.letter_set <= name.letters and _in_order(self.letters, folded):
            return 6
        if self.near is not None:
            return 7 if self.near and not self.near.isdisjoint(words) else None
        if len(parts) == 1 and len(parts[0]) >= 4 and any(_one_off(parts[0], w) for w in words):
            return 7
        return None


STRONG = 4          # a name matched this well (its start, its words' starts, its initials) outranks the text search


class TitleIndex:
    """Every memory's title made ready for matching, and the words they use."""

    def __init__(self, entries: list[dict]):
        self.titles = [(Name(e["title"]), e) for e in entries]
        self.vocabulary = frozenset(w for name, _ in self.titles for w in name.words)


def merged(query: str, index: TitleIndex, hits: list[dict], limit: int = 20) -> list[dict]:
    """The memories to show for `query`: titles matched as names (their start, word starts,
    initials) first, then the full-text search's hits, then titles matched more loosely (inside
    a word, letters in order, one letter off). Each memory once."""
    typed = Typed(query).knowing(index.vocabulary)
    ranked = sorted(((rank, len(entry["title"]), entry["id"], entry) for name, entry in index.titles
                     if (rank := typed.rank(name)) is not None), key=lambda t: t[:3])
    out, seen = [], set()
    for entry in [*(e for r, *_, e in ranked if r <= STRONG), *hits, *(e for r, *_, e in ranked if r > STRONG)]:
        if entry["id"] not in seen:
            seen.add(entry["id"])
            out.append(entry)
    return out[:limit]


def _starts_in_order(parts: list[str], words: list[str]) -> bool:
    at = 0
    for part in parts:
        while at < len(words) and not words[at].startswith(part):
            at += 1
        if at == len(words):
            return False
        at += 1
    return True


def _in_order(letters: str, name: str) -> bool:
    rest = iter(name)
    return all(c in rest for c in letters)


def _one_off(a: str, b: str) -> bool:
    """One letter changed, missed or added."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return a == b
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


class QuickSwitcher(QDialog):
    chosen = Signal(dict)               # {"node": id} | {"view": ..., "scope"/"tag": ...}
    lookup = Signal(str)                # the window searches; answers with `show_memories`

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Go to…")
        self.setModal(True)
        self.resize(560, 380)
        layout = QVBoxLayout(self)
        self.text = QLineEdit()
        self.text.setPlaceholderText("Go to a memory, scope or #tag…")
        self.list = QListWidget()
        self.list.setItemDelegate(RichDelegate(self.list))
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        layout.addWidget(self.text)
        layout.addWidget(self.list, 1)
        self.places: list[tuple[str, dict]] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)       # one search when typing pauses, not one per key
        self._timer.timeout.connect(lambda: self.lookup.emit(self.text.text().strip()))
        self.text.textChanged.connect(self._typed)
        self.text.returnPressed.connect(self._accept)
        self.list.itemActivated.connect(self._activated)
        self.text.installEventFilter(self)
        self.memories: list[dict] = []
        self._answered: str | None = None   # the text the memories on screen were looked up for
        self._enter_waits = False            # Enter pressed before that lookup was back
        self._picked = False                 # a row chosen with the arrows since the last key typed

    def open_with(self, places: list[tuple[str, dict]]) -> None:
        self.places = places
        self.memories, self._answered, self._enter_waits, self._picked = [], None, False, False
        self.text.clear()
        self._show([])
        self.show()
        self.raise_()
        self.text.setFocus()

    def eventFilter(self, obj, event):
        if obj is self.text and event.type() == event.Type.KeyPress and event.key() in (Qt.Key_Down, Qt.Key_Up):
            row = self.list.currentRow() + (1 if event.key() == Qt.Key_Down else -1)
            self.list.setCurrentRow(max(0, min(self.list.count() - 1, row)))
            self._picked = self.list.count() > 0
            return True
        return super().eventFilter(obj, event)

    def _activated(self, item) -> None:
        """A row double-clicked (or Enter on the list): that row, at once."""
        self.list.setCurrentItem(item)
        self._picked = True
        self._accept()

    def hideEvent(self, event):
        self._enter_waits = False           # Esc after Enter: nothing opens when the lookup comes back
        super().hideEvent(event)

    def _typed(self, text: str):
        self._enter_waits = self._picked = False
        self._answered = None               # (a lookup answers for the text as it is now, spaces too)
        # the memories of the last lookup stay only while their titles match what is typed now
        # (Enter must never open a row found for other words)
        self.memories = [m for m in self.memories if match_rank(text, m["title"]) is not None]
        self._show(self.memories)
        if text.strip():
            self._timer.start()

    def show_memories(self, query: str, items: list[dict]) -> None:
        if query == self.text.text().strip():
            self.memories, self._answered = items, query
            self._show(items)
            if self._enter_waits and self.isVisible():
                self._enter_waits = False
                self._accept()

    def _show(self, memories: list[dict]) -> None:
        query = self.text.text().strip()
        terms = terms_of(query)
        self.list.clear()
        ranked = sorted((rank, len(label), label, n) for n, (label, _) in enumerate(self.places)
                        if (rank := match_rank(query, label)) is not None)
        places = [self.places[n] for *_, n in ranked[:6]]
        for item in memories[:20]:
            row = QListWidgetItem(f"#{item['id']} {item['title']}")
            where = theme.muted(f"#{item['id']} · {html.escape(item['scope'])}")
            row.setData(HTML, f"{marked(item['title'][:100], terms)} {where}")
            row.setData(TARGET, {"node": item["id"]})
            self.list.addItem(row)
        for label, target in places:
            row = QListWidgetItem(label)
            row.setData(HTML, f"{marked(label, terms)} {theme.muted('· list')}")
            row.setData(TARGET, target)
            self.list.addItem(row)
        if self.list.count():
            self.list.setCurrentRow(0)

    def _accept(self):
        text = self.text.text().strip()
        if text and not self._picked and self._answered != text:
            self._enter_waits = True         # opened when the lookup of what is typed comes back
            return
        item = self.list.currentItem()
        if item is not None:
            self.chosen.emit(dict(item.data(TARGET)))
            self.hide()
