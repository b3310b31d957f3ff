"""How long the window's UI thread is away during each action, on a sample store.

    python -m tidemind_desktop.bench [--memories 2000] [--home DIR] [--import-notes 1000] [--json]

Builds a sample store of that size (`tidemind_desktop.sample`, or uses `--home` as it is),
opens the real window offscreen and drives each action several times. For each: the longest
stall of the event loop while it ran (a 5 ms timer's worst lateness: what a person feels as a
frozen window) and how long until its result was on screen (the work itself runs on worker
threads). The machine is shared: compare the stall with the 100 ms a person notices.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def _settle(app, seconds: float = 0.03) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.002)


def _drive(window, app, probe, name: str, action, until, rounds: int, out: dict) -> None:
    stalls, waits = [], []
    for r in range(rounds):
        _settle(app)                           # the lateness of whatever ran before is counted before the mark
        mark = probe.mark()
        start = time.monotonic()
        action(r)
        deadline = start + 120
        while time.monotonic() < deadline:
            app.processEvents()
            if until():
                break
            time.sleep(0.002)
        waits.append((time.monotonic() - start) * 1000)
        _settle(app)                           # let the probe tick once more after the last slot
        stalls.append(probe.worst(mark))
    out[name] = {"worst_stall_ms": round(max(stalls), 1), "median_stall_ms": round(statistics.median(stalls), 1),
                 "result_ms": round(statistics.median(waits)), "rounds": rounds}


def run(home: Path, import_notes: int = 1000) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    from tidemind.memory import Memory

    from .main_window import MainWindow
    from .probe import LatencyProbe
    from .sample import make_vault

    app = QApplication.instance() or QApplication([])
    folder = Path(tempfile.mkdtemp(prefix="tidemind-bench-vault-"))
    if import_notes:                                    # written before the probe starts: not the window's time
        make_vault(folder / "Bench", import_notes, random.Random(9))
    memory = Memory.open(home, actor="person:desktop")
    t0 = time.monotonic()
    window = MainWindow(memory, poll_ms=1000)
    window.resize(1180, 760)
    window.show()
    built_ms = (time.monotonic() - t0) * 1000
    from .app import quiet_gc

    quiet_gc()                                          # as `tidemind desktop` does once its window is up
    probe = LatencyProbe(5).start()
    idle = lambda: not window.busy                      # noqa: E731
    window.wait_idle()
    out: dict = {}
    stats = memory.stats()
    rng = random.Random(5)
    words = ["staging", "billing deploy", "runbook", "postgres timeout", "checkout", "kafka queue", "meeting",
             "webhook retries", "search index", "ios version"]

    def search(r):
        window.query.setText(words[r % len(words)])
        window.search()
    _drive(window, app, probe, "search (30 results drawn)", search, idle, 10, out)

    def open_result(r):
        window.results.setCurrentRow(r % max(1, window.results.count()))
    _drive(window, app, probe, "open a result (memory view)", open_result, idle, 10, out)
    bar = window.sidebar
    for label, item in (("browse: recent", bar.items["recent"]), ("browse: all by title", bar.items["all"]),
                        ("browse: flagged", bar.items["flagged"]),
                        ("browse: a tag", bar.tags_item.child(0) or bar.items["recent"])):
        _drive(window, app, probe, label, lambda r, item=item: bar.itemClicked.emit(item, 0), idle, 5, out)
    _drive(window, app, probe, "browse: next page (scrolled to the end)",
           lambda r: window.results.scrollToBottom(), idle, 5, out)
    window.tabs.setCurrentWidget(window.review_view)
    window.wait_idle()
    view = window.review_view
    _drive(window, app, probe, "review: select an item (details load)",
           lambda r: view.items.setCurrentRow(r % max(1, view.items.count())), idle, 10, out)
    _drive(window, app, probe, "review: approve one (auto-advance)", lambda r: view._decide("approved"), idle, 5, out)

    def bulk(r):
        view.items.clearSelection()
        for i in range(min(20, view.items.count())):
            view.items.item(i).setSelected(True)
        view._decide("rejected")
    _drive(window, app, probe, "review: reject 20 at once", bulk, idle, 3, out)
    _drive(window, app, probe, "review: undo the 20", lambda r: window.undo(), idle, 3, out)
    _drive(window, app, probe, "review: next page", lambda r: view.next_page.click(), idle, 3, out)
    panel = window.graph_view
    panel.mode.setCurrentIndex(0)

    def whole(r):
        panel.cache.clear()
        panel.scope.setCurrentIndex(0)
        window.tabs.setCurrentWidget(window.graph_view)
        window.load_graph(panel.current_request(), switch=False)
    settled = lambda: idle() and panel.progress >= 1.0          # noqa: E731
    _drive(window, app, probe, "graph: whole store, laid out", whole, settled, 2, out)
    out["graph: whole store, laid out"].update(memories=len(panel.items), links=len(panel.edge_layer.edges))
    _drive(window, app, probe, "graph: again (positions kept)",
           lambda r: window.load_graph(panel.current_request(), switch=False), settled, 2, out)
    ids = list(panel.items)

    def hover(r):
        panel.set_focus(rng.choice(ids))
    _drive(window, app, probe, "graph: hover (neighbours highlighted)", hover, lambda: True, 10, out)

    def wheel(r):
        vp = panel.view.viewport()
        centre = vp.rect().center()
        event = QWheelEvent(centre, vp.mapToGlobal(centre), QPoint(0, 0), QPoint(0, 120 if r < 5 else -120),
                            Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
        panel.view.wheelEvent(event)
        panel.view.viewport().repaint()
    _drive(window, app, probe, "graph: zoom a step (labels appear)", wheel, lambda: True, 10, out)
    _drive(window, app, probe, "graph: local graph, depth 2", lambda r: window.show_graph(rng.choice(ids)),
           settled, 5, out)
    digests = window.digests_view
    _drive(window, app, probe, "digests: the newest listed", lambda r: (digests.newest.click() if r else
                                                                      window.show_digests()), idle, 3, out)
    _drive(window, app, probe, "digests: select one (text and citations)",
           lambda r: digests.list.setCurrentRow(r % max(1, digests.list.count())), idle, 10, out)
    weeks = sorted({d["period"] for d in digests.digests.values() if d["kind"] == "weekly"}) or ["last week"]

    def week(r):
        digests.period.setText(weeks[r % len(weeks)])
        digests.show_button.click()
    _drive(window, app, probe, "digests: a week and its days", week, idle, 5, out)
    window.open_switcher()

    def switch(r):
        window.switcher.text.setText(words[r % len(words)].split()[0])
    _drive(window, app, probe, "quick switcher: type a word",
           switch, lambda: idle() and window.switcher.list.count() > 0, 5, out)
    window.switcher.hide()

    def external(r):
        with Memory(memory.settings, actor="mcp:bench") as agent:
            agent.digest(f"An agent's note number {r} about the billing webhook", scope="project:shop")
    before = {"n": window.refreshes}
    _drive(window, app, probe, "another process writes (refresh in place)",
           external, lambda: window.refreshes > before["n"] and idle(), 3, out)
    if import_notes:
        window.tabs.setCurrentWidget(window.import_panel)
        _drive(window, app, probe, f"import {import_notes:,} notes in the background",
               lambda r: window.import_folder("obsidian", str(folder / "Bench")), idle, 1, out)
        out[f"import {import_notes:,} notes in the background"]["units"] = (window.last_import or {}).get("created")
        batch = (window.last_import or {}).get("batch")
        if batch:
            _drive(window, app, probe, "undo that import", lambda r: window.undo_import(batch), idle, 1, out)
    _drive(window, app, probe, "resize to 800×500", lambda r: window.resize(800 if r % 2 == 0 else 1180,
                                                                             500 if r % 2 == 0 else 760),
           lambda: True, 4, out)
    probe.stop()
    window.close()
    memory.close()
    shutil.rmtree(folder, ignore_errors=True)
    return {"memories": stats["nodes"]["live"], "links": stats["links"], "review": stats["review"],
            "window_built_ms": round(built_ms), "actions": out, "loop": probe.stats()}


def table(r: dict) -> str:
    lines = [f"TideMind desktop on {r['memories']:,} memories ({sum(r['links'].values()):,} links,"
             f" {sum(r['review'].values()):,} review items); window built in {r['window_built_ms']} ms",
             f"{'action':<58} {'worst stall':>11} {'result':>9}"]
    for name, v in r["actions"].items():
        lines.append(f"{name:<58} {v['worst_stall_ms']:>8.0f} ms {v['result_ms']:>6} ms")
    loop = r["loop"]
    lines.append(f"event loop over the whole run: p50 {loop['p50_ms']} ms, p95 {loop['p95_ms']} ms, max {loop['max_ms']} ms")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--home", help="use this store as it is instead of building a sample")
    parser.add_argument("--import-notes", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.home:
        home = Path(args.home)
    else:
        from .sample import build

        home = Path(tempfile.mkdtemp(prefix="tidemind-desktop-bench-"))
        build(home, args.memories, quiet=True)
    r = run(home, args.import_notes)
    print(json.dumps(r, indent=1) if args.json else table(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
