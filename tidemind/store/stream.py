"""The dated Markdown stream: every capture appended raw to stream/YYYY-MM-DD.md, fsync'd.

It is the second copy of what was said, readable in any editor. The entry is written before
the database commits, so an acknowledged digest is always in the stream; an entry whose
transaction then failed is an *orphan* (its key matches no capture) and `doctor` lists it.
Each entry carries its capture id, a random key stored with the capture (ids can be reused
after a rollback, keys cannot), and its byte length, so a reader walks the file by lengths and
content that looks like a header cannot confuse it. `redact` (forget) rewrites one entry in
place under the same lock appends take.

    ### 2026-11-30T02:37:27.123456Z · personal · cli · session-1
    <!-- tidemind capture=17 key=9f2c4e1ab07d3c55 bytes=42 -->
    ...exactly 42 bytes of content...
    <!-- /tidemind -->
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets as _random
from pathlib import Path
from typing import Iterator, NamedTuple

from .. import secrets as masking

_ENTRY = re.compile(rb"(?m)^### [^\n]*\n<!-- tidemind capture=(\d+) key=([0-9a-f]{16}) bytes=(\d+) -->\n")
_TAIL = b"\n<!-- /tidemind -->\n\n"


class Entry(NamedTuple):
    capture_id: int
    key: str
    head_start: int      # offset of the '### ' title line
    body_start: int
    body_length: int


@contextlib.contextmanager
def _locked(stream_dir: Path) -> Iterator[None]:
    stream_dir.mkdir(parents=True, exist_ok=True)
    with open(stream_dir / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def new_key() -> str:
    return _random.token_hex(8)


def file_for(recorded_at: str) -> str:
    return f"{recorded_at[:10]}.md"


def _title(text: str) -> str:
    """One line, and nothing a reader could take for an entry marker."""
    return " ".join(text.split()).replace("<!--", "<! --").replace("-->", "-- >")


def encode_entry(capture_id: int, key: str, title: str, body: bytes) -> bytes:
    head = f"### {_title(title)}\n<!-- tidemind capture={capture_id} key={key} bytes={len(body)} -->\n".encode()
    return head + body + _TAIL


def append(stream_dir: Path, name: str, capture_id: int, key: str, title: str, content: str) -> None:
    # the content is the capture's (masked where it is stored); the title names the host's tool
    # and session, which the host chose
    title, _ = masking.mask(title)
    data = encode_entry(capture_id, key, title, content.encode("utf-8"))
    with _locked(stream_dir):
        append_durably(stream_dir / name, data)


def append_durably(path: Path, data: bytes) -> None:
    """Append `data` to `path` (made readable by its owner only), every byte written and flushed
    to disk before returning: the stream's entries, and `tidemind proxy`'s queue."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)


def append_many(stream_dir: Path, entries: list[tuple[str, int, str, str, str]]) -> None:
    """(file name, capture id, key, title, content) entries appended together: one write and one
    fsync per file (an import's many units), under the same lock single appends take."""
    by_file: dict[str, list[bytes]] = {}
    for name, capture_id, key, title, content in entries:
        by_file.setdefault(name, []).append(encode_entry(capture_id, key, title, content.encode("utf-8")))
    if not by_file:
        return
    with _locked(stream_dir):
        for name, parts in by_file.items():
            append_durably(stream_dir / name, b"".join(parts))


def parse(data: bytes) -> list[Entry]:
    """Entries found by walking lengths; a header is only taken where the previous entry ended
    (or, after damage, at the next line that is a well-formed title + marker pair)."""
    out, pos = [], 0
    while True:
        m = _ENTRY.search(data, pos)
        if not m:
            return out
        length = int(m.group(3))
        end = m.end() + length
        if data[end:end + len(_TAIL)] != _TAIL:     # not a real entry boundary: keep looking past it
            pos = m.start() + 1
            continue
        out.append(Entry(int(m.group(1)), m.group(2).decode(), m.start(), m.end(), length))
        pos = end + len(_TAIL)


def entries(path: Path) -> list[Entry]:
    return parse(path.read_bytes())


def redact(stream_dir: Path, name: str, capture_id: int, key: str, tombstone: str) -> bool:
    """Replace the body of the capture's entry with `tombstone`; atomic (temp file, fsync, rename).
    Returns False when the file or the entry is not there."""
    path = stream_dir / name
    with _locked(stream_dir):
        if not path.exists():
            return False
        data = path.read_bytes()
        found = [e for e in parse(data) if e.capture_id == capture_id and e.key == key]
        if not found:
            return False
        out, pos = bytearray(), 0
        body = tombstone.encode("utf-8")
        for e in found:
            title_end = data.index(b"\n", e.head_start) + 1
            out += data[pos:title_end]
            out += f"<!-- tidemind capture={capture_id} key={key} bytes={len(body)} -->\n".encode() + body
            pos = e.body_start + e.body_length
        out += data[pos:]
        _rewrite(stream_dir, path, bytes(out))
        return True


