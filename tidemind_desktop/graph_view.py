"""The neighbourhood of a memory on a QGraphicsScene: force-directed layout, zoom and pan;
confirmed links solid, pending dashed, rejected ones only when asked for; node size by heat,
colour by scope. Click selects (moves the focus), double-click opens."""
from __future__ import annotations

import math
import zlib

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QPainter, QPen
from PySide6.QtWidgets import QGraphicsEllipseItem, QGraphicsScene, QGraphicsSimpleTextItem, QGraphicsView

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]
STYLE = {"confirmed": Qt.SolidLine, "pending": Qt.DashLine, "rejected_by_model": Qt.DotLine,
         "rejected_by_user": Qt.DotLine}


def layout(ids: list[int], edges: list[tuple[int, int]], iterations: int | None = None,
           seed: int = 7) -> dict[int, tuple]:
    """Fruchterman-Reingold in numpy (float32, in place): deterministic for the same graph; fewer
    iterations for bigger graphs keep 500 nodes well under a second."""
    n = len(ids)
    if n == 0:
        return {}
    iterations = iterations or max(30, min(120, 20000 // n))
    rng = np.random.default_rng(seed)
    pos = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    index = {i: k for k, i in enumerate(ids)}
    e = np.array([(index[a], index[b]) for a, b in edges if a in index and b in index], dtype=int).reshape(-1, 2)
    k = np.float32(1.0 / math.sqrt(n))
    temperature = 0.2
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist2 = np.einsum("ijk,ijk->ij", delta, delta) + np.float32(1e-6)
        disp = np.einsum("ij,ijk->ik", (k * k) / dist2, delta)
        if len(e):
            d = pos[e[:, 0]] - pos[e[:, 1]]
            dl = np.sqrt(np.einsum("ij,ij->i", d, d))[:, None] + np.float32(1e-6)
            pull = d * dl / k
            np.add.at(disp, e[:, 0], -pull)
            np.add.at(disp, e[:, 1], pull)
        length = np.sqrt(np.einsum("ij,ij->i", disp, disp))[:, None] + np.float32(1e-9)
        pos += disp / length * np.minimum(length, np.float32(temperature))
        temperature *= 0.95
    pos -= pos.mean(axis=0)
    scale = 260 / (np.abs(pos).max() + 1e-9)
    return {i: (float(pos[index[i], 0] * scale), float(pos[index[i], 1] * scale)) for i in ids}


class NodeItem(QGraphicsEllipseItem):
    def __init__(self, node: dict, x: float, y: float, view: "GraphView"):
        radius = 7 + 12 * max(0.0, min(1.0, node["heat"]))
        super().__init__(-radius, -radius, 2 * radius, 2 * radius)
        self.node_id, self.view = node["id"], view
        self.setPos(x, y)
        colour = QColor(PALETTE[zlib.crc32(node["scope"].encode()) % len(PALETTE)])
        self.setBrush(QBrush(colour))
        self.setPen(QPen(QColor("#222"), 2 if node["id"] == view.center else 1))
        self.setZValue(2)
        self.setToolTip(f"#{node['id']} {node['title']}")
        self.setAcceptHoverEvents(True)
        label = QGraphicsSimpleTextItem(f"#{node['id']} {node['title'][:28]}", self)   # parent owns it
        font = label.font()
        font.setPointSize(10)
        label.setFont(font)
        label.setPos(radius + 3, -9)

    def mousePressEvent(self, event):
        self.view.node_selected.emit(self.node_id)
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event):
        self.view.node_opened.emit(self.node_id)
        super().mouseDoubleClickEvent(event)


class GraphView(QGraphicsView):
    node_selected = Signal(int)
    node_opened = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.graph_scene = QGraphicsScene(self)        # the view does not own its scene: keep it
        self.setScene(self.graph_scene)
        self.setRenderHint(QPainter.Antialiasing)
        self.setDragMode(QGraphicsView.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.AnchorUnderMouse)
        self.center = None
        self.node_ids: set[int] = set()
        self.edge_items: list = []

    def wheelEvent(self, event):
        factor = 1.15 if event.angleDelta().y() > 0 else 1 / 1.15
        self.scale(factor, factor)

    def clear_graph(self) -> None:
        self.graph_scene.clear()
        self.edge_items = []
        self.center = None
        self.node_ids = set()

    def show_graph(self, graph: dict, pos: dict | None = None):
        """Draw a graph; `pos` is its layout when it was computed elsewhere (the worker thread)."""
        self.graph_scene.clear()
        self.edge_items = []
        self.center = graph["center"]
        self.node_ids = {n["id"] for n in graph["nodes"]}
        if pos is None:
            pos = layout([n["id"] for n in graph["nodes"]], [(e["source_id"], e["target_id"]) for e in graph["edges"]])
        for e in graph["edges"]:
            a, b = pos.get(e["source_id"]), pos.get(e["target_id"])
            if a is None or b is None:
                continue
            pen = QPen(QColor("#555" if e["status"] == "confirmed" else "#999"), 1.6)
            pen.setStyle(STYLE.get(e["status"], Qt.SolidLine))
            line = self.graph_scene.addLine(a[0], a[1], b[0], b[1], pen)
            line.setData(0, e["status"])
            line.setZValue(1)
            self.edge_items.append(line)
        for n in graph["nodes"]:
            self.graph_scene.addItem(NodeItem(n, *pos[n["id"]], self))
        rect = self.graph_scene.itemsBoundingRect().adjusted(-60, -60, 60, 60)
        self.setSceneRect(rect)
        self.resetTransform()
        view = self.viewport().rect()
        if rect.width() > view.width() or rect.height() > view.height():
            self.fitInView(rect, Qt.KeepAspectRatio)          # shrink big graphs; small ones stay legible
        self.centerOn(rect.center())
