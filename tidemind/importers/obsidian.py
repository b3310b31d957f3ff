"""Obsidian vaults: `.md` files, YAML frontmatter, heading sections as units, inline and nested
`#tags` (never inside code or URLs), `[[wikilinks]]` with aliases, `#heading` and `#^block`
targets and `![[embeds]]`.

Frontmatter: `tags` (list or string), `aliases`, `created`/`date` → valid time. Malformed YAML
does not stop the note: its body is imported and the file is reported.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..timeutil import parse_iso
from . import ParseResult, Ref, Unit, register
from .files import walk

SKIP_DIRS = {".obsidian", ".trash", ".git", "node_modules"}
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|#^]*?)(?:#(\^?)([^\[\]|]*?))?(?:\|([^\[\]]*?))?\]\]")
_TAG = re.compile(r"(?<![\w/&#\-])#([A-Za-z0-9_\-/\u00C0-\uFFFF]+)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://\S+|\bwww\.\S+", re.IGNORECASE)
_BLOCK_ID = re.compile(r"(?:^|\s)\^([A-Za-z0-9\-]+)\s*$", re.MULTILINE)


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """(yaml text or None, body, offset of the body in text)."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None, text, 0
    m = re.search(r"\r?\n---[ \t]*(?:\r?\n|$)", text[3:])
    if not m:
        return None, text, 0
    start = 3 + m.end()
    return text[text.index("\n") + 1: 3 + m.start() + 1], text[start:], start


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,\s]+", value) if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _clean_tag(tag: str) -> str | None:
    tag = tag.strip().lstrip("#").strip("/")
    if not tag or tag.isdigit() or not re.fullmatch(r"[\w\-/\u00C0-\uFFFF]+", tag):
        return None
    return tag


def prose_only(text: str) -> str:
    """The text with fenced code, inline code and URLs blanked (tags and links are not read there)."""
    out, fence = [], None
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("\n" if line.endswith("\n") else "")
            continue
        if m:
            fence = m.group(1)
            out.append("\n" if line.endswith("\n") else "")
            continue
        line = _INLINE_CODE.sub(lambda x: " " * len(x.group(0)), line)
        out.append(_URL.sub(lambda x: " " * len(x.group(0)), line))
    return "".join(out)


def inline_tags(text: str) -> list[str]:
    return list(dict.fromkeys(t for t in (_clean_tag(m) for m in _TAG.findall(prose_only(text))) if t))


def wikilinks(text: str) -> list[Ref]:
    refs = []
    for embed, target, caret, anchor, alias in _WIKILINK.findall(prose_only(text)):
        target = target.strip()
        anchor = anchor.strip() if anchor else None
        refs.append(Ref(target=target, heading=None if caret else anchor, block=anchor if caret else None,
                        alias=alias.strip() or None if alias else None, embed=bool(embed)))
    return refs


def sections(body: str) -> list[tuple[str, str]]:
    """(anchor, text) per heading section; text before the first heading has anchor ''."""
    parts: list[tuple[str, list[str]]] = [("", [])]
    fence = None
    for line in body.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
        elif m:
            fence = m.group(1)
        else:
            h = _HEADING.match(line.rstrip("\r\n"))
            if h:
                parts.append((h.group(2).strip(), []))
        parts[-1][1].append(line)
    out = []
    used: set[str] = set()
    for anchor, lines in parts:
        text = "".join(lines)
        if not text.strip():
            continue
        unique, n = anchor, 1
        while unique in used:                 # duplicate headings keep distinct identities
            n += 1
            unique = f"{anchor} ({n})"
        used.add(unique)
        out.append((unique, text))
    return out


class ObsidianParser:
    source = "obsidian"

    def parse(self, root: Path, options: dict) -> ParseResult:
        skipped: list[dict] = []
        units: list[Unit] = []
        aliases: dict[str, str] = {}
        skip = SKIP_DIRS | set(options.get("exclude", ()))
        for rel, text in walk(root, (".md",), skip, skipped):
            raw_meta, body, _ = split_frontmatter(text)
            meta: dict = {}
            if raw_meta is not None:
                try:
                    loaded = yaml.safe_load(raw_meta)
                    if loaded is not None and not isinstance(loaded, dict):
                        raise ValueError("frontmatter is not a mapping")
                    meta = loaded or {}
                except (yaml.YAMLError, ValueError) as exc:
                    reason = str(exc).splitlines()[0][:160]
                    skipped.append({"path": rel, "reason": f"malformed frontmatter ({reason}); body imported"})
            note_tags = [t for t in (_clean_tag(x) for x in _as_list(meta.get("tags") or meta.get("tag"))) if t]
            for alias in _as_list(meta.get("aliases") or meta.get("alias")):
                aliases.setdefault(alias.casefold(), rel)
            valid = None
            for key in ("created", "date"):
                if meta.get(key):
                    try:
                        valid = parse_iso(str(meta[key]))
                        break
                    except Exception:
                        skipped.append({"path": rel, "reason": f"frontmatter {key} is not a date; ignored"})
            for anchor, section in sections(body):
                units.append(Unit(path=rel, anchor=anchor, text=section,
                                  tags=list(dict.fromkeys(note_tags + inline_tags(section))),
                                  refs=wikilinks(section), valid_from=valid,
                                  block_ids=_BLOCK_ID.findall(prose_only(section)),
                                  properties={k: str(v) for k, v in meta.items() if k not in ("tags", "aliases")}))
        return ParseResult(units=units, skipped=skipped, aliases=aliases)


register("obsidian", ObsidianParser)