def remove(stream_dir: Path, entries) -> int:
    """Take these captures' entries, (file name, capture id, key), out of their files (an import
    rolled back: as if never written), one atomic rewrite per file like `redact`; a file left
    with no entry goes. Called after the removal committed: an entry of a capture that is gone
    is an orphan `doctor --prune-orphans` takes too, should this never run. Returns how many."""
    by_file: dict[str, set[tuple[int, str]]] = {}
    for name, capture_id, key in entries:
        by_file.setdefault(name, set()).add((capture_id, key))
    removed = 0
    with _locked(stream_dir):
        for name, wanted in sorted(by_file.items()):
            path = stream_dir / name
            if not path.exists():
                continue
            data = path.read_bytes()
            found = [e for e in parse(data) if (e.capture_id, e.key) in wanted]
            if not found:
                continue
            out = _without(data, found)
            if out.strip():
                _rewrite(stream_dir, path, out)
            else:                       # its only entries: the file goes too, as if never written
                path.unlink()
                _sync_dir(stream_dir)
            removed += len(found)
    return removed


def _without(data: bytes, entries: list[Entry]) -> bytes:
    """The file's bytes with these entries (parsed from it, in order) cut out whole."""
    out, pos = bytearray(), 0
    for e in entries:
        out += data[pos:e.head_start]
        pos = e.body_start + e.body_length + len(_TAIL)
    return bytes(out + data[pos:])


def _sync_dir(stream_dir: Path) -> None:
    dfd = os.open(stream_dir, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _rewrite(stream_dir: Path, path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _sync_dir(stream_dir)


def remove_orphans(stream_dir: Path, known, older_than: str) -> int:
    """Remove entries whose (capture id, key) no capture has (a digest killed between writing
    its entry and committing) and whose title time is before `older_than`: a digest still in
    flight has written its entry and not yet committed, and must keep it. `known()` is read
    inside the lock appends take. Returns how many entries went."""
    removed = 0
    if not stream_dir.exists():
        return 0
    with _locked(stream_dir):
        have = known()
        for path in sorted(stream_dir.glob("*.md")):
            data = path.read_bytes()
            drop = []
            for e in parse(data):
                title = data[e.head_start + 4:data.index(b"\n", e.head_start)].decode("utf-8", "replace")
                if (e.capture_id, e.key) not in have and title.split(" ", 1)[0] < older_than:
                    drop.append(e)
            if not drop:
                continue
            _rewrite(stream_dir, path, _without(data, drop))
            removed += len(drop)
    return removed


def rebuild(stream_dir: Path, read_captures, keep: Path | None = None) -> int:
    """Write a fresh stream from the database's captures (after a restore), under the lock every
    append takes, so no digest's entry can fall between the old files and the new ones:
    `read_captures()` is called inside the lock; the current files are first copied to `keep`;
    the new files are written to a temporary folder (one fsync each), then renamed into place,
    and files that no longer belong are removed. A forgotten capture gets its tombstone."""
    import shutil
    import tempfile

    stream_dir.mkdir(parents=True, exist_ok=True)
    with _locked(stream_dir):
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for old in stream_dir.glob("*.md"):
                shutil.copy2(old, keep / old.name)
        captures = sorted(read_captures(), key=lambda c: c["id"])
        files: dict[str, list[bytes]] = {}
        for cap in captures:
            title = " · ".join(x for x in (cap["recorded_at"], cap["scope"], cap["source_tool"], cap["session"]) if x)
            body = cap["content"] if cap["content"] is not None else \
                f"[forgotten capture sha256:{cap['content_hash'][:16]}]"
            files.setdefault(cap["stream_file"], []).append(
                encode_entry(cap["id"], cap["stream_key"], title, body.encode("utf-8")))
        staging = Path(tempfile.mkdtemp(prefix=".rebuild-", dir=stream_dir))
        try:
            for name, entries in files.items():
                fd = os.open(staging / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    os.write(fd, b"".join(entries))
                    os.fsync(fd)
                finally:
                    os.close(fd)
            for name in files:
                os.replace(staging / name, stream_dir / name)
            for old in stream_dir.glob("*.md"):
                if old.name not in files:
                    old.unlink()
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return len(captures)


def all_entries(stream_dir: Path) -> dict[tuple[int, str], str]:
    """(capture id, key) -> stream file name, over every stream file."""
    found: dict[tuple[int, str], str] = {}
    if stream_dir.exists():
        for path in sorted(stream_dir.glob("*.md")):
            for e in entries(path):
                found[(e.capture_id, e.key)] = path.name
    return found
