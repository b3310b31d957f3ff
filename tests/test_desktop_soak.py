"""Soak: the real window driven as a person would for minutes, while another process writes.

Searches, opening results, browsing the sidebar, the graph, the quick switcher, review
decisions and their undo, one after another; meanwhile an agent process digests every second or
so, then falls quiet. Asserted over the whole run: the window stays alive and answers (the event
loop's lateness, sampled every 10 ms, has a p95 under 100 ms), a refresh never moves the
person's tab or open memory, and while nothing changes nothing is read again.

40 seconds in CI; TIDEMIND_SOAK=1 runs 10 minutes (as the other reliability suites do).
"""
import os
import random
import subprocess
import sys
import time

import pytest

pytest.importorskip("PySide6")
from PySide6.QtWidgets import QApplication  # noqa: E402

from tidemind.memory import Memory  # noqa: E402

from .conftest import ROOT  # noqa: E402

SOAK = bool(os.environ.get("TIDEMIND_SOAK"))
DURATION_S = 600 if SOAK else 40
CYCLE_S = 60 if SOAK else 40          # each cycle: the agent writes, then everything is quiet
QUIET_S = 10
WORDS = ("deploy", "billing", "staging", "crane", "runbook", "postgres", "search", "timeout", "incident",
         "checkout", "kafka", "retry", "meeting", "ios", "webhook")

AGENT = """
import random, sys, time
from tidemind.memory import Memory
words = sys.argv[2].split(",")
with Memory.open(sys.argv[1], actor="mcp:soak-agent") as m:
    i = 0
    while True:
        m.digest(f"Agent note {i}: the {random.choice(words)} service {random.choice(words)}s again",
                 scope="project:infra", source_tool="soak-agent", session=f"soak-{i // 10}")
        i += 1
        time.sleep(random.uniform(0.4, 1.2))
"""


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        return 0.0


class Driver:
    """One person's actions, each waited for (as a person waits to see the result)."""

    def __init__(self, window, qtbot, rng, probe=None):
        self.w, self.qtbot, self.rng, self.probe = window, qtbot, rng, probe
        self.done: dict[str, int] = {}
        self.worst: dict[str, float] = {}          # the longest stall seen during each kind of action

    def settle(self):
        self.qtbot.waitUntil(lambda: not self.w.busy, timeout=30000)

    def act(self, writes: bool):
        actions = [self.search, self.open_result, self.browse, self.graph, self.switcher, self.review_look]
        if writes:
            actions += [self.decide, self.decide, self.undo]
        action = self.rng.choice(actions)
        mark = self.probe.mark() if self.probe else 0
        action()
        self.done[action.__name__] = self.done.get(action.__name__, 0) + 1
        self.settle()
        if self.probe:
            self.qtbot.wait(30)                    # the probe's next tick measures the last stretch
            name = action.__name__
            self.worst[name] = round(max(self.worst.get(name, 0.0), self.probe.worst(mark)), 1)

    def search(self):
        self.w.query.setText(" ".join(self.rng.sample(WORDS, 2)))
        self.w.search()

    def open_result(self):
        if self.w.results.count():
            self.w.results.setCurrentRow(self.rng.randrange(min(self.w.results.count(), 10)))

    def browse(self):
        bar = self.w.sidebar
        choices = [*bar.items.values(), *(bar.scopes_item.child(i) for i in range(bar.scopes_item.childCount()))]
        bar.itemClicked.emit(self.rng.choice(choices), 0)

    def graph(self):
        self.w.tabs.setCurrentWidget(self.w.graph_view)
        if self.w.graph_view.graph is not None and self.rng.random() < 0.3:
            self.w.graph_view.scope.setCurrentIndex(self.rng.randrange(self.w.graph_view.scope.count()))

    def switcher(self):
        self.w.open_switcher()
        self.w.switcher.text.setText(self.rng.choice(WORDS))
        self.qtbot.waitUntil(lambda: self.w.switcher.list.count() > 0 or not self.w.busy, timeout=60000)
        self.qtbot.wait(200)
        self.w.switcher.hide()

    def review_look(self):
        self.w.tabs.setCurrentWidget(self.w.review_view)
        view = self.w.review_view
        if view.items.count():
            view.items.setCurrentRow(self.rng.randrange(view.items.count()))

    def decide(self):
        self.review_look()
        view = self.w.review_view
        if view.current_row_data() is not None:
            view._decide(self.rng.choice(["approved", "rejected"]))

    def undo(self):
        if self.w.undo_stack:
            self.w.undo()


