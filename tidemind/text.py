"""Small text helpers shared by the write path, search and the default embedder."""
from __future__ import annotations

import hashlib
import re
import unicodedata

_WORD = re.compile(r"\w+", re.UNICODE)

# Function words carry no evidence that a memory answers a question.
STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below between
both but by can could did do does doing don't down during each few for from further had has have having he her here
hers herself him himself his how i if in into is it its itself just let me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves s t don did does ever also get got tell know
remember recall please thing things anything something go goes going went use uses using used
""".split())


# Characters that are letters or symbols to Unicode but show nothing: the Hangul fillers (U+115F,
# U+1160, U+3164, U+FFA0), the blank Braille pattern, the object replacement character, and a
# null notehead. Text of only these (with spaces, zero-width and control characters) was stored
# as a blank memory that prepare then served.
BLANK_LIKE = frozenset("\u115f\u1160\u3164\uffa0\u2800\ufffc\U0001d159")


def visible(char: str) -> bool:
    """A character that shows something: a letter, number, punctuation or symbol, not blank-like."""
    return unicodedata.category(char)[0] in "LNPS" and char not in BLANK_LIKE


def has_visible(text: str) -> bool:
    return any(visible(c) for c in text)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fold(text: str) -> str:
    """Case, accents' composition, punctuation and whitespace folded: 'The port is 3000.' == 'the port is 3000'."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_WORD.findall(norm))


def norm_hash(text: str) -> str:
    return sha256(fold(text))


def words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(unicodedata.normalize("NFKC", text or ""))]


def content_words(text: str) -> list[str]:
    """Words that can carry evidence: no stopwords, no single characters (digits kept)."""
    return [w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


def has_phrase(text: str, phrase: str, ignore_case: bool = False) -> bool:
    """`phrase` in `text` as whole words ("Sun" is not in "Sunday", "Lee" is in "Maya Lee")."""
    return bool(phrase) and re.search(rf"(?<![\w'’-]){re.escape(phrase)}(?![\w-])", text,
                                      re.IGNORECASE if ignore_case else 0) is not None


# "Caroline: ..." / "Dr. Alex Rivera: ...": a turn that says who said it (one to three capitalised words)
_SPEAKER = re.compile(r"([A-Z][\w'’.\-]{0,30}(?: [A-Z][\w'’.\-]{0,30}){0,2}):\s")


# a note's labels are written the same way ("Note: ...", "Warning: ..."): they are nobody
NOT_SPEAKERS = frozenset("""
note notes warning warnings tip tips example examples important error errors update updates summary status todo
fixme question questions answer answers step steps result results reason problem solution fix cause context goal
goals decision decisions action actions outcome outcomes caution info information hint hints tldr edit source
sources date time location where when why what who how re fyi ps nb usage description title subject
""".split())


def addresses(text: str, word: str) -> bool:
    """Whether `text` calls someone `word` the way one speaker addresses another: after a
    greeting or thanks, or set off by commas, and ending its phrase ("Thanks, Mel!", "Hey Mel",
    "Wow, Mel, that's lovely"; not "Italy, France and Spain")."""
    return re.search(rf"(?:,|\b(?:[Hh]ey|[Hh]i|[Hh]ello|[Tt]hanks|[Tt]hank you|[Yy]eah|[Ww]ow|[Oo]h|[Ss]orry))\s+"
                     rf"{re.escape(word)}(?=\s*(?:[,!?.]|$))", text or "") is not None


def speaker(content: str) -> str | None:
    """Who said a turn written "Name: words", the one reading of a speaker label."""
    found = _SPEAKER.match(content)
    if not found or found.group(1).casefold() in NOT_SPEAKERS:
        return None
    return found.group(1)


# Caches keyed by a memory's text (its stems, its small-talk count) drop it when the memory is
# forgotten in this process (store/nodes.erase); nothing of them is ever written anywhere.
_FORGET_HOOKS: list = []


def on_forget(drop):
    """Register `drop(text)`, called with the text of every memory this process forgets."""
    _FORGET_HOOKS.append(drop)
    return drop


def forget_cached(text: str) -> None:
    for drop in _FORGET_HOOKS:
        drop(text)


class TextMemo:
    """What is worked out from a memory's text, kept for the texts recall meets query after query
    (a memory's text never changes): texts of at most `max_chars` (a long note is worked out each
    time), up to `texts` of them (then all dropped), and a text's value dropped when its memory is
    forgotten in this process."""

    def __init__(self, texts: int = 65_536, max_chars: int = 4096):
        self.texts, self.max_chars = texts, max_chars
        self._kept: dict[str, object] = {}
        on_forget(self.drop)

    def get(self, text: str, compute, *args):
        """`compute(*args)`, or what it gave for this text before (a module-level function and its
        arguments cost no closure on the hit, which is most calls)."""
        found = self._kept.get(text)
        if found is None:
            found = compute(*args)
            if len(text) <= self.max_chars:
                if len(self._kept) >= self.texts:
                    self._kept.clear()
                self._kept[text] = found
        return found

    def drop(self, text: str) -> None:
        self._kept.pop(text, None)

    def __contains__(self, text: str) -> bool:
        return text in self._kept


_WORD_COUNTS = TextMemo()


def word_count(text: str) -> int:
    """len(content_words(text)), kept (`TextMemo`)."""
    return _WORD_COUNTS.get(text, _count_words, text)


def _count_words(text: str) -> int:
    return len(content_words(text))
