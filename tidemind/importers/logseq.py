"""Logseq graphs: `pages/` and `journals/`, Markdown (`.md`) and org-mode (`.org`) files.

What a file holds, as Logseq's own documentation describes it:

- page properties: the `key:: value` lines at the top (`#+key: value` in org), or a first
  bullet made only of properties; `title::` names the page, `alias::` gives it other names,
  `tags::` tags every block, `description::` and the rest describe the page;
- blocks: a top-level bullet (`- ` in Markdown, `* ` in org) with its children, indented by
  tabs or spaces, is one unit; `id::` on the bullet is its identity, and every `id::` in its
  tree (children get one when something references them) can be linked to with `((uuid))`;
- text written without bullets (a page made outside Logseq: `## Heading` lines, paragraphs,
  tab-indented lists) is kept too, one unit per heading section;
- `TODO`/`DOING`/`DONE`... markers and `[#A]` priorities are properties, not tags;
- links: `[[page]]`, `#tag` and `#[[multi word]]` tags, `((uuid))` block refs,
  `{{embed ((uuid))}}` and `{{embed [[page]]}}` embeds, `[[Jan 5th, 2024]]` journal links (in
  the graph's `:journal/page-title-format`);
- namespaced pages: `a___b.md` or `a%2Fb.md` is the page `a/b`; a journal's file name
  (`2024_01_05.md`) is its date and the valid time of its blocks.

A block without an `id::` has no name of its own: the engine matches it by its text, then by
its place among the blocks that did not match (see identity.py).
"""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from urllib.parse import unquote

from . import Note, ParseResult, Ref, Unit, parse, register
from .files import paths, read_bytes, skipped_dir
from .obsidian import _clean_tag, prose_only

_PROPERTY = re.compile(r"^\s*(?:- )?([A-Za-z0-9_\-]+)::(?:\s+(.*?))?\s*$")
_PAGE_PROPERTY = re.compile(r"^([A-Za-z0-9_\-]+)::(?:[ \t]+(.*?))?[ \t]*$")
_BULLET = re.compile(r"^-(?:[ \t]|$)")
_EMPTY_BULLET = re.compile(r"(?m)^[ \t]*(?:-|\*+)[ \t]*$")
_CHILD_BULLET = re.compile(r"^\s+-(?:[ \t]|$)")
_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*$")
_BLOCK_HEADING = re.compile(r"^-[ \t]+(#{1,6})[ \t]+(.*?)[ \t]*$")
_ID = re.compile(r"^\s*(?:- )?id::[ \t]*([0-9A-Za-z\-]+)\s*$", re.IGNORECASE)
_PAGE_LINK = re.compile(r"\[\[([^\[\]]+?)\](?:\[[^\[\]]*\])?\]")       # org: [[target][label]]
_BLOCK_REF = re.compile(r"\(\(([0-9a-fA-F\-]{8,})\)\)")
_EMBED_BLOCK = re.compile(r"\{\{embed\s+\(\(([0-9a-fA-F\-]{8,})\)\)\s*\}\}")
_EMBED_PAGE = re.compile(r"\{\{embed\s+\[\[([^\[\]]+?)\]\]\s*\}\}")
_HASH_TAG = re.compile(r"(?<![\w/&#\-])#(\[\[([^\[\]]+)\]\]|[A-Za-z0-9_\-/\u00C0-\uFFFF]+)")
_MULTI_TAG = re.compile(r"#\[\[[^\]]+\]\]")
_PRIORITY = re.compile(r"\[#([A-Z])\]")
MARKERS = ("TODO", "DOING", "DONE", "LATER", "NOW", "WAITING", "CANCELED", "CANCELLED", "IN-PROGRESS", "WAIT")
_MARKER = re.compile(r"^(?:-|\*+)[ \t]+(" + "|".join(MARKERS) + r")\b")
_ORG_PAGE_PROPERTY = re.compile(r"^#\+([A-Za-z0-9_\-]+):[ \t]*(.*?)[ \t]*$")
_ORG_HEADLINE = re.compile(r"^\*(?:[ \t]|$)")
_ORG_DRAWER_PROPERTY = re.compile(r"^\s*:([A-Za-z0-9_\-]+):[ \t]*(.*?)[ \t]*$")
_ORG_ID = re.compile(r"^\s*:id:[ \t]*([0-9A-Za-z\-]+)\s*$", re.IGNORECASE)
_ORG_SRC = re.compile(r"^\s*#\+(begin|end)_(src|example|quote|export)\b", re.IGNORECASE)
_JOURNAL_FILE = re.compile(r"^(\d{4})[_\-]?(\d{2})[_\-]?(\d{2})$")
_CONFIG_TITLE = re.compile(r":journal/page-title-format\s+\"([^\"]+)\"")
DEFAULT_TITLE_FORMAT = "MMM do, yyyy"
STRUCTURAL = {"id", "collapsed", "heading"}       # Logseq's bookkeeping, not the person's words


