"""Obsidian vaults: `.md` files, YAML frontmatter, heading sections as units, inline and nested
`#tags` (never inside code, URLs or links), `[[wikilinks]]` with aliases (`|`, or `\\|` inside a
table), `#heading` targets (nested: `#A#B` is B under A; empty target: the same note), `#^block`
targets, `![[embeds]]` of notes and of attachments.

Frontmatter: `tags` (list or string), `aliases`, `created`/`date` → valid time. Malformed YAML,
or YAML whose aliases would expand it far past what was written (an alias bomb), does not stop
the note: its body is imported and the file is reported.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..timeutil import parse_iso
from . import Note, ParseResult, Ref, Unit, parse, register
from .files import paths, skipped_dir

# libyaml's loader when PyYAML was built with it (a tenth of the pure-Python loader's time per note)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SKIP_DIRS = {".obsidian", ".trash", ".git", "node_modules"}
# a code fence, also inside a quote or a callout ("> ```css"): group 1 the quote markers, 2 the fence
_FENCE = re.compile(r"^[ \t]{0,3}((?:>[ \t]?)*)[ \t]{0,3}(`{3,}|~{3,})")
# CommonMark: a closing run of '#' counts only after a space ('## C#' is the heading 'C#')
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")
_ALIAS_BAR = re.compile(r"\\?\|")          # '|', or '\|' where the link sits in a table cell
_MD_LINK_TARGET = re.compile(r"\]\([^()\s]*\)")
_LINK_NOISE = re.compile(r"[\s#|^:%\[\]\\]+")
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


def _as_list(value, separators: str = r"[,\s]+") -> list[str]:
    """A frontmatter value as a list: tags split at commas and spaces, aliases (which may hold
    spaces: 'My Alias') at commas only."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in re.split(separators, value) if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value)]


# frontmatter keys that are not a description of the note: tags and aliases have their own
# place, and the rest is Obsidian's styling
NOT_DESCRIPTIONS = {"tags", "tag", "aliases", "alias", "title", "cssclasses", "cssclass"}


def _as_text(value, nested: bool = False) -> str:
    """A frontmatter value as searchable text: scalars and lists of scalars. Nested lists and
    maps are not a description a person reads (and YAML anchors can make them cyclic)."""
    if value is None or isinstance(value, dict):
        return ""
    if isinstance(value, (list, tuple)):
        return "" if nested else ", ".join(t for t in (_as_text(v, True) for v in value) if t)
    return str(value).strip()


# What YAML aliases may add to a frontmatter: its values and characters with every alias
# expanded may come to at most this plus 4 times its written length. Aliases share what they
# name when loaded, but every use of the frontmatter (its properties as text, its tags) expands
# them: a 344-byte alias bomb of 8 levels (9**8 values) took 13 s to import, 9 levels over 40 s.
MAX_FRONTMATTER_GROWTH = 10_000


def _check_expansion(value, written: int) -> None:
    """Refuse (ValueError) a frontmatter whose aliases expand it past the bound above, or that
    holds itself (an alias inside its own anchor). Each distinct list or mapping is weighed
    once, so the check costs what was written, not what the aliases would make."""
    limit = MAX_FRONTMATTER_GROWTH + 4 * written
    weights: dict[int, int] = {}
    open_: set[int] = set()

    def weigh(v) -> int:
        if not isinstance(v, (list, tuple, dict, set)):
            return len(v if isinstance(v, str) else str(v)) + 1
        if id(v) in weights:
            return weights[id(v)]
        if id(v) in open_:
            raise ValueError("a YAML alias inside its own anchor (it would never end)")
        open_.add(id(v))
        total = 1
        for item in (x for pair in v.items() for x in pair) if isinstance(v, dict) else v:
            total += weigh(item)
            if total > limit:
                raise ValueError(f"its YAML aliases expand it past {limit:,} values and characters")
        open_.discard(id(v))
        weights[id(v)] = total
        return total

    weigh(value)


def _clean_tag(tag: str) -> str | None:
    tag = tag.strip().lstrip("#").strip("/")
    if not tag or tag.isdigit() or not re.fullmatch(r"[\w\-/\u00C0-\uFFFF]+", tag):
        return None
    return tag


def _fence_step(line: str, fence: tuple[str, bool] | None) -> tuple[tuple[str, bool] | None, bool]:
    """(the open fence after `line`: its marker and whether it sits in a quote, or None; whether
    `line` is code or a fence). A fence in a quote or a callout ("> ```css", the help vault's CSS
    whose "#ff0000" became a tag) is a fence too, and ends where its quote ends."""
    m = _FENCE.match(line)
    if fence is not None:
        marker, quoted = fence
        if not (quoted and not line.lstrip(" \t").startswith(">")):
            # closed only at its own depth: "> ```js" inside a fence at the margin is its content
            if m and bool(m.group(1)) == quoted and m.group(2)[0] == marker[0] and len(m.group(2)) >= len(marker):
                return None, True
            return fence, True
    if m:
        return (m.group(2), bool(m.group(1))), True
    return None, False


def prose_only(text: str) -> str:
    """The text with fenced code, inline code and URLs blanked (tags and links are not read there)."""
    out, fence = [], None
    for line in text.splitlines(keepends=True):
        fence, code = _fence_step(line, fence)
        if code:
            out.append("\n" if line.endswith("\n") else "")
            continue
        line = _INLINE_CODE.sub(lambda x: " " * len(x.group(0)), line)
        out.append(_URL.sub(lambda x: " " * len(x.group(0)), line))
    return "".join(out)


def _blank(m: re.Match) -> str:
    return " " * len(m.group(0))


