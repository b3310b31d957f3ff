"""The dated Markdown stream: every capture appended raw to stream/YYYY-MM-DD.md, fsync'd.

It is the second copy of what was said, readable in any editor. Each entry carries its byte
length, so a reader walks the file by lengths and text that looks like a header cannot
confuse it. `redact` (forget) rewrites one entry in place under the same lock appends take.

    ### 2026-11-30T02:37:27.123456Z · personal · cli · session-1
    <!-- tidemind capture=17 bytes=42 -->
    ...exactly 42 bytes of content...
    <!-- /tidemind -->
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
from pathlib import Path
from typing import Iterator

_HEAD = re.compile(rb"<!-- tidemind capture=(\d+) bytes=(\d+) -->\n")
_TAIL = b"\n<!-- /tidemind -->\n\n"


@contextlib.contextmanager
def _locked(stream_dir: Path) -> Iterator[None]:
    stream_dir.mkdir(parents=True, exist_ok=True)
    with open(stream_dir / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def file_for(recorded_at: str) -> str:
    return f"{recorded_at[:10]}.md"


def _entry(capture_id: int, title: str, body: bytes) -> bytes:
    head = f"### {title}\n<!-- tidemind capture={capture_id} bytes={len(body)} -->\n".encode()
    return head + body + _TAIL


def append(stream_dir: Path, name: str, capture_id: int, title: str, content: str) -> None:
    data = _entry(capture_id, title.replace("\n", " "), content.encode("utf-8"))
    with _locked(stream_dir):
        fd = os.open(stream_dir / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def entries(path: Path) -> list[tuple[int, int, int]]:
    """(capture_id, body_start, body_length) for each entry, found by walking lengths."""
    data = path.read_bytes()
    out, pos = [], 0
    while True:
        m = _HEAD.search(data, pos)
        if not m:
            return out
        cid, length = int(m.group(1)), int(m.group(2))
        out.append((cid, m.end(), length))
        pos = m.end() + length


def redact(stream_dir: Path, name: str, capture_id: int, tombstone: str) -> bool:
    """Replace the capture's body with `tombstone`; atomic (temp file + fsync + rename)."""
    path = stream_dir / name
    with _locked(stream_dir):
        if not path.exists():
            return False
        data = path.read_bytes()
        found = [e for e in entries(path) if e[0] == capture_id]
        if not found:
            return False
        out, pos = bytearray(), 0
        new_body = tombstone.encode("utf-8")
        for _, start, length in found:
            head_start = data.rfind(b"<!-- tidemind capture=", 0, start)
            out += data[pos:head_start]
            out += f"<!-- tidemind capture={capture_id} bytes={len(new_body)} -->\n".encode() + new_body
            pos = start + length
        out += data[pos:]
        tmp = path.with_suffix(".md.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, bytes(out))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        dfd = os.open(stream_dir, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return True


def capture_ids(stream_dir: Path) -> dict[int, str]:
    """capture id -> stream file name, over every stream file."""
    found: dict[int, str] = {}
    if stream_dir.exists():
        for path in sorted(stream_dir.glob("*.md")):
            for cid, _, _ in entries(path):
                found[cid] = path.name
    return found
