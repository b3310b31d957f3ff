"""The graph browser: the whole graph of the store, a scope or a tag, or the local graph of one
memory to a chosen depth.

Confirmed links solid, pending dashed, rejected ones (dotted) only when asked for. Node colour
by scope or by tag, with a legend; size by how connected a memory is. Labels appear as you zoom
in (the best connected first) and for the memory under the pointer and its neighbours, which
are highlighted while the rest fades. Click selects, double-click opens (or a click, as the
person set `[desktop] graph_open`), drag moves (and pins);
the wheel zooms, dragging the background pans, Fit shows everything.

The layout runs on a thread of its own and is drawn as it settles; positions are kept per graph
(the whole graph of a scope, the local graph of a memory): coming back, or a refresh that brought
no newcomer, draws everything where it was with no layout at all; a newcomer starts beside its
neighbours and a short, cool layout moves it in.
"""
from __future__ import annotations

import html
import math
from collections import Counter

from PySide6.QtCore import QEvent, QLineF, QObject, QPoint, QRectF, QRunnable, Qt, QThreadPool, QTimer, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QFontMetricsF, QPainter, QPalette, QPen
from PySide6.QtWidgets import (QCheckBox, QComboBox, QGraphicsEllipseItem, QGraphicsItem, QGraphicsScene,
                               QGraphicsSimpleTextItem,
                               QGraphicsView, QLabel, QLineEdit, QSpinBox, QToolBar, QVBoxLayout, QWidget)

from . import layout as layout_mod
from . import theme

UNIT = 46.0                 # pixels per ideal link length
STYLE = {"confirmed": Qt.SolidLine, "pending": Qt.DashLine, "rejected_by_model": Qt.DotLine,
         "rejected_by_user": Qt.DotLine}
LEGEND_SIZE = 9             # categories with a colour of their own; the rest are "other"
LABEL_CHARS = 40
LABEL_POINTS = 9.0          # a label's size at zoom 1; it grows with the zoom up to LABEL_GROWTH times
LABEL_GROWTH = 1.6


# relations that go one way (a note links to or embeds another, a memory updates or explains one):
# drawn with an arrowhead at the memory they point to; "related" and "contradicts" go both ways
DIRECTED = frozenset({"links-to", "embeds", "updates", "explains", "example-of"})
ARROW_BACK, ARROW_LENGTH, ARROW_SPREAD = 9.0, 8.0, math.radians(24)


def lines_of(positions: dict, edges: list[tuple[int, int, str]],
             directed: frozenset = frozenset()) -> dict[str, list[QLineF]]:
    """The lines to draw, by link status, with two short strokes at the head of each link in
    `directed` (source, target) (made on the layout thread while a layout runs)."""
    lines: dict[str, list[QLineF]] = {}
    for a, b, status in edges:
        pa, pb = positions.get(a), positions.get(b)
        if pa is not None and pb is not None:
            drawn = lines.setdefault(status, [])
            drawn.append(QLineF(pa[0], pa[1], pb[0], pb[1]))
            if (a, b) in directed:
                dx, dy = pa[0] - pb[0], pa[1] - pb[1]
                length = math.hypot(dx, dy)
                if length > 2 * ARROW_BACK:
                    ux, uy = dx / length, dy / length
                    tip = (pb[0] + ux * ARROW_BACK, pb[1] + uy * ARROW_BACK)     # at the dot's edge, not its middle
                    for turn in (ARROW_SPREAD, -ARROW_SPREAD):
                        wx = ux * math.cos(turn) - uy * math.sin(turn)
                        wy = ux * math.sin(turn) + uy * math.cos(turn)
                        drawn.append(QLineF(tip[0], tip[1], tip[0] + wx * ARROW_LENGTH, tip[1] + wy * ARROW_LENGTH))
    return lines


def matches(node: dict, query: str) -> bool:
    """Whether a drawn memory answers a graph query: every term must hold. `tag:name` (a tag it
    carries), `scope:name` (its scope, or a scope under it: `scope:project` takes `project:port`),
    any other word a word start in its title."""
    title = node.get("title", "").casefold()
    words = title.replace("›", " ").split()
    for term in query.casefold().split():
        kind, _, value = term.partition(":")
        if kind == "tag" and value:
            if value.lstrip("#") not in {t.casefold() for t in node.get("tags", [])}:
                return False
        elif kind == "scope" and value:
            scope = node.get("scope", "").casefold()
            if scope != value and not scope.startswith(value + ":"):
                return False
        elif not any(w.startswith(term) for w in words) and term not in title:
            return False
    return True


def groups_of(text: str) -> list[str]:
    """Colour groups as a person writes them: queries separated by ';' (`tag:cranes; scope:work`)."""
    return [g.strip() for g in text.split(";") if g.strip()]


def rect_of(positions: dict) -> QRectF:
    if not positions:
        return QRectF(-100, -100, 200, 200)
    xs = [p[0] for p in positions.values()]
    ys = [p[1] for p in positions.values()]
    return QRectF(min(xs) - 40, min(ys) - 40, max(xs) - min(xs) + 80, max(ys) - min(ys) + 80)


