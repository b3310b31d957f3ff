"""Digests: what happened each day and each week of the chosen scope, as the metabolism's
temporal pass summarised it (by valid time, each sentence citing the memory it came from).

The newest digests are listed by default; a period in the box ("2026-W10", "last week",
"2026-03-09", "yesterday") lists that week's digest and its days, or that day's. Select one and
its text is shown with every cited memory a link (and the memories it cites listed by title):
click to open it. The reads run on the window's worker (`Memory.digests` and
`Memory.period_digests`); this widget only draws what comes back."""
from __future__ import annotations

import datetime as dt
import html
import re

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem,
                               QPushButton, QSplitter, QTextBrowser, QVBoxLayout, QWidget)

from . import theme

ID = 256
NEWEST = 200                     # digests listed without a period (the box reaches any older one)
_CITES = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def period_name(d: dict) -> str:
    """'Week 2026-W10' or 'Tue 2026-03-03'."""
    if d["kind"] == "weekly":
        return f"Week {d['period']}"
    try:
        return f"{dt.date.fromisoformat(d['period']):%a} {d['period']}"
    except ValueError:
        return d["period"]


def _week(d: dict) -> str:
    if d["kind"] == "weekly":
        return d["period"]
    try:
        year, week, _ = dt.date.fromisoformat(d["period"]).isocalendar()
    except ValueError:
        return d["period"]
    return f"{year:04d}-W{week:02d}"


def in_weeks(found: list[dict]) -> list[dict]:
    """Newest week first; in a week, scope by scope, the week's digest and then its days, newest
    first (the store lists every week before any day: 'YYYY-Www' sorts after 'YYYY-MM-DD')."""
    out = sorted(found, key=lambda d: d["period"], reverse=True)
    out = sorted(out, key=lambda d: d["kind"] != "weekly")
    out = sorted(out, key=lambda d: d["scope"])
    return sorted(out, key=_week, reverse=True)


def digest_html(d: dict, titles: dict[int, str]) -> str:
    """A digest's text with each cited memory a link, then the memories it cites by title."""
    members = set(d["members"])

    def cite(m: re.Match) -> str:
        ids = [int(x) for x in re.split(r"\s*,\s*", m.group(1))]
        if not all(i in members for i in ids):
            return html.escape(m.group(0))
        return " ".join(f"<a href='node:{i}'>#{i}</a>" for i in ids)

    def line(text: str) -> str:
        out, at = [], 0
        for m in _CITES.finditer(text):
            out.append(html.escape(text[at:m.start()]))
            out.append(cite(m))
            at = m.end()
        return "".join(out) + html.escape(text[at:])

    body, bullets = [], []
    for raw in d["text"].splitlines():
        text = raw.strip()
        if not text:
            continue
        if text.startswith(("- ", "* ")):
            bullets.append(f"<li>{line(text[2:])}</li>")
            continue
        if bullets:
            body.append("<ul>" + "".join(bullets) + "</ul>")
            bullets = []
        body.append(f"<p>{line(text)}</p>")
    if bullets:
        body.append("<ul>" + "".join(bullets) + "</ul>")
    cited = "<br>".join(
        f"<a href='node:{i}'>{html.escape((titles.get(i) or f'memory {i}')[:100])}</a> {theme.muted(f'#{i}')}"
        for i in d["members"])
    what = "weekly digest" if d["kind"] == "weekly" else "daily digest"
    return (f"<h3>{html.escape(period_name(d))} · {html.escape(d['scope'])}</h3>"
            + (f"<p><b>{html.escape(d['title'])}</b></p>" if d.get("title") else "")
            + "".join(body)
            + f"<p><b>Cites</b> ({len(d['members'])})<br>{cited}</p>"
            + "<p>" + theme.muted(f"{what} · {html.escape(str(d.get('status', '')))} · written by"
                                  f" {html.escape(str(d.get('generator', '')))} (derived, not authored)") + "</p>")


