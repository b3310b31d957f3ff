"""What in a unit is worth a question, and what can be settled without one.

Pure functions over the unit's text, its capture, the moment its words were written (the
anchor) and a `Lexicon`: what the scope already knows a word can mean, built from `readings`
of every unit (two-word names, spelled-out acronyms) and kept in the store's `referents` table. Three kinds of reference
are examined:

- relative dates ("tomorrow", "next week", "on Friday", "in 3 days") are resolved against the
  anchor and returned as anchors (derived text, so "2026-12-04" finds "next Friday"). Only
  "next <weekday>" / "next weekend" said earlier in the same week is asked about: whether it
  means this week's or the following one is a coin toss among speakers.
- a bare name ("Alex") when the scope knows two or more full names for it ("Alex Chen",
  "Alex Rivera") and nothing in the capture says which; a unit that opens with "he"/"she" after
  a capture that named two people.
- an acronym when the scope spells it out two or more different ways ("PT (physical therapy)",
  "PT (Pacific time)"); a single known expansion is an anchor instead.

The bar for asking is deliberately high: an unresolved word costs the person an interruption,
so anything a reader of the capture could settle is settled or left alone.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Protocol

from ..text import STOPWORDS, has_phrase


class Lexicon(Protocol):
    def names(self, first: str) -> list[str]:
        """Second words the scope knows for a first name ("alex" -> ["Chen", "Rivera"])."""

    def expansions(self, acronym: str) -> list[str]:
        """Spelled-out forms the scope knows for an acronym ("CR" -> ["change request", ...])."""

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10, "couple of": 2, "few": 3}
_WD = "|".join(WEEKDAYS)
_NUM = r"\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten"
DATE_PATTERNS = [
    ("fixed", re.compile(r"\b(the day after tomorrow|the day before yesterday|today|tonight|tomorrow|yesterday)\b", re.I)),
    ("relative", re.compile(rf"\b(this|next|last|coming|past)\s+({_WD}|week|weekend|month|year)\b", re.I)),
    ("ahead", re.compile(rf"\bin\s+({_NUM})\s+(day|week|month)s?\b", re.I)),
    ("ago", re.compile(rf"\b({_NUM})\s+(day|week|month)s?\s+ago\b", re.I)),
    ("weekday", re.compile(rf"\b(on|by|until|till|before|after|from)\s+({_WD})\b", re.I)),
]
# Tense is read around the date, not from the whole unit: the clause it sits in (up to a comma
# or a sentence end; the whole sentence when that clause has no verb, "On Monday, we deployed
# ..."), and after a reporting verb only what was reported ("Alex said the demo is on Friday"
# plans a demo). Strong markers decide before weak ones: "was reviewed by Sam on Monday" is past
# although "by" often looks ahead.
_CLAUSE_END = re.compile(r"[,;\n]|[.!?](?:\s|$)")
_SENTENCE_END = re.compile(r"[\n]|[.!?](?:\s|$)")
_REPORTING = re.compile(r"\b(said|says|told|tells|asked|asks|agreed|mentioned|promised|confirmed|wrote|suggested|"
                        r"decided|announced|warned)\b", re.I)
# strong future: a modal or a plan; "to <verb>" only after a planning verb ("going to ship",
# "asked Sam to ship"), never "to prod" or "to discuss". Present tense ("is", "'s") is weak:
# "is still open" describes now, except in what someone reported ("said the demo is on Friday").
_STRONG_FUTURE = re.compile(r"\b(will|shall|going to|gonna|would|(?:want|wants|plan|plans|need|needs|have|has|hope|"
                            r"intend|expect|asked \w+|told \w+|promised|agreed) to [a-z]+)\b|'ll\b|'d\b", re.I)
_PRESENT = re.compile(r"\b(is|are|am)\b|\b\w+'s\b", re.I)
_STRONG_PAST = re.compile(r"\b(was|were|did|had|went|met|got|came|happened|ago|yesterday|last|already|earlier)\b",
                          re.I)
_ED = re.compile(r"(?:^|\b(\w+)\s+)(\w{3,}ed)\b", re.I)
_NOT_PAST_ED = {"speed", "indeed", "embed", "embedded", "shared", "seed", "need", "feed", "bleed", "breed", "proceed",
                "succeed", "exceed", "red", "bed", "shed", "weed", "greed", "tweed", "hundred", "scheduled", "planned"}
_PASSIVE = {"is", "are", "be", "been", "being", "am", "get", "gets", "will", "to"}
_WINDOW = 300          # tense is read within this many characters of the date: linear in the unit's length


def _bounds(text: str, start: int, end: int, boundary: re.Pattern) -> tuple[int, int]:
    lo = max(0, start - _WINDOW)
    before = [m.end() for m in boundary.finditer(text, lo, start)]
    after = boundary.search(text, end, min(len(text), end + _WINDOW))
    return (before[-1] if before else lo), (after.start() if after else min(len(text), end + _WINDOW))


def _past_ed(text: str) -> bool:
    """A verb in -ed that is not passive ("we deployed", "Deployed the fix"; not "is scheduled")."""
    return any(m.group(2).lower() not in _NOT_PAST_ED and (m.group(1) or "").lower() not in _PASSIVE
               for m in _ED.finditer(text.strip()))


def _speaks_of_past(unit: str, start: int, end: int) -> bool:
    """Whether the date at unit[start:end] is told in the past tense."""
    lo, hi = _bounds(unit, start, end, _CLAUSE_END)
    if not _WORD.search(unit[lo:start] + " " + unit[end:hi]):
        lo, hi = _bounds(unit, start, end, _SENTENCE_END)      # "On Monday, we deployed ...": the sentence
    before, after = unit[lo:start], unit[end:hi]
    reported = list(_REPORTING.finditer(before))
    if reported:
        last = reported[-1]
        if len(_WORD.findall(before[last.end():])) <= 2:       # "agreed on Monday", "told me on Monday"
            return last.group(1).lower() not in ("says", "tells", "asks")
        # only what was reported says when it happens: "said the demo is on Friday"
        text = before[last.end():] + " " + after
        if _STRONG_FUTURE.search(text) or _PRESENT.search(text):
            return bool(_STRONG_PAST.search(text)) and not _STRONG_FUTURE.search(text) and not _PRESENT.search(text)
    else:
        text = before + " " + after
    past, future = bool(_STRONG_PAST.search(text)), bool(_STRONG_FUTURE.search(text))
    if past != future:
        return past
    if past:                           # both: "was going to": read as planned
        return False
    return _past_ed(text)              # "we deployed"; else weak future words, or nothing: a plan


_SENTENCE_STARTERS = {"he", "she", "they", "it", "we", "you", "this", "that", "these", "those", "there", "then", "i",
                      "ok", "okay", "yes", "no", "thanks", "please", "also", "so", "but", "and", "or", "if", "when",
                      "after", "before", "today", "tomorrow", "yesterday", "next", "last", "let", "lets", "let's"}
_WORD = re.compile(r"[^\W\d_][\w'’\-]*")
_ACRONYM = re.compile(r"\b([A-Z]{2,5})s?\b")
# overlapping: in "Ask Jordan Lee" the pair "Jordan Lee" is found as well as "Ask Jordan";
# letters of any script ("José García"), checked for title case in code
_FULL_NAME = re.compile(r"(?=\b([^\W\d_]{2,21}) ([^\W\d_]{2,21})\b)")
# what people do and tools do not: a capitalised word followed by one of these is a person
# ("Alex said", "Alex also wants"). No modals or general verbs: "Google will bill us",
# "Docker needs memory", "Release needs sign-off" are not about people.
PERSON_VERBS = frozenset("""
said says asked asks wants wanted thinks thought told tells mentioned mentions suggested suggests prefers preferred
likes liked loves loved hates hated agreed agrees approved approves promised promises called emailed emails wrote
booked reviewed signed joined met decided replied explained confirmed noticed insisted recommended recommends
complained offered volunteered paired presented reckons believes believed feels felt knows knew owns leads
manages managed
""".split())
# between a name and its verb: "Alex also said", "Alex just approved"
_ADVERBS = frozenset("also just already finally still never always really actually then now definitely probably "
                     "apparently again".split())
# what a two-word name does when it is a person's, for the lexicon: a person verb, or being
# described or working ("Alex Rivera is the designer", "Sam Patel runs the demo"), or a
# possessive ("Alex Chen's phone"). Broader than PERSON_VERBS: a tool read as a name here only
# matters if someone later writes its first word as a person ("Google said ...").
READING_VERBS = PERSON_VERBS | frozenset("""
is was has had handles handled runs ran works worked lives lived sends sent needs needed takes took gets got makes
made gives gave goes went comes came adds added moves moved fixes fixed will would can could should must might may
did does designs designed sits sat joins writes led owned builds built maintains maintained are were
""".split())
# words before a name that make it a person: "Ask Jordan Lee", "thanks Maya Lee"
_PERSON_CONTEXT = frozenset("ask asked tell told ping pinged cc email emailed call called thank thanks met meet "
                            "invite invited remind reminded with from".split())
# given names that end like verbs or adverbs ("Emily", "Jared"): the sentence-initial verb test
# must not throw them out
_NAMES_LIKE_VERBS = frozenset("emily kelly ashley holly molly sally lily beverly kimberly shelly jared ahmed mohammed "
                              "ted fred ned reed darling sterling lindsey stanley bradley dudley".split())
_CHAIN_NAMES = 4       # "Alex, Sam and Priya agreed": at most this many names before the verb
_PRONOUN_OPENING = re.compile(r"^\W*(he|she)\b", re.I)
# a sentence-initial capitalised word followed by one of these is a verb with its object
# ("Deployed the fix", "Use a flag"), not a name
_OBJECT_WORDS = {"the", "a", "an", "to", "in", "on", "at", "for", "with", "from", "into", "it", "this", "that",
                 "these", "those", "all", "some", "any", "my", "our", "your", "his", "her", "their", "its", "out",
                 "up", "down", "off", "over", "back", "by", "of", "about", "as"}
_IMPERATIVES = {"add", "ask", "book", "bump", "call", "check", "clean", "drop", "email", "fix", "get", "keep", "make",
                "move", "pin", "ping", "pull", "push", "put", "read", "remind", "remove", "run", "send", "set",
                "ship", "start", "stop", "switch", "take", "tell", "try", "update", "upgrade", "use", "write"}


@dataclass
class Ambiguity:
    kind: str                 # 'date' | 'referent' | 'acronym'
    term: str                 # the unit's own words
    question: str
    options: list[str] = field(default_factory=list)


@dataclass
class Findings:
    anchors: list[str] = field(default_factory=list)       # "tomorrow = Tuesday 1 December 2026 (2026-12-01)"
    ambiguities: list[Ambiguity] = field(default_factory=list)


def _day(d: dt.date) -> str:
    return f"{WEEKDAYS[d.weekday()].capitalize()} {d.day} {MONTHS[d.month - 1].capitalize()} {d.year}"


def _dated(term: str, d: dt.date) -> str:
    return f"{term} = {_day(d)} ({d.isoformat()})"


def _week(term: str, monday: dt.date) -> str:
    return f"{term} = week of {_day(monday)} ({monday.isoformat()} to {(monday + dt.timedelta(days=6)).isoformat()})"


def _month_text(term: str, year: int, month: int) -> str:
    if not 1 <= year <= 9999:
        raise ValueError("outside the calendar")          # skipped by the caller, like a date overflow
    return f"{term} = {MONTHS[month - 1].capitalize()} {year} ({year:04d}-{month:02d})"


def _shift_month(d: dt.date, months: int) -> tuple[int, int]:
    index = d.year * 12 + d.month - 1 + months
    return index // 12, index % 12 + 1


def _number(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else NUMBERS.get(word, 1)


def relative_dates(unit: str, anchor: dt.date) -> Findings:
    """Anchors for every relative date in `unit`, and the one kind worth a question."""
    out = Findings()
    seen: set[str] = set()
    for kind, pattern in DATE_PATTERNS:
        for m in pattern.finditer(unit):
            term = m.group(0)
            key = term.lower()
            if key in seen:
                continue
            seen.add(key)
            past = _speaks_of_past(unit, m.start(), m.end())
            try:
                _resolve(out, kind, m, term, key, anchor, past)
            except (OverflowError, ValueError):     # a date beyond year 1..9999: nothing to anchor
                continue
    return out


def _resolve(out: Findings, kind: str, m: re.Match, term: str, key: str, anchor: dt.date, past: bool) -> None:
    """One relative date: an anchor (or, for the one ambiguous kind, a question) in `out`."""
    if kind == "fixed":
        offset = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1, "the day after tomorrow": 2,
                  "the day before yesterday": -2}[key]
        out.anchors.append(_dated(term, anchor + dt.timedelta(days=offset)))
    elif kind == "relative":
        which, unit_word = m.group(1).lower(), m.group(2).lower()
        contrast = which == "next" and re.search(rf"\bthis\s+{unit_word}\b", m.string, re.I) is not None
        _relative(out, term, which, unit_word, anchor, past, contrast)
    elif kind in ("ahead", "ago"):
        n, unit_word = _number(m.group(1)), m.group(2).lower()
        sign = 1 if kind == "ahead" else -1
        if unit_word == "month":
            year, month = _shift_month(anchor, sign * n)
            out.anchors.append(_month_text(term, year, month))
        else:
            days = n * (7 if unit_word == "week" else 1)
            out.anchors.append(_dated(term, anchor + dt.timedelta(days=sign * days)))
    else:   # "on Friday": the coming one, or the last one when the unit speaks of the past
        target = WEEKDAYS.index(m.group(2).lower())
        ahead = (target - anchor.weekday()) % 7
        # said on that weekday, "on Monday" means a week on (today would be "today")
        day = anchor - dt.timedelta(days=(anchor.weekday() - target) % 7 or 7) if past else \
            anchor + dt.timedelta(days=ahead or 7)
        out.anchors.append(_dated(term, day))


def _relative(out: Findings, term: str, which: str, unit_word: str, anchor: dt.date, past: bool = False,
              contrast: bool = False) -> None:
    """`contrast`: the unit also says "this <same word>" ("freeze this Friday, release next
    Friday"), so "next" is the one after: nothing to ask."""
    if unit_word in WEEKDAYS:
        target = WEEKDAYS.index(unit_word)
        ahead = (target - anchor.weekday()) % 7
        if which == "this" and past:      # "we deployed this Monday": the one just gone
            out.anchors.append(_dated(term, anchor - dt.timedelta(days=(anchor.weekday() - target) % 7)))
        elif which == "this":
            out.anchors.append(_dated(term, anchor + dt.timedelta(days=ahead)))
        elif which == "coming":
            out.anchors.append(_dated(term, anchor + dt.timedelta(days=ahead or 7)))
        elif which in ("last", "past"):
            out.anchors.append(_dated(term, anchor - dt.timedelta(days=(anchor.weekday() - target) % 7 or 7)))
        elif contrast and which == "next":      # "this Friday ... next Friday": the one after this week's
            out.anchors.append(_dated(term, anchor + dt.timedelta(days=(ahead or 7) + (7 if ahead else 0))))
        elif ahead and anchor.weekday() < target and anchor.weekday() < 5:
            # "next Friday" on a Wednesday: this week's Friday or the one after
            near, far = anchor + dt.timedelta(days=ahead), anchor + dt.timedelta(days=ahead + 7)
            out.ambiguities.append(Ambiguity(
                "date", term, f"When is \"{term}\" (written on {_day(anchor)}): {_day(near)} or {_day(far)}?",
                [f"{_day(near)} ({near.isoformat()})", f"{_day(far)} ({far.isoformat()})"]))
        else:
            out.anchors.append(_dated(term, anchor + dt.timedelta(days=ahead or 7)))
        return
    monday = anchor - dt.timedelta(days=anchor.weekday())
    step = {"this": 0, "coming": 1, "next": 1, "last": -1, "past": -1}[which]
    if unit_word == "week":
        out.anchors.append(_week(term, monday + dt.timedelta(weeks=step)))
    elif unit_word == "weekend":
        saturday = monday + dt.timedelta(days=5)
        if which == "next" and anchor.weekday() < 4 and not contrast:
            near, far = saturday, saturday + dt.timedelta(days=7)
            out.ambiguities.append(Ambiguity(
                "date", term, f"Which weekend is \"{term}\" (written on {_day(anchor)}): the one starting "
                              f"{_day(near)} or the one starting {_day(far)}?",
                [f"weekend of {_day(near)} ({near.isoformat()})", f"weekend of {_day(far)} ({far.isoformat()})"]))
        else:
            if which == "next" or (which == "coming" and anchor.weekday() == 6):
                saturday += dt.timedelta(days=7)     # "next weekend" from Friday on: the one after this
            elif which in ("last", "past"):
                saturday -= dt.timedelta(days=7)
            out.anchors.append(f"{term} = weekend of {_day(saturday)} ({saturday.isoformat()} to "
                               f"{(saturday + dt.timedelta(days=1)).isoformat()})")
    elif unit_word == "month":
        year, month = _shift_month(anchor, step)
        out.anchors.append(_month_text(term, year, month))
    else:
        if not 1 <= anchor.year + step <= 9999:
            raise ValueError("outside the calendar")
        out.anchors.append(f"{term} = {anchor.year + step}")


def _plain_word(w: str) -> bool:
    low = w.lower()
    return low in STOPWORDS or low in _SENTENCE_STARTERS or low in WEEKDAYS or low in MONTHS


def _sentence_initial(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?:;\n-*•>#\"'(" or before.endswith("- ")


def _name_shaped(w: str, text: str, start: int, following: str | None) -> bool:
    """Whether a capitalised word can be a name here. Mid-sentence, capitals mean a name; at the
    start of a sentence every word is capitalised, so a word that looks like a verb (-ed, -ing,
    -ly, an imperative) or takes an object ("Deployed the ...") is not taken for one."""
    if _plain_word(w):
        return False
    if not _sentence_initial(text, start):
        return True
    low = w.lower()
    if low in _IMPERATIVES or (len(low) >= 5 and low.endswith(("ed", "ing", "ly")) and low not in _NAMES_LIKE_VERBS):
        return False
    return following is None or following.lower() not in _OBJECT_WORDS


def _titlecase(w: str) -> bool:
    """A capitalised word ("Alex", "José"); not "ALEX", "alex" or "McDonald's"."""
    return 2 <= len(w) <= 21 and w.isalpha() and w[0].isupper() and w[1:].islower()


def _next_word(text: str, end: int) -> re.Match | None:
    return _WORD.match(text, end + 1) if text.startswith(" ", end) else None


def _acts_as_person(text: str, end: int, verbs: frozenset = PERSON_VERBS, subject: bool = True) -> bool:
    """The words after text[:end] say a person does something: "said", "also wants". A subject
    (a name that opens its sentence or clause) may be one of a few: "Alex and Sam said",
    "Alex, Sam and Priya agreed"; an object may not ("We restarted Kafka and Sam said ...")."""
    for _ in range(_CHAIN_NAMES):
        nxt = _next_word(text, end)
        if nxt and nxt.group(0).lower() in _ADVERBS:
            nxt = _next_word(text, nxt.end())
        if nxt and nxt.group(0).lower() in verbs:
            return True
        if not subject:
            return False
        if nxt and nxt.group(0).lower() == "and":
            other = _next_word(text, nxt.end())
        elif text.startswith(", ", end):
            other = _WORD.match(text, end + 2)
            if other and other.group(0).lower() == "and":
                other = _next_word(text, other.end())
        else:
            return False
        if other and other.group(0) in ("I", "we", "you", "they"):     # "Sam Patel and I met"
            end = other.end()
            continue
        if not other or not _titlecase(other.group(0)):
            return False
        surname = _next_word(text, other.end())
        end = surname.end() if surname and _titlecase(surname.group(0)) else other.end()
    return False


def _opens_clause(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?:;,\n-*•>#\"'(" or before.lower().endswith((" and", " but"))


def _person_before(text: str, start: int) -> bool:
    before = _WORD.findall(text[max(0, start - 24):start])
    return bool(before) and before[-1].lower() in _PERSON_CONTEXT


def _bare_names(unit: str) -> list[str]:
    """Capitalised words standing alone (not part of a two-word proper name) that can be names
    and are used as a person's here: followed by something people do ("Alex said")."""
    words = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(unit)]
    found = []
    for i, (w, start, end) in enumerate(words):
        if not _titlecase(w):
            continue
        before = words[i - 1] if i else None
        after = words[i + 1] if i + 1 < len(words) else None
        joined_before = before and _titlecase(before[0]) and unit[before[2]:start] == " "
        joined_after = after and _titlecase(after[0]) and unit[end:after[1]] == " "
        if joined_before or joined_after or w in found:
            continue
        if _name_shaped(w, unit, start, after[0] if after else None) \
                and _acts_as_person(unit, end, subject=_opens_clause(unit, start)):
            found.append(w)
    return found


def _name_pairs(text: str) -> list[tuple[str, str, int, int]]:
    """(first, second, start, end) of two-word names: both title case, the first able to be a
    name where it stands, the second not a plain word."""
    out = []
    for m in _FULL_NAME.finditer(text):
        first, second = m.group(1), m.group(2)
        end = m.start() + len(first) + 1 + len(second)
        if _titlecase(first) and _titlecase(second) and not _plain_word(second) \
                and _name_shaped(first, text, m.start(), second):
            out.append((first, second, m.start(), end))
    return out


def _people(text: str) -> list[str]:
    """Two-word names used as people in `text` ("Maya Lee and Priya Shah met ...": both)."""
    text = text.replace("’", "'")
    return list(dict.fromkeys(f"{first} {second}" for first, second, start, end in _name_pairs(text)
                              if _acts_as_person(text, end, subject=_opens_clause(text, start))
                              or _person_before(text, start)))


def readings(text: str) -> list[tuple[str, str, str]]:
    """What this text tells about names and acronyms, for the scope's lexicon:
    ("person", "alex", "Chen") for "Alex Chen" doing what people do ("Alex Chen said", "ask
    Alex Chen"); ("name", "alex", "Chen") for weaker evidence ("Alex Chen is ...", "Alex Chen's",
    "Alex Chen runs ..."), which tools give too ("Claude Code is configured"); and ("acronym",
    "CR", "change request") for "CR (change request)"."""
    text = text.replace("’", "'")
    out: list[tuple[str, str, str]] = []
    for first, second, start, end in _name_pairs(text):
        subject = _opens_clause(text, start)
        if _acts_as_person(text, end, PERSON_VERBS, subject) or _person_before(text, start):
            out.append(("person", first.lower(), second))
        elif text.startswith("'s", end) or _acts_as_person(text, end, READING_VERBS, subject):
            out.append(("name", first.lower(), second))
    out += [("acronym", acronym, e) for acronym, e in acronym_expansions(text)]
    return list(dict.fromkeys(out))


_ACRONYM_AFTER = re.compile(r"\(\s*([A-Z]{2,5})\s*\)")                      # "physical therapy (PT)"
_ACRONYM_BEFORE = re.compile(r"\b([A-Z]{2,5})\s*\(([^)]{3,80})\)")            # "PT (physical therapy)"
_ACRONYM_MEANS = re.compile(r"\b([A-Z]{2,5})\s+(?:stands for|means|is short for|=)\s+([A-Za-z][^.;:\n]{0,80})")


def _initials(acronym: str, words: list[str], from_end: bool) -> str | None:
    """The words (skipping small words the acronym does not spell) whose initials spell it."""
    letters = acronym.lower()
    n = len(letters)
    content = [w for w in words if w.lower() not in STOPWORDS or w.lower()[0] not in letters]
    span = content[-n:] if from_end else content[:n]
    if len(span) == n and "".join(w[0].lower() for w in span) == letters:
        return " ".join(w.lower() for w in span)
    return None


def acronym_expansions(text: str) -> list[tuple[str, str]]:
    """(acronym, spelled-out form) pairs the text states, in one pass over it (three fixed
    patterns: a digest of many acronyms costs what a digest of one does)."""
    found: list[tuple[str, str]] = []
    for m in _ACRONYM_AFTER.finditer(text):
        acronym = m.group(1)
        words = _WORD.findall(text[max(0, m.start() - 160):m.start()])[-(len(acronym) + 3):]
        if (got := _initials(acronym, words, from_end=True)):
            found.append((acronym, got))
    for pattern in (_ACRONYM_BEFORE, _ACRONYM_MEANS):
        for m in pattern.finditer(text):
            acronym = m.group(1)
            if (got := _initials(acronym, _WORD.findall(m.group(2))[:len(acronym) + 2], from_end=False)):
                found.append((acronym, got))
    return found


def expansions_for(acronym: str, texts: list[str]) -> list[str]:
    """Distinct spelled-out forms of `acronym` in `texts`, most often stated first."""
    counts: dict[str, int] = {}
    for t in texts:
        if acronym in t:
            for a, e in acronym_expansions(t):
                if a == acronym:
                    counts[e] = counts.get(e, 0) + 1
    return sorted(counts, key=lambda e: (-counts[e], e))


def references(unit: str, capture: str, preceding: str, lexicon: Lexicon, limit: int = 4) -> Findings:
    """Names, pronouns and acronyms: a question when the scope knows several readings and the
    capture settles none of them; an anchor for an acronym with exactly one known expansion."""
    out = Findings()
    low_capture = capture.lower()
    for name in _bare_names(unit)[:limit]:
        seconds = lexicon.names(name.lower())
        if len(seconds) < 2 or any(has_phrase(capture, s) for s in seconds):
            continue
        options = [f"{name} {s}" for s in seconds[:4]]
        out.ambiguities.append(Ambiguity("referent", name, f"Which {name} is this: {_or(options)}?", options))
    opening = _PRONOUN_OPENING.match(unit)
    if opening and not _bare_names(unit):
        people = _people(preceding)
        if len(people) >= 2:
            pronoun = opening.group(1)
            out.ambiguities.append(Ambiguity("referent", pronoun, f"Who is \"{pronoun}\" here: {_or(people[:4])}?",
                                             people[:4]))
    for acronym in list(dict.fromkeys(_ACRONYM.findall(unit)))[:limit]:
        expansions = lexicon.expansions(acronym)
        if any(has_phrase(low_capture, e) for e in expansions):
            continue
        if len(expansions) == 1:
            out.anchors.append(f"{acronym} = {expansions[0]}")
        elif len(expansions) >= 2:
            options = expansions[:4]
            out.ambiguities.append(Ambiguity("acronym", acronym, f"What does {acronym} stand for here: {_or(options)}?",
                                             options))
    return out


def _or(options: list[str]) -> str:
    return options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]