class NodeItem(QGraphicsEllipseItem):
    """A memory: drawn by Qt itself (2,000 Python paint calls a frame were too slow); its label
    is made the first time it is shown."""

    def __init__(self, node: dict, panel: "GraphView", radius: float):
        super().__init__(-radius, -radius, 2 * radius, 2 * radius)
        self.node_id, self.panel, self.radius = node["id"], panel, radius
        self.title = node["title"]
        self.label: QGraphicsSimpleTextItem | None = None
        self.setFlags(QGraphicsItem.ItemIsMovable)
        self.setAcceptHoverEvents(True)
        self.setZValue(2)
        self.setToolTip(f"#{node['id']} {node['title']}")
        self.setCursor(Qt.PointingHandCursor)

    def show_label(self, show: bool, points: float | None = None) -> None:
        if show and self.label is None:
            self.label = QGraphicsSimpleTextItem(self.title[:LABEL_CHARS], self)      # its size set on screen
            self.label.setFlag(QGraphicsItem.ItemIgnoresTransformations)
            self.label.setBrush(self.panel.palette().color(QPalette.Text))
            self.label.setPos(self.radius + 2, -7)
        if self.label is not None and show and points is not None and self.label.font().pointSizeF() != points:
            font = self.label.font()
            font.setPointSizeF(points)
            self.label.setFont(font)
            self.label.setPos(self.radius + 2, -QFontMetricsF(font).height() / 2)
        if self.label is not None and self.label.isVisible() != show:
            self.label.setVisible(show)

    def restyle(self) -> None:
        panel = self.panel
        if self.node_id == panel.selected or self.node_id == panel.center:
            pen = QPen(panel.palette().color(QPalette.Highlight), 3)
            pen.setCosmetic(True)
            self.setPen(pen)
        else:
            self.setPen(QPen(Qt.NoPen))             # an outline drowns the colour of a small dot
        self.setBrush(QBrush(self.colour))
        faded = panel.focus is not None and self.node_id not in panel.focus
        self.setOpacity(0.2 if faded else 1.0)

    def hoverEnterEvent(self, event):
        self.panel.set_focus(self.node_id)
        super().hoverEnterEvent(event)

    def hoverLeaveEvent(self, event):
        self.panel.set_focus(None)
        super().hoverLeaveEvent(event)

    def mousePressEvent(self, event):
        self.panel.select(self.node_id)
        self._pressed_at = event.screenPos()
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event):
        super().mouseMoveEvent(event)
        self.panel.node_moved(self.node_id)        # dragged by the person: pinned where dropped

    def mouseReleaseEvent(self, event):
        super().mouseReleaseEvent(event)
        pressed = getattr(self, "_pressed_at", None)
        moved = pressed is not None and (event.screenPos() - pressed).manhattanLength() > 4
        if self.panel.open_on_click and event.button() == Qt.LeftButton and not moved:
            self.panel.node_opened.emit(self.node_id)      # (a drag moves it; a click opens it)

    def mouseDoubleClickEvent(self, event):
        if not self.panel.open_on_click:
            self.panel.node_opened.emit(self.node_id)
        super().mouseDoubleClickEvent(event)


class EdgeLayer(QGraphicsItem):
    """Every link in one item: 6,000 line items would make every repaint and every move slow."""

    def __init__(self, panel: "GraphView"):
        super().__init__()
        self.panel = panel
        self.edges: list[tuple[int, int, str]] = []
        self.directed: frozenset = frozenset()      # (source, target) of the links drawn with an arrowhead
        self._lines: dict[str, list[QLineF]] = {}
        self._rect = QRectF()
        self.visible_lines = True          # off while a fresh layout is still a scatter (long lines are slow)
        self.setZValue(1)
        self.setAcceptedMouseButtons(Qt.NoButton)
        self.setAcceptHoverEvents(False)

    def pen_for(self, status: str, strong: bool = False) -> QPen:
        pal = self.panel.palette()
        if strong:
            colour = pal.color(QPalette.Highlight)
        elif status.startswith("rejected"):
            colour = QColor(theme.colour("removed"))
        else:
            colour = QColor(pal.color(QPalette.Text))
            colour.setAlpha(150 if status == "confirmed" else 110)
        pen = QPen(colour, 2 if strong else 1)         # whole pixels: the fast path
        pen.setCosmetic(True)                       # the same thickness at every zoom
        pen.setStyle(STYLE.get(status, Qt.SolidLine))
        return pen

    def rebuild(self, frame: dict | None = None) -> None:
        """Lines from a layout frame (built on the layout thread), else from where the items are."""
        if frame is None:
            positions = {i: (it.pos().x(), it.pos().y()) for i, it in self.panel.items.items()}
            frame = {"lines": lines_of(positions, self.edges, self.directed), "rect": rect_of(positions)}
        self.prepareGeometryChange()
        self._lines, self._rect = frame["lines"], frame["rect"]
        self.update()

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, painter, option, widget=None):
        """Lines cost what their pixels cost: thousands are drawn without antialiasing. All of
        them are handed to Qt, which clips those outside the view for almost nothing (choosing
        them here, in Python, cost 70 ms at 24,000 links)."""
        if not self.visible_lines:
            return
        many = sum(len(v) for v in self._lines.values()) > 800
        painter.setRenderHint(QPainter.Antialiasing, not many)
        focus = self.panel.focus
        for status, lines in self._lines.items():
            pen = self.pen_for(status)
            if focus is not None:
                faded = pen.color()
                faded.setAlpha(35)
                pen.setColor(faded)
            painter.setPen(pen)
            painter.drawLines(lines)
        if focus is not None:
            painter.setRenderHint(QPainter.Antialiasing, True)
            items = self.panel.items
            for a, b, status in self.edges:
                if (a == self.panel.focus_id or b == self.panel.focus_id) and a in items and b in items:
                    painter.setPen(self.pen_for(status, strong=True))
                    painter.drawLine(QLineF(items[a].pos(), items[b].pos()))


