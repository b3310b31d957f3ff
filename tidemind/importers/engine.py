"""The sync engine shared by every importer.

A sync reads every note of the folder (or, for `--watch`, the files that changed) and parses
only those whose hash changed; an unchanged folder costs a read and a hash per file and writes
nothing. For the notes that changed, each parsed unit is matched to the unit it continues
(identity.py) and is created, superseded (its text changed: the old node stays as history, no
similarity merge on this path), refreshed in place (only what the source says about it
changed), restored (it came back), moved (its file was renamed) or left alone; a unit nothing
continues is archived. The person's tags arrive `confirmed` and their links `confirmed` with the
person as proposer; a link that resolves to no unit is kept as dangling with its reason and is
tried again when the folder's notes change.

Writes go in chunks: each a transaction of at most ~a quarter of a second (`BUDGET_S`), all or
nothing, so a digest arriving during a long import waits for one chunk, never for the import.
A note's hash is recorded in the chunk that writes its last unit, so a sync that stops midway
(killed, Ctrl-C) leaves every note either done or to be read again. Every change is recorded
in the sync's batch (made by its first change: a sync that changes nothing leaves none), so
`rollback(batch)` restores the state before it, in chunks too; a batch whose process died is
marked `interrupted` by the folder's next sync or rollback (and can still be rolled back).
One sync or rollback of a folder runs at a time (a lock file per folder).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
import unicodedata
from pathlib import Path

from ..errors import Conflict, InvalidInput, NotFound, StoreBusy
from .. import removal
from ..memory import Memory
from ..store import audit, immediate, links, nodes, stream, tags
from ..store.connection import yield_to_waiting_writers
from ..text import sha256
from . import Note, Parser, Ref, Unit, context, get_parser
from .files import read
from .identity import Step, match, note_of
from .resolve import Index, heading_hash
from . import store

COUNTS = ("created", "updated", "unchanged", "archived", "moved", "restored", "refreshed", "kept_out")
BUDGET_S = 0.25          # how long one write transaction may go on before it commits
_END = object()


class Cancelled(Exception):
    """The caller asked a sync to stop (`cancelled()` turned true); raised between chunks."""


def unit_hash(unit: Unit) -> str:
    """Text plus what the source says about it (tags, valid time, properties): a changed
    frontmatter is a change of the unit."""
    meta = json.dumps({"tags": sorted(unit.tags), "valid": unit.valid_from, "props": unit.properties},
                      sort_keys=True, ensure_ascii=False)
    return sha256(unit.text + "\x00" + meta)


def _keep_out(steps: list[Step], hidden_rows: dict, kept_out) -> None:
    """Mark the steps that would bring back words a person forgot or archived: any new or
    changed unit whose text is one a person took out of this folder, moved to another note,
    under a renamed heading or edited (`KeptOut.reason`). A forgotten section rewritten in
    other words where it was is new writing, and comes in."""
    for s in steps:
        if s.hidden is not None:
            if hidden_rows[s.hidden]["content_hash"] != s.hash and kept_out \
                    and kept_out.reason(s.unit.text) == "forgotten":
                s.kept_out = "forgot"
        elif kept_out and (s.row is None or s.row["content_hash"] != s.hash):
            reason = kept_out.reason(s.unit.text)
            # an edit of a unit that is itself archived stays as it was: a new version, archived too
            if reason == "forgotten" or (reason == "archived" and s.row is None):
                s.kept_out = "forgot" if reason == "forgotten" else "archived"


def _same_words(node: dict, unit: Unit) -> bool:
    return node["content_hash"] == sha256(unit.text) and (unit.valid_from is None or
                                                          node["valid_from"] == unit.valid_from)


def _anchors(unit: Unit) -> dict:
    """What links to this unit resolve against, without its words: heading hashes, block ids."""
    return {"h": [heading_hash(h) for h in unit.heading_path], "b": list(unit.block_ids)}


def _contexts(steps: list[Step], meta: dict, hidden_rows: dict) -> dict[str, dict]:
    """Each unit's context; a heading whose section a person forgot is not repeated in the
    context of the sections under it."""
    gone = {(s.unit.path, tuple(s.unit.heading_path)) for s in steps
            if s.hidden and s.unit.heading_path and hidden_rows[s.hidden]["content_hash"] == s.hash}
    out = {}
    notes: dict[str, dict] = {}             # the note's part, built (and masked) once per note
    for s in steps:
        path = list(s.unit.heading_path)
        for i in range(len(path)):
            if (s.unit.path, tuple(s.unit.heading_path[:i + 1])) in gone:
                path[i] = context.FORGOTTEN_HEADING
        if s.unit.path not in notes:
            notes[s.unit.path] = context.build(meta.get(s.unit.path), Path(s.unit.path).stem, [])
        out[s.unit.key] = {**notes[s.unit.path], "headings": [context.mask_text(h) for h in path]}
    return out


def _scope_name(name: str) -> str:
    """A folder's name as a scope name: accents folded, other characters a scope cannot hold
    made '-'; a name with nothing left (日記) becomes 'notes-' and a hash of it, so two such
    folders never share a scope."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    cleaned = re.sub(r"[^A-Za-z0-9_.@+\-]+", "-", folded).strip("-._+@")[:60].strip("-._+@")
    return cleaned if re.search(r"[A-Za-z0-9]", cleaned) else f"notes-{sha256(name)[:6]}"


