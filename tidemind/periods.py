"""Days and ISO weeks, the periods daily and weekly digests are keyed on.

A digest's period is a day (`2026-03-02`) or an ISO week (`2026-W10`, Monday to Sunday) of the
*valid* clock: a memory digested today about last Tuesday belongs to last Tuesday's digest.
`named_period` reads the period a question or a command line names, so `tidemind digests --week`,
the desktop and recall agree on what "week 10" or "last week" means.
"""
from __future__ import annotations

import datetime as dt
import re

from .errors import InvalidInput

_ISO_WEEK = re.compile(r"\b(\d{4})-?W(\d{1,2})\b", re.IGNORECASE)
_WEEK_OF_YEAR = re.compile(r"\bweek\s+(\d{1,2})(?:\s*(?:of|in|,)?\s*(\d{4}))?\b", re.IGNORECASE)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_WEEK_OF_DAY = re.compile(r"\bweek\s+of\s+(\d{4})-(\d{2})-(\d{2})\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(this|last|previous)\s+week\b|\b(today|yesterday)\b", re.IGNORECASE)


def _date(value: str | dt.date) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])


def week_of(day: str | dt.date) -> str:
    year, week, _ = _date(day).isocalendar()
    return f"{year:04d}-W{week:02d}"


def week_days(week: str) -> tuple[str, str]:
    """(Monday, Sunday) of an ISO week as ISO dates."""
    m = _ISO_WEEK.fullmatch(week.strip())
    if not m:
        raise InvalidInput(f"not an ISO week: {week!r} (use e.g. 2026-W10)")
    try:
        monday = dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
    except ValueError:
        raise InvalidInput(f"{week!r} is not a week of that year") from None
    return monday.isoformat(), (monday + dt.timedelta(days=6)).isoformat()


def weeks_between(first_day: str, last_day: str) -> list[str]:
    """Every ISO week that overlaps first_day..last_day (bounded: a year of weeks at most)."""
    start, end = _date(first_day), _date(last_day)
    if end < start:
        return []
    end = min(end, start + dt.timedelta(days=min(371, (dt.date.max - start).days)))
    out, day = [], start - dt.timedelta(days=min(start.weekday(), (start - dt.date.min).days))
    while day <= end:
        out.append(week_of(day))
        if (dt.date.max - day).days < 7:            # (the last days Python can hold: no week after)
            break
        day += dt.timedelta(days=7)
    return out


def named_period(text: str, today: str | dt.date) -> tuple[str, str] | None:
    """("week", "2026-W10") or ("day", "2026-03-02") for the period `text` names, else None.
    Reads ISO weeks (2026-W10), "week 10 [of 2026]", "the week of 2026-03-02", ISO days, "this
    week", "last week", "today", "yesterday" (relative ones against `today`, the caller's date).
    A week number without a year is this year's, or last year's when it has not begun yet."""
    today = _date(today)
    if m := _WEEK_OF_DAY.search(text):
        try:
            year, number, _ = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isocalendar()
        except ValueError:
            return None
        return _checked_week(year, number)
    if m := _ISO_WEEK.search(text):
        return _checked_week(int(m.group(1)), int(m.group(2)))
    if m := _WEEK_OF_YEAR.search(text):
        number = int(m.group(1))
        year = int(m.group(2)) if m.group(2) else today.isocalendar()[0]
        if not m.group(2) and number > today.isocalendar()[1]:
            year -= 1
        return _checked_week(year, number)
    if m := _ISO_DAY.search(text):
        try:
            day = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return ("day", day.isoformat()) if _checked_week(*day.isocalendar()[:2]) else None
    if m := _RELATIVE.search(text):
        word = (m.group(1) or m.group(2)).lower()
        if word == "this":
            return "week", week_of(today)
        if word in ("last", "previous"):
            return "week", week_of(today - dt.timedelta(days=7))
        return "day", (today if word == "today" else today - dt.timedelta(days=1)).isoformat()
    return None


def _checked_week(year: int, number: int) -> tuple[str, str] | None:
    """The week, when its seven days are dates Python can hold (9999-W52 ends in the year 10000:
    it overflowed in recall, which then ended in a traceback); else None, no period."""
    try:
        dt.date.fromisocalendar(year, number, 1) + dt.timedelta(days=6)
    except (ValueError, OverflowError):
        return None
    return "week", f"{year:04d}-W{number:02d}"


def bounds(kind: str, period: str) -> tuple[str, str]:
    """First and last valid day of a named period."""
    return week_days(period) if kind == "week" else (period, period)
