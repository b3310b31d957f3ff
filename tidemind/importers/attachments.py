"""The files a note embeds (`![[picture.png]]`, `![alt](../assets/picture.png)`), found in its
vault the way the notes app finds them, for a reader that shows them (the desktop renders a
note's images). Only images, only inside the vault: a name that climbs out of the folder or a
symbolic link that points outside finds nothing. Nothing is stored: the vault is the source.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from urllib.parse import unquote

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".avif"})
MAX_BYTES = 20 * 1024 * 1024            # a larger "image" is not shown (the placeholder says its name)
_SKIP = frozenset({".obsidian", ".git", ".trash", ".logseq", "node_modules"})

RESCAN_S = 30.0                          # a missing image makes the vault be read again at most this often
_by_name: dict[str, tuple[dict[str, Path], float]] = {}  # vault root -> (file name (folded) -> the shallowest
                                                         # such file, when read)
_lock = threading.Lock()


def image_path(root: str, note_path: str, name: str) -> Path | None:
    """The image file `name` (as the note wrote it) points at, or None: first relative to the
    note's folder, then to the vault's root, then any file of that name in the vault (Obsidian
    links attachments by name alone; the shallowest path wins, as there)."""
    base = Path(root).resolve()
    wanted = unquote(name).split("|", 1)[0].split("#", 1)[0].strip()
    if not wanted or "\x00" in wanted or Path(wanted).suffix.lower() not in IMAGE_SUFFIXES or not base.is_dir():
        return None
    for candidate in (base / Path(note_path).parent / wanted, base / wanted):
        found = _inside(base, candidate)
        if found is not None:
            return found
    key = Path(wanted).name.casefold()
    with _lock:
        index, read_at = _by_name.get(str(base), (None, 0.0))
        stale = index is None or (key not in index or not index[key].is_file()) and time.monotonic() - read_at > RESCAN_S
        if stale:                                   # a file added or moved since: the vault read again, at most so often
            index = _index(base)
            _by_name[str(base)] = (index, time.monotonic())
    found = index.get(key)
    return _inside(base, found) if found is not None else None


def read_image(path: Path) -> bytes | None:
    """The file's bytes, or None when it is too large to show or cannot be read."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _inside(base: Path, candidate: Path) -> Path | None:
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if resolved.is_file() and resolved.is_relative_to(base) and resolved.suffix.lower() in IMAGE_SUFFIXES:
        return resolved
    return None


def _index(base: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, dirs, files in os.walk(base):           # (symbolic links to folders are not followed)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith("."))
        for f in sorted(files):
            if Path(f).suffix.lower() in IMAGE_SUFFIXES:
                path = Path(folder) / f
                key = f.casefold()
                if key not in found or len(path.parts) < len(found[key].parts):
                    found[key] = path
    return found
