"""Timestamps: one canonical text form (UTC, microseconds, 'Z') so SQL can compare them as strings.

The clock is injected (`Clock`) so tests and the metabolism can run at a chosen time.
"""
from __future__ import annotations

import datetime as dt
from typing import Callable

from .errors import InvalidInput

Clock = Callable[[], dt.datetime]


def system_clock() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def to_iso(moment: dt.datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str) -> str:
    """Accept a date or an ISO-8601 date-time (naive = UTC) and return the canonical form."""
    raw = (text or "").strip()
    if not raw:
        raise InvalidInput("empty timestamp; use ISO-8601 like 2026-03-01 or 2026-03-01T09:30:00Z")
    try:
        if len(raw) == 10:
            moment = dt.datetime.fromisoformat(raw).replace(tzinfo=dt.timezone.utc)
        else:
            moment = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"not an ISO-8601 timestamp: {text!r} (use e.g. 2026-03-01 or 2026-03-01T09:30:00Z)") from None
    return to_iso(moment)


def from_iso(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
