"""Importers: a parser per note source, one shared sync engine (`engine.py`).

A parser turns a folder into `Unit`s — a note's heading sections, a page's top-level blocks —
each with a stable identity (source, path, anchor), its text, the person's tags and links,
and a valid time when the source says one. It never touches the database; bad files are
reported in `skipped` with a reason and the rest imports.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Protocol

from .. import secrets


@dataclass
class Ref:
    """A person's link from a unit: target note ('' for the same note, none for a Logseq
    ((block ref))), the heading path within it (`[[Note#A#B]]`: B under A), a block id, the
    alias shown, whether it embeds."""
    target: str | None
    headings: tuple[str, ...] = ()
    block: str | None = None
    alias: str | None = None
    embed: bool = False

    @property
    def shown(self) -> str:
        """The link as the person wrote it, for the dangling list."""
        if self.target is None:
            return f"(({self.block}))"
        return self.target + "".join(f"#{h}" for h in self.headings) + (f"#^{self.block}" if self.block else "")

    def as_json(self) -> dict:
        return {"target": self.target, "headings": list(self.headings), "block": self.block, "embed": self.embed}

    @classmethod
    def from_json(cls, data: dict) -> "Ref":
        return cls(target=data.get("target"), headings=tuple(data.get("headings") or ()), block=data.get("block"),
                   embed=bool(data.get("embed")))


@dataclass
class Unit:
    path: str                       # posix path relative to the vault root
    anchor: str | None              # its name in the note: heading text, `id::`, '' for a note's first
                                    # unit; None when it has none (an outliner block without `id::`)
    text: str
    tags: list[str] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)
    valid_from: str | None = None
    block_ids: list[str] = field(default_factory=list)
    properties: dict = field(default_factory=dict)
    heading_path: list[str] = field(default_factory=list)    # the headings above the unit, then its own
    pairable: bool = False          # may continue a stored unit by its place among unmatched siblings
    slot: str = ""                  # the anchor a new nameless unit takes when free ('b3': 4th part)
    key: str = ""                   # '<path>#<anchor>'; the engine gives nameless units theirs

    def __post_init__(self):
        # the key is stored in the import tables: a heading is the note's words, so it is masked
        # like them (the same heading gives the same key at every sync)
        if not self.key and self.anchor is not None:
            self.key = f"{self.path}#{secrets.mask(self.anchor)[0]}"


@dataclass
class Note:
    """One file, parsed: its units, what else links may call it, its title, aliases and
    properties (the context of its units), and problems found reading it."""
    path: str
    units: list[Unit]
    names: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)                  # {"title", "aliases", "properties"}
    skipped: list[dict] = field(default_factory=list)         # {"path", "reason"}


@dataclass
class ParseResult:
    """A whole folder, parsed (tests and tools; the engine parses only the files that changed)."""
    units: list[Unit]
    skipped: list[dict]             # {"path", "reason"}
    names: dict[str, list[str]] = field(default_factory=dict)   # what else links call a note -> its path(s)
    notes: list[str] = field(default_factory=list)             # every note read, with or without units
    attachments: list[str] = field(default_factory=list)       # other files in the vault (images, PDFs...)
    links_by: str = "path"          # 'path': Obsidian's path/name rules; 'name': Logseq's page names
    meta: dict[str, dict] = field(default_factory=dict)       # path -> {"title", "aliases", "properties"}


class Parser(Protocol):
    source: str
    links_by: str                   # how links name notes: 'path' (Obsidian) or 'name' (Logseq pages)
    version: str                    # changes when the same file would parse differently

    def paths(self, root: Path, options: dict, skipped: list[dict], others: list[str]) -> Iterator[str]:
        """The notes of the folder (unread); other files go to `others` (attachments)."""

    def is_note(self, rel: str, options: dict) -> bool:
        """Whether a path (from a file event) is one of the folder's notes."""

    def settings(self, root: Path, options: dict) -> dict:
        """What else shapes parsing (Logseq's journal title format): part of every file's hash."""

    def parse_note(self, rel: str, text: str, settings: dict) -> Note: ...


def parse(parser: Parser, root: Path, options: dict) -> ParseResult:
    from .files import read

    root = Path(root).resolve()
    skipped: list[dict] = []
    attachments: list[str] = []
    settings = parser.settings(root, options)
    result = ParseResult(units=[], skipped=skipped, attachments=attachments, links_by=parser.links_by)
    for rel in list(parser.paths(root, options, skipped, attachments)):
        text = read(root, rel, skipped)
        if text is None:
            continue
        note = parser.parse_note(rel, text, settings)
        result.notes.append(rel)
        result.units += note.units
        result.meta[rel] = note.meta
        skipped += note.skipped
        for name in note.names:
            result.names.setdefault(name, []).append(rel)
    return result


PARSERS: dict[str, Callable[[], Parser]] = {}


def register(source: str, factory: Callable[[], Parser]) -> None:
    PARSERS[source] = factory


def get_parser(source: str) -> Parser:
    from . import logseq, obsidian  # noqa: F401  (each registers itself)

    if source not in PARSERS:
        from ..errors import InvalidInput

        raise InvalidInput(f"unknown importer {source!r}; known: {', '.join(sorted(PARSERS))}")
    return PARSERS[source]()