def page_name(rel: str) -> str:
    stem = Path(rel).stem
    return unquote(stem.replace("___", "/").replace("%2F", "/"))


# -- journal titles: the date-fns tokens Logseq's :journal/page-title-format uses ----------------------
_DATE_TOKEN = re.compile(r"yyyy|yy|MMMM|MMM|MM|M|do|dd|d|EEEE|EEE|EE|E|'[^']*'")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def format_journal_title(day: dt.date, fmt: str) -> str:
    def one(m: re.Match) -> str:
        t = m.group(0)
        return {"yyyy": f"{day.year:04d}", "yy": f"{day.year % 100:02d}", "MMMM": _MONTHS[day.month - 1],
                "MMM": _MONTHS[day.month - 1][:3], "MM": f"{day.month:02d}", "M": str(day.month),
                "do": _ordinal(day.day), "dd": f"{day.day:02d}", "d": str(day.day),
                "EEEE": _DAYS[day.weekday()], "EEE": _DAYS[day.weekday()][:3], "EE": _DAYS[day.weekday()][:2],
                "E": _DAYS[day.weekday()][:3]}.get(t, t[1:-1] if t.startswith("'") else t)
    return _DATE_TOKEN.sub(one, fmt)


def journal_title_format(root: Path) -> str:
    # a regular file only, size-capped (a FIFO named config.edn must not block the sync); a
    # symbolic link is followed, as before: only the title format is taken from it
    data = read_bytes(Path(root).resolve(), "logseq/config.edn", [], follow=True)
    found = _CONFIG_TITLE.search(data.decode("utf-8", errors="replace")) if data is not None else None
    return found.group(1) if found else DEFAULT_TITLE_FORMAT


def journal_day(rel: str) -> dt.date | None:
    m = _JOURNAL_FILE.match(Path(rel).stem)
    if not (rel.startswith("journals/") and m):
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


