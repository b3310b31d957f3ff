"""How long the UI thread was away: a timer that should fire every few milliseconds records how
late each firing was. Lateness is time the event loop spent on something else (drawing, a
slot, a query on the wrong thread): what a person feels as a frozen window."""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, Qt, QTimer


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class LatencyProbe(QObject):
    def __init__(self, interval_ms: int = 10, parent=None):
        super().__init__(parent)
        self.interval = interval_ms / 1000
        self.samples: list[float] = []          # lateness of each firing, in ms
        self._last = None
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.PreciseTimer)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)

    def start(self) -> "LatencyProbe":
        self._last = time.perf_counter()
        self.timer.start()
        return self

    def stop(self) -> None:
        self.timer.stop()

    def _tick(self):
        now = time.perf_counter()
        self.samples.append(max(0.0, (now - self._last - self.interval) * 1000))
        self._last = now

    def mark(self) -> int:
        return len(self.samples)

    def worst(self, since: int = 0) -> float:
        """The longest stall since sample `since`, in ms."""
        return max(self.samples[since:], default=0.0)

    def stats(self, since: int = 0) -> dict:
        got = self.samples[since:]
        return {"n": len(got), "p50_ms": round(percentile(got, 0.5), 1), "p95_ms": round(percentile(got, 0.95), 1),
                "max_ms": round(max(got, default=0.0), 1)}