class DigestsView(QWidget):
    wanted = Signal(str)             # the period asked for ('' = the newest)
    node_opened = Signal(int)        # a cited memory was clicked

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.period = QLineEdit()
        self.period.setObjectName("digests-period")
        self.period.setPlaceholderText("a week (2026-W10, last week) or a day (2026-03-09, yesterday); empty: the newest")
        self.period.setClearButtonEnabled(True)
        self.show_button = QPushButton("Show")
        self.show_button.setObjectName("digests-show")
        self.newest = QPushButton("Newest")
        self.newest.setObjectName("digests-newest")
        self.earlier, self.later = QPushButton("◀"), QPushButton("▶")
        for b, name, tip in ((self.earlier, "digests-earlier", "the week or day before"),
                             (self.later, "digests-later", "the week or day after")):
            b.setObjectName(name)
            b.setToolTip(tip)
            b.setFixedWidth(32)
            b.setEnabled(False)
        row.addWidget(self.period, 1)
        row.addWidget(self.show_button)
        row.addWidget(self.earlier)
        row.addWidget(self.later)
        row.addWidget(self.newest)
        layout.addLayout(row)
        self.info = QLabel("")
        self.info.setWordWrap(True)
        layout.addWidget(self.info)
        split = QSplitter()
        split.setChildrenCollapsible(False)
        self.list = QListWidget()
        self.list.setObjectName("digests")
        self.list.setSelectionMode(QAbstractItemView.SingleSelection)
        self.list.setWordWrap(True)
        self.list.setAlternatingRowColors(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.list.setMinimumWidth(150)
        self.detail = QTextBrowser()
        self.detail.setObjectName("digest-text")
        self.detail.setOpenLinks(False)
        self.detail.setMinimumWidth(200)
        self.detail.anchorClicked.connect(lambda url: self.node_opened.emit(int(url.toString().split(":", 1)[1])))
        split.addWidget(self.list)
        split.addWidget(self.detail)
        split.setSizes([240, 520])
        layout.addWidget(split, 1)
        self.digests: dict[int, dict] = {}
        self.titles: dict[int, str] = {}
        self.loaded = False
        self.shown: int | None = None
        self._html: str | None = None
        self.period.returnPressed.connect(self._ask)
        self.show_button.clicked.connect(self._ask)
        self.newest.clicked.connect(self._newest)
        self.earlier.clicked.connect(lambda: self._step(-1))
        self.later.clicked.connect(lambda: self._step(1))
        self.showing: tuple[str, str] | None = None          # ("week" | "day", period) shown, None: the newest
        self.stepped: tuple[str, str] | None = None          # asked for by ◀ ▶ and not shown yet (quick clicks add up)
        self.list.currentItemChanged.connect(lambda item, _prev=None: self._show(item))
        self.detail.setHtml(theme.muted("Daily and weekly digests appear here once the metabolism's"
                                        " temporal pass has summarised a period that is over."))

    def request(self) -> str:
        return self.period.text().strip()

    def _ask(self):
        self.stepped = None
        self.wanted.emit(self.request())

    def _newest(self):
        self.stepped = None
        self.period.clear()
        self.wanted.emit("")

    def _step(self, by: int):
        """The week (or day) before or after the one shown."""
        base = self.stepped or self.showing
        if base is None:
            return
        kind, period = base
        if kind == "week":
            year, week = (int(x) for x in period.split("-W"))
            monday = dt.date.fromisocalendar(year, week, 1) + dt.timedelta(weeks=by)
            iso = monday.isocalendar()
            target = f"{iso[0]:04d}-W{iso[1]:02d}"
        else:
            target = (dt.date.fromisoformat(period) + dt.timedelta(days=by)).isoformat()
        self.stepped = (kind, target)
        self.period.setText(target)
        self.wanted.emit(target)

    def load(self, r: dict) -> None:
        """Draw what the worker read: {"digests", "titles", "scopes", "kind"?, "period"?}."""
        self.loaded = True
        if "error" in r:
            self.info.setText(html.escape(r["error"]))
            return
        found = r["digests"] if r.get("period") else in_weeks(r["digests"])
        again = self.digests and self.showing == ((r["kind"], r["period"]) if r.get("period") else None)
        self.showing = (r["kind"], r["period"]) if r.get("period") else None
        if self.stepped == self.showing:
            self.stepped = None
        self.earlier.setEnabled(self.showing is not None)
        self.later.setEnabled(self.showing is not None)
        # the selected digest stays selected when it is made again (a new row for the same day)
        was = self.digests.get(self.list.currentItem().data(ID)) if self.list.currentItem() else None
        current = (was["kind"], was["scope"], was["period"]) if was else None
        at = self.list.verticalScrollBar().value()
        self.digests = {d["id"]: d for d in found}
        self.titles = r.get("titles") or {}
        where = ", ".join(r["scopes"]) if r.get("scopes") else "no scope"
        if r.get("period"):
            what = f"week {r['period']}" if r.get("kind") == "week" else f"{r['period']}"
            self.info.setText(f"{len(found)} digest(s) of {what} in {where}" if found else
                              f"No digest of {what} in {where} (a period gets one once it is over and the"
                              " metabolism's temporal pass has run).")
        else:
            more = "; name a week or a day to see an older one" if len(found) >= NEWEST else ""
            self.info.setText(f"The newest {len(found)} digest(s) in {where}{more}" if found else
                              f"No digests in {where} yet: the metabolism's temporal pass writes one for each day"
                              " and week that is over.")
        self.list.blockSignals(True)
        self.list.clear()
        chosen = None
        for d in found:
            pad = "" if d["kind"] == "weekly" else "    "         # a week's days sit under it
            item = QListWidgetItem(f"{pad}{period_name(d)} · {d['scope']}\n"
                                   f"{pad}{(d.get('title') or '').strip() or str(len(d['members'])) + ' memories'}")
            item.setData(ID, d["id"])
            item.setToolTip(f"{'weekly' if d['kind'] == 'weekly' else 'daily'} digest citing"
                            f" {len(d['members'])} memories")
            self.list.addItem(item)
            if (d["kind"], d["scope"], d["period"]) == current:
                chosen = item
        self.list.blockSignals(False)
        if again:
            self.list.verticalScrollBar().setValue(at)        # a refresh: the list stays where it was
        if chosen is None and self.list.count():
            chosen = self.list.item(0)
        if chosen is not None:
            self.list.blockSignals(True)
            self.list.setCurrentItem(chosen)
            self.list.blockSignals(False)
            if again:
                self.list.verticalScrollBar().setValue(at)
            else:
                self.list.scrollToItem(chosen)
            self._show(chosen)
        else:
            self.shown = None
            self._html = None
            self.detail.setHtml(theme.muted(self.info.text()))

    def drop(self, node_ids) -> None:
        """A forgotten, archived or corrected memory's words leave at once: the digests that cite
        it go from the list (the store has withdrawn them; the next read confirms)."""
        gone = set(node_ids)
        for row in reversed(range(self.list.count())):
            d = self.digests.get(self.list.item(row).data(ID))
            if d is not None and gone & set(d["members"]):
                self.list.blockSignals(True)
                self.list.takeItem(row)
                self.list.blockSignals(False)
                del self.digests[d["id"]]
                if d["id"] == self.shown:
                    self.shown, self._html = None, None
                    self.list.setCurrentItem(None)
                    self.detail.setHtml(theme.muted("That digest quoted a memory that is gone; the metabolism"
                                                    " will write the period's digest again."))

    def _show(self, item) -> None:
        if item is None:
            return
        d = self.digests.get(item.data(ID))
        if d is None:
            return
        self.shown = d["id"]
        text = digest_html(d, self.titles)
        if text != self._html:                 # unchanged by a refresh: left as it is (and where it is scrolled)
            self._html = text
            self.detail.setHtml(text)
