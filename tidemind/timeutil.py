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
    m = moment.astimezone(dt.timezone.utc)
    # the year is zero-padded by hand: strftime('%Y') writes year 999 as '999', which sorts after 2026
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}.{m.microsecond:06d}Z"


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
        return to_iso(moment)
    except (ValueError, OverflowError):
        raise InvalidInput(f"not a usable ISO-8601 timestamp: {text!r} (use e.g. 2026-03-01 or 2026-03-01T09:30:00Z)"
                           ) from None


def from_iso(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