class _Batch:
    """The batch row, made by the first change: a sync that changes nothing leaves none."""

    def __init__(self, conn, source: str, root: str, scope: str, at: str):
        self.conn, self.source, self.root, self.scope, self.at = conn, source, root, scope, at
        self._id: int | None = None

    @property
    def id(self) -> int:
        if self._id is None:
            self._id = store.new_batch(self.conn, self.source, self.root, self.scope, self.at)
        return self._id

    @property
    def made(self) -> bool:
        return self._id is not None


class _Writer:
    """Write transactions of bounded length: items are applied in transactions that commit once
    `budget_s` has passed (after the item that crossed it), each all or nothing, its stream
    entries written together before it commits. Records how many and how long the longest was."""

    def __init__(self, memory: Memory, budget_s: float, cancelled=None):
        self.memory, self.budget_s = memory, budget_s
        self.cancelled = cancelled or (lambda: False)
        self.count, self.longest = 0, 0.0

    def each(self, items, apply, may_stop: bool = True, after_commit=None) -> None:
        """`after_commit()`: after each chunk committed (never after one that failed)."""
        items = iter(items)
        item = next(items, _END)
        while item is not _END:
            if may_stop and self.cancelled():
                raise Cancelled()                 # between chunks: every chunk is whole or absent
            if self.count:                        # a digest waiting meanwhile goes before the next chunk
                yield_to_waiting_writers(self.memory.conn)
            with immediate(self.memory.conn), self.memory.stream_batch():
                start = time.monotonic()
                while item is not _END:
                    apply(item)
                    item = next(items, _END)
                    if time.monotonic() - start >= self.budget_s:
                        break
            self.count += 1
            self.longest = max(self.longest, time.monotonic() - start)
            if after_commit is not None:
                after_commit()

    def once(self, apply) -> None:
        self.each([None], lambda _: apply(), may_stop=False)


@contextlib.contextmanager
def _folder_lock(memory: Memory, source: str, root: str):
    """One sync or rollback of a folder at a time, across processes (a second one waits as long
    as a writer waits for the database, then says who holds it)."""
    folder = memory.settings.home / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / f"import-{sha256(source + chr(0) + root)[:16]}.lock", "a+")
    deadline = time.monotonic() + memory.settings.busy_timeout_ms / 1000
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    handle.seek(0)
                    raise StoreBusy(f"another import of {root} is running (pid {handle.read().strip() or '?'});"
                                    " try again when it ends") from None
                time.sleep(0.05)
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()                        # (closing releases the lock)


def _recover(memory: Memory, source: str, root: str, writer: _Writer) -> list[dict]:
    """Batches of this folder whose process stopped before their last chunk (the folder lock is
    held, so none is still running): an import is marked interrupted (what it did stays, recorded,
    and the sync that follows completes the folder); a rollback is finished."""
    found = []
    for b in store.unfinished_batches(memory.conn, source, root):
        if b["status"] == "rolling_back":
            try:
                _undo(memory, b, writer)
                found.append({"batch": b["id"], "now": "rolled_back"})
                continue
            except Conflict:
                pass                    # partly undone and no longer exactly undoable: closed as it is
        writer.once(lambda: store.set_batch_status(memory.conn, b["id"], "interrupted"))
        found.append({"batch": b["id"], "now": "interrupted"})
    return found


def sync(memory: Memory, source: str, root: str | Path, scope: str | None = None, options: dict | None = None,
         progress=None, only=None, budget_s: float = BUDGET_S, cancelled=None) -> dict:
    """Bring the store in line with the folder. `progress(done, total)` is called now and then
    while units are written (a CLI bar); `only` (paths relative to the folder, from a watch's
    file events) limits the reading to those files, the rest being as the last sync left them;
    `budget_s` bounds each write transaction. When `cancelled()` turns true (a person's Cancel)
    the sync stops before its next chunk: the report says `cancelled`, its batch (if anything was
    written) is marked interrupted, and `rollback(batch)` undoes what it wrote."""
    folder = Path(root).expanduser()
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder (was the vault moved or unmounted?)")
    parser = get_parser(source)
    if only is not None and not all(parser.is_note(p, options or {}) for p in only):
        only = None                 # a folder, an attachment or a config file (Logseq's journal format): all
    return _Sync(memory, parser, folder.resolve(), scope, options or {}, progress, budget_s, cancelled).run(only)


