"""Logseq graphs: `pages/` and `journals/` (a journal's file name is its valid time), the
outliner tree (a top-level block with its children is a unit), page and block properties
(`key:: value`), `id::` block ids and `((block refs))`, `[[links]]`, `#tags` and `#[[multi
word]]` tags, TODO/DOING/DONE markers kept as properties, namespaced pages (`a___b.md` or
`a%2Fb.md` is the page `a/b`).

A block without an `id::` is identified by its position on the page: inserting a block above
others makes them read as edited (superseded), never lost.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from . import ParseResult, Ref, Unit, register
from .files import walk
from .obsidian import _clean_tag, prose_only

_PROPERTY = re.compile(r"^\s*(?:- )?([A-Za-z0-9_\-]+)::\s*(.*?)\s*$")
_BLOCK_START = re.compile(r"^- ")
_PAGE_LINK = re.compile(r"\[\[([^\[\]]+?)\]\]")
_BLOCK_REF = re.compile(r"\(\(([0-9a-fA-F\-]{8,})\)\)")
_HASH_TAG = re.compile(r"(?<![\w/&#\-])#(\[\[([^\[\]]+)\]\]|[A-Za-z0-9_\-/\u00C0-\uFFFF]+)")
_MARKER = re.compile(r"^- (TODO|DOING|DONE|LATER|NOW|WAITING|CANCELED|CANCELLED)\b")
_JOURNAL = re.compile(r"^(\d{4})_(\d{2})_(\d{2})$")


def page_name(rel: str) -> str:
    stem = Path(rel).stem
    return unquote(stem.replace("___", "/").replace("%2F", "/"))


def _blocks(text: str) -> tuple[list[str], list[str]]:
    """(page property lines, top-level block slices) — each slice exact, children included."""
    lines = text.splitlines(keepends=True)
    head: list[str] = []
    i = 0
    while i < len(lines) and not _BLOCK_START.match(lines[i]):
        head.append(lines[i])
        i += 1
    # a first block made only of properties is the page's properties (Logseq writes them so)
    blocks: list[list[str]] = []
    for line in lines[i:]:
        if _BLOCK_START.match(line) or not blocks:
            blocks.append([line])
        else:
            blocks[-1].append(line)
    slices = ["".join(b) for b in blocks]
    if slices and all(_PROPERTY.match(l) or not l.strip() for l in slices[0].splitlines()):
        head += slices[0].splitlines(keepends=True)
        slices = slices[1:]
    return head, slices


def _properties(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        m = _PROPERTY.match(line)
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


class LogseqParser:
    source = "logseq"

    def parse(self, root: Path, options: dict) -> ParseResult:
        skipped: list[dict] = []
        units: list[Unit] = []
        names: dict[str, list[str]] = {}
        notes: list[str] = []
        for rel, text in walk(root, (".md",), {"logseq", "bak", ".recycle", "assets"} | set(options.get("exclude", ())),
                              skipped):
            if not (rel.startswith("pages/") or rel.startswith("journals/")):
                continue
            notes.append(rel)
            head, blocks = _blocks(text)
            page_props = _properties(head)
            names.setdefault(page_props.get("title") or page_name(rel), []).append(rel)
            for alias in re.split(r",\s*", page_props.get("alias", "")):
                if alias.strip():
                    names.setdefault(alias.strip().strip("[]"), []).append(rel)
            valid = None
            j = _JOURNAL.match(Path(rel).stem)
            if rel.startswith("journals/") and j:
                valid = f"{j.group(1)}-{j.group(2)}-{j.group(3)}T00:00:00.000000Z"
            page_tags = [t for t in (_clean_tag(x.strip("[] ")) for x in re.split(r",\s*", page_props.get("tags", "")))
                         if t]
            for index, block in enumerate(blocks):
                if not block.strip():
                    continue
                props = _properties(block.splitlines())
                marker = _MARKER.match(block)
                if marker:
                    props["marker"] = marker.group(1)
                block_id = props.get("id")
                # outliner bullets and indentation go before code fences are looked for
                prose = prose_only("".join(re.sub(r"^\s*(?:- )?", "", l) for l in block.splitlines(keepends=True)))
                tags = list(page_tags)
                for whole, multi in _HASH_TAG.findall(prose):
                    tag = _clean_tag(multi.replace(" ", "-")) if multi else _clean_tag(whole)
                    if tag:
                        tags.append(tag)
                tags += [t for t in (_clean_tag(x.strip("[] ")) for x in re.split(r",\s*", props.get("tags", ""))) if t]
                refs = [Ref(target=t) for t in _PAGE_LINK.findall(re.sub(r"#\[\[[^\]]+\]\]", " ", prose))]
                refs += [Ref(target=None, block=b) for b in _BLOCK_REF.findall(prose)]
                units.append(Unit(path=rel, anchor=block_id or f"b{index}", text=block,
                                  tags=list(dict.fromkeys(tags)), refs=refs, valid_from=valid,
                                  block_ids=[block_id] if block_id else [],
                                  properties={k: v for k, v in {**page_props, **props}.items() if k != "id"}))
        return ParseResult(units=units, skipped=skipped, names=names, notes=notes, links_by="name")


register("logseq", LogseqParser)
