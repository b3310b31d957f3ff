"""Where a person's link points: an index of the vault's notes by path, name and alias, their
units' headings and block ids, and the other files (attachments).

Built once per sync, so resolving a link is a few dictionary lookups instead of a scan of every
note name (which cost ~1.2 ms a link on a 6,000-note vault). A link resolves to a unit of the
right note or to a reason it cannot:

- `missing note`: no note has that path, name or alias;
- `note without text`: the note exists but produced no unit (empty, blank, properties only);
- `note skipped`: the note exists but was not imported (see the report's `skipped`);
- `missing heading` / `missing block`: the note exists, the heading or `^block` id does not;
- `attachment`: a file that is not a note (an image, a PDF) and exists: nothing to link to;
- `missing attachment`: a file name that is not a note and does not exist.

Among notes that share a name, the one nearest the linking note wins (fewest folder steps
between them; then the shorter path), so a note does not link into another language's folder
when a same-named note sits beside it.
"""
from __future__ import annotations

import hashlib
import posixpath
import re
import unicodedata
from dataclasses import dataclass, field

from . import Ref

NOTE_SUFFIXES = (".md", ".org")
_HEADING_NOISE = re.compile(r"[#|^:%\[\]\\]+")


def heading_key(text: str) -> str:
    """Headings compare without case, surrounding space, or the characters a link cannot hold
    (Obsidian drops `#|^:%[]` from a heading when it writes a link to it)."""
    return " ".join(_HEADING_NOISE.sub(" ", unicodedata.normalize("NFC", text)).split()).casefold()


def heading_hash(text: str) -> str:
    """What the index keeps of a heading: a hash, not the words (a forgotten section's heading
    must not stay on disk), compared after `heading_key`."""
    return hashlib.sha256(heading_key(text).encode("utf-8")).hexdigest()[:16]


def _stem(path: str) -> str:
    for suffix in NOTE_SUFFIXES:
        if path.lower().endswith(suffix):
            return path[: -len(suffix)]
    return path


def _distance(here: str, there: str) -> tuple[int, int, str]:
    """Folder steps from the linking note's folder to the target's, then path length."""
    a = posixpath.dirname(here).split("/") if "/" in here else []
    b = posixpath.dirname(there).split("/") if "/" in there else []
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    return (len(a) - common) + (len(b) - common), len(there), there


@dataclass
class Resolved:
    key: str | None = None          # the unit linked to
    reason: str | None = None       # why there is none


@dataclass
class _Note:
    units: list[tuple[str, list[str], list[str]]] = field(default_factory=list)   # (key, heading hashes, block ids)
    # made at the first link into the note, so a link is a lookup, not a scan of its units (a
    # note of 20,000 sections each linking to another's heading took 30 s, most of it scanning):
    # block id -> first unit holding it; last heading -> {heading path: first unit with it}
    blocks: dict[str, str] | None = None
    by_heading: dict[str, dict[tuple[str, ...], str]] | None = None

    def lookups(self) -> None:
        if self.blocks is None:
            self.blocks, self.by_heading = {}, {}
            for key, path_keys, block_ids in self.units:
                for b in block_ids:
                    self.blocks.setdefault(b, key)
                if path_keys:
                    self.by_heading.setdefault(path_keys[-1], {}).setdefault(tuple(path_keys), key)


