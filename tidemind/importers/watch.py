"""Live sync (`tidemind import obsidian DIR --watch`).

Filesystem events only say *when* to look: each sync is a full, hash-based rescan, so a missed
event (inotify can miss a file created the instant its folder is) is caught by the next event
or by the periodic rescan. A sync waits for a quiet period after the last event, so a file an
editor is still writing is read whole, and editors' temporary files are ignored. If the vault
disappears (moved, unmounted) the watcher says so once and waits for it to come back.
"""
from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path
from typing import Callable

_TEMP = re.compile(r"(^\.|~$|\.(tmp|swp|swx|part|crdownload|bak)$|^#.*#$|^\.#)")


def interesting(path: str, root: Path) -> bool:
    rel = Path(path)
    try:
        rel = rel.resolve().relative_to(root) if rel.is_absolute() else rel
    except (ValueError, OSError):
        return False
    parts = rel.parts
    if any(p.startswith(".") for p in parts[:-1]):          # .obsidian/, .trash/, .git/
        return False
    return bool(parts) and not _TEMP.search(parts[-1])


def watch(sync_once: Callable[[], dict], root: Path, *, quiet_s: float = 1.0, rescan_s: float = 60.0,
          stop: threading.Event | None = None, say: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> int:
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    stop = stop or threading.Event()
    root = root.resolve()
    dirty = threading.Event()
    last_event = [0.0]

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            if event.event_type in ("opened", "closed_no_write"):
                return
            paths = [getattr(event, "src_path", ""), getattr(event, "dest_path", "")]
            if any(p and interesting(p, root) for p in paths) or event.is_directory:
                last_event[0] = time.monotonic()
                dirty.set()

    observer = None
    gone = False
    last_sync = time.monotonic()
    syncs = 0
    try:
        while not stop.is_set():
            if not root.is_dir():
                if not gone:
                    say(f"tidemind: the vault {root} is gone (moved or unmounted); waiting for it to come back")
                    gone = True
                    if observer is not None:
                        observer.stop()
                        observer.join(timeout=5)
                        observer = None
                stop.wait(2.0)
                continue
            if observer is None:
                if gone:
                    say(f"tidemind: the vault {root} is back; syncing")
                    gone = False
                observer = Observer()
                observer.schedule(Handler(), str(root), recursive=True)
                observer.start()
                dirty.set()                                      # sync once on (re)attach
            quiet = time.monotonic() - last_event[0] >= quiet_s
            due = time.monotonic() - last_sync >= rescan_s
            if (dirty.is_set() and quiet) or due:
                dirty.clear()
                try:
                    report = sync_once()
                    syncs += 1
                    changed = {k: v for k, v in report.items() if k in ("created", "updated", "archived", "moved",
                                                                       "restored") and v}
                    if changed:
                        say(f"tidemind: synced batch {report['batch']}: "
                            + ", ".join(f"{v} {k}" for k, v in changed.items()))
                except Exception as exc:    # a failed pass is reported; the watch goes on
                    say(f"tidemind: sync failed ({type(exc).__name__}: {exc}); will retry on the next change")
                last_sync = time.monotonic()
            stop.wait(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
        say(f"tidemind: stopped watching {root} after {syncs} sync(s)")
    return 0