# -- splitting a file into page properties and units ----------------------------------------------------
def _split_markdown(lines: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(page property lines, [(kind, lines)]): kind 'block' for a top-level bullet with its
    children, 'text' for text written without bullets (split at its headings)."""
    head: list[str] = []
    i = 0
    while i < len(lines) and (_PAGE_PROPERTY.match(lines[i].rstrip("\r\n")) or not lines[i].strip()):
        head.append(lines[i])
        i += 1
    parts: list[tuple[str, list[str]]] = []
    fence = False                      # inside a code fence written at the margin: nothing splits there
    for line in lines[i:]:
        bare = line.rstrip("\r\n")
        marks_fence = bare.startswith(("```", "~~~"))
        if fence:
            parts[-1][1].append(line)
            fence = not marks_fence
            continue
        if _BULLET.match(bare):
            parts.append(("block", [line]))
        elif _MD_HEADING.match(bare) or not parts:
            parts.append(("text", [line]))
        else:
            parts[-1][1].append(line)
        fence = marks_fence
    # a first bullet made only of properties is the page's properties (Logseq writes them so)
    if parts and parts[0][0] == "block" and all(_PROPERTY.match(l) or not l.strip() for l in parts[0][1]):
        head += parts.pop(0)[1]
    return head, parts


def _split_org(lines: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    head: list[str] = []
    i = 0
    in_drawer = False
    while i < len(lines):
        bare = lines[i].strip()
        if in_drawer or bare.upper() == ":PROPERTIES:" and not head or _ORG_PAGE_PROPERTY.match(bare) or not bare:
            in_drawer = (in_drawer or bare.upper() == ":PROPERTIES:") and bare.upper() != ":END:"
            head.append(lines[i])
            i += 1
            continue
        break
    parts: list[tuple[str, list[str]]] = []
    for line in lines[i:]:
        if _ORG_HEADLINE.match(line) or not parts:
            parts.append(("block" if _ORG_HEADLINE.match(line) else "text", [line]))
        else:
            parts[-1][1].append(line)
    return head, parts


def _page_properties(head: list[str], org: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in head:
        m = (_ORG_PAGE_PROPERTY.match(line.strip()) or _ORG_DRAWER_PROPERTY.match(line)) if org \
            else _PROPERTY.match(line)
        if m and m.group(1).upper() not in ("PROPERTIES", "END"):
            out[m.group(1).lower()] = (m.group(2) or "").strip()
    return out


def _own_properties(lines: list[str], org: bool) -> dict[str, str]:
    """The properties of the top-level block itself: the lines after its first, before its first
    child (a child's `id::` is the child's, not the block's identity)."""
    out: dict[str, str] = {}
    for line in lines[1:]:
        if (org and line.startswith("*")) or (not org and _CHILD_BULLET.match(line)):
            break
        m = _ORG_DRAWER_PROPERTY.match(line) if org else _PROPERTY.match(line)
        if m and m.group(1).upper() not in ("PROPERTIES", "END"):
            out[m.group(1).lower()] = (m.group(2) or "").strip()
    return out


def _prose(text: str, org: bool) -> str:
    """What tags and links are read from: bullets and indentation off (so an indented code fence
    is seen as one), code and URLs blanked, org source blocks blanked."""
    lines = []
    in_src = False
    for line in text.splitlines(keepends=True):
        if org:
            m = _ORG_SRC.match(line)
            if m or in_src:
                in_src = (m.group(1).lower() == "begin") if m else in_src
                lines.append("\n")
                continue
            lines.append(re.sub(r"^\s*(?:\*+ )?", "", line))
        else:
            lines.append(re.sub(r"^\s*(?:- )?", "", line))
    return prose_only("".join(lines))


def _list_property(value: str) -> list[str]:
    return [v.strip().strip("[]").strip() for v in re.split(r",\s*", value or "") if v.strip().strip("[]").strip()]


class LogseqParser:
    source = "logseq"
    links_by = "name"
    version = "2"
    SKIP = {"logseq", "bak", ".recycle", "assets"}

    def paths(self, root: Path, options: dict, skipped: list[dict], others: list[str]):
        return (rel for rel in paths(root, (".md", ".org"), self.SKIP | set(options.get("exclude", ())), skipped,
                                     others) if rel.startswith(("pages/", "journals/")))

    def is_note(self, rel: str, options: dict) -> bool:
        return rel.startswith(("pages/", "journals/")) and rel.endswith((".md", ".org")) and \
            not skipped_dir(rel.rsplit("/", 1)[0], self.SKIP | set(options.get("exclude", ()))) and \
            not rel.rsplit("/", 1)[-1].startswith(".")

    def settings(self, root: Path, options: dict) -> dict:
        return {"journal_title_format": journal_title_format(root)}

    def parse(self, root: Path, options: dict) -> ParseResult:
        return parse(self, root, options)

    def parse_note(self, rel: str, text: str, settings: dict) -> Note:
        org = rel.endswith(".org")
        lines = text.removeprefix("\ufeff").splitlines(keepends=True)     # a BOM hid the page properties
        head, parts = _split_org(lines) if org else _split_markdown(lines)
        page_props = _page_properties(head, org)
        title = page_props.get("title") or page_name(rel)
        aliases = _list_property(page_props.get("alias", ""))
        day = journal_day(rel)
        valid = None
        called = [title, page_name(rel), *aliases]
        if day is not None:
            valid = f"{day.isoformat()}T00:00:00.000000Z"
            title = page_props.get("title") or format_journal_title(day, settings.get("journal_title_format")
                                                                    or DEFAULT_TITLE_FORMAT)
            called += [title, format_journal_title(day, DEFAULT_TITLE_FORMAT), day.isoformat()]
        described = {k: v for k, v in page_props.items() if k not in STRUCTURAL | {"title", "alias", "tags"}}
        page_tags = [t for t in (_clean_tag(x.replace(" ", "-")) for x in _list_property(page_props.get("tags", "")))
                     if t]
        headings: list[tuple[int, str]] = []
        units = []
        for index, (kind, part) in enumerate(parts):
            block = "".join(part)
            if not _EMPTY_BULLET.sub("", block).strip():      # '- ' is how Logseq writes an empty block
                continue
            units.append(self._unit(rel, index, kind, part, block, org, page_tags, valid, headings))
        return Note(path=rel, units=units, names=list(dict.fromkeys(called)),
                    meta={"title": title, "aliases": aliases, "properties": described})

    @staticmethod
    def _unit(rel, index, kind, part, block, org, page_tags, valid, headings) -> Unit:
        props = _own_properties(part, org) if kind == "block" else {}
        first = part[0].rstrip("\r\n")
        marker = _MARKER.match(first)
        if marker:
            props["marker"] = marker.group(1)
        priority = _PRIORITY.search(first)
        if priority:
            props["priority"] = priority.group(1)
        block_id = props.pop("id", None) if kind == "block" else None
        ids = [m.group(1) for line in part if (m := (_ORG_ID if org else _ID).match(line))]
        prose = _prose(block, org)
        embeds = [Ref(target=None, block=b, embed=True) for b in _EMBED_BLOCK.findall(prose)]
        embeds += [Ref(target=p.strip(), embed=True) for p in _EMBED_PAGE.findall(prose)]
        prose = _EMBED_PAGE.sub(" ", _EMBED_BLOCK.sub(" ", prose))
        prose = _PRIORITY.sub("    ", prose)                  # [#A] is a priority, not the tag 'A'
        tags = list(page_tags)
        for whole, multi in _HASH_TAG.findall(prose):
            tag = _clean_tag(multi.replace(" ", "-")) if multi else _clean_tag(whole)
            if tag:
                tags.append(tag)
        tags += [t for t in (_clean_tag(x.replace(" ", "-")) for x in _list_property(props.get("tags", ""))) if t]
        refs = [Ref(target=t.strip()) for t in _PAGE_LINK.findall(_MULTI_TAG.sub(" ", prose)) if t.strip()]
        refs += [Ref(target=None, block=b) for b in _BLOCK_REF.findall(prose)] + embeds
        # the heading path: a bullet that is a heading names itself; text written without
        # bullets sits under the headings above it
        heading = _BLOCK_HEADING.match(first) if kind == "block" else _MD_HEADING.match(first)
        if kind == "text":
            if heading:
                level = len(heading.group(1))
                while headings and headings[-1][0] >= level:
                    headings.pop()
                headings.append((level, heading.group(2)))
            path = [h for _, h in headings]
        else:
            path = [heading.group(2)] if heading else []
        return Unit(path=rel, anchor=block_id, text=block, tags=list(dict.fromkeys(tags)), refs=refs,
                    valid_from=valid, block_ids=list(dict.fromkeys(([block_id] if block_id else []) + ids)),
                    properties={k: v for k, v in props.items() if k not in STRUCTURAL}, heading_path=path,
                    pairable=True, slot=f"b{index}")


register("logseq", LogseqParser)
