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
from dataclasses import dataclass, replace

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
_ISO_DAY = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b")
# numeric days as people write them: 07.05.2023 (day first, as where dots are written), 05/07/2023
# (month first, unless the first number cannot be a month: 25/12/2023), 7/5/23
# (dotted: a four-digit year only, and not after a "v": "3.10.12" and "v1.2.23" are versions)
_DOTTED_DAY = re.compile(r"(?<![\d.vV])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d.]*\d)")
_SLASHED_DAY = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})(?![\d/]*\d)")
# a day without its year: "on May 7th", "the 7th of May"
_MONTH_DAY = re.compile(rf"\b{_NAME}\s{_DAY}\b(?![ \t]{{0,3}},?[ \t]{{0,3}}\d)", re.IGNORECASE)
_DAY_OF_MONTH = re.compile(rf"\b(?:the\s)?{_DAY}\s(?:of\s)?{_NAME}\b(?![ \t]{{0,3}},?[ \t]{{0,3}}\d)", re.IGNORECASE)
# the side of the date a question asks about: "before May 7", "after the 7th of May", "since 2023"
_SIDE = re.compile(r"\b(before|after|since|until|till|by|prior\s+to)\s+(?:the\s+)?$", re.IGNORECASE)
_SIDES = {"before": "before", "until": "before", "till": "before", "by": "before", "after": "after", "since": "after"}
_MONTH_YEAR = re.compile(rf"\b{_NAME},?\s(?:of\s)?{_YEAR}\b", re.IGNORECASE)
_IN_MONTH = re.compile(rf"\b(?:in|during|since|until|before|after|by|of|early|late|mid)\s(?:early\s|late\s|mid\s)?{_NAME}\b",
                       re.IGNORECASE)
_YEAR_ALONE = re.compile(r"\b(?:in|during|of|since|before|after|by)\s((?:19|20)\d\d)\b", re.IGNORECASE)

NEAR_DAYS = 7          # "on May 3" also fits what was said within a week of it (people report late)
SIDE_DAYS = 92         # "before May 3" searches the three months before it, nearest first


