"""The desktop's Digests tab (issue 15: digests reachable from the desktop): each day and week of
the chosen scope as the temporal pass summarised it, every cited memory a link that opens it.
The real window on a real store, offscreen; the digests read on the worker thread."""
import threading

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QUrl  # noqa: E402
from PySide6.QtWidgets import QApplication, QPushButton  # noqa: E402

from tidemind.memory import Memory  # noqa: E402
from tidemind.metabolism.scheduler import run_due  # noqa: E402

from .desktop_helpers import settle, window  # noqa: E402,F401

# four days of two ISO weeks (2026-W08: 16-22 Feb, W09: 23 Feb - 1 Mar), two scopes; the test
# clock reads 2026-03-01, so W08 and the days are over and W09 is not
DAYS = {
    "2026-02-17": ("project:shop", ["The checkout service moved to PostgreSQL 16 on Tuesday.",
                                    "Priya reviewed the checkout schema change before the deploy."]),
    "2026-02-19": ("project:shop", ["The billing webhook now retries five times before it gives up.",
                                    "Sam owns the billing webhook and its retry policy."]),
    "2026-02-24": ("project:shop", ["The search index rebuild was moved to every six hours.",
                                    "The catalog export feeds the search index rebuild."]),
    "2026-02-25": ("personal", ["Dentist appointment with Dr. Lena on Wednesday at 10:30.",
                                "Bought lentils, lemons and olive oil for the weekend."]),
}


def _days(mem):
    """Memories about four past days (by valid time), then the temporal pass, as the daemon runs it."""
    ids = {}
    for day, (scope, texts) in DAYS.items():
        ids[day] = [mem.digest(t, scope=scope, valid_at=f"{day}T10:00:00Z", session=day)["node_ids"][0]
                    for t in texts]
    report = run_due(mem, only=["temporal"], force=True, clock=mem.clock)[0]
    assert report["status"] == "ok", report
    return ids


def test_the_digests_tab_lists_days_and_weeks_and_opens_the_memories_they_cite(window, mem, qtbot, monkeypatch):
    threads = []
    for name in ("digests", "period_digests", "titles"):
        real = getattr(Memory, name)

        def spy(self, *a, _real=real, **k):
            threads.append(threading.current_thread() is threading.main_thread())
            return _real(self, *a, **k)
        monkeypatch.setattr(Memory, name, spy)
    ids = _days(mem)
    expected = mem.digests(limit=200)["digests"]
    assert {d["period"] for d in expected} >= {*DAYS, "2026-W08"}       # days, and a week that is over
    personal = mem.digests(scopes=["personal"])["digests"]
    threads.clear()                                                       # (the test's own reads above)
    window.refresh_all()
    settle(window, qtbot)
    view = window.digests_view
    window.sidebar.itemClicked.emit(window.sidebar.items["digests"], 0)   # the sidebar's Digests entry
    settle(window, qtbot)
    assert window.tabs.currentWidget() is view
    listed = [view.digests[view.list.item(i).data(256)] for i in range(view.list.count())]
    assert sorted(d["id"] for d in listed) == sorted(d["id"] for d in expected)
    # newest first, a week's days under it: W09 (not over: days only), then W08 and its days
    assert [(d["period"], d["scope"]) for d in listed] == [
        ("2026-02-25", "personal"), ("2026-02-24", "project:shop"),
        ("2026-W08", "project:shop"), ("2026-02-19", "project:shop"), ("2026-02-17", "project:shop")]
    assert view.list.item(2).text().startswith("Week 2026-W08") and view.list.item(3).text().startswith("    Thu")
    assert f"The newest {len(expected)} digest(s) in " in view.info.text()
    # a day: its text with each cited memory a link, and the memories it cites by title
    row = next(i for i in range(view.list.count()) if "2026-02-19" in view.list.item(i).text())
    view.list.setCurrentRow(row)
    shown = view.detail.toHtml()
    assert "Thu 2026-02-19" in shown and "project:shop" in shown
    assert "billing webhook" in view.detail.toPlainText()
    for node_id in ids["2026-02-19"]:
        assert f'href="node:{node_id}"' in shown
    assert "Cites (2)" in view.detail.toPlainText()
    view.detail.anchorClicked.emit(QUrl(f"node:{ids['2026-02-19'][1]}"))   # a cited memory opens
    settle(window, qtbot)
    assert window.node_view.node_id == ids["2026-02-19"][1] and window.tabs.currentWidget() is window.node_view
    # a week named in the box: its weekly digest, then its days
    window.tabs.setCurrentWidget(view)
    view.period.setText("2026-W08")
    view.findChild(QPushButton, "digests-show").click()
    settle(window, qtbot)
    periods = [view.digests[view.list.item(i).data(256)]["period"] for i in range(view.list.count())]
    assert periods == ["2026-W08", "2026-02-17", "2026-02-19"]
    assert "of week 2026-W08" in view.info.text()
    view.findChild(QPushButton, "digests-later").click()                 # ▶ the week after
    settle(window, qtbot)
    assert view.period.text() == "2026-W09"
    assert {view.digests[view.list.item(i).data(256)]["period"] for i in range(view.list.count())} == {
        "2026-02-24", "2026-02-25"}                                     # (week 9 ends today: no weekly digest yet)
    view.findChild(QPushButton, "digests-earlier").click()
    view.findChild(QPushButton, "digests-earlier").click()               # ◀ ◀ a week with nothing in it
    settle(window, qtbot)
    assert view.period.text() == "2026-W07" and view.list.count() == 0
    assert "No digest of week 2026-W07" in view.info.text()
    view.period.setText("the blue one")
    view.findChild(QPushButton, "digests-show").click()
    settle(window, qtbot)
    assert "names no week or day" in view.info.text()
    # the scope chosen above narrows them; Newest lists again
    window.scope.setCurrentText("personal")
    view.findChild(QPushButton, "digests-newest").click()
    settle(window, qtbot)
    assert {view.digests[view.list.item(i).data(256)]["scope"] for i in range(view.list.count())} == {"personal"}
    assert [view.list.item(i).data(256) for i in range(view.list.count())] == [d["id"] for d in personal]
    assert personal
    # it fits a small window without sideways scrolling
    window.resize(800, 500)
    QApplication.processEvents()
    assert not view.detail.horizontalScrollBar().isVisible() and not view.list.horizontalScrollBar().isVisible()
    # read on the worker, never on the UI thread
    assert threads and not any(threads)


