"""When a question names a time: "what did Maria donate in December 2023?", "who did she have
dinner with on May 3, 2023?", "what happened in 2024?".

A memory's valid time (`valid_from`: when its fact held, or when a replayed conversation took
place) answers "when"; a question naming a date prefers memories of that time. This module reads
the date a query names (a day, a month with or without its year, or a year) into a `Window` and
scores how well a memory's valid day fits it. Relative words ("last week") are not read here: a
question has no date of its own to anchor them to.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH = {name: n for n, name in enumerate(MONTHS, start=1)}
_MONTH.update({name[:3]: n for name, n in list(_MONTH.items()) if name != "may"})
_MONTH["sept"] = 9
_NAME = r"(" + "|".join(sorted(_MONTH, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
# bounded, linear patterns (no nested repetition)
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s(?:of\s)?{_NAME},?\s{{1,2}}{_YEAR}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_NAME}\s{_DAY},?\s{{1,2}}{_YEAR}\b", re.IGNORECASE)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b{_NAME},?\s(?:of\s)?{_YEAR}\b", re.IGNORECASE)
_IN_MONTH = re.compile(rf"\b(?:in|during|since|until|before|after|by|of|early|late|mid)\s(?:early\s|late\s|mid\s)?{_NAME}\b",
                       re.IGNORECASE)
_YEAR_ALONE = re.compile(r"\b(?:in|during|of|since|before|after|by)\s((?:19|20)\d\d)\b", re.IGNORECASE)

NEAR_DAYS = 7          # "on May 3" also fits what was said within a week of it (people report late)


@dataclass(frozen=True)
class Window:
    kind: str                      # "day" | "month" | "year"
    day: dt.date | None = None
    year: int | None = None
    month: int | None = None
    said: str = ""                 # the words of the query that named it ("on 3 May, 2023")

    def bounds(self) -> tuple[dt.date, dt.date]:
        """The stretch of valid days worth searching (a little wider than the window itself)."""
        if self.kind == "day":
            return self.day - dt.timedelta(days=NEAR_DAYS), self.day + dt.timedelta(days=NEAR_DAYS)
        if self.kind == "year":
            return dt.date(self.year, 1, 1), dt.date(self.year, 12, 31)
        if self.year is None:
            return dt.date(1, 1, 1), dt.date(9999, 12, 31)
        start = dt.date(self.year, self.month, 1)
        end_year, end_month = (self.year + (self.month + 1) // 13, self.month % 12 + 1)
        end = dt.date(end_year, end_month, 1) + dt.timedelta(days=31)       # and the month after
        return start, end

    def fit(self, valid_day: dt.date) -> float:
        """1 inside the window; less just after it (a month is told about early in the next one)."""
        if self.kind == "day":
            gap = abs((valid_day - self.day).days)
            return 1.0 if gap == 0 else 0.5 if gap <= NEAR_DAYS else 0.0
        if self.kind == "year":
            return 1.0 if valid_day.year == self.year else 0.0
        if valid_day.month == self.month and (self.year is None or valid_day.year == self.year):
            return 1.0
        after = (valid_day.month - self.month) % 12 == 1
        if after and (self.year is None or valid_day.year == self.year + (self.month == 12)):
            return 0.3
        return 0.0


def _date(year: str, month: int, day: str) -> dt.date | None:
    try:
        return dt.date(int(year), month, int(day))
    except ValueError:
        return None


def _searchable(found: Window) -> Window | None:
    """The window, when the stretch searched around it is made of dates Python can hold: "on
    9999-12-31" (its week after) and "December 9999" (the month after) overflowed, and recall
    ended in a traceback (the MCP client saw "Error executing tool"). Such a date is read as no
    date."""
    if found.kind == "month" and found.year is None:
        return found                                   # (a month of any year: no stretch is searched)
    try:
        _, end = found.bounds()
        end + dt.timedelta(days=1)                     # the search's exclusive end
    except (OverflowError, ValueError):
        return None
    return found


def window(query: str) -> Window | None:
    """The first usable date the query names, most precise form first."""
    for found in _windows(query):
        usable = _searchable(found)
        if usable is not None:
            return usable
    return None


def _windows(query: str):
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        found = pattern.search(query)
        if found:
            day, name, year = (found.group(1), found.group(2), found.group(3)) if order == "dmy" else \
                (found.group(2), found.group(1), found.group(3))
            date = _date(year, _MONTH[name.lower()], day)
            if date:
                yield Window("day", day=date, said=found.group(0))
    found = _ISO_DAY.search(query)
    if found:
        date = _date(found.group(1), int(found.group(2)), found.group(3))
        if date:
            yield Window("day", day=date, said=found.group(0))
    found = _MONTH_YEAR.search(query)
    if found and 1 <= int(found.group(2)) <= 9999:
        yield Window("month", year=int(found.group(2)), month=_MONTH[found.group(1).lower()], said=found.group(0))
    found = _IN_MONTH.search(query)
    if found:
        yield Window("month", month=_MONTH[found.group(1).lower()], said=found.group(1))
    found = _YEAR_ALONE.search(query)
    if found:
        yield Window("year", year=int(found.group(1)), said=found.group(1))