@pytest.mark.slow
def test_the_window_lives_through_a_working_session(qtbot, tmp_path):
    from tidemind_desktop.app import quiet_gc
    from tidemind_desktop.main_window import MainWindow
    from tidemind_desktop.probe import LatencyProbe
    from tidemind_desktop.sample import build

    home = tmp_path / "home"
    build(home, memories=400, quiet=True)
    memory = Memory.open(home, actor="person:desktop")
    window = MainWindow(memory, poll_ms=500)
    qtbot.addWidget(window)
    window.show()
    quiet_gc()                                               # as `tidemind desktop` does once its window is up
    rng = random.Random(3)
    probe = LatencyProbe(10)
    driver = Driver(window, qtbot, rng, probe)
    driver.settle()
    probe.start()
    rss_start, none_start = _rss_mb(), sys.getrefcount(None)
    started, cycles, quiet_checks, kept_in_place = time.monotonic(), 0, [], 0
    try:
        while time.monotonic() - started < DURATION_S:
            cycles += 1
            busy_until = min(time.monotonic() + CYCLE_S - QUIET_S, started + DURATION_S - QUIET_S)
            agent = subprocess.Popen([sys.executable, "-c", AGENT, str(home), ",".join(WORDS)], cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                # a refresh from the agent's writes must leave the person where they are
                node = next((window.results.item(i).data(256) for i in range(window.results.count())), None)
                window.tabs.setCurrentWidget(window.review_view)
                if node is not None:
                    window.request_node(node, switch=False)
                    driver.settle()
                before = window.refreshes
                qtbot.waitUntil(lambda: window.refreshes > before, timeout=15000)
                assert window.tabs.currentWidget() is window.review_view
                assert window.node_view.node_id == node or node is None
                kept_in_place += 1
                while time.monotonic() < busy_until:
                    driver.act(writes=True)
                    qtbot.wait(rng.randint(50, 400))
            finally:
                agent.terminate()
                agent.wait(10)
            assert agent.returncode in (0, -15), agent.stderr.read().decode()[-2000:]
            # quiet: the agent is gone and the person only reads; nothing may be read again by itself
            driver.settle()
            qtbot.wait(1200)                 # the poll notices the agent's last commits, then all is still
            driver.settle()
            quiet_start, quiet_end = window.refreshes, time.monotonic() + QUIET_S - 1.5
            while time.monotonic() < quiet_end:
                driver.act(writes=False)
                qtbot.wait(rng.randint(100, 400))
            quiet_checks.append(window.refreshes - quiet_start)
    finally:
        probe.stop()
        window.close()
        memory.close()
    stats = probe.stats()
    figures = {**stats, "seconds": round(time.monotonic() - started), "cycles": cycles, "actions": driver.done, "worst_ms": driver.worst,
               "refreshes": window.refreshes, "rss_growth_mb": round(_rss_mb() - rss_start, 1)}
    print("\nsoak:", figures)
    assert window.isVisible() is False and QApplication.instance() is not None      # closed by us, not crashed
    assert stats["n"] > DURATION_S * 20                       # the loop kept turning (10 ms timer)
    assert stats["p95_ms"] < 100, figures                     # and answered a person promptly
    assert quiet_checks and all(n == 0 for n in quiet_checks), quiet_checks
    assert kept_in_place == cycles
    assert sum(driver.done.values()) > DURATION_S             # about one action a second or more
    assert sys.getrefcount(None) >= none_start - 1000         # the leaking Qt build lost thousands
    assert _rss_mb() - rss_start < 300, figures