class _Sync:
    def __init__(self, memory: Memory, parser: Parser, folder: Path, scope: str | None, options: dict, progress,
                 budget_s: float, cancelled=None):
        self.memory, self.conn, self.parser, self.folder = memory, memory.conn, parser, folder
        self.writer = _Writer(memory, budget_s, cancelled)
        self.source, self.root = parser.source, str(folder)
        self.options, self.progress = options, progress
        self.actor_source = f"person:{parser.source}"
        self.scope = scope
        self.scope_note: str | None = None
        self.counts = dict.fromkeys(COUNTS, 0)
        self.skipped: list[dict] = []
        self.warnings: list[str] = []
        self.attachments: list[str] | None = None
        settings = parser.settings(folder, options)
        self.settings = settings
        self.fingerprint = sha256(json.dumps([parser.source, parser.version, settings], sort_keys=True))

    # -- reading: outside any transaction -----------------------------------------------------------
    def _file_hash(self, text: str) -> str:
        return sha256(self.fingerprint + "\x00" + text)

    def _read(self, only) -> tuple[dict[str, Note], dict[str, str], set[str]]:
        """(parsed notes whose file changed, their file hashes, notes that are gone)."""
        stored = store.notes(self.conn, self.source, self.root)
        texts: dict[str, str] = {}
        if only is None:
            self.attachments = []
            wanted = list(self.parser.paths(self.folder, self.options, self.skipped, self.attachments))
        else:
            wanted = sorted(set(only))
        for rel in wanted:
            if only is not None and not os.path.lexists(self.folder / rel):
                continue                                        # deleted: gone below
            # (a FIFO, a device or a file over the limit is skipped with its reason, as in a full sync)
            text = read(self.folder, rel, self.skipped, self.memory.settings.max_note_bytes)
            if text is not None:
                texts[rel] = text
        gone = (set(stored) if only is None else set(wanted) & set(stored)) - set(texts)
        hashes = {rel: self._file_hash(t) for rel, t in texts.items()}
        changed = {rel: self._parse(rel, t) for rel, t in texts.items()
                   if stored.get(rel, {}).get("file_hash") != hashes[rel]}
        return changed, hashes, gone

    def _parse(self, rel: str, text: str) -> Note:
        note = self.parser.parse_note(rel, text, self.settings)
        self.skipped += note.skipped
        return note

    # -- the sync -------------------------------------------------------------------------------------
    def _default_scope(self) -> str:
        """The folder's own scope: the one it was imported into before, else `vault:<its name>`,
        unless another folder of that name has it already (then the name and a hash of this
        folder's path, and the report says so)."""
        earlier = store.scopes_of(self.conn, self.source, self.root)
        if earlier:
            return sorted(earlier)[0]
        name = _scope_name(self.folder.name)
        scope = f"vault:{name}"
        taken = store.roots_of_scope(self.conn, scope) - {self.root}
        if not taken:
            return scope
        mine = f"vault:{name}-{sha256(self.root)[:6]}"
        self.scope_note = (f"{scope} is the scope of another folder of that name ({sorted(taken)[0]});"
                           f" this folder's notes go to {mine}")
        return mine

    def run(self, only) -> dict:
        memory, conn, writer = self.memory, self.conn, self.writer
        with _folder_lock(memory, self.source, self.root):
            recovered = _recover(memory, self.source, self.root, writer)
            if self.scope is None:
                self.scope = self._default_scope()
            elsewhere = store.scopes_of(conn, self.source, self.root) - {self.scope}
            if elsewhere:
                raise InvalidInput(f"{self.folder} was imported into scope {', '.join(sorted(elsewhere))}; import it"
                                   " with that --scope (a folder lives in one scope: its history must not cross"
                                   " scopes)")
            changed, hashes, gone = self._read(only)
            now = memory.now()
            batch = _Batch(conn, self.source, self.root, self.scope, now)
            # the plan is made outside any write transaction (matching 50,000 units takes seconds);
            # each step checks its row again in the transaction that writes it
            live_before = store.count_live(conn, self.source, self.root)
            known = store.units_of_notes(conn, self.source, self.root, [*changed, *gone],
                                         legacy_forgotten=only is None)
            hidden_rows = {k: r for k, r in known.items() if k.startswith(store.FORGOTTEN)}
            known = {k: r for k, r in known.items() if k not in hidden_rows}
            self.counts["unchanged"] = live_before - sum(r["status"] == "live" for r in known.values())
            units = [u for note in changed.values() for u in note.units]
            steps, vanished, left_hidden = match(units, [unit_hash(u) for u in units], known, hidden_rows)
            _keep_out(steps, hidden_rows, store.KeptOut(conn, self.source, self.root))
            contexts = _contexts(steps, {p: n.meta for p, n in changed.items()}, hidden_rows)
            try:
                touched, refreshed, intact = self._apply(steps, contexts, hidden_rows, changed, hashes, batch, now)
                vanished = {k: r for k, r in vanished.items() if r["status"] == "live"}
                self._archive(vanished, batch, now)
                writer.each([*(("hidden", k) for k in sorted(left_hidden)), *(("gone", p) for p in sorted(gone))],
                            lambda item: (store.drop_unit if item[0] == "hidden" else store.drop_note)(
                                conn, self.source, self.root, item[1]))
                if touched or vanished or changed or gone:
                    self._links(steps, touched, refreshed, vanished, changed, gone, batch, now)
                # a note's hash is recorded last: a sync stopped before this point reads the note again
                # (its units then match as unchanged, and their links are read again)
                writer.each([p for p in changed if intact[p]], lambda path: store.put_note(
                    conn, self.source, self.root, path, hashes[path], changed[path].names))
            except Cancelled:
                # stopped between chunks: what was written is whole and recorded in the batch; the
                # batch is closed as interrupted at once (the lock is ours), so it can be rolled back
                if batch.made:
                    writer.once(lambda: store.set_batch_status(conn, batch.id, "interrupted"))
                return {"batch": batch.id if batch.made else None, "cancelled": True, **self.counts,
                        "skipped": self.skipped, "warnings": self.warnings, "scope": self.scope,
                        "read": len(hashes), "parsed": len(changed), "writes": writer.count,
                        "longest_write_s": round(writer.longest, 3)}
            report = {"batch": batch.id if batch.made else None, **self.counts, "skipped": self.skipped,
                      "warnings": self.warnings, "scope": self.scope, "read": len(hashes), "parsed": len(changed)}
            if self.scope_note:
                report["scope_note"] = self.scope_note
            if recovered:
                report["recovered"] = recovered
            if batch.made:
                def finish():
                    store.finish_batch(conn, batch.id, memory.now(), {k: v for k, v in report.items()
                                                                      if isinstance(v, int) and k != "batch"})
                    audit.record(conn, at=now, actor=memory.actor, action="import", batch=batch.id,
                                 source=self.source, root=self.root, **self.counts)
                writer.once(finish)
            report["writes"], report["longest_write_s"] = writer.count, round(writer.longest, 3)
        return report

    def _apply(self, steps: list[Step], contexts: dict, hidden_rows: dict, changed: dict[str, Note],
               hashes: dict[str, str], batch: _Batch, now: str):
        """Write each unit; returns (key -> node id of units whose tags and links to write, the
        node ids among them that kept their node, whether each note's units all went as planned)."""
        touched: dict[str, int] = {}
        refreshed: set[int] = set()
        intact = dict.fromkeys(changed, True)      # a note whose unit changed under us is read again

        def apply(item):
            i, step = item
            if not self._step(step, contexts[step.unit.key], hidden_rows, batch, now, touched, refreshed):
                intact[step.unit.path] = False
            if self.progress is not None and ((i + 1) % 250 == 0 or i + 1 == len(steps)):
                self.progress(i + 1, len(steps))

        self.writer.each(enumerate(steps), apply)
        return touched, refreshed, intact

    def _fresh(self, key: str, planned: dict) -> dict | None:
        """The row again, inside the writing transaction: None when a person changed it since the
        plan was made (a forget hashed its key), which leaves the unit to the next sync."""
        row = store.units_by_key(self.conn, self.source, self.root, [key]).get(key)
        if row is None or (row["node_id"], row["content_hash"], row["status"]) != \
                (planned["node_id"], planned["content_hash"], planned["status"]):
            return None
        return row

    def _step(self, step: Step, ctx: dict, hidden_rows: dict, batch: _Batch, now: str, touched: dict,
              refreshed: set) -> bool:
        memory, conn, source, root = self.memory, self.conn, self.source, self.root
        counts = self.counts
        unit, key, h, row = step.unit, step.unit.key, step.hash, step.row
        if step.kept_out:
            # a person forgot or archived these words: forever, wherever the note moves them
            self.skipped.append({"path": unit.path, "reason": f"section {unit.anchor or '(top)'!r}: kept out (a"
                                 f" person {step.kept_out} these words; unarchive brings archived ones back)"})
            counts["kept_out"] += 1
            return True
        anchors = _anchors(unit)
        if step.hidden:
            if self._fresh(step.hidden, hidden_rows[step.hidden]) is None:
                return False
            if hidden_rows[step.hidden]["content_hash"] == h:
                if step.hidden != store.forgotten_key(key):       # the forgotten unit moved: still forgotten
                    store.rekey(conn, source, root, step.hidden, store.forgotten_key(key), batch.id)
                counts["unchanged"] += 1
                return True
            store.drop_unit(conn, source, root, step.hidden)    # edited since: new words
        if row is not None:
            row = self._fresh(row["unit_key"], row)
            if row is None:
                return False
        if row is not None and row["unit_key"] != key:     # moved, renamed, or a block that gained an id::
            store.rekey(conn, source, root, row["unit_key"], key, batch.id)
            store.change(conn, batch.id, "moved", unit_key=key, old_key=row["unit_key"])
            if note_of(row["unit_key"]) != unit.path:
                # the node's path changed: views keyed on paths (workstreams) must see it
                audit.record(conn, at=now, actor=memory.actor, action="import_move", node_id=row["node_id"],
                             batch=batch.id)
                counts["moved"] += 1
        if row is not None and row.get("position") != step.position:
            store.set_position(conn, source, root, key, step.position)
        if row is not None and json.loads(row.get("anchors") or "{}") != anchors:
            store.set_anchors(conn, source, root, key, anchors)
        if row is not None and row["content_hash"] == h:
            relocated = note_of(row["unit_key"]) != unit.path
            if row["status"] == "archived":
                # the note came back as it was: what the importer archived comes back; a node a
                # person archived or corrected meanwhile stays as they left it
                store.put_unit(conn, source, root, key, h, row["node_id"], "live", batch.id, step.position)
                if row["hidden"] and memory.set_hidden(row["node_id"], False, now):
                    store.change(conn, batch.id, "restored", unit_key=key, old_node_id=row["node_id"])
                    counts["restored"] += 1
                    relocated = True
                else:
                    store.change(conn, batch.id, "relisted", unit_key=key, old_node_id=row["node_id"])
            if self._set_context(key, row, ctx, batch):
                counts["refreshed"] += not relocated       # the note's title, a heading or a property
            elif not relocated:
                counts["unchanged"] += 1
            return True
        lineage, old, kept_archived = None, None, False
        if row is not None:
            old = nodes.get_any(conn, row["node_id"])
            if old is not None and old["status"] in ("live", "archived"):
                if row["status"] == "live" and _same_words(old, unit):     # (archived by a person: stays so)
                    # only what the source says about the words changed (a tag, a property):
                    # the node stays, its standing is refreshed, no new version
                    store.put_unit(conn, source, root, key, h, old["id"], "live", batch.id, step.position,
                                   context.encode(ctx), anchors)
                    nodes.set_context_text(conn, old["id"], context.text(ctx))
                    store.change(conn, batch.id, "refreshed", unit_key=key, old_node_id=old["id"],
                                 new_node_id=old["id"], old_hash=row["content_hash"], old_context=row["context"])
                    counts["refreshed"] += 1
                    touched[key] = old["id"]
                    refreshed.add(old["id"])
                    return True
                # archived by the importer (its file had vanished): it comes back with its new
                # words; archived by a person: the new words are kept, archived too
                kept_archived = old["status"] == "archived" and not (row["status"] == "archived" and row["hidden"])
                if old["status"] == "archived" and not kept_archived:
                    memory.set_hidden(old["id"], False, now)
                lineage = old["id"]
        try:
            node_id, unit_warnings = memory.store_unit(unit.text, scope=self.scope, source_tool=source,
                                                       valid_from=unit.valid_from, now=now, lineage_of=lineage,
                                                       context=context.text(ctx))
        except InvalidInput as exc:               # e.g. a section over the size limit: skip it, import the rest
            if lineage is not None and old["status"] == "archived" and not kept_archived:
                memory.set_hidden(lineage, True, now)
            self.skipped.append({"path": unit.path, "reason": f"section {unit.anchor or '(top)'!r}: {exc}"})
            return False                              # the note is read again next time (and says so again)
        self.warnings += [f"{unit.path}: {w}" for w in unit_warnings]
        if kept_archived:
            memory.set_hidden(node_id, True, now)
        store.put_unit(conn, source, root, key, h, node_id, "live", batch.id, step.position, context.encode(ctx),
                       anchors)
        if lineage is None:
            store.change(conn, batch.id, "created", unit_key=key, new_node_id=node_id)
            counts["created"] += 1
        else:
            store.change(conn, batch.id, "updated", unit_key=key, old_node_id=lineage, new_node_id=node_id,
                         old_hash=row["content_hash"], old_status=row["status"], old_context=row["context"],
                         old_hidden=row["hidden"], old_node_status=old["status"],
                         new_status="archived" if kept_archived else "live")
            counts["updated"] += 1
        touched[key] = node_id
        return True

    def _set_context(self, key: str, row: dict, ctx: dict, batch: _Batch) -> bool:
        """Bring a kept unit's context up to date (its note renamed, a heading above it or a page
        property edited); recorded so a rollback puts the old one back."""
        encoded = context.encode(ctx)
        if row.get("context") == encoded:
            return False
        store.set_context(self.conn, self.source, self.root, key, encoded)
        nodes.set_context_text(self.conn, row["node_id"], context.text(ctx))
        store.change(self.conn, batch.id, "context", unit_key=key, old_node_id=row["node_id"],
                     old_context=row.get("context"))
        return True

    def _archive(self, vanished: dict[str, dict], batch: _Batch, now: str) -> None:
        self.writer.each(sorted(vanished.items()), lambda item: self._archive_one(*item, batch, now))

    def _archive_one(self, key: str, planned: dict, batch: _Batch, now: str) -> None:
        row = self._fresh(key, planned)
        if row is not None:
            hidden = self.memory.set_hidden(row["node_id"], True, now)
            store.put_unit(self.conn, self.source, self.root, key, row["content_hash"], row["node_id"], "archived",
                           batch.id, hidden=hidden)
            if hidden:
                store.change(self.conn, batch.id, "archived", unit_key=key, old_node_id=row["node_id"])
                self.counts["archived"] += 1
            else:   # not live (a person archived, corrected or forgot it): nothing to hide, nothing to restore
                store.change(self.conn, batch.id, "delisted", unit_key=key, old_node_id=row["node_id"])

    # -- links ----------------------------------------------------------------------------------------
    def _index(self, changed: dict[str, Note], gone: set[str]) -> tuple[Index, dict[str, int]]:
        """The folder's notes, names and units as they are after this sync's writes (the notes
        read now are recorded after the links), and the node of each live unit."""
        index = Index(self.parser.links_by)
        names = {p: info["names"] for p, info in store.notes(self.conn, self.source, self.root).items()
                 if p not in gone}
        names.update({p: n.names for p, n in changed.items()})
        for path, called in names.items():
            index.add_note(path, called)
        node_of = {}
        for key, node_id, anchors in store.index_rows(self.conn, self.source, self.root):
            index.add_unit(note_of(key), key, anchors.get("h", ()), anchors.get("b", ()))
            node_of[key] = node_id
        for s in self.skipped:
            if self.parser.is_note(s["path"], self.options):
                index.add_note(s["path"])
                index.skipped.add(s["path"])
        if self.attachments is None:             # a watch's sync read a few files: list the others now
            self.attachments = []
            for _ in self.parser.paths(self.folder, self.options, [], self.attachments):
                pass
        for path in self.attachments:
            index.add_attachment(path)
        return index, node_of

    def _links(self, steps: list[Step], touched: dict[str, int], refreshed: set[int], vanished: dict[str, dict],
               changed: dict[str, Note], gone: set[str], batch: _Batch, now: str) -> None:
        conn, source, root = self.conn, self.source, self.root
        names_changed = bool(changed or gone)
        index, node_of = self._index(changed, gone)
        current = {s.unit.key: s.unit for s in steps}
        # units linking to (or linked from) a note that vanished read their links again: they are
        # dangling now. Their notes did not change, so they are parsed again here.
        key_of = {n: k for k, n in node_of.items()}
        again = {key_of[n] for n in links.linked_with(conn, [r["node_id"] for r in vanished.values()],
                                                      self.actor_source) if n in key_of} - set(current)
        current.update(self._reparse({note_of(k) for k in again}))
        # every unit of a note that was read is linked again (a unit left unchanged too: a sync
        # stopped before its links were written leaves the note to be read again); what is already
        # there is not written twice
        kept = [s.unit.key for s in steps if s.unit.key not in touched and s.row is not None]
        keys = [k for k in dict.fromkeys([*touched, *kept, *sorted(k for k in again if k in current)])
                if k in touched or k in node_of]

        def read_links(key: str) -> None:
            node_id = touched.get(key) or node_of[key]
            unit = current[key]
            if key in touched and node_id not in refreshed:
                # a changed note's links are re-read from its text, so a link the person deleted
                # goes (the ones carried over from the previous version are dropped, then re-added)
                for link_id in links.by_proposer(conn, node_id, self.actor_source):
                    links.delete(conn, link_id)
            if key in touched:
                self._tags(key, node_id, unit, node_id in refreshed, batch, now)
            dangling = []
            for ref in unit.refs:
                found = index.resolve(ref, unit.path)
                target = node_of.get(found.key) if found.key else None
                if target is None:
                    dangling.append((ref.shown, found.reason or "note not imported", ref.as_json()))
                elif target != node_id:
                    self._link(key, node_id, target, ref, unit.path, batch, now)
            if store.dangling_of(conn, source, root, key) != dangling:
                store.clear_dangling(conn, source, root, key)
                for shown, reason, ref_json in dangling:
                    store.add_dangling(conn, batch.id, source, root, key, shown, reason, ref_json)

        self.writer.each(keys, read_links)
        if not names_changed:
            return
        handled = set(keys)
        retry = []                  # a dangling link may resolve now: tried again from its stored form
        for row in store.dangling(conn, source, root):
            if row["unit_key"] in handled or row["reason"] == "attachment" or row["unit_key"] not in node_of:
                continue
            found = index.resolve(Ref.from_json(row["ref"]), note_of(row["unit_key"]))
            if found.key in node_of:
                retry.append((row, node_of[found.key]))

        def resolve_dangling(item) -> None:
            row, target = item
            source_node = node_of[row["unit_key"]]
            if target != source_node:
                self._link(row["unit_key"], source_node, target, Ref.from_json(row["ref"]), note_of(row["unit_key"]),
                           batch, now)
            store.drop_dangling(conn, row["id"])

        self.writer.each(retry, resolve_dangling)

    def _reparse(self, paths: set[str]) -> dict[str, Unit]:
        """Units (with their keys) of unchanged notes whose links must be read again."""
        units = []
        for rel in sorted(paths):
            text = read(self.folder, rel, [], self.memory.settings.max_note_bytes)
            if text is not None:
                units += self.parser.parse_note(rel, text, self.settings).units
        if not units:
            return {}
        known = store.units_of_notes(self.conn, self.source, self.root, paths)
        hidden = {k: r for k, r in known.items() if k.startswith(store.FORGOTTEN)}
        steps, _, _ = match(units, [unit_hash(u) for u in units], {k: r for k, r in known.items() if k not in hidden},
                            hidden)
        return {s.unit.key: s.unit for s in steps if s.row is not None}

    def _link(self, key: str, node_id: int, target: int, ref: Ref, path: str, batch: _Batch, now: str) -> None:
        link_id = links.add(self.conn, node_id, target, relation="embeds" if ref.embed else "links-to",
                            status="confirmed", proposed_by=self.actor_source, at=now,
                            reason=f"[[{ref.shown}]] in {path}")
        if link_id:
            store.change(self.conn, batch.id, "link", unit_key=key, new_node_id=node_id, link=link_id)

    def _tags(self, key: str, node_id: int, unit: Unit, kept: bool, batch: _Batch, now: str) -> None:
        conn = self.conn
        held = {t["name"]: t for t in tags.for_nodes(conn, [node_id])[node_id]}
        for name in unit.tags:
            before = held.get(name)
            if tags.assign(conn, node_id, name, status="confirmed", source=self.actor_source, at=now):
                store.change(conn, batch.id, "tag", unit_key=key, new_node_id=node_id, tag=name,
                             before=before["status"] if before else None)
        # a tag the note no longer says goes (a correction carried the old words' tags over);
        # tags a person gave or rejected elsewhere stay
        for name, t in held.items():
            if name not in unit.tags and t["status"] == "confirmed" and t["source"] == self.actor_source:
                tags.restore_assignment(conn, node_id, name, None)
                if kept:                        # a new version is hidden by a rollback; this node is not
                    store.change(conn, batch.id, "untag", unit_key=key, new_node_id=node_id, tag=name,
                                 before=t["status"], source=t["source"])