def inline_tags(text: str, prose: str | None = None) -> list[str]:
    """`#tags` of the prose (`prose_only(text)`, when already made); a link's target is not a tag
    (`[[#Open sidebars]]` links to a heading, `[see](#setup)` to an anchor)."""
    prose = _MD_LINK_TARGET.sub(_blank, _WIKILINK.sub(_blank, prose_only(text) if prose is None else prose))
    return list(dict.fromkeys(t for t in (_clean_tag(m) for m in _TAG.findall(prose)) if t))


def parse_link(inner: str, embed: bool = False) -> Ref:
    """The inside of `[[...]]`: target, then `#heading#subheading` or `#^block`, then `|alias`."""
    bar = _ALIAS_BAR.search(inner)
    alias = inner[bar.end():].strip() or None if bar else None
    head = inner[:bar.start()] if bar else inner
    target, _, anchor = head.partition("#")
    if anchor.startswith("^"):
        return Ref(target=target.strip(), block=anchor[1:].strip() or None, alias=alias, embed=embed)
    # a heading made only of characters a link cannot hold ('[[##^]]') names no heading
    headings = tuple(h.strip() for h in anchor.split("#") if _LINK_NOISE.sub("", h))
    return Ref(target=target.strip(), headings=headings, alias=alias, embed=embed)


def wikilinks(text: str, prose: str | None = None) -> list[Ref]:
    return [parse_link(inner, bool(bang)) for bang, inner in
            _WIKILINK.findall(prose_only(text) if prose is None else prose)]


def sections(body: str) -> list[tuple[str, str, list[str]]]:
    """(anchor, text, heading path) per heading section; text before the first heading has
    anchor '' and an empty path; a section's path is the headings above it, then its own."""
    parts: list[tuple[str, list[str], list[str]]] = [("", [], [])]
    stack: list[tuple[int, str]] = []
    fence = None
    for line in body.splitlines(keepends=True):
        fence, code = _fence_step(line, fence)
        if not code:
            h = _HEADING.match(line.rstrip("\r\n"))
            if h and h.group(2).strip():
                level, title = len(h.group(1)), h.group(2).strip()
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, title))
                parts.append((title, [], [t for _, t in stack]))
        parts[-1][1].append(line)
    out = []
    used: set[str] = set()
    tried: dict[str, int] = {}              # heading -> the last n its duplicates reached
    for anchor, lines, path in parts:
        text = "".join(lines)
        if not text.strip():
            continue
        # duplicate headings keep distinct identities: 'A', 'A (2)', 'A (3)'... The search for a
        # free name goes on from where the last duplicate of the heading stopped (every name
        # before is taken, and stays so): 30,000 headings 'Todo' took 100 s searching from 1
        n = tried.get(anchor, 1)
        unique = anchor if n == 1 else f"{anchor} ({n})"
        while unique in used:
            n += 1
            unique = f"{anchor} ({n})"
        tried[anchor] = n
        used.add(unique)
        out.append((unique, text, path))
    return out


class ObsidianParser:
    source = "obsidian"
    links_by = "path"
    version = "2"

    def paths(self, root: Path, options: dict, skipped: list[dict], others: list[str]):
        return paths(root, (".md",), SKIP_DIRS | set(options.get("exclude", ())), skipped, others)

    def is_note(self, rel: str, options: dict) -> bool:
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        return rel.endswith(".md") and not rel.rsplit("/", 1)[-1].startswith(".") and not (
            folder and skipped_dir(folder, SKIP_DIRS | set(options.get("exclude", ()))))

    def settings(self, root: Path, options: dict) -> dict:
        return {}

    def parse(self, root: Path, options: dict) -> ParseResult:
        return parse(self, root, options)

    def parse_note(self, rel: str, text: str, settings: dict) -> Note:
        skipped: list[dict] = []
        raw_meta, body, _ = split_frontmatter(text.removeprefix("\ufeff"))    # a BOM hid the front matter
        meta: dict = {}
        if raw_meta is not None:
            try:
                loaded = yaml.load(raw_meta, Loader=_YAML_LOADER)
                if loaded is not None and not isinstance(loaded, dict):
                    raise ValueError("frontmatter is not a mapping")
                _check_expansion(loaded, len(raw_meta))
                meta = loaded or {}
            except (yaml.YAMLError, ValueError, RecursionError) as exc:
                reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
                skipped.append({"path": rel, "reason": f"malformed frontmatter ({reason}); body imported"})
        note_tags = [t for t in (_clean_tag(x) for x in _as_list(meta.get("tags") or meta.get("tag"))) if t]
        aliases = _as_list(meta.get("aliases") or meta.get("alias"), r",")
        described = {k: _as_text(v) for k, v in meta.items() if k not in NOT_DESCRIPTIONS and _as_text(v)}
        valid = None
        for key in ("created", "date"):
            if meta.get(key):
                try:
                    valid = parse_iso(str(meta[key]))
                    break
                except Exception:
                    skipped.append({"path": rel, "reason": f"frontmatter {key} is not a date; ignored"})
        properties = {k: str(v) for k, v in meta.items() if k not in ("tags", "aliases")}
        units = []
        for anchor, section, path in sections(body):
            prose = prose_only(section)
            units.append(Unit(path=rel, anchor=anchor, text=section,
                              tags=list(dict.fromkeys(note_tags + inline_tags(section, prose))),
                              refs=wikilinks(section, prose), valid_from=valid, block_ids=_BLOCK_ID.findall(prose),
                              properties=properties, heading_path=path))
        return Note(path=rel, units=units, names=aliases, skipped=skipped,
                    meta={"title": _as_text(meta.get("title")) or Path(rel).stem, "aliases": aliases,
                          "properties": described})


register("obsidian", ObsidianParser)
