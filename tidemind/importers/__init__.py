"""Importers: a parser per note source, one shared sync engine (`engine.py`).

A parser turns a folder into `Unit`s — a note's heading sections, a page's top-level blocks —
each with a stable identity (source, path, anchor), its text, the person's tags and links,
and a valid time when the source says one. It never touches the database; bad files are
reported in `skipped` with a reason and the rest imports.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from .. import secrets


@dataclass
class Ref:
    """A person's link from a unit: target note, optional heading or block id, alias, embed."""
    target: str
    heading: str | None = None
    block: str | None = None
    alias: str | None = None
    embed: bool = False


@dataclass
class Unit:
    path: str                       # posix path relative to the vault root
    anchor: str                     # heading text, block id, or '' for a note's first unit
    text: str
    tags: list[str] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)
    valid_from: str | None = None
    block_ids: list[str] = field(default_factory=list)
    properties: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The unit's identity, stored in the import tables: a heading is the note's words, so it
        is masked like them (the same heading gives the same key at every sync)."""
        return f"{self.path}#{secrets.mask(self.anchor)[0]}"


@dataclass
class ParseResult:
    units: list[Unit]
    skipped: list[dict]             # {"path", "reason"}
    aliases: dict[str, str] = field(default_factory=dict)    # alias (lower) -> path


class Parser(Protocol):
    source: str

    def parse(self, root: Path, options: dict) -> ParseResult: ...


PARSERS: dict[str, Callable[[], Parser]] = {}


def register(source: str, factory: Callable[[], Parser]) -> None:
    PARSERS[source] = factory


def get_parser(source: str) -> Parser:
    from . import logseq, obsidian  # noqa: F401  (each registers itself)

    if source not in PARSERS:
        from ..errors import InvalidInput

        raise InvalidInput(f"unknown importer {source!r}; known: {', '.join(sorted(PARSERS))}")
    return PARSERS[source]()