def rollback(memory: Memory, batch_id: int, budget_s: float = BUDGET_S) -> dict:
    """Undo one batch (the latest for its folder, or every later one first), in chunks like the
    import itself: exact for the whole batch, no write transaction longer than `budget_s`."""
    conn = memory.conn
    b = store.batch(conn, int(batch_id))
    if b is None:
        raise NotFound(f"no import batch {batch_id}")
    writer = _Writer(memory, budget_s)
    with _folder_lock(memory, b["source"], b["root"]):
        b = store.batch(conn, b["id"])
        if b["status"] == "rolled_back":
            raise Conflict(f"batch {batch_id} was already rolled back")
        if b["status"] == "running":            # its process died: the folder's lock is ours
            writer.once(lambda: store.set_batch_status(conn, b["id"], "interrupted"))
        later = store.later_batches(conn, b)
        if later:
            raise Conflict(f"batch {batch_id} has later imports of the same folder ({', '.join(map(str, later))});"
                           " roll those back first")
        undone = _undo(memory, b, writer)
    return {"batch": b["id"], "undone": undone, "done": f"batch {b['id']} rolled back ({undone} changes undone)"}


def _undo(memory: Memory, b: dict, writer: _Writer) -> int:
    conn = memory.conn
    pending = store.changes(conn, b["id"], pending=True)
    if b["status"] != "rolling_back":
        conn.execute("BEGIN")                   # one read snapshot: check everything before undoing anything
        try:
            _check_undoable(conn, b["id"], pending)
        finally:
            conn.execute("COMMIT")
        writer.once(lambda: store.set_batch_status(conn, b["id"], "rolling_back"))
    now = memory.now()
    done = [0]
    gone: list[tuple[str, int, str]] = []          # stream entries of this chunk's removed memories
    days: set[tuple[str, str]] = set()              # workstream days of the removed memories, redone at the end

    def drop_entries() -> None:                     # the chunk committed: its entries leave the stream
        if gone:
            stream.remove(memory.settings.stream_dir, gone)
            gone.clear()

    def undo(c: dict) -> None:
        try:
            _check_undoable(conn, b["id"], [c])   # a person's change landed since the check
        except Conflict as exc:
            raise Conflict(f"{exc.args[0].split(';')[0]} (changed while the rollback ran); {done[0]} of"
                           f" {len(pending)} changes were undone, the rest were not: run the rollback again"
                           " to finish it") from None
        removed = _undo_one(memory, b, c, now)
        gone.extend(removed["stream"])
        days.update(removed["days"])
        store.mark_undone(conn, c["id"])
        done[0] += 1

    try:
        writer.each(pending, undo, after_commit=drop_entries)
    except BaseException:
        gone.clear()                                # (the failed chunk rolled back: its captures stay)
        raise

    def finish() -> None:
        removal.recompose(memory, days, now)
        store.set_batch_status(conn, b["id"], "rolled_back")
        store.reread_all(conn, b["source"], b["root"])       # the files still say what the batch read
        audit.record(conn, at=now, actor=memory.actor, action="import_rollback", batch=b["id"], changes=done[0])

    writer.once(finish)
    return done[0]


