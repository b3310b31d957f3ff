"""Bounds on every argument a caller controls, checked in the core so every shell gets them.

Each bound exists because an unbounded input stalled or broke something: a 1.1 MB query took
13 s while digests queued behind it; 1,000 tag filters made SQLite refuse the statement
("Expression tree is too large") and the CLI print a traceback; a 1 MB `source` tool name and a
NUL were stored. The MCP server publishes the same numbers in its tool schema.
"""
from __future__ import annotations

import unicodedata
from typing import Sequence

from .errors import InvalidInput

MAX_QUERY_CHARS = 4_000        # a question, or a pasted paragraph; longer text is a digest
MAX_TAG_FILTERS = 32
MAX_TAG_CHARS = 100
MAX_SOURCE_CHARS = 200         # a host's name or a conversation id
MAX_CHOICE_CHARS = 200


def _printable(value: str) -> bool:
    """No control or format characters beyond ordinary spaces, and valid Unicode (no lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(unicodedata.category(c) in ("Cc", "Cs") for c in value)


def check_query(query) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("recall needs a query (or use `show ID` for one node)")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,} (ask with the words"
                           " that matter)")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("query contains an unpaired surrogate (not valid Unicode)") from None
    return query


def check_tags(tags: Sequence[str] | None) -> list[str]:
    tags = list(tags or ())
    if len(tags) > MAX_TAG_FILTERS:
        raise InvalidInput(f"{len(tags):,} tag filters; at most {MAX_TAG_FILTERS} can be combined")
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_CHARS or not _printable(tag):
            raise InvalidInput(f"invalid tag filter {str(tag)[:40]!r}: a tag is 1-{MAX_TAG_CHARS} printable characters")
    return tags


def check_tag_name(name, strip_hash: bool = True) -> str:
    """A tag a person names: 1-MAX_TAG_CHARS printable characters (a NUL went into SQLite and
    made the store one PostgreSQL, and so `migrate --to`, refused with a bare driver error)."""
    name = (name or "").strip() if isinstance(name, str) else ""
    name = name.lstrip("#") if strip_hash else name
    if not name or len(name) > MAX_TAG_CHARS or not _printable(name):
        raise InvalidInput(f"a tag name is 1-{MAX_TAG_CHARS} printable characters")
    return name


# a name shown beside every memory it made: no bidi override (U+202E turned "claude" into
# "edualc" on screen), line or paragraph separator, tag character or other format character
_NOT_IN_NAMES = ("Cc", "Cf", "Cs", "Zl", "Zp")


def check_source(field: str, value: str | None) -> str | None:
    """A host's `source.tool` or `source.session`: short, printable text (or absent), with no
    control or format character (bidi controls, tag characters) and no line or paragraph
    separator."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_SOURCE_CHARS or not _printable(value):
        raise InvalidInput(f"source {field} must be text of at most {MAX_SOURCE_CHARS} printable characters"
                           f" (got {type(value).__name__} of length {len(str(value)):,})")
    bad = next((c for c in value if unicodedata.category(c) in _NOT_IN_NAMES), None)
    if bad is not None:
        raise InvalidInput(f"source {field} holds a control, format or separator character (U+{ord(bad):04X}); a"
                           " source is plain text")
    return value.strip() or None
