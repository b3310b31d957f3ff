"""The proxy's durable queue (issue 26): an exchange is written here, flushed to disk, before the
response that carries its answer ends; a worker stores it in the memory afterwards, so the
response never waits on the store, and a store that is locked, away or killed loses nothing.

One append-only file of JSON lines and a small file holding how far the worker has stored
(byte offset, replaced atomically). An entry is acknowledged only after it is stored; one read
again after a crash between the two is recognised by its exchange id and not stored twice. Once
every entry is stored the file is emptied, so text the memory later forgets does not linger here.
The entries hold text already masked (secrets never reach the disk through the queue). An entry
the store refuses for what it holds (it would be refused every time) is set aside in a file of
its own, so the entries behind it are not held up.

One process owns a queue at a time (an exclusive lock on the folder, held while it runs): a
second proxy on the same home would empty the file under the first one's feet.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Callable, Iterator


class DurableQueue:
    def __init__(self, folder: Path):
        import fcntl

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "exchanges.jsonl"
        self.done_path = self.folder / "stored-up-to"
        self.dead_path = self.folder / "set-aside.jsonl"
        self._owner = open(self.folder / ".lock", "a")
        try:
            fcntl.flock(self._owner.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._owner.close()
            from ..errors import InvalidInput

            raise InvalidInput(f"another tidemind proxy is running on this home (it holds {self.folder}); stop it,"
                               " or give this one another --home") from None
        self._lock = threading.Lock()
        self.arrived = threading.Event()
        self._end_cut_line()

    def close(self) -> None:
        self._owner.close()

    def _end_cut_line(self) -> None:
        """A crash mid-append leaves a line without its end; the next entry must not be glued to
        it (both would be lost to the parser): the cut line is ended, and skipped when read."""
        try:
            with open(self.path, "rb+") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() and (fh.seek(-1, os.SEEK_END), fh.read(1))[1] != b"\n":
                    fh.write(b"\n")
                    fh.flush()
                    os.fsync(fh.fileno())
        except FileNotFoundError:
            pass

    def put(self, entry: dict) -> None:
        """Append and flush to disk; returns when the entry would survive a crash."""
        with self._lock:
            _append_synced(self.path, entry)
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
                # the mark first: a crash after it replays entries (recognised, not stored twice);
                # the other way round a crash left a mark past the end of the emptied file, and
                # the next entries were skipped
                self._mark(0)
                with open(self.path, "r+b") as fh:
                    fh.truncate(0)
                    os.fsync(fh.fileno())
        return count

    def set_aside(self, entry: dict, why: str) -> None:
        _append_synced(self.dead_path, {"why": why, "entry": entry})

    def size(self) -> int:
        return sum(1 for _ in self.pending())


def _append_synced(path: Path, record: dict) -> None:
    """One JSON line, flushed to disk (readable by its owner only: masked text, still a person's words)."""
    from ..store.stream import append_durably

    append_durably(path, (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
