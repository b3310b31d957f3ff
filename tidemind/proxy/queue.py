"""The proxy's durable queue (issue 26): an exchange is written here, flushed to disk, before the
response that carries its answer ends; a worker stores it in the memory afterwards, so the
response never waits on the store, and a store that is locked, away or killed loses nothing.

One append-only file of JSON lines and a small file holding how far the worker has stored
(byte offset, replaced atomically). An entry is acknowledged only after it is stored; one read
again after a crash between the two is recognised by its exchange id and not stored twice. Once
every entry is stored the file is emptied, so text the memory later forgets does not linger here.
The entries hold text already masked (secrets never reach the disk through the queue).
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Callable, Iterator


class DurableQueue:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "exchanges.jsonl"
        self.done_path = self.folder / "stored-up-to"
        self._lock = threading.Lock()
        self.arrived = threading.Event()

    def put(self, entry: dict) -> None:
        """Append and flush to disk; returns when the entry would survive a crash."""
        line = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        self.arrived.set()

    def _done(self) -> int:
        try:
            return int(self.done_path.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    def _mark(self, offset: int) -> None:
        temp = self.done_path.with_suffix(".tmp")
        temp.write_text(str(offset))
        with open(temp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(temp, self.done_path)

    def pending(self) -> Iterator[tuple[int, dict]]:
        """(offset after the entry, entry) for every entry not yet stored, oldest first. A last
        line cut short by a crash mid-write is left for the writer's next append to follow."""
        start = self._done()
        try:
            with open(self.path, "rb") as fh:
                fh.seek(start)
                offset = start
                for raw in fh:
                    if not raw.endswith(b"\n"):
                        return
                    offset += len(raw)
                    try:
                        yield offset, json.loads(raw)
                    except ValueError:
                        continue             # (a line no writer of this version wrote: skipped, kept)
        except FileNotFoundError:
            return

    def drain(self, store: Callable[[dict], None]) -> int:
        """Store every pending entry in order; acknowledge each once stored. Returns how many were
        stored. An entry whose store raises stays pending (the exception goes to the caller)."""
        count = 0
        for offset, entry in self.pending():
            store(entry)
            self._mark(offset)
            count += 1
        with self._lock:               # everything stored and nobody appending: empty the file
            if self.path.exists() and self._done() >= self.path.stat().st_size:
                with open(self.path, "r+b") as fh:
                    fh.truncate(0)
                    os.fsync(fh.fileno())
                self._mark(0)
        return count

    def size(self) -> int:
        return sum(1 for _ in self.pending())