class _LayoutSignals(QObject):
    frame = Signal(int, float, object)          # generation, progress, positions


class _LayoutJob(QRunnable):
    """The layout, and each frame's lines, on the layout thread: the UI thread only moves items."""

    def __init__(self, panel: "GraphView", generation: int, ids, edges, start):
        super().__init__()
        self.signals, self.generation = panel.layout_signals, generation
        self.ids, self.edges, self.start, self.panel_generation = ids, edges, start, panel.generation_ref
        self.directed = panel.edge_layer.directed

    def _frame(self, unit_positions: dict) -> dict:
        positions = {i: (x * UNIT, y * UNIT) for i, (x, y) in unit_positions.items()}
        return {"positions": positions, "lines": lines_of(positions, self.edges, self.directed),
                "rect": rect_of(positions)}

    def run(self):
        stale = lambda: self.panel_generation[0] != self.generation      # noqa: E731 - a newer graph was asked for
        unit = {i: (x / UNIT, y / UNIT) for i, (x, y) in (self.start or {}).items()}
        try:
            final = layout_mod.run(self.ids, [(a, b) for a, b, _ in self.edges], start=unit or None,
                                   cancelled=stale, frame_s=0.25,
                                   on_frame=lambda p, xy: stale() or self.signals.frame.emit(self.generation, p,
                                                                                             self._frame(xy)))
        except Exception as exc:                                          # noqa: BLE001 - shown, not fatal
            self.signals.frame.emit(self.generation, -1.0, str(exc))
            return
        self.signals.frame.emit(self.generation, 1.0, self._frame(final))


class _View(QGraphicsView):
    def __init__(self, panel: "GraphView"):
        super().__init__(panel.graph_scene, panel)
        self.panel = panel
        self.setRenderHint(QPainter.Antialiasing)
        self.setDragMode(QGraphicsView.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.BoundingRectViewportUpdate)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)      # drag the background to pan, as in Obsidian
        self.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)

    def wheelEvent(self, event):
        factor = 1.15 if event.angleDelta().y() > 0 else 1 / 1.15
        self.scale(factor, factor)
        self.panel.zoomed_by_person = True          # the layout settling no longer re-fits the view
        self.panel.zoomed()

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self.panel.place_legend()