def _undo_one(memory: Memory, b: dict, c: dict, now: str) -> dict:
    """Undo one change inside the caller's transaction; what finishes a removal after it
    (`removal.remove`: stream entries, workstream days)."""
    conn = memory.conn
    action = c["action"]
    if action == "created":                 # the memory goes as if never stored (not archived)
        store.drop_unit(conn, b["source"], b["root"], c["unit_key"])
        return removal.remove(memory, c["new_node_id"], now)
    elif action == "updated":
        nodes.restore(conn, c["old_node_id"])
        was = c["detail"].get("old_node_status") or c["detail"].get("old_status")
        if was == "archived":
            nodes.set_status(conn, c["old_node_id"], "archived")
        else:
            memory.set_hidden(c["old_node_id"], False, now)
        store.put_unit(conn, b["source"], b["root"], c["unit_key"], c["old_hash"], c["old_node_id"],
                       c["detail"].get("old_status", "live"), b["id"], context=c["detail"].get("old_context"),
                       hidden=c["detail"].get("old_hidden", c["detail"].get("old_status") == "archived"))
        return removal.remove(memory, c["new_node_id"], now)    # the new version goes; the old one is back
    elif action in ("refreshed", "context"):
        old_context = c["detail"].get("old_context")          # (a forget leaves no context)
        if action == "refreshed":
            store.put_unit(conn, b["source"], b["root"], c["unit_key"], c["old_hash"], c["old_node_id"],
                           "live", b["id"], context=old_context)
        elif old_context is not None:
            store.set_context(conn, b["source"], b["root"], c["unit_key"], old_context)
        if old_context is not None:
            nodes.set_context_text(conn, c["old_node_id"], context.text(context.decode(old_context)))
    elif action == "archived":
        memory.set_hidden(c["old_node_id"], False, now)
        row = store.units_by_key(conn, b["source"], b["root"], [c["unit_key"]])[c["unit_key"]]
        store.put_unit(conn, b["source"], b["root"], c["unit_key"], row["content_hash"], c["old_node_id"],
                       "live", b["id"])
    elif action == "restored":
        memory.set_hidden(c["old_node_id"], True, now)
        row = store.units_by_key(conn, b["source"], b["root"], [c["unit_key"]])[c["unit_key"]]
        store.put_unit(conn, b["source"], b["root"], c["unit_key"], row["content_hash"], c["old_node_id"],
                       "archived", b["id"], hidden=True)
    elif action == "relisted":
        row = store.units_by_key(conn, b["source"], b["root"], [c["unit_key"]])[c["unit_key"]]
        store.put_unit(conn, b["source"], b["root"], c["unit_key"], row["content_hash"], c["old_node_id"],
                       "archived", b["id"])
    elif action == "delisted":
        row = store.units_by_key(conn, b["source"], b["root"], [c["unit_key"]])[c["unit_key"]]
        store.put_unit(conn, b["source"], b["root"], c["unit_key"], row["content_hash"], c["old_node_id"],
                       "live", b["id"])
    elif action == "moved":
        store.rekey(conn, b["source"], b["root"], c["unit_key"], c["old_key"], b["id"])
    elif action == "link" and "link" in c["detail"]:
        links.delete_if(conn, c["detail"]["link"], "confirmed")      # a person's later no stays
    elif action == "untag" and "tag" in c["detail"]:
        tags.assign(conn, c["new_node_id"], c["detail"]["tag"], status=c["detail"]["before"],
                    source=c["detail"]["source"], at=now)
    elif action == "tag" and "tag" in c["detail"]:                   # (a forget leaves no tag name)
        current = {t["name"]: t["status"] for t in tags.for_nodes(conn, [c["new_node_id"]])[c["new_node_id"]]}
        if current.get(c["detail"]["tag"]) == "confirmed":              # a person's later no stays
            tags.restore_assignment(conn, c["new_node_id"], c["detail"]["tag"], c["detail"].get("before"))
    return {"stream": [], "days": set()}


