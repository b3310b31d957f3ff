"""Live sync (`tidemind import obsidian DIR --watch`).

A sync after file events reads only the files the events named (a folder event, or a file that
is not a note, such as Logseq's config, reads the whole folder); a missed event (inotify can
miss a file created the instant its folder is) is caught by the periodic full rescan, which
reads every file but parses only the ones whose hash changed. A sync waits for a quiet period
after the last event, so a file an editor is still writing is read whole, and editors'
temporary files are ignored. A file skipped (a FIFO, a device, a file over the size limit, bad
text) is said once, with its reason, and the watch goes on. If the vault disappears (moved,
unmounted) the watcher says so once and waits for it to come back.
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


def relative(path: str, root: Path) -> str | None:
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return None


def watch(sync_once: Callable[[set[str] | None], dict], root: Path, *, quiet_s: float = 1.0, rescan_s: float = 60.0,
          stop: threading.Event | None = None, say: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> int:
    """`sync_once(paths)`: a sync of those files (relative to the root), or of everything (None)."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    stop = stop or threading.Event()
    root = root.resolve()
    dirty = threading.Event()
    last_event = [0.0]
    lock = threading.Lock()
    changed: set[str] = set()
    everything = [True]                  # the first sync after (re)attaching reads the whole folder

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            if event.event_type in ("opened", "closed_no_write"):
                return
            paths = [p for p in (getattr(event, "src_path", ""), getattr(event, "dest_path", "")) if p]
            wanted = [p for p in paths if interesting(p, root)]
            if not wanted and not event.is_directory:
                return
            with lock:
                if event.is_directory:
                    everything[0] = event.event_type != "modified" or everything[0]
                else:
                    changed.update(r for r in (relative(p, root) for p in wanted) if r)
            last_event[0] = time.monotonic()
            dirty.set()

    observer = None
    gone = False
    last_sync = time.monotonic()
    syncs = 0
    told: set[tuple[str, str]] = set()       # skipped files already reported (the rescan finds them again)
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
                everything[0] = True
                dirty.set()                                      # sync once on (re)attach
            quiet = time.monotonic() - last_event[0] >= quiet_s
            due = time.monotonic() - last_sync >= rescan_s
            if (dirty.is_set() and quiet) or due:
                dirty.clear()
                with lock:
                    paths = None if everything[0] or due else set(changed)
                    changed.clear()
                    everything[0] = False
                try:
                    report = sync_once(paths)
                    syncs += 1
                    done = {k: v for k, v in report.items() if k in ("created", "updated", "archived", "moved",
                                                                    "restored") and v}
                    if done:
                        say(f"tidemind: synced batch {report['batch']}: "
                            + ", ".join(f"{v} {k}" for k, v in done.items()))
                    for s in report.get("skipped", ()):
                        if (s["path"], s["reason"]) not in told:
                            told.add((s["path"], s["reason"]))
                            say(f"tidemind: skipped {s['path']}: {s['reason']}")
                except Exception as exc:    # a failed pass is reported; the watch goes on
                    say(f"tidemind: sync failed ({type(exc).__name__}: {exc}); will retry on the next change")
                    with lock:
                        everything[0] = True                    # the files it named are read again
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
