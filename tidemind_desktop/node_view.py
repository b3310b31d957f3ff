"""One memory: authored text as written, the derived layer labelled with its generator, tags as
chips that show their status (reject / undo), links with status, provenance, both clocks,
and the version history."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFrame, QGridLayout, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QScrollArea, QVBoxLayout,
                               QWidget)

CHIP_STYLE = {
    "confirmed": "background:#2f6f4e; color:white; border-radius:9px; padding:2px 8px;",
    "proposed": "background:#f3f0e0; color:#5c5020; border:1px dashed #b0a060; border-radius:9px; padding:2px 8px;",
    "rejected_by_user": "background:#eee; color:#999; text-decoration:line-through; border-radius:9px;"
                        " padding:2px 8px;",
}


def version_diff(old: str, new: str) -> str:
    """A word-level diff as HTML: removed words struck through in red, added ones in green."""
    import difflib

    a, b = old.split(), new.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(html.escape(" ".join(a[i1:i2])))
        if op in ("delete", "replace"):
            out.append(f"<span style='color:#b00;text-decoration:line-through'>{html.escape(' '.join(a[i1:i2]))}</span>")
        if op in ("insert", "replace"):
            out.append(f"<span style='color:#070;font-weight:bold'>{html.escape(' '.join(b[j1:j2]))}</span>")
    return " ".join(out)


class TagChip(QWidget):
    toggled = Signal(str, bool)          # name, reject?
    confirmed = Signal(str)

    def __init__(self, name: str, status: str, parent=None):
        super().__init__(parent)
        self.name, self.status = name, status
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 6, 0)
        self.label = QLabel(f"{name} · {status.replace('_by_user', '')}")
        self.label.setStyleSheet(CHIP_STYLE.get(status, ""))
        row.addWidget(self.label)
        if status == "proposed":
            self.confirm_button = QPushButton("confirm")
            self.confirm_button.setFlat(True)
            self.confirm_button.clicked.connect(lambda: self.confirmed.emit(name))
            row.addWidget(self.confirm_button)
        self.button = QPushButton("undo" if status == "rejected_by_user" else "reject")
        self.button.setFlat(True)
        self.button.clicked.connect(lambda: self.toggled.emit(name, status != "rejected_by_user"))
        row.addWidget(self.button)


class NodeView(QScrollArea):
    tag_toggled = Signal(int, str, bool)   # node id, tag, reject?
    tag_confirmed = Signal(int, str)
    action = Signal(str, int)              # 'edit' | 'archive' | 'restore' | 'forget' | 'tag' | 'graph', node id

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.node_id: int | None = None
        self.inner = QWidget()
        self.layout_ = QVBoxLayout(self.inner)
        self.layout_.setAlignment(Qt.AlignTop)
        self.setWidget(self.inner)
        self.chips: dict[str, TagChip] = {}
        self.show_message("Select a memory to see it here.")

    def _clear(self):
        while self.layout_.count():
            item = self.layout_.takeAt(0)
            if item.widget():
                item.widget().setParent(None)      # gone now, not at the next event loop turn
        self.chips = {}

    def show_message(self, text: str):
        self._clear()
        self.node_id = None
        label = QLabel(text)
        label.setWordWrap(True)
        self.layout_.addWidget(label)

    def show_node(self, node: dict, all_tags: list[dict]):
        self._clear()
        self.node_id = node["id"]
        head = QLabel(f"<b>Memory {node['id']}</b> · {node['status']} · scope <code>{html.escape(node['scope'])}</code>")
        self.layout_.addWidget(head)
        actions = QWidget()
        row = QHBoxLayout(actions)
        row.setContentsMargins(0, 0, 0, 0)
        row.setAlignment(Qt.AlignLeft)
        for verb, label in (("edit", "Edit…"), ("tag", "Add tag…"), ("graph", "Graph"), ("archive", "Archive"),
                            ("forget", "Forget…")):
            button = QPushButton(label)
            button.setObjectName(f"node-{verb}")
            button.clicked.connect(lambda _=False, v=verb: self.action.emit(v, self.node_id))
            row.addWidget(button)
        self.layout_.addWidget(actions)
        authored = QPlainTextEdit(node["content"])
        authored.setReadOnly(True)
        authored.setObjectName("authored")
        authored.setMinimumHeight(90)
        lines = node["content"].count("\n") + 1
        authored.setMaximumHeight(min(320, 40 + 18 * max(lines, 3)))
        self.layout_.addWidget(QLabel("<b>Authored</b> (as written; only a correction makes a new version)"))
        self.layout_.addWidget(authored)
        if node["derived"]:
            lines = "<br>".join(f"{html.escape(k)}: {html.escape(v['value'])} "
                                f"<span style='color:#888'>— derived by {html.escape(v['generator'])}</span>"
                                for k, v in sorted(node["derived"].items()))
            box = QLabel(f"<b>Derived</b> (regenerable, not authored)<br>{lines}")
            box.setWordWrap(True)
            box.setStyleSheet("background:#f6f7fb; border-left:3px solid #8899cc; padding:6px;")
            self.layout_.addWidget(box)
        self.layout_.addWidget(QLabel("<b>Tags</b>"))
        chips = QWidget()
        grid = QGridLayout(chips)                  # chips wrap in rows of two instead of running off
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setAlignment(Qt.AlignLeft)
        for i, tag in enumerate(all_tags):
            chip = TagChip(tag["name"], tag["status"])
            chip.toggled.connect(lambda name, reject: self.tag_toggled.emit(self.node_id, name, reject))
            chip.confirmed.connect(lambda name: self.tag_confirmed.emit(self.node_id, name))
            self.chips[tag["name"]] = chip
            grid.addWidget(chip, i // 2, i % 2)
        if not all_tags:
            grid.addWidget(QLabel("<i>none</i>"), 0, 0)
        self.layout_.addWidget(chips)
        link_text = "<br>".join((f"{html.escape(l['relation'])} → {l['target']}" if l.get("direction", "out") == "out"
                                 else f"{l['target']} {html.escape(l['relation'])} → this")
                                + f" <i>({html.escape(l['status'])})</i>" for l in node["links"]) or "<i>none</i>"
        self.layout_.addWidget(QLabel(f"<b>Links</b><br>{link_text}"))
        src = node["source"]
        provenance = QLabel(
            f"<b>Provenance</b> tool {html.escape(str(src['tool']))} · session {html.escape(str(src['session']))}"
            f" · capture {src['capture']}" + (f" · file {html.escape(node['import_file'])}" if node.get("import_file") else "")
            + f"<br><b>Valid</b> {node['valid_from']} → {node['valid_to'] or 'now'}"
            f" · <b>recorded</b> {node['recorded_at']}")
        provenance.setWordWrap(True)
        self.layout_.addWidget(provenance)
        if len(node.get("versions", [])) > 1:
            rows = "<br>".join(f"v{v['version']} · node {v['id']} · {v['status']} · {v['reason']}: "
                               f"{html.escape((v['content'] or '(text not shown)')[:140])}" for v in node["versions"])
            shown = [v for v in node["versions"] if v["content"]]
            diff = version_diff(shown[-2]["content"], shown[-1]["content"]) if len(shown) >= 2 else ""
            versions = QLabel(f"<b>Versions</b><br>{rows}" + (f"<br><b>Last change</b><br>{diff}" if diff else ""))
            versions.setWordWrap(True)
            self.layout_.addWidget(versions)
        line = QFrame()
        line.setFrameShape(QFrame.HLine)
        self.layout_.addWidget(line)