class GraphView(QWidget):
    wanted = Signal(dict)           # load this graph (the window runs the read on its worker)
    node_selected = Signal(int)
    node_opened = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.graph_scene = QGraphicsScene(self)        # the view does not own its scene: keep it
        self.graph_scene.setItemIndexMethod(QGraphicsScene.NoIndex)       # positions change as it settles
        self.items: dict[int, NodeItem] = {}
        self.neighbours: dict[int, set[int]] = {}
        self.edge_layer = EdgeLayer(self)
        self.graph_scene.addItem(self.edge_layer)
        self.center: int | None = None
        self.open_on_click = False          # the person's setting ([desktop] graph_open): else a double-click
        self.selected: int | None = None
        self.focus: set[int] | None = None
        self.focus_id: int | None = None
        self.node_ids: set[int] = set()
        self.pinned: set[int] = set()
        self._pending_nodes: list = []
        self._first: dict = {}
        self._label_level = None
        self._labelled: set[int] = set()
        self.colours: dict[int, QColor] = {}
        self.cache: dict[tuple, dict[int, tuple]] = {}            # graph key -> positions
        self.key: tuple | None = None
        self.request: dict = {"mode": "all"}
        self.graph: dict | None = None           # what is drawn (filtered)
        self.full_graph: dict | None = None      # what was read
        self.progress = 1.0
        self.zoomed_by_person = False
        self.hubs: set[int] = set()
        self.generation_ref = [0]
        self.layout_pool = QThreadPool(self)
        self.layout_pool.setMaxThreadCount(1)
        self.layout_signals = _LayoutSignals(self)
        self.layout_signals.frame.connect(self._frame)
        self._edges_dirty = QTimer(self)
        self._edges_dirty.setSingleShot(True)
        self._edges_dirty.setInterval(30)
        self._edges_dirty.timeout.connect(self.edge_layer.rebuild)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        bar = QToolBar()                            # too narrow: the rest goes behind », never sideways
        self.mode = QComboBox()
        self.mode.addItems(["Whole graph", "Local graph"])
        self.mode.setToolTip("The whole graph of the scope (or tag), or the memories around the open one")
        self.depth = QSpinBox()
        self.depth.setRange(1, 5)
        self.depth.setValue(2)
        self.depth.setPrefix("depth ")
        self.depth.setToolTip("How many links away from the open memory (at most 500 memories are drawn: the"
                              " nearest levels whole, and it says so when it stops)")
        self.scope = QComboBox()
        self.scope.addItem("all scopes")
        self.tag = QComboBox()
        self.tag.setEditable(True)
        self.tag.addItem("")
        self.tag.lineEdit().setPlaceholderText("any tag")
        self.tag.setMinimumContentsLength(8)
        self.colour_by = QComboBox()
        self.colour_by.addItems(["colour by scope", "colour by tag", "colour by groups"])
        self.filter = QLineEdit()
        self.filter.setObjectName("graph-filter")
        self.filter.setPlaceholderText("filter: words, tag:x, scope:y")
        self.filter.setClearButtonEnabled(True)
        self.filter.setToolTip("Only the memories that answer this (every term): a word their title starts a word"
                               " with, tag:name, scope:name")
        self.groups = QLineEdit()
        self.groups.setObjectName("graph-groups")
        self.groups.setPlaceholderText("groups: tag:x; scope:y; words")
        self.groups.setToolTip("Colour groups, one query each, separated by ';': a memory takes the colour of the"
                               " first group it answers (choose \"colour by groups\")")
        self.status_actions = {}
        for status, label in (("confirmed", "confirmed"), ("pending", "pending"), ("rejected", "rejected")):
            action = QAction(label, self)
            action.setCheckable(True)
            action.setChecked(status != "rejected")
            action.setToolTip(f"show {label} links" + (" (dotted; hidden unless asked for)" if status == "rejected" else ""))
            self.status_actions[status] = action
        self.flagged = QCheckBox("flagged only")
        self.flagged.setToolTip("only memories that are one side of an open contradiction")
        self.orphans = QCheckBox("unlinked")
        self.orphans.setChecked(True)
        self.orphans.setToolTip("show memories without a link")
        fit = QAction("Fit", self)
        fit.setToolTip("Show the whole graph")
        fit.triggered.connect(self.fit)
        for w in (self.mode, self.depth, self.scope, self.tag):
            bar.addWidget(w)
        for action in self.status_actions.values():
            bar.addAction(action)
        bar.addWidget(self.orphans)
        bar.addWidget(self.flagged)
        bar.addWidget(self.colour_by)
        bar.addWidget(self.filter)
        bar.addWidget(self.groups)
        bar.addAction(fit)
        outer.addWidget(bar)
        self.view = _View(self)
        outer.addWidget(self.view, 1)
        self._labels_later = QTimer(self)
        self._labels_later.setSingleShot(True)
        self._labels_later.setInterval(60)
        self._labels_later.timeout.connect(lambda: self.update_labels(force=True))
        for bar in (self.view.horizontalScrollBar(), self.view.verticalScrollBar()):
            bar.valueChanged.connect(lambda _: self._labels_later.start())
        self.legend = QLabel(self)                  # over the view, not in its viewport (which scrolls its children)
        self.legend.setObjectName("legend")
        self.legend.setTextFormat(Qt.RichText)
        self.legend.setStyleSheet("background: palette(window); color: palette(window-text);"
                                  " border: 1px solid palette(mid); padding: 4px;")
        self.info = QLabel("")
        self.info.setWordWrap(True)
        outer.addWidget(self.info)
        self.mode.currentIndexChanged.connect(lambda _: self._changed())
        self.depth.valueChanged.connect(lambda _: self.request.get("mode") == "local" and self._changed())
        self.scope.currentIndexChanged.connect(lambda _: self._changed())
        self.tag.lineEdit().editingFinished.connect(self._tag_changed)
        self.tag.activated.connect(lambda _: self._tag_changed())
        for action in self.status_actions.values():
            action.toggled.connect(lambda _: self._changed())
        self.orphans.toggled.connect(lambda _: self._changed())
        self.flagged.toggled.connect(lambda _: self._changed())
        self.colour_by.currentIndexChanged.connect(lambda _: self._recolour())
        self.filter.returnPressed.connect(self._refilter)
        self.filter.textChanged.connect(lambda text: not text and self._refilter())      # (cleared: all again)
        self.groups.returnPressed.connect(self._grouped)
        self._last_tag = ""

    # -- what to show --------------------------------------------------------------------------
    def current_request(self, center: int | None = None) -> dict:
        statuses = [s for s, a in self.status_actions.items() if a.isChecked() and s != "rejected"]
        if self.status_actions["rejected"].isChecked():
            statuses += ["rejected_by_model", "rejected_by_user"]
        scope = self.scope.currentText() if self.scope.currentIndex() > 0 else None
        local = self.mode.currentIndex() == 1
        return {"mode": "local" if local else "all", "center": center if center is not None else self.center,
                "depth": self.depth.value(), "scope": scope, "tag": self.tag.currentText().strip() or None,
                "statuses": statuses, "orphans": self.orphans.isChecked(), "flagged": self.flagged.isChecked()}

    def _tag_changed(self):
        if self.tag.currentText().strip() != self._last_tag:
            self._last_tag = self.tag.currentText().strip()
            self._changed()

    def _changed(self):
        request = self.current_request()
        if request["mode"] == "local" and request["center"] is None:
            self.info.setText("Open a memory to see its local graph (or choose Whole graph).")
            return
        self.wanted.emit(request)

    def show_local(self, node_id: int) -> None:
        """The local graph of this memory (the node view's Local graph button)."""
        self.mode.blockSignals(True)
        self.mode.setCurrentIndex(1)
        self.mode.blockSignals(False)
        self.wanted.emit(self.current_request(center=node_id))

    def show_overview(self) -> None:
        """The whole graph with the filters as they are (the command palette's Whole graph)."""
        self.mode.blockSignals(True)
        self.mode.setCurrentIndex(0)
        self.mode.blockSignals(False)
        self.wanted.emit(self.current_request())

    def set_choices(self, scopes: list[str], tags: list[str]) -> None:
        """The scope and tag lists of the filters, updated without touching what is chosen."""
        known = [self.scope.itemText(i) for i in range(1, self.scope.count())]
        if known != scopes:
            current = self.scope.currentText()
            self.scope.blockSignals(True)
            self.scope.clear()
            self.scope.addItems(["all scopes", *scopes])
            self.scope.setCurrentText(current if current in scopes else "all scopes")
            self.scope.blockSignals(False)
        known_tags = [self.tag.itemText(i) for i in range(1, self.tag.count())]
        if known_tags != tags:
            text = self.tag.currentText()
            self.tag.blockSignals(True)
            self.tag.clear()
            self.tag.addItems(["", *tags])
            self.tag.setEditText(text)
            self.tag.blockSignals(False)

    @staticmethod
    def key_of(request: dict) -> tuple:
        """Positions are kept per graph: the scope's (or tag's) whole graph, a memory's local one."""
        if request.get("mode") == "local":
            return ("local", request.get("center"))
        return ("all", request.get("scope"), request.get("tag"), bool(request.get("flagged")))

    # -- drawing ----------------------------------------------------------------------------------
    def clear_graph(self) -> None:
        self.generation_ref[0] += 1
        for item in self.items.values():
            self.graph_scene.removeItem(item)
        self.items, self.neighbours, self.node_ids = {}, {}, set()
        self._pending_nodes, self._labelled, self.key = [], set(), None
        self.edge_layer.edges = []
        self.edge_layer.rebuild()
        self.center = None
        self.selected = None
        self.focus = None
        self.graph = None
        self.legend.hide()

    def show_graph(self, graph: dict, pos: dict | None = None, request: dict | None = None) -> None:
        """Draw a graph now (at its kept positions, newcomers beside their neighbours) and lay it
        out on the layout thread, drawing as it settles. The same graph shown again (a refresh)
        keeps its items: only the memories that came or went are added or removed. `pos`:
        positions computed elsewhere (then no layout runs)."""
        request = request or {"mode": "local" if graph.get("center") else "all", "center": graph.get("center"),
                              "statuses": ["confirmed", "pending", "rejected_by_model", "rejected_by_user"]}
        self.full_graph = graph
        graph = self._filtered(graph)
        self.generation_ref[0] += 1
        generation = self.generation_ref[0]
        key = self.key_of(request)
        same = key == self.key
        if not same:
            self.pinned = set()
            self.zoomed_by_person = False
        self.key, self.request, self.graph = key, request, graph
        self._label_level = None
        keep = set(request.get("statuses") or STYLE)
        edges = [(e["source_id"], e["target_id"], e["status"]) for e in graph["edges"] if e["status"] in keep]
        ids = [n["id"] for n in graph["nodes"]]
        start = dict(self.cache.get(key, {}))
        start.update({i: (it.pos().x(), it.pos().y()) for i, it in self.items.items() if same and i in self.items})
        if pos is None:
            unit, known = layout_mod.initial(ids, [(a, b) for a, b, _ in edges],
                                             {i: (x / UNIT, y / UNIT) for i, (x, y) in start.items()}, 7)
            first = {i: (float(unit[k, 0]) * UNIT, float(unit[k, 1]) * UNIT) for k, i in enumerate(ids)}
            if ids and known >= 1.0:
                pos = first                 # every memory has its place: a return or a refresh moves nothing
        else:
            first, known = pos, 1.0
        degree = Counter(x for a, b, _ in edges for x in (a, b))
        wanted = {n["id"]: n for n in graph["nodes"]}
        if not same:                                           # another graph: drop every item at once
            self.graph_scene.removeItem(self.edge_layer)
            self.graph_scene.clear()
            self.graph_scene.addItem(self.edge_layer)
            self.items, self._labelled = {}, set()
        for i in [i for i in self.items if i not in wanted]:
            self.graph_scene.removeItem(self.items.pop(i))
            self._labelled.discard(i)
        for i, item in self.items.items():                     # kept: new title, size and place
            item.title = wanted[i]["title"]
            item.setToolTip(f"#{i} {item.title}")
        self._pending_nodes = [(wanted[i], first[i], 5 + 2.2 * math.sqrt(min(degree[i], 40)))
                               for i in ids if i not in self.items]
        self.neighbours = {}
        for a, b, _ in edges:
            self.neighbours.setdefault(a, set()).add(b)
            self.neighbours.setdefault(b, set()).add(a)
        self.hubs = {i for i, _ in degree.most_common(max(5, len(ids) // 25))}
        self.center = graph.get("center")
        self.node_ids = set(ids)
        self.focus = None
        self.selected = self.selected if self.selected in self.node_ids else None
        self.edge_layer.edges = edges
        self.edge_layer.directed = frozenset((e["source_id"], e["target_id"]) for e in graph["edges"]
                                             if e["status"] in keep and e.get("relation") in DIRECTED)
        self.edge_layer.visible_lines = known >= 0.8 or len(ids) < 300   # a scatter's long lines: after it settles a bit
        self.progress = 0.0 if pos is None else 1.0
        self._first = {**first, **{i: (it.pos().x(), it.pos().y()) for i, it in self.items.items() if i in self.pinned}}
        self.colours = self._colour_map()
        for i, item in self.items.items():                     # kept items: their colour may have changed
            if item.colour != self.colours.get(i, item.colour):
                item.colour = self.colours[i]
                item.restyle()
        self._add_pending(generation)
        if pos is None and ids:
            self.layout_pool.start(_LayoutJob(self, generation, ids, edges, start or None))
        else:
            self.cache[key] = dict(first)

    def _filtered(self, graph: dict) -> dict:
        """The graph as the filter leaves it: the memories that answer it (and the open one),
        and the links among them."""
        query = self.filter.text().strip()
        if not query:
            return graph
        kept = [n for n in graph["nodes"] if n["id"] == graph.get("center") or matches(n, query)]
        ids = {n["id"] for n in kept}
        return {**graph, "nodes": kept, "filtered_from": len(graph["nodes"]),
                "edges": [e for e in graph["edges"] if e["source_id"] in ids and e["target_id"] in ids]}

    def _refilter(self) -> None:
        if self.full_graph is not None:          # the same graph again: positions kept, only the set changes
            self.show_graph(self.full_graph, request=self.request)

    def _grouped(self) -> None:
        if self.colour_by.currentIndex() != 2:
            self.colour_by.setCurrentIndex(2)    # (recolours)
        else:
            self._recolour()

    def _add_pending(self, generation: int) -> None:
        """Items are made a couple of hundred at a time, so 2,000 of them never freeze the window."""
        if generation != self.generation_ref[0]:
            return
        batch, self._pending_nodes = self._pending_nodes[:200], self._pending_nodes[200:]
        for node, (x, y), radius in batch:
            item = NodeItem(node, self, radius)
            item.colour = self.colours.get(node["id"], QColor("#888888"))
            item.restyle()
            item.setPos(x, y)
            self.items[node["id"]] = item
            self.graph_scene.addItem(item)
        if self._pending_nodes:
            QTimer.singleShot(0, lambda: self._add_pending(generation))
            return
        # lines from the positions the items were given (cheaper than asking 2,000 items), and
        # none while a fresh layout is still a scatter: its first frames bring them
        first = self._first
        self.edge_layer.rebuild({"lines": lines_of(first, self.edge_layer.edges, self.edge_layer.directed)
                                 if self.edge_layer.visible_lines
                                 else {}, "rect": rect_of(first)})
        if not self.zoomed_by_person:
            self.fit(rect_of(first))
        self._say()

    def _frame(self, generation: int, progress: float, frame):
        if generation != self.generation_ref[0]:
            return                                  # a layout of a graph no longer shown
        if progress < 0:
            self.info.setText(f"layout failed: {frame}")
            return
        for i, (x, y) in frame["positions"].items():
            item = self.items.get(i)
            if item is not None and i not in self.pinned:
                item.setPos(x, y)
        self.progress = progress
        if progress >= 0.25:
            self.edge_layer.visible_lines = True
        self.edge_layer.rebuild(frame if not self.pinned else None)
        if progress >= 1.0 and not self._pending_nodes:
            self.cache[self.key] = {i: (it.pos().x(), it.pos().y()) for i, it in self.items.items()}
            self._labels_later.start()                  # placed again where the memories came to rest
        if not self.zoomed_by_person:              # the view follows the graph as it spreads out
            self.fit(frame["rect"])
        self._say()

    def _say(self):
        g = self.graph or {"nodes": [], "edges": []}
        shown = len(g["nodes"])
        total = g.get("total")
        where = (f"around #{self.center} (depth {self.request.get('depth', 2)})" if self.center is not None
                 else "in " + (self.request.get("scope") or "all scopes")
                 + (f", tagged #{self.request['tag']}" if self.request.get("tag") else ""))
        more = f" (the {shown:,} best linked of {total:,}; choose a scope or a tag)" if total and total > shown else ""
        if g.get("filtered_from") is not None:
            more += f" (filtered: {shown:,} of {g['filtered_from']:,} answer “{self.filter.text().strip()}”)"
        if g.get("capped"):                       # a local graph stopped at its cap: said, with where
            more = (f" — capped at {g['limit']:,} of at least {g['reachable']:,} within depth {g['depth']}:"
                    f" depth {g['complete_depth']} whole, the best linked of the next level")
        settling = "" if self.progress >= 1.0 else f" · laying out {int(self.progress * 100)}%"
        picked = (f" · selected #{self.selected} {self.items[self.selected].title[:60]}"
                  if self.selected in self.items else "")
        opens = "click opens" if self.open_on_click else "double-click opens"
        self.info.setText(f"{shown:,} memories, {len(self.edge_layer.edges):,} links {where}{more}{settling}{picked}"
                          f" · {opens}")

    def scene_rect(self) -> QRectF:
        return rect_of({i: (it.pos().x(), it.pos().y()) for i, it in self.items.items()})

    def fit(self, rect: QRectF | None = None) -> None:
        rect = (rect or self.scene_rect()).adjusted(-60, -60, 160, 60)          # room for the labels on the right
        self.graph_scene.setSceneRect(rect.adjusted(-rect.width(), -rect.height(), rect.width(), rect.height()))
        self.view.fitInView(rect, Qt.KeepAspectRatio)
        if self.view.transform().m11() > 1.4:                         # a small graph stays legible, not huge
            self.view.resetTransform()
            self.view.centerOn(rect.center())
        self.zoomed()

    def zoomed(self) -> None:
        """Thousands of memories seen from afar are drawn without antialiasing (a few pixels each:
        it costs more than it shows); close up, or few of them, smooth again."""
        self.view.setRenderHint(QPainter.Antialiasing, len(self.items) < 800 or self.view.transform().m11() >= 0.5)
        self.update_labels()

    def labelled(self, node_id: int) -> bool:
        """Every label when zoomed in, the hubs' half way, and always the highlighted ones."""
        zoom = self.view.transform().m11()
        return (zoom >= 0.75 or (zoom >= 0.35 and node_id in self.hubs) or node_id == self.selected
                or node_id == self.center or (self.focus is not None and node_id in self.focus))

    def update_labels(self, force: bool = False) -> None:
        """Labels of the memories in view only, and only when the zoom crossed a step or the view
        moved: making 2,000 labels at once froze the window. They grow with the zoom, and avoid
        each other: the highlighted ones first, then the best linked; one that would cover a
        label already placed waits for a closer zoom."""
        zoom = self.view.transform().m11()
        level = (zoom >= 0.35) + (zoom >= 0.75)
        seen = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        state = (level, round(zoom, 1), len(self.items), round(seen.x() / 200), round(seen.y() / 200))
        if state == self._label_level and not force:
            return
        self._label_level = state
        points = LABEL_POINTS * min(LABEL_GROWTH, max(1.0, zoom))
        font = self.font()
        font.setPointSizeF(points)
        metrics = QFontMetricsF(font)
        near = seen.adjusted(-200, -100, 200, 100)
        always = {i for i in (self.selected, self.center) if i in self.items} | (self.focus or set())
        wanted = [item for item in (self.graph_scene.items(near) if level else [])
                  if isinstance(item, NodeItem) and self.labelled(item.node_id) and item.node_id not in always]
        wanted.sort(key=lambda it: (-len(self.neighbours.get(it.node_id, ())), it.node_id))
        taken: dict[tuple[int, int], list[QRectF]] = {}       # placed labels, by 120-pixel cell of the view
        shown = set()
        for item in [self.items[i] for i in sorted(always)] + wanted:
            at = self.view.mapFromScene(item.pos())
            box = QRectF(at.x() + item.radius * zoom + 2, at.y() - metrics.height() / 2,
                         metrics.horizontalAdvance(item.title[:LABEL_CHARS]), metrics.height())
            cells = [(cx, cy) for cx in range(int(box.left()) // 120, int(box.right()) // 120 + 1)
                     for cy in range(int(box.top()) // 120, int(box.bottom()) // 120 + 1)]
            if item.node_id not in always and any(box.intersects(r) for c in cells for r in taken.get(c, ())):
                continue
            for c in cells:
                taken.setdefault(c, []).append(box)
            item.show_label(True, points)
            shown.add(item.node_id)
        for i in self._labelled - shown:
            if i in self.items:
                self.items[i].show_label(False)
        self._labelled = shown

    def _colour_map(self) -> dict[int, QColor]:
        """Each memory's colour (by scope or by its most common tag) and the legend to match."""
        g = self.graph
        if not g:
            return {}
        by_tag = self.colour_by.currentIndex() == 1
        groups = groups_of(self.groups.text()) if self.colour_by.currentIndex() == 2 else []
        if groups:
            pick = {n["id"]: next((q for q in groups if matches(n, q)), "(no group)") for n in g["nodes"]}
            colours = {q: QColor(theme.CATEGORICAL[k % len(theme.CATEGORICAL)]) for k, q in enumerate(groups)}
            counts = Counter(pick.values())
            other = QColor(self.palette().color(QPalette.Mid))
            rows = [f"<span style='color:{colours[q].name()}'>●</span> {html.escape(q)} ({counts[q]:,})" for q in groups]
            if counts.get("(no group)"):
                rows.append(f"<span style='color:{other.name()}'>●</span> no group ({counts['(no group)']:,})")
            self.legend.setText("<br>".join(rows))
            self.legend.adjustSize()
            self.legend.setVisible(bool(rows))
            self.place_legend()
            return {i: colours.get(name, other) for i, name in pick.items()}
        if by_tag:
            freq = Counter(t for n in g["nodes"] for t in n.get("tags", []))
            pick = {n["id"]: max(n.get("tags", []), key=lambda t: (freq[t], t), default="(no tag)") for n in g["nodes"]}
        else:
            pick = {n["id"]: n["scope"] for n in g["nodes"]}
        counts = Counter(pick.values())
        named = [name for name, _ in counts.most_common(LEGEND_SIZE)]
        colours = {name: QColor(theme.CATEGORICAL[k % len(theme.CATEGORICAL)]) for k, name in enumerate(named)}
        other = QColor(self.palette().color(QPalette.Mid))
        rows = [f"<span style='color:{colours[n].name()}'>●</span> {html.escape(n)} ({counts[n]:,})" for n in named]
        rest = sum(c for n, c in counts.items() if n not in colours)
        if rest:
            rows.append(f"<span style='color:{other.name()}'>●</span> other ({rest:,})")
        self.legend.setText("<br>".join(rows))
        self.legend.adjustSize()
        self.legend.setVisible(bool(rows))
        self.place_legend()
        return {i: colours.get(name, other) for i, name in pick.items()}

    def _recolour(self):
        self.colours = self._colour_map()
        for i, item in self.items.items():
            item.colour = self.colours.get(i, item.colour)
            item.restyle()

    def place_legend(self):
        self.legend.move(self.view.geometry().topLeft() + QPoint(6, 6))
        self.legend.raise_()

    # -- pointer ------------------------------------------------------------------------------------
    def set_focus(self, node_id: int | None) -> None:
        """Hover: the memory and its neighbours stand out, labelled; the rest fades."""
        before = self.focus
        self.focus_id = node_id
        self.focus = None if node_id is None else {node_id, *self.neighbours.get(node_id, ())}
        if before is None and self.focus is None:
            return
        for i, item in self.items.items():
            faded = self.focus is not None and i not in self.focus
            if (item.opacity() < 1.0) != faded:
                item.setOpacity(0.2 if faded else 1.0)
        for i in (before or set()) | (self.focus or set()):
            if i in self.items:
                show = self.labelled(i) and (self.view.transform().m11() >= 0.35 or i in (self.focus or set())
                                             or i in (self.selected, self.center))
                self.items[i].show_label(show)
                (self._labelled.add if show else self._labelled.discard)(i)
        self.edge_layer.update()

    def select(self, node_id: int) -> None:
        previous, self.selected = self.selected, node_id
        for i in (previous, node_id):
            if i in self.items:
                self.items[i].restyle()
        self.update_labels(force=True)
        self._say()
        self.node_selected.emit(node_id)

    def node_moved(self, node_id: int) -> None:
        self.pinned.add(node_id)
        self._edges_dirty.start()
        item = self.items[node_id]
        if self.key in self.cache:
            self.cache[self.key][node_id] = (item.pos().x(), item.pos().y())

    def edge_styles(self) -> dict[str, Qt.PenStyle]:
        """The line style of each link status drawn now (what tests and the legend rely on)."""
        return {status: self.edge_layer.pen_for(status).style() for _, _, status in self.edge_layer.edges}

    def wait_layout(self, timeout_ms: int = 30000) -> None:
        self.layout_pool.waitForDone(timeout_ms)

    def changeEvent(self, event):
        # a label's colour is set when it is made: a theme switched while the graph is on screen
        # left black labels on dark. Labels, outlines and lines take the palette in use again.
        if event.type() == QEvent.PaletteChange:
            text = self.palette().color(QPalette.Text)
            for item in self.items.values():
                if item.label is not None:
                    item.label.setBrush(text)
                item.restyle()
            self.edge_layer.update()
        super().changeEvent(event)

    def stop(self) -> None:
        """The window closes: a running layout stops at its next iteration."""
        self.generation_ref[0] += 1
        self.layout_pool.waitForDone(5000)
