"""Walking a vault safely: never following symlinks, never leaving the root, skipping what
cannot be read as text — each skip with a reason."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

MAX_FILE_BYTES = 2_000_000


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


def read(root: Path, rel: str, skipped: list[dict]) -> str | None:
    """The text of one file of the vault, or None with the reason added to `skipped` (a symbolic
    link, a path leaving the vault, too large, binary, not UTF-8, unreadable)."""
    root = root.resolve()
    path = root / rel
    try:
        if path.is_symlink():
            skipped.append({"path": rel, "reason": "symbolic link (not followed)"})
            return None
        real = path.resolve(strict=True)
        if root not in real.parents:
            skipped.append({"path": rel, "reason": "resolves outside the vault"})
            return None
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            skipped.append({"path": rel, "reason": f"larger than {MAX_FILE_BYTES:,} bytes"})
            return None
        data = path.read_bytes()
    except OSError as exc:
        skipped.append({"path": rel, "reason": f"unreadable: {exc.strerror or exc}"})
        return None
    if b"\x00" in data:
        skipped.append({"path": rel, "reason": "binary file"})
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        skipped.append({"path": rel, "reason": "not UTF-8 text"})
        return None


def walk(root: Path, suffixes: tuple[str, ...], skip_dirs: set[str], skipped: list[dict],
         others: list[str] | None = None) -> Iterator[tuple[str, str]]:
    """(relative posix path, text) for each readable file under root with one of the suffixes."""
    for rel in paths(root, suffixes, skip_dirs, skipped, others):
        text = read(root, rel, skipped)
        if text is not None:
            yield rel, text

