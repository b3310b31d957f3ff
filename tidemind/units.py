"""Split a digest that holds several separate facts into units.

The capture keeps the whole text; each unit is an exact slice of it, so every unit's bytes can
be found verbatim in what was said. We split only on clear structure — blank-line separated
paragraphs or a top-level list — never inside a code fence, and a lead-in line ending in ':'
stays with what it introduces. Short inputs and anything ambiguous stay one unit.
"""
from __future__ import annotations

import re

_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+\S")
_FENCE = re.compile(r"^\s*(```|~~~)")
MIN_UNIT_CHARS = 12
MAX_UNITS = 64


def _blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of top-level blocks: paragraphs and list items, code fences kept whole."""
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    in_fence = False
    pos = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if _FENCE.match(line):
            in_fence = not in_fence
        is_blank = not stripped and not in_fence
        is_item = bool(_BULLET.match(line)) and not in_fence and not line[:1].isspace()
        if is_blank:
            if start is not None:
                blocks.append((start, pos))
                start = None
        elif is_item and start is not None and not _FENCE.match(line):
            blocks.append((start, pos))
            start = pos
        elif start is None:
            start = pos
        pos += len(line)
    if start is not None:
        blocks.append((start, pos))
    return blocks


def split_units(text: str) -> list[tuple[int, str]]:
    """[(unit_index, exact slice)]; a single unit is the whole text, untouched."""
    blocks = _blocks(text)
    merged: list[tuple[int, int]] = []
    carry: int | None = None
    for start, end in blocks:
        body = text[start:end].rstrip()
        if carry is not None:
            start, carry = carry, None
        if body.endswith(":"):
            carry = start
            continue
        merged.append((start, end))
    if carry is not None:
        if merged:
            merged[-1] = (merged[-1][0], len(text))
        else:
            merged.append((carry, len(text)))
    pieces = [text[s:e].strip("\n").rstrip() for s, e in merged]
    if len(pieces) < 2 or len(pieces) > MAX_UNITS or any(len(p.strip()) < MIN_UNIT_CHARS for p in pieces):
        return [(0, text)]
    return list(enumerate(pieces))