class Index:
    def __init__(self, links_by: str = "path"):
        self.links_by = links_by
        self.notes: dict[str, _Note] = {}
        self.by_stem: dict[str, str] = {}                  # folded path without suffix -> path
        self.by_base: dict[str, list[str]] = {}            # folded file name without suffix -> paths
        self.by_name: dict[str, list[str]] = {}            # folded alias / page name -> paths
        self.blocks: dict[str, str] = {}                   # block id -> unit key
        self.files: dict[str, str] = {}                    # folded attachment path -> path
        self.file_bases: dict[str, list[str]] = {}         # folded attachment file name -> paths
        self.skipped: set[str] = set()                     # notes that could not be read

    def add_note(self, path: str, names=()) -> None:
        if path not in self.notes:
            self.notes[path] = _Note()
            stem = _stem(path).casefold()
            self.by_stem.setdefault(stem, path)
            self.by_base.setdefault(stem.rsplit("/", 1)[-1], []).append(path)
        for name in names:
            folded = name.strip().casefold()
            if folded and path not in self.by_name.get(folded, ()):
                self.by_name.setdefault(folded, []).append(path)

    def add_unit(self, path: str, key: str, heading_hashes=(), block_ids=()) -> None:
        """A unit of the note, in note order: its key, its heading path (as `heading_hash`es),
        the block ids it holds."""
        self.add_note(path)
        note = self.notes[path]
        note.units.append((key, list(heading_hashes), list(block_ids)))
        note.blocks = note.by_heading = None
        for b in block_ids:
            self.blocks.setdefault(b, key)

    def add_attachment(self, path: str) -> None:
        self.files.setdefault(path.casefold(), path)
        self.file_bases.setdefault(path.rsplit("/", 1)[-1].casefold(), []).append(path)

    # -- notes --------------------------------------------------------------------------------------
    def note(self, target: str, here: str) -> str | None:
        t = unicodedata.normalize("NFC", target).strip()
        if self.links_by == "name":                       # Logseq: a page name or alias, nothing else
            found = self.by_name.get(t.casefold())
            return min(found, key=lambda p: _distance(here, p)) if found else None
        t = t.lstrip("/")
        if t.startswith("./") or t.startswith("../"):     # relative to the linking note
            t = posixpath.normpath(posixpath.join(posixpath.dirname(here), t))
        folded = _stem(t).casefold()
        if folded in self.by_stem:
            return self.by_stem[folded]
        base = folded.rsplit("/", 1)[-1]
        found = [p for p in self.by_base.get(base, ()) if "/" not in folded
                 or _stem(p).casefold().endswith("/" + folded)]
        if found:
            return min(found, key=lambda p: _distance(here, p))
        found = self.by_name.get(t.casefold())
        return min(found, key=lambda p: _distance(here, p)) if found else None

    def attachment(self, target: str, here: str) -> str | None:
        t = target.strip().lstrip("/")
        if t.startswith("./") or t.startswith("../"):
            t = posixpath.normpath(posixpath.join(posixpath.dirname(here), t))
        if t.casefold() in self.files:
            return self.files[t.casefold()]
        found = [p for p in self.file_bases.get(t.rsplit("/", 1)[-1].casefold(), ())
                 if "/" not in t or p.casefold().endswith("/" + t.casefold())]
        return min(found, key=lambda p: _distance(here, p)) if found else None

    # -- links --------------------------------------------------------------------------------------
    def resolve(self, ref: Ref, here: str) -> Resolved:
        if ref.target is None:                             # a Logseq ((block ref)): ids are graph-wide
            key = self.blocks.get(ref.block or "")
            return Resolved(key=key) if key else Resolved(reason="missing block")
        path = here if not ref.target.strip() else self.note(ref.target, here)
        if path is None:
            if self.links_by == "path" and "." in ref.target.rsplit("/", 1)[-1] \
                    and not ref.target.lower().endswith(NOTE_SUFFIXES):
                found = self.attachment(ref.target, here)
                return Resolved(reason="attachment" if found else "missing attachment")
            return Resolved(reason="missing note")
        note = self.notes[path]
        if not note.units:
            return Resolved(reason="note skipped" if path in self.skipped else "note without text")
        note.lookups()
        if ref.block:
            key = note.blocks.get(ref.block)
            return Resolved(key=key) if key else Resolved(reason="missing block")
        wanted = [heading_hash(h) for h in ref.headings if heading_key(h)]
        if wanted:
            # the first unit (in note order) whose heading is the last named and whose headings
            # above hold the others in order: among the distinct heading paths ending so, in the
            # order they first appear, the first that fits
            key = next((k for path_keys, k in note.by_heading.get(wanted[-1], {}).items()
                        if _within(wanted[:-1], list(path_keys[:-1]))), None)
            return Resolved(key=key) if key else Resolved(reason="missing heading")
        return Resolved(key=note.units[0][0])


def _within(outer: list[str], path: list[str]) -> bool:
    """`[[Note#A#B]]`: every heading named before the last is an ancestor, in that order."""
    it = iter(path)
    return all(any(h == p for p in it) for h in outer)
