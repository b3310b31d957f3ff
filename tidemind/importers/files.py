"""Walking a vault safely: never following symlinks, never leaving the root, never opening
anything but a regular file, never reading more than the size limit, skipping what cannot be
read as text — each skip with a reason."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Iterator

MAX_FILE_BYTES = 2_000_000       # a note's file; the setting max_note_bytes changes it


def skipped_dir(rel: str, skip_dirs: set[str]) -> bool:
    """Whether a folder (relative posix path) is one the walk does not enter."""
    parts = rel.split("/")
    return any(p.startswith(".") or p in skip_dirs for p in parts) or any(
        "/".join(parts[:i]) in skip_dirs for i in range(1, len(parts) + 1))


def paths(root: Path, suffixes: tuple[str, ...], skip_dirs: set[str], skipped: list[dict],
          others: list[str] | None = None) -> Iterator[str]:
    """Relative posix paths of the files under root with one of the suffixes (unread); the
    paths of the other files (attachments: images, PDFs) go to `others`."""
    root = root.resolve()
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        rel_dir = here.relative_to(root).as_posix()
        keep = []
        for d in sorted(dirs):
            rel = f"{rel_dir}/{d}" if rel_dir != "." else d
            if d in skip_dirs or rel in skip_dirs or d.startswith("."):
                continue
            if (here / d).is_symlink():
                skipped.append({"path": rel + "/", "reason": "symbolic link (not followed)"})
                continue
            keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            rel = (here / name).relative_to(root).as_posix()
            if name.startswith("."):
                continue
            if not name.endswith(suffixes):
                if others is not None:
                    others.append(rel)
                continue
            yield rel


def _size(n: int) -> str:
    return f"{round(n / 1e6, 1):g} MB" if n >= 1_000_000 else f"{n:,} bytes"


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, for the reason it is skipped."""
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "directory")):
        if test(mode):
            return name
    return "special file"


def read(root: Path, rel: str, skipped: list[dict], limit: int = MAX_FILE_BYTES) -> str | None:
    """The text of one file of the vault, or None with the reason added to `skipped` (a symbolic
    link, a path leaving the vault, not a regular file, over `limit` bytes, binary, not UTF-8,
    unreadable)."""
    data = read_bytes(root, rel, skipped, limit)
    if data is None:
        return None
    if b"\x00" in data:
        skipped.append({"path": rel, "reason": "binary file"})
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        skipped.append({"path": rel, "reason": "not UTF-8 text"})
        return None


def read_bytes(root: Path, rel: str, skipped: list[dict], limit: int = MAX_FILE_BYTES,
               follow: bool = False) -> bytes | None:
    """The bytes of one file of the vault, or None with the reason added to `skipped`; `follow`:
    a symbolic link is followed, wherever it leads (a setting file, never a note).

    Only regular files are opened: a FIFO would block the open or the read forever and a
    character device (a twin of /dev/zero) would be read until memory ran out. The type is
    checked before opening (opening a device can have effects of its own), checked again on the
    opened descriptor (the file may be swapped between the two), and at most `limit` + 1 bytes
    are ever read, whatever the size said."""
    root = root.resolve()
    path = root / rel
    try:
        info = os.stat(path) if follow else os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            skipped.append({"path": rel, "reason": "symbolic link (not followed)"})
            return None
        if not stat.S_ISREG(info.st_mode):
            skipped.append({"path": rel, "reason": f"not a regular file ({_kind(info.st_mode)})"})
            return None
        if not follow and root not in path.resolve(strict=True).parents:
            skipped.append({"path": rel, "reason": "resolves outside the vault"})
            return None
        if info.st_size > limit:
            skipped.append({"path": rel, "reason": _too_large(info.st_size, limit)})
            return None
        # O_NONBLOCK: were it swapped for a FIFO since the lstat, the open returns at once
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                skipped.append({"path": rel, "reason": f"not a regular file ({_kind(opened.st_mode)})"})
                return None
            chunks, got = [], 0
            while got <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - got))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
        finally:
            os.close(fd)
        if got > limit:                          # it grew after the lstat
            skipped.append({"path": rel, "reason": _too_large(None, limit)})
            return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:             # made a symbolic link since the lstat
            skipped.append({"path": rel, "reason": "symbolic link (not followed)"})
            return None
        skipped.append({"path": rel, "reason": f"unreadable: {exc.strerror or exc}"})
        return None
    return b"".join(chunks)


def _too_large(size: int | None, limit: int) -> str:
    """`size` None: the file grew past the limit while it was read."""
    if size is None:
        return f"grew while read past the {_size(limit)} limit for a note (setting max_note_bytes)"
    shown = (_size(size), _size(limit)) if _size(size) != _size(limit) else (f"{size:,} bytes", f"{limit:,} bytes")
    return f"{shown[0]} is larger than the {shown[1]} limit for a note (setting max_note_bytes)"


def walk(root: Path, suffixes: tuple[str, ...], skip_dirs: set[str], skipped: list[dict],
         others: list[str] | None = None, limit: int = MAX_FILE_BYTES) -> Iterator[tuple[str, str]]:
    """(relative posix path, text) for each readable file under root with one of the suffixes."""
    for rel in paths(root, suffixes, skip_dirs, skipped, others):
        text = read(root, rel, skipped, limit)
        if text is not None:
            yield rel, text

