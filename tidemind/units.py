"""Split a digest that holds several separate facts into units.

The capture keeps the whole text; each unit is an exact slice of it (`text[start:end]`), so
every unit's bytes can be found verbatim in what was said and `forget` can redact one unit of a
capture by position. We split only on clear structure — blank-line separated paragraphs, or the
items of a block that starts as a top-level list (or as one lead-in line ending in ':' and then
a list) — never inside a code fence, and a lead-in line ending in ':' stays with what it
introduces. Short inputs and anything ambiguous stay one unit.
"""
from __future__ import annotations

import re

_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+\S")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
MIN_UNIT_CHARS = 12
MAX_UNITS = 64


def _blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of top-level blocks: paragraphs and list items, code fences kept whole."""
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    block_is_list = lead_in = False
    fence: str | None = None          # the opening marker of the fence we are in
    pos = 0
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        opens_or_closes = bool(m) and (fence is None or m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence))
        in_fence = fence is not None
        is_blank = not line.strip() and not in_fence
        is_item = bool(_BULLET.match(line)) and not in_fence and not line[:1].isspace()
        if is_blank:
            if start is not None:
                blocks.append((start, pos))
                start = None
        elif start is None:
            start, block_is_list = pos, is_item
            lead_in = not is_item and line.rstrip().endswith(":") and not in_fence and not m
        elif is_item and block_is_list:
            blocks.append((start, pos))
            start = pos
        elif is_item and lead_in and text[start:pos].count("\n") == 1:
            # "Standup notes:" then a list: the lead-in stays with the first item, the items split
            block_is_list = True
        if opens_or_closes:
            fence = None if in_fence else m.group(1)
        pos += len(line)
    if start is not None:
        blocks.append((start, pos))
    return blocks


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while end > start and text[end - 1] in " \t\r\n\f\v":
        end -= 1
    while start < end and text[start] in "\r\n":
        start += 1
    return start, end


def split_units(text: str) -> list[tuple[int, int, int]]:
    """[(unit_index, start, end)]; a single unit is the whole text, untouched."""
    merged: list[tuple[int, int]] = []
    carry: int | None = None
    for start, end in _blocks(text):
        if carry is not None:
            start, carry = carry, None
        if text[start:end].rstrip().endswith(":"):
            carry = start
            continue
        merged.append((start, end))
    if carry is not None:
        if merged:
            merged[-1] = (merged[-1][0], len(text))
        else:
            merged.append((carry, len(text)))
    spans = [_trimmed(text, s, e) for s, e in merged]
    if len(spans) < 2 or len(spans) > MAX_UNITS or any(len(text[s:e].strip()) < MIN_UNIT_CHARS for s, e in spans):
        return [(0, 0, len(text))]
    return [(i, s, e) for i, (s, e) in enumerate(spans)]