def test_new_digests_appear_in_place_without_moving_the_person(window, mem, qtbot):
    _days(mem)
    window.refresh_all()
    settle(window, qtbot)
    view = window.digests_view
    window.show_digests()
    settle(window, qtbot)
    assert window.sidebar.currentItem() is window.sidebar.items["digests"]
    before = view.list.count()
    row = next(i for i in range(view.list.count()) if "2026-02-24" in view.list.item(i).text())
    view.list.setCurrentRow(row)
    chosen = view.digests[view.list.currentItem().data(256)]
    # the daemon (another connection: the window's change signal ignores its own connection's
    # writes) summarises a new past day, and that day again with a late memory
    daemon = Memory.open(mem.settings.home, clock=mem.clock)
    try:
        daemon.digest("The mobile app's minimum iOS version is now 16.", scope="project:mobile",
                      valid_at="2026-02-26T09:00:00Z")
        late = daemon.digest("The search index rebuild now skips unchanged catalog rows.", scope="project:shop",
                             valid_at="2026-02-24T16:00:00Z")["node_ids"][0]
        run_due(daemon, only=["temporal"], force=True, clock=mem.clock)
    finally:
        daemon.close()
    qtbot.waitUntil(lambda: view.list.count() > before, timeout=60000)
    settle(window, qtbot)
    now = view.digests[view.list.currentItem().data(256)]
    assert (now["kind"], now["scope"], now["period"]) == (chosen["kind"], chosen["scope"], chosen["period"])
    assert now["id"] != chosen["id"] and late in now["members"]          # made again, still the one selected
    assert f'href="node:{late}"' in view.detail.toHtml()
    assert window.tabs.currentWidget() is view
    assert any(d["scope"] == "project:mobile" for d in view.digests.values())


def test_a_forgotten_memory_takes_the_digests_quoting_it_along_at_once(window, mem, qtbot):
    ids = _days(mem)
    window.refresh_all()
    window.show_digests()
    settle(window, qtbot)
    view = window.digests_view
    gone = ids["2026-02-19"][0]
    quoting = {d["id"] for d in view.digests.values() if gone in d["members"]}
    assert len(quoting) == 2                                             # its day and its week
    row = next(i for i in range(view.list.count()) if view.list.item(i).data(256) in quoting)
    view.list.setCurrentRow(row)
    view.detail.anchorClicked.emit(QUrl(f"node:{gone}"))
    settle(window, qtbot)
    window.forget_node(gone)
    assert not quoting & {view.list.item(i).data(256) for i in range(view.list.count())}   # at once
    assert "billing webhook" not in view.detail.toPlainText()
    settle(window, qtbot)
    window.show_digests()
    settle(window, qtbot)
    assert not quoting & set(view.digests)                               # withdrawn in the store too
    assert all(gone not in d["members"] for d in view.digests.values())
