"""A memory's text as Markdown Qt can render (QTextDocument.setMarkdown: CommonMark with GitHub's
tables), with what notes apps add to Markdown made into links the window understands:

  [[Note]], [[Note#Heading|shown]]   wikilink:Note#Heading    opens the note's memory
  ![[picture.png]], ![alt](a/b.png)   the image, from the vault   (`images`: those found there;
                                                                 the others are named, not shown)
  #tag, #[[two words]]                tag:name                 opens the tag's list
  ((block uuid))                      block:uuid               a Logseq block reference
  {{youtube URL}}, {{video URL}}      the URL, labelled        (other macros shown as code)
  key:: value                         *key:* value             a Logseq property

Code (fenced blocks and `inline` spans) is left exactly as written. The text itself is never
changed: this is only how it is shown; "As written" shows the bytes.
"""
from __future__ import annotations

import re
from urllib.parse import quote, unquote

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:.+?)\1")
_WIKILINK = re.compile(r"(!?)\[\[([^\]|#\n]*)((?:#[^\]|\n]*)?)(?:\|([^\]\n]*))?\]\]")
_BLOCK_REF = re.compile(r"\(\(([0-9a-fA-F-]{8,36})\)\)")
_MACRO = re.compile(r"\{\{\s*([\w-]+)\s*(.*?)\}\}")
_BRACKET_TAG = re.compile(r"(?<![\w/&#(\[])#\[\[([^\]\n]+)\]\]()")
_TAG = re.compile(r"(?<![\w/&#(\[])#(?:\[\[([^\]\n]+)\]\]|([^\s#.,;:!?()\[\]{}\"'`<>]*[^\W_][^\s#.,;:!?()\[\]{}\"'`<>]*))")
_PROPERTY = re.compile(r"^(\s*(?:- )?)([A-Za-z][\w-]*):: (.*)$")
_IMAGE = re.compile(r"\.(png|jpe?g|gif|svg|webp|bmp|avif)$", re.IGNORECASE)
_MD_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE_SCHEME = "vault-image"


def embedded_images(text: str) -> list[str]:
    """The image names a text embeds, as written (`![[a.png]]`, `![[a.png|100]]`, `![x](b/c.png)`)."""
    names = [m.group(2).strip() for m in _WIKILINK.finditer(text) if m.group(1) and _IMAGE.search(m.group(2).strip())]
    names += [unquote(m.group(2)) for m in _MD_IMAGE.finditer(text)
              if not m.group(2).startswith(("http://", "https://")) and _IMAGE.search(unquote(m.group(2)))]
    return list(dict.fromkeys(names))


def _escape_label(text: str) -> str:
    return re.sub(r"([\[\]\\*_`])", r"\\\1", text)


def _image(name: str, label: str, images: frozenset[str]) -> str:
    if name in images:
        return f"![{_escape_label(label)}]({IMAGE_SCHEME}:{quote(name, safe='')})"
    return f"🖼 *{_escape_label(name)}*"


def _wikilink(m: re.Match, images: frozenset[str] = frozenset()) -> str:
    embed, target, heading, shown = m.group(1), m.group(2).strip(), m.group(3) or "", m.group(4)
    if embed and _IMAGE.search(target):
        return _image(target, target, images)
    place = "" if heading.startswith("#^") else heading.replace("#", " › ")     # (a ^block id is no heading)
    label = shown if shown else (target + place if target else heading.lstrip("#^"))
    return f"[{_escape_label(label)}](wikilink:{quote(target + heading, safe='')})"


def _macro(m: re.Match) -> str:
    name, argument = m.group(1).lower(), m.group(2).strip()
    if name in ("youtube", "video", "vimeo", "tweet", "twitter") and re.match(r"https?://\S+$", argument):
        return f"[▶ {name}: {_escape_label(argument)}]({argument})"
    if name == "embed":
        inner = _WIKILINK.search(argument)
        if inner:
            return "embedded: " + _wikilink(inner)
    return f"`{{{{{name} {argument}}}}}`".replace(" }}", "}}")


def _tag(m: re.Match) -> str:
    name = m.group(1) or m.group(2)
    return f"[#{_escape_label(name)}](tag:{quote(name, safe='')})"


def _md_image(m: re.Match, images: frozenset[str]) -> str:
    url = m.group(2)
    if url.startswith(("http://", "https://")):
        return _image(url, m.group(1), frozenset())          # (nothing is fetched from the web)
    return _image(unquote(url), m.group(1) or unquote(url), images)


def _plain(segment: str, images: frozenset[str] = frozenset()) -> str:
    """Everything but code: the notes apps' syntax made into links, images found shown."""
    segment = _BRACKET_TAG.sub(_tag, segment)        # (before wikilinks: #[[two words]] is a tag)
    segment = _MD_IMAGE.sub(lambda m: _md_image(m, images), segment)
    segment = _WIKILINK.sub(lambda m: _wikilink(m, images), segment)
    segment = _BLOCK_REF.sub(lambda m: f"[↪ block {m.group(1)[:8]}](block:{m.group(1)})", segment)
    segment = _MACRO.sub(_macro, segment)
    return _TAG.sub(_tag, segment)


def to_markdown(text: str, images: frozenset[str] = frozenset()) -> str:
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:                       # inside a code block: as written, to its closing fence
            out.append(line)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            out.append(line)
            continue
        prop = _PROPERTY.match(line)
        if prop:
            line = f"{prop.group(1)}*{prop.group(2)}:* {prop.group(3)}"
        parts, last = [], 0
        for code in _INLINE_CODE.finditer(line):
            parts.append(_plain(line[last:code.start()], images))
            parts.append(code.group(0))
            last = code.end()
        parts.append(_plain(line[last:], images))
        out.append("".join(parts))
    return "\n".join(out)


HERE = "▸ this memory"


def page_markdown(sections: list[dict], current: int, images: frozenset[str] = frozenset()) -> str:
    """A note's sections as one page, in its order: the memory on screen marked, each other
    section with a link to open it as its own memory."""
    parts = []
    for section in sections:
        body = to_markdown(section["content"], images)
        if section["id"] == current:
            parts.append(f"**{HERE} · #{current}**\n\n{body}")
        else:
            parts.append(f"{body}\n\n[open this section · #{section['id']}](node:{section['id']})")
    return "\n\n---\n\n".join(parts)


def link_target(url: str) -> tuple[str, str]:
    """(kind, value) of a link in the rendered text: wikilink, tag, block, node or web."""
    scheme, _, rest = url.partition(":")
    if scheme in ("wikilink", "tag", "block", "node"):
        return scheme, unquote(rest)
    return "web", url
