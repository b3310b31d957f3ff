"""Walking a vault safely: never following symlinks, never leaving the root, skipping what
cannot be read as text — each skip with a reason."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

MAX_FILE_BYTES = 2_000_000


def walk(root: Path, suffixes: tuple[str, ...], skip_dirs: set[str], skipped: list[dict],
         others: list[str] | None = None) -> Iterator[tuple[str, str]]:
    """(relative posix path, text) for each readable file under root with one of the suffixes;
    the paths of the other files (attachments: images, PDFs) go to `others`, unread."""
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
            path = here / name
            rel = path.relative_to(root).as_posix()
            if name.startswith("."):
                continue
            if not name.endswith(suffixes):
                if others is not None:
                    others.append(rel)
                continue
            if path.is_symlink():
                skipped.append({"path": rel, "reason": "symbolic link (not followed)"})
                continue
            try:
                real = path.resolve(strict=True)
                if root not in real.parents:
                    skipped.append({"path": rel, "reason": "resolves outside the vault"})
                    continue
                size = path.stat().st_size
                if size > MAX_FILE_BYTES:
                    skipped.append({"path": rel, "reason": f"larger than {MAX_FILE_BYTES:,} bytes"})
                    continue
                data = path.read_bytes()
            except OSError as exc:
                skipped.append({"path": rel, "reason": f"unreadable: {exc.strerror or exc}"})
                continue
            if b"\x00" in data:
                skipped.append({"path": rel, "reason": "binary file"})
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                skipped.append({"path": rel, "reason": "not UTF-8 text"})
                continue
            yield rel, text