def _check_undoable(conn, batch_id: int, changes: list[dict]) -> None:
    """Rollback restores an exact prior state only if nothing touched the batch's nodes since
    (a person's correction, archive or forget): then it refuses, naming the node."""
    expected = {"created": ("new_node_id", ("live",)), "updated": ("new_node_id", ("live", "archived")),
                "archived": ("old_node_id", ("archived",)), "restored": ("old_node_id", ("live",)),
                "refreshed": ("new_node_id", ("live", "archived")), "context": ("old_node_id", ("live", "archived"))}
    for c in changes:
        if c["action"] in expected:
            column, status = expected[c["action"]]
            if c["action"] == "updated":            # a new version stays archived when a person had archived the old
                status = (c["detail"].get("new_status", "live"),)
            row = nodes.get_any(conn, c[column])
            if row is None or row["status"] not in status:
                raise Conflict(f"batch {batch_id} cannot be rolled back exactly: node {c[column]} is"
                               f" {row['status'] if row else 'gone'} now (changed after the import); nothing was undone")
            if c["action"] in ("created", "updated"):     # removed by the rollback: nothing may stand on it
                merged = [i for i in nodes.superseded_by_ids(conn, c["new_node_id"]) if i != c["old_node_id"]]
                if merged:
                    raise Conflict(f"batch {batch_id} cannot be rolled back exactly: node {merged[0]} was merged into"
                                   f" node {c['new_node_id']} after the import (take the merge back in the review"
                                   " queue first); nothing was undone")