@dataclass(frozen=True)
class Window:
    kind: str                      # "day" | "month" | "year" | "monthday" (a day of any year)
    day: dt.date | None = None
    year: int | None = None
    month: int | None = None
    said: str = ""                 # the words of the query that named it ("on 3 May, 2023")
    side: str = "on"               # "on" | "before" | "after": which side of the date is asked about
    day_of_month: int | None = None

    def _span(self) -> tuple[dt.date, dt.date]:
        """The window itself: its first and last day (a month or year of a known year)."""
        if self.kind == "day":
            return self.day, self.day
        if self.kind == "year":
            return dt.date(self.year, 1, 1), dt.date(self.year, 12, 31)
        start = dt.date(self.year, self.month, 1)
        end = dt.date(self.year + self.month // 12, self.month % 12 + 1, 1) - dt.timedelta(days=1) \
            if (self.year, self.month) != (9999, 12) else dt.date(9999, 12, 31)
        return start, end

    def _sided(self) -> bool:
        return self.side != "on" and (self.kind in ("day", "year") or (self.kind == "month" and self.year is not None))

    def searched_stretch(self) -> bool:
        """Whether the valid days around it are searched too (not for a month or day of any year)."""
        return not (self.kind == "monthday" or (self.kind == "month" and self.year is None))

    def bounds(self) -> tuple[dt.date, dt.date]:
        """The stretch of valid days worth searching (a little wider than the window itself)."""
        if self._sided():
            first, last = self._span()
            return (first - dt.timedelta(days=SIDE_DAYS), first) if self.side == "before" else \
                (last, last + dt.timedelta(days=SIDE_DAYS))
        if self.kind == "monthday":
            return dt.date(1, 1, 1), dt.date(9999, 12, 31)
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
        """1 inside the window; less just after it (a month is told about early in the next one).
        Before or after a date: 1 within a week of it on that side, less further away, 0 on the
        other side."""
        if self._sided():
            first, last = self._span()
            gap = (first - valid_day).days if self.side == "before" else (valid_day - last).days
            return 0.0 if gap <= 0 else 1.0 if gap <= NEAR_DAYS else 0.6 if gap <= 31 else 0.3 if gap <= SIDE_DAYS else 0.1
        if self.kind == "monthday" and self.side != "on":          # that day of the memory's own year
            ref = _near(valid_day.year, self.month, self.day_of_month)
            gap = (ref - valid_day).days if self.side == "before" else (valid_day - ref).days
            return 0.0 if gap <= 0 else 1.0 if gap <= NEAR_DAYS else 0.6 if gap <= 31 else 0.3 if gap <= SIDE_DAYS else 0.1
        if self.kind == "monthday":
            gap = min(abs((valid_day - _near(valid_day.year + shift, self.month, self.day_of_month)).days)
                      for shift in (-1, 0, 1))
            return 1.0 if gap == 0 else 0.5 if gap <= NEAR_DAYS else 0.0
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


    def fit_span(self, first: dt.date, last: dt.date) -> float:
        """The best fit of a stretch of days (a date anchor: a day, a week, a month)."""
        if (last - first).days > 31:
            return max(self.fit(first), self.fit(last))
        return max(self.fit(first + dt.timedelta(days=n)) for n in range((last - first).days + 1))


def _date(year: str, month: int, day: str) -> dt.date | None:
    try:
        number = int(year)
        if len(year) == 2:                 # as POSIX reads them: 00-68 this century, 69-99 the last
            number += 2000 if number < 69 else 1900
        return dt.date(number, month, int(day))
    except ValueError:
        return None


def _near(year: int, month: int, day: int) -> dt.date:
    """That month and day in that year (29 February in a year without one: the 28th)."""
    year = min(max(year, 1), 9999)
    try:
        return dt.date(year, month, day)
    except ValueError:
        return dt.date(year, month, 28)


def _searchable(found: Window) -> Window | None:
    """The window, when the stretch searched around it is made of dates Python can hold: "on
    9999-12-31" (its week after) and "December 9999" (the month after) overflowed, and recall
    ended in a traceback (the MCP client saw "Error executing tool"). Such a date is read as no
    date."""
    if found.kind == "monthday" or (found.kind == "month" and found.year is None):
        return found                                   # (a month or day of any year: no stretch is searched)
    try:
        _, end = found.bounds()
        end + dt.timedelta(days=1)                     # the search's exclusive end
    except (OverflowError, ValueError):
        return None
    return found


def window(query: str, day_first: bool = False) -> Window | None:
    """The first usable date the query names, most precise form first, with the side of it the
    question asks about ("before ...", "after ...", "since ..."). `day_first`: how this store's
    people write 05/07/2023 (`date_order`); a date that can be read one way only is read that way."""
    for found, start in _windows(query, day_first):
        side = _SIDE.search(query[:start])
        if side:
            found = replace(found, side=_SIDES[side.group(1).split()[0].lower()] if not side.group(1).lower()
                            .startswith("prior") else "before")
        usable = _searchable(found)
        if usable is not None:
            return usable
    return None


def _windows(query: str, slashed_day_first: bool = False):
    """(window, where its words start in the query), most precise form first."""
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        found = pattern.search(query)
        if found:
            day, name, year = (found.group(1), found.group(2), found.group(3)) if order == "dmy" else \
                (found.group(2), found.group(1), found.group(3))
            date = _date(year, _MONTH[name.lower()], day)
            if date:
                yield Window("day", day=date, said=found.group(0)), found.start()
    found = _ISO_DAY.search(query)
    if found:
        date = _date(found.group(1), int(found.group(2)), found.group(3))
        if date:
            yield Window("day", day=date, said=found.group(0)), found.start()
    for pattern, day_first in ((_DOTTED_DAY, True), (_SLASHED_DAY, slashed_day_first)):
        found = pattern.search(query)
        if found:
            first, second = int(found.group(1)), int(found.group(2))
            if first > 12 or second > 12:           # only one reading is a date
                day_first = first > 12
            day, month = (first, second) if day_first else (second, first)
            date = _date(found.group(3), month, str(day)) if 1 <= month <= 12 else None
            if date:
                yield Window("day", day=date, said=found.group(0)), found.start()
    for pattern, order in ((_MONTH_DAY, "md"), (_DAY_OF_MONTH, "dm")):
        found = pattern.search(query)
        if found:
            name, day = (found.group(1), found.group(2)) if order == "md" else (found.group(2), found.group(1))
            month = _MONTH[name.lower()]
            if _date("2000", month, day):          # (a leap year: any real day of that month)
                yield Window("monthday", month=month, day_of_month=int(day), said=found.group(0)), found.start()
    found = _MONTH_YEAR.search(query)
    if found and 1 <= int(found.group(2)) <= 9999:
        yield Window("month", year=int(found.group(2)), month=_MONTH[found.group(1).lower()],
                     said=found.group(0)), found.start()
    found = _IN_MONTH.search(query)
    if found:
        yield Window("month", month=_MONTH[found.group(1).lower()], said=found.group(1)), found.start(1)
    found = _YEAR_ALONE.search(query)
    if found:
        yield Window("year", year=int(found.group(1)), said=found.group(1)), found.start(1)


def order_evidence(texts) -> tuple[int, int]:
    """(day-first, month-first): how many slashed dates in these texts can be read one way only
    (25/12/2023 is day first, 12/25/2023 month first)."""
    day_first = month_first = 0
    for text in texts:
        for found in _SLASHED_DAY.finditer(text or ""):
            first, second = int(found.group(1)), int(found.group(2))
            if 12 < first <= 31 and 1 <= second <= 12:
                day_first += 1
            elif 12 < second <= 31 and 1 <= first <= 12:
                month_first += 1
    return day_first, month_first


ORDERS = {"day-first": True, "month-first": False}


def store_order(setting: str | None, texts) -> tuple[bool, str]:
    """(day first?, why) for 05/07/2023 in this store: the `date_order` setting when given, else
    what the store's own slashed dates show (more that can only be read day first: day first),
    else month first."""
    if setting:
        if setting not in ORDERS:
            from ..errors import InvalidInput

            raise InvalidInput(f"setting date_order must be day-first or month-first, got {setting!r}"[:200])
        return ORDERS[setting], f"set by date_order = {setting}"
    day, month = order_evidence(texts)
    if day > month:
        return True, f"{day} date(s) in the memories can only be read day first ({month} month first)"
    if month:
        return False, f"{month} date(s) in the memories can only be read month first ({day} day first)"
    return False, "no date in the memories decides it; month first until one does (or set date_order)"
