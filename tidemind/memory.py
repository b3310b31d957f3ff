"""The core API every shell calls: digest, recall, show, correct, archive, unarchive, forget,
stats, doctor, backup, embed.

It owns the orchestration of a mutation (validation, one BEGIN IMMEDIATE transaction, the audit
row, the stream file) and leaves SQL to the store modules. It imports no CLI, MCP or Qt.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import apsw
from typing import Iterable, Sequence

from .embed import schema as _embed_schema  # noqa: F401  (registers the default embedder's tables)
from .importers import store as _import_schema  # noqa: F401  (registers the import engine's tables)
from .workstreams import store as _workstream_schema  # noqa: F401  (registers the workstream tables)
from . import browse, clarify, lifecycle, limits, secrets, text, units
from . import tokens as tokens_mod
from .config import Settings, load_settings
from .errors import (Conflict, InvalidInput, NotFound, ProviderUnavailable, ScopeDenied, StorageError, StoreBusy,
                     check_id, describe_os_error)
from .scopes import check_scope
from .search import RecallRequest, recall as hybrid_recall, when
from .store import (AsOf, access_tokens, proxy_exchanges, audit, captures, clarifications, derived, fts, immediate, links, llm_calls, nodes, review, scalar,
                    recall_hits, syntheses,
                    stream, tags, vectors)
from .store import integrity
from .store.backend import backend_for
from .store.connection import checkpoint, data_version, unwritable
from .timeutil import Clock, from_iso as parse_iso_dt, parse_iso, system_clock, to_iso
from . import views

ORPHAN_AGE_MINUTES = 10  # a digest's stream entry older than this with no capture was never committed
SERVING_SHARE = 0.9       # the configured embedder serves once it has this share of the best coverage


def _check_link_status(status: str) -> None:
    if status not in ("confirmed", "rejected_by_user", "pending"):
        raise InvalidInput("a link can be confirmed, rejected or reopened")


class Memory:
    """One open store. `writable_scopes`/`readable_scopes` of None mean any (the person's CLI)."""

    def __init__(self, settings: Settings, clock: Clock = system_clock, actor: str = "cli",
                 readable_scopes: Sequence[str] | None = None, writable_scopes: Sequence[str] | None = None):
        self.settings = settings
        self.clock = clock
        self.actor = actor
        self.readable = list(readable_scopes) if readable_scopes is not None else None
        self.writable = list(writable_scopes) if writable_scopes is not None else None
        if settings.home.exists() and not settings.home.is_dir():
            raise InvalidInput(f"the TideMind home {settings.home} exists and is not a directory")
        location = settings.store_location
        backend = backend_for(location)      # a store no backend of this version can open: one line, nothing made
        self.read_only: str | None = None     # why, when the store could only be opened for reading
        made_home = not settings.home.exists()
        # a database server that refuses (unreachable, no pgvector): said as it is, nothing left behind;
        # a SQLite file that cannot be written may still be read (below)
        server_refused = (InvalidInput, StorageError) if location.path is None else ()
        try:
            settings.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(describe_os_error(exc, settings.home, "create the TideMind home")) from None
        try:
            self.conn = backend.open(location, settings.busy_timeout_ms)
        except server_refused:
            if made_home:
                with contextlib.suppress(OSError):
                    settings.home.rmdir()
            raise
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            raise InvalidInput(f"{settings.db_path} is not a usable TideMind database ({exc})") from None
        except StorageError:
            # a read-only home (a read-only mount, another user's folder): reads still answer, opened
            # for reading only; every write says which path is not writable and why
            problem = unwritable(settings.home)
            if problem is None or problem.errno not in (errno.EROFS, errno.EACCES, errno.EPERM) \
                    or not settings.db_path.is_file():
                raise
            self.read_only = describe_os_error(problem, settings.home)
            self.conn = backend.open_read_only(location, settings.busy_timeout_ms, self.read_only)
        self._embedder = None
        self._previous = None    # the embedder of the vectors that serve while a switch re-embeds
        self._side = None        # (executor, read connection) for the vector arm, opened on first recall
        self._stream_pending: list | None = None     # set inside stream_batch()
        self._date_order: tuple[int, tuple[bool, str]] | None = None

    @classmethod
    def open(cls, home=None, **kwargs) -> "Memory":
        settings_keys = {k: kwargs.pop(k) for k in list(kwargs) if k in Settings.__dataclass_fields__}
        return cls(load_settings(home, **settings_keys), **kwargs)

    def close(self) -> None:
        if self._side is not None:
            self._side[0].shutdown(wait=True)
            self._side[1].close()
            self._side = None
        self.conn.close()

    def _recall_side(self):
        if self._side is None:
            from concurrent.futures import ThreadPoolExecutor

            location = self.settings.store_location
            self._side = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemind-vector"),
                          backend_for(location).open_reader(location, self.settings.busy_timeout_ms,
                                                            read_only=self.read_only is not None))
        return self._side

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def embedder(self):
        if self._embedder is None:
            from . import embed as embed_pkg

            self._embedder = embed_pkg.get_embedder(self.settings, self.conn)
        return self._embedder

    def now(self) -> str:
        return to_iso(self.clock())

    # -- scope authority ------------------------------------------------------------------------
    def _write_scope(self, scope: str | None) -> str:
        scope = check_scope(scope or (self.writable[0] if self.writable else self.settings.default_scope))
        if self.writable is not None and scope not in self.writable:
            raise ScopeDenied(f"scope {scope!r} is not writable here (allowed: {', '.join(self.writable)})")
        return scope

    def writable_scope(self, scope: str | None = None) -> str:
        """The scope a write goes to (the first writable, or the default, when none is named);
        ScopeDenied when this handle may not write there."""
        return self._write_scope(scope)

    def read_scopes(self, scopes: Iterable[str] | None = None, all_scopes: bool = False) -> list[str]:
        asked = [check_scope(s) for s in scopes or []]
        if self.readable is not None:
            for s in asked:
                if s not in self.readable:
                    raise ScopeDenied(f"scope {s!r} is not readable here (allowed: {', '.join(self.readable)})")
            return asked or list(self.readable)
        if asked:
            return asked
        if all_scopes:
            return nodes.scopes_in_use(self.conn) or [self.settings.default_scope]
        return [self.settings.default_scope]

    # -- validation -----------------------------------------------------------------------------
    def _clean_content(self, content) -> tuple[str, list[str]]:
        if isinstance(content, bytes):
            try:
                content = content.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(f"content is not valid UTF-8 (byte {exc.start}); nothing was stored") from None
        if not isinstance(content, str):
            raise InvalidInput("content must be text")
        if not content.strip():
            raise InvalidInput("content is empty or whitespace only; nothing was stored")
        if not text.has_visible(content):
            raise InvalidInput("content has no visible character (only spaces, fillers, zero-width or control"
                               " characters); nothing was stored")
        if "\x00" in content:
            raise InvalidInput("content contains a NUL character; nothing was stored")
        try:
            content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput("content contains an unpaired surrogate (not valid Unicode); nothing was stored") from None
        limit = self.settings.max_content_chars
        if len(content) > limit:
            raise InvalidInput(f"content is {len(content):,} characters; the limit for one digest is {limit:,}"
                               " (split it, or import long notes with `tidemind import`)")
        masked, kinds = secrets.mask(content)
        warnings = [f"masked {k.replace('_', ' ')} before storing" for k in kinds]
        return masked, warnings

    # -- write path -----------------------------------------------------------------------------
    def _capture(self, content: str, scope: str, now: str, source_tool: str | None, session: str | None) -> int:
        """Insert the capture and append it to the stream (fsync'd) before the caller commits."""
        key = stream.new_key()
        capture_id = captures.insert(self.conn, content=content, content_hash=text.sha256(content), scope=scope,
                                     source_tool=source_tool, session=session, recorded_at=now,
                                     stream_file=stream.file_for(now), stream_key=key)
        title = " · ".join(x for x in (now, scope, source_tool or self.actor, session) if x)
        if self._stream_pending is not None:
            self._stream_pending.append((stream.file_for(now), capture_id, key, title, content))
        else:
            stream.append(self.settings.stream_dir, stream.file_for(now), capture_id, key, title, content)
        return capture_id

    @contextlib.contextmanager
    def stream_batch(self):
        """Inside the caller's transaction (an import's): the stream entries of the units stored in
        the block are written together, one fsync per file, when it ends, still before the caller
        commits; an exception writes none of them."""
        self._stream_pending = []
        try:
            yield
            pending = self._stream_pending
        finally:
            self._stream_pending = None
        stream.append_many(self.settings.stream_dir, pending)

    def digest(self, content, *, scope: str | None = None, valid_at: str | None = None,
               source_tool: str | None = None, session: str | None = None) -> dict:
        """Store text verbatim (secrets masked), split into units; returns ids and warnings."""
        scope = self._write_scope(scope)
        source_tool, session = limits.check_source("tool", source_tool), limits.check_source("session", session)
        body, warnings = self._clean_content(content)
        valid_from = parse_iso(valid_at) if valid_at else None
        pieces = units.split_units(body)
        rules = clarify.policy(self.settings)      # a bad [clarify] setting refuses before anything is written
        now = self.now()
        node_ids, review_ids, spans = [], [], []
        with immediate(self.conn):
            capture_id = self._capture(body, scope, now, source_tool, session)
            check_corrections = nodes.has_corrections(self.conn, scope)
            for index, start, end in pieces:
                piece = body[start:end]
                node_id = nodes.insert(self.conn, capture_id=capture_id, unit_index=index, content=piece,
                                       content_hash=text.sha256(piece), norm_hash=text.norm_hash(piece),
                                       scope=scope, source_tool=source_tool, session=session, recorded_at=now,
                                       valid_from=valid_from or now, actor=self.actor, span=(start, end))
                vectors.enqueue(self.conn, node_id, now)
                audit.record(self.conn, at=now, actor=self.actor, action="digest", node_id=node_id,
                             capture_id=capture_id, content_hash=text.sha256(piece), scope=scope)
                node_ids.append(node_id)
                spans.append((node_id, start, end))
                if check_corrections:
                    for old in self._corrected_claims(scope, piece):
                        item = review.file(self.conn, "contradiction", node_id=node_id,
                                           other_node_id=old["superseded_by"], at=now, corrected_node=old["id"],
                                           reason="reasserts_corrected_claim")
                        review_ids.append(item)
                        warnings.append(
                            f"node {node_id} repeats a claim that was corrected (node {old['id']} was replaced by "
                            f"node {old['superseded_by']}); stored as written and filed for review (item {item}),"
                            " the correction still stands")
            # relative dates are read as of when the words were written: the fact's time when the
            # caller replays an older conversation, else the capture's
            questions = clarify.on_capture(self, capture_id=capture_id, scope=scope, body=body, units=spans,
                                           anchor=valid_from or now, now=now, rules=rules, written=valid_at)
        done = f"stored {len(node_ids)} unit(s)"
        if questions:
            done += (f"; {len(questions)} held out of search until answered or skipped (at the latest until"
                     f" {questions[0]['hold_until'][:16].replace('T', ' ')} UTC)")
        return {"node_ids": node_ids, "capture_id": capture_id, "warnings": warnings, "review_items": review_ids,
                "scope": scope, "questions": questions, "done": done}

    def store_unit(self, content: str, *, scope: str, source_tool: str | None, valid_from: str | None, now: str,
                   lineage_of: int | None = None, reason: str = "import", context: str = "",
                   session: str | None = None, recorded_at: str | None = None,
                   kind: str = "note") -> tuple[int, list[str]]:
        """One unit that a source already delimited (an importer): capture, stream entry, node,
        embed queue, audit — inside the caller's transaction. A changed unit passes `lineage_of`:
        the new node supersedes the old one, keeping its tags and links. `context` (where the unit
        sits in its note) is indexed beside the text, never part of it. An export brought back
        (`portable`) keeps its memory's session, kind and `recorded_at` (when the first store
        recorded it; the capture is this one's, made `now`)."""
        if not self.conn.in_transaction:
            raise RuntimeError("store_unit must run inside the caller's transaction")
        scope = self._write_scope(scope)
        body, warnings = self._clean_content(content)
        source_tool, session = limits.check_source("tool", source_tool), limits.check_source("session", session)
        rules = clarify.policy(self.settings)      # a bad [clarify] setting refuses before anything is written
        capture_id = self._capture(body, scope, now, source_tool, session)
        node_id = nodes.insert(self.conn, capture_id=capture_id, unit_index=0, content=body,
                               content_hash=text.sha256(body), norm_hash=text.norm_hash(body), scope=scope,
                               source_tool=source_tool, session=session, recorded_at=recorded_at or now,
                               valid_from=valid_from or now, kind=kind, reason=reason, actor=self.actor,
                               lineage_of=lineage_of, context_text=context)
        if valid_from:      # the source dates its words: their relative dates can be anchored
            # a date-only source (a journal's day) is stored at midnight UTC: that day, as is; a
            # timed one is read in the person's time zone
            day_only = valid_from.endswith("T00:00:00.000000Z")
            clarify.read_without_asking(self, rules, node_id=node_id, scope=scope, text=body, anchor=valid_from, now=now,
                                        written=valid_from[:10] if day_only else None)
        else:               # a file's time is not when its words were written: names only
            clarify.index_unit(self.conn, node_id, scope, body)
        vectors.enqueue(self.conn, node_id, now)
        if lineage_of is not None:
            nodes.supersede(self.conn, lineage_of, node_id, now)
            vectors.drop_from_index(self.conn, lineage_of)
            self._carry_standing(lineage_of, node_id, now)
            self._withdraw_syntheses(lineage_of, f"node {lineage_of} was replaced by node {node_id}", now)
        audit.record(self.conn, at=now, actor=self.actor, action=reason if lineage_of is None else f"{reason}_update",
                     node_id=node_id, capture_id=capture_id, content_hash=text.sha256(body), supersedes=lineage_of)
        return node_id, warnings

    def set_hidden(self, node_id: int, hidden: bool, now: str) -> bool:
        """Archive a live node or restore an archived one, inside the caller's transaction
        (importers: a vanished or returning note). Any other state (superseded by a person's
        correction, forgotten) is left alone; returns whether anything changed."""
        row = nodes.get_any(self.conn, node_id)
        if row is None or row["status"] != ("live" if hidden else "archived"):
            return False
        nodes.set_status(self.conn, node_id, "archived" if hidden else "live")
        if hidden:
            vectors.drop(self.conn, node_id)
            self._withdraw_syntheses(node_id, f"node {node_id} was archived", now)
        else:
            vectors.enqueue(self.conn, node_id, now)
        audit.record(self.conn, at=now, actor=self.actor, action="archive" if hidden else "unarchive", node_id=node_id)
        return True

    def _corrected_claims(self, scope: str, piece: str) -> list[dict]:
        """Superseded-by-correction nodes whose text this piece repeats (exactly or nearly)."""
        hits = {r["id"]: r for r in nodes.corrected_away(self.conn, scope, text.norm_hash(piece))}
        words = set(text.content_words(piece))
        # candidates by the few rarest words only: cheap at any store size, and a near-duplicate
        # shares most words, so it shares the rarest ones
        df, _ = fts.document_frequencies(self.conn, sorted(words), [scope])
        rarest = sorted(words, key=lambda w: (df[w], w))[:8]
        expression = fts.match_expression(rarest)
        if expression:
            candidates = [i for i, _ in fts.search(self.conn, expression, "n.scope = ? AND n.status = 'superseded'",
                                                   [scope], 10)]
            for row in nodes.superseded_in_scope(self.conn, scope, candidates):
                other = set(text.content_words(row["content"]))
                if words and other and len(words & other) / len(words | other) >= 0.8:
                    hits.setdefault(row["id"], row)
        return list(hits.values())

    def _live_node(self, node_id: int, verb: str) -> dict:
        row = nodes.get_any(self.conn, check_id(node_id))
        if row is None or (self.writable is not None and row["scope"] not in self.writable):
            raise NotFound(f"no node {node_id} in a scope writable here")
        if row["status"] == "superseded":
            raise Conflict(f"node {node_id} was corrected by node {row['superseded_by']}; {verb} that one instead")
        if row["status"] == "forgotten":
            raise NotFound(f"node {node_id} was forgotten")
        return row

    def correct(self, node_id: int, content, *, valid_at: str | None = None, source_tool: str | None = None,
                session: str | None = None) -> dict:
        """Replace a node's text by a new version; the old version is kept, superseded."""
        source_tool, session = limits.check_source("tool", source_tool), limits.check_source("session", session)
        body, warnings = self._clean_content(content)
        rules = clarify.policy(self.settings)      # a bad [clarify] setting refuses before anything is written
        now = self.now()
        with immediate(self.conn):
            old = self._live_node(node_id, "correct")
            if old["status"] != "live":
                raise Conflict(f"node {node_id} is {old['status']}; unarchive it before correcting")
            if body == old["content"]:
                raise InvalidInput(f"the correction is identical to node {node_id}'s text; nothing changed")
            capture_id = self._capture(body, old["scope"], now, source_tool, session)
            new_id = nodes.insert(self.conn, capture_id=capture_id, unit_index=0, content=body,
                                  content_hash=text.sha256(body), norm_hash=text.norm_hash(body), scope=old["scope"],
                                  source_tool=source_tool or old["source_tool"], session=session or old["session"],
                                  recorded_at=now, valid_from=parse_iso(valid_at) if valid_at else old["valid_from"],
                                  reason="correct", actor=self.actor, lineage_of=old["id"])
            copied = lifecycle.carriers(self.conn, old["id"])
            nodes.supersede(self.conn, old["id"], new_id, now)
            self._withdraw_syntheses(old["id"], f"node {old['id']} was corrected by node {new_id}", now)
            clarifications.close_for_node(self.conn, old["id"], now)   # the new words are read afresh
            clarify.read_without_asking(self, rules, node_id=new_id, scope=old["scope"], text=body,
                                        anchor=parse_iso(valid_at) if valid_at else now, now=now, written=valid_at)
            vectors.drop_from_index(self.conn, old["id"])
            vectors.enqueue(self.conn, new_id, now)
            self._carry_standing(old["id"], new_id, now)
            lifecycle.withdraw_copies(self, copied, now)     # anchors the replaced words taught others
            audit.record(self.conn, at=now, actor=self.actor, action="correct", node_id=new_id, capture_id=capture_id,
                         supersedes=old["id"], content_hash=text.sha256(body), old_hash=old["content_hash"])
            audit.record(self.conn, at=now, actor=self.actor, action="superseded", node_id=old["id"],
                         superseded_by=new_id)
        return {"node_ids": [new_id], "capture_id": capture_id, "supersedes": old["id"], "warnings": warnings,
                "done": f"node {old['id']} corrected by node {new_id}; the old version is kept"}

    def _withdraw_syntheses(self, node_id: int, why: str, now: str) -> None:
        """A member's words stopped being current: every crystal, digest or lesson speaking for it
        is withdrawn in this same transaction, so nothing serves it again before the metabolism
        has recomputed it."""
        withdrawn = syntheses.withdraw_for_member(self.conn, node_id, why, now)
        if withdrawn:
            audit.record(self.conn, at=now, actor=self.actor, action="syntheses_withdrawn", node_id=node_id,
                         syntheses=withdrawn, why=why)

    def _carry_standing(self, old_id: int, new_id: int, now: str) -> None:
        """A correction keeps what a person or judge decided: confirmed tags, rejections (so a "no"
        stays permanent) and links with their status. Proposed tags are not carried: a pass made
        them from the old words, which the correction replaced (they would show the superseded
        text as the new node's tags); the annotate pass proposes afresh from the new text.
        A link's reason may quote the old text, so it is not carried either."""
        for tag in tags.for_nodes(self.conn, [old_id])[old_id]:
            if tag["status"] == "rejected_by_user":
                tags.reject(self.conn, new_id, tag["name"], now)
            elif tag["status"] == "confirmed":
                tags.assign(self.conn, new_id, tag["name"], status=tag["status"], source=tag["source"], at=now)
        for r in links.of_node(self.conn, old_id):
            src = new_id if r["source_id"] == old_id else r["source_id"]
            dst = new_id if r["target_id"] == old_id else r["target_id"]
            links.add(self.conn, src, dst, relation=r["relation"], status=r["status"], strength=r["strength"],
                      proposed_by=r["proposed_by"], at=now, reason=f"carried over from node {old_id} by a correction")

    def archive(self, node_id: int) -> dict:
        now = self.now()
        with immediate(self.conn):
            row = self._live_node(node_id, "archive")
            if row["status"] == "archived":
                raise Conflict(f"node {node_id} is already archived")
            self._archive_in(row, now)
        return {"node_ids": [row["id"]], "done": f"node {row['id']} archived (hidden from every read; unarchive restores)"}

    def _archive_in(self, row: dict, now: str) -> None:
        """Archive live node `row` inside the caller's transaction (archive, and undo of an unarchive)."""
        found = lifecycle.carriers(self.conn, row["id"])
        nodes.set_status(self.conn, row["id"], "archived")
        clarifications.close_for_node(self.conn, row["id"], now)
        vectors.drop(self.conn, row["id"])
        self._withdraw_syntheses(row["id"], f"node {row['id']} was archived", now)
        lifecycle.withdraw_copies(self, found, now)      # anchors it taught other memories
        _import_schema.keep_out(self.conn, row["id"], row["content"], "archived", now)   # a re-sync keeps it out
        audit.record(self.conn, at=now, actor=self.actor, action="archive", node_id=row["id"])

    def unarchive(self, node_id: int) -> dict:
        now = self.now()
        with immediate(self.conn):
            row = self._live_node(node_id, "unarchive")
            if row["status"] != "archived":
                raise Conflict(f"node {node_id} is not archived")
            self._unarchive_in(row, now)
        return {"node_ids": [row["id"]], "done": f"node {row['id']} restored"}

    def _unarchive_in(self, row: dict, now: str) -> None:
        """Bring archived node `row` back inside the caller's transaction (unarchive, undo of an archive)."""
        nodes.set_status(self.conn, row["id"], "live")
        vectors.enqueue(self.conn, row["id"], now)
        lifecycle.withdraw_copies(self, lifecycle.carriers(self.conn, row["id"]), now)   # (read again: back)
        _import_schema.let_in(self.conn, row["id"])
        audit.record(self.conn, at=now, actor=self.actor, action="unarchive", node_id=row["id"])

    def forget(self, node_id: int) -> dict:
        """Erase the text of the node and every version of it, everywhere; keep hash tombstones."""
        now = self.now()
        with immediate(self.conn):
            row = nodes.get_any(self.conn, check_id(node_id))
            if row is None or (self.writable is not None and row["scope"] not in self.writable):
                raise NotFound(f"no node {node_id} in a scope writable here")
            found = lifecycle.carriers(self.conn, row["id"])
            targets = [t for t in found.family if t["status"] != "forgotten"]
            if not targets:
                raise Conflict(f"node {node_id} is already forgotten")
            from . import embed as embed_pkg

            embed_pkg.unobserve_everywhere(self.conn, [t["id"] for t in targets])
            touched: dict[int, list[dict]] = {}
            for t in targets:
                if t["capture_id"] is not None:
                    touched.setdefault(t["capture_id"], []).append(t)
                nodes.erase(self.conn, t["id"])
                derived.delete_for_node(self.conn, t["id"])
                dependents, words = clarifications.quoted_by_others(self.conn, t["id"])
                clarifications.scrub_node(self.conn, t["id"])
                clarify.after_forget(self, dependents, words, now, t["content"])
                vectors.drop(self.conn, t["id"])
                review.scrub_node(self.conn, t["id"])
                syntheses.withdraw_citing(self.conn, t["id"], now)
                tags.forget_node(self.conn, t["id"])
                _workstream_schema.forget_node(self.conn, t["id"])
                _import_schema.forget_node(self.conn, t["id"], t["content"], now)
                links.scrub_node(self.conn, t["id"])
                audit.scrub_node(self.conn, t["id"])
                audit.record(self.conn, at=now, actor=self.actor, action="forget", node_id=t["id"],
                             capture_id=t["capture_id"], content_hash=t["content_hash"])
            for item_id in found.review_items:         # (items naming a family member; scrub_node did those
                review.scrub_item(self.conn, item_id)  # of each target, this also covers a merged version's)
            warnings = []
            for capture_id, units_gone in touched.items():
                warnings += self._redact_capture(capture_id, units_gone, now)
            proxy_exchanges.forget_capture(self.conn, list(touched))
            from .workstreams import after_forget

            after_forget(self.conn, nodes.scope_days(self.conn, [t["id"] for t in targets]), now)
        warnings += self._scrub_files()
        if (self.settings.home / "backups").exists():
            warnings.append("backups made before this forget (e.g. pre-migration ones under backups/) still hold the text")
        return {"node_ids": [t["id"] for t in targets], "warnings": warnings,
                "done": f"forgot {len(targets)} version(s); hashes kept as tombstones"}

    def _redact_capture(self, capture_id: int, units_gone: list[dict], now: str) -> list[str]:
        """Replace the forgotten units' spans in the capture and its stream entry by tombstones."""
        cap = captures.get(self.conn, capture_id)
        content = cap["content"] or ""
        for unit in sorted(units_gone, key=lambda u: u["capture_start"] or 0, reverse=True):
            start, end = unit["capture_start"], unit["capture_end"]
            if start is None or content[start:end] != unit["content"]:
                raise Conflict(f"capture {capture_id} does not hold node {unit['id']} where expected; nothing was"
                               " forgotten (run `tidemind doctor`)")
            tomb = f"[forgotten sha256:{unit['content_hash'][:16]}]"
            content = content[:start] + tomb + content[end:]
            nodes.shift_spans(self.conn, capture_id, end, len(tomb) - (end - start))
        remaining = [u for u in nodes.of_capture(self.conn, capture_id) if u["status"] != "forgotten"]
        if remaining:
            self.conn.execute("UPDATE captures SET content=? WHERE id=?", (content, capture_id))
            tombstone = content
        else:
            captures.redact(self.conn, capture_id, now)
            tombstone = f"[forgotten capture sha256:{cap['content_hash'][:16]}]"
        stream_path = self.settings.stream_dir / (cap["stream_file"] or "")
        if stream.redact(self.settings.stream_dir, cap["stream_file"], capture_id, cap["stream_key"], tombstone):
            return []
        if stream_path.is_file():
            raise Conflict(f"the stream entry of capture {capture_id} could not be found in {stream_path.name};"
                           " nothing was forgotten (run `tidemind doctor`)")
        return [f"stream file {cap['stream_file']} is missing; nothing to redact there"]

    def _scrub_files(self) -> list[str]:
        """After forget commits: merge FTS segments (deleted terms leave the index) and empty the WAL."""
        warnings = []
        try:
            fts.purge_deleted(self.conn)
            left = checkpoint(self.conn)
            if left:
                warnings.append(left)
        except apsw.BusyError:
            warnings.append("the store was busy: the full-text index and write-ahead log will drop the old text"
                            " at the next forget or checkpoint")
        if (self.settings.home / "backups").exists():
            warnings.append("backups made before this forget (e.g. pre-migration ones under backups/) still hold"
                            " the text")
        return warnings

    # -- reads ----------------------------------------------------------------------------------
    def recall(self, query: str, *, scopes: Sequence[str] | None = None, all_scopes: bool = False,
               tags_filter: Sequence[str] = (), source: str | None = None, limit: int = 8,
               as_of: str | None = None, clock: str = "both", use_vectors: bool = True,
               use_lexical: bool = True, record: bool = True, choose: str | None = None) -> dict:
        """Hybrid recall. When the grounding memories are about different things the answer
        carries `clarify` (one question, candidate groups); `choose` answers for one group."""
        query = limits.check_query(query)
        tags_filter = limits.check_tags(tags_filter)
        if choose is not None and (not isinstance(choose, str) or not choose.strip()
                                   or len(choose) > limits.MAX_CHOICE_CHARS):
            raise InvalidInput("choose must be one of the choices a divergent answer offered")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise InvalidInput("limit must be a whole number between 1 and 100")
        read = self.read_scopes(scopes, all_scopes)
        moment = self._as_of(as_of, clock)
        req = RecallRequest(query=query, scopes=read, tags=list(tags_filter), source=source, limit=int(limit),
                            as_of=moment, now=self.now(), use_vectors=use_vectors, use_lexical=use_lexical,
                            choose=choose, day_first=self.date_order()[0])
        embedder, unavailable = None, None
        if use_vectors:
            try:
                embedder = self.serving_embedder()
            except ProviderUnavailable as exc:      # e.g. its client library is missing: words still answer
                unavailable = f"semantic search unavailable ({exc}); answered from full-text search alone"
        if embedder is not None:
            # (inside a transaction of this connection, its own uncommitted writes are searched too:
            # no second connection, which would not see them)
            side = None if self.conn.in_transaction else self._recall_side()
            result = hybrid_recall(self.conn, embedder, req, side=side)
        else:
            result = hybrid_recall(self.conn, None, replace(req, use_vectors=False))
            result["degraded"] = unavailable
        result["scopes"] = read
        # "what happened in week 10?": that period's digests, beside the hits. Not as of another
        # moment: a digest is written from what memory holds now, and would quote later memories
        period = self._period_digests(query, read) if moment is None else None
        if period is not None:
            result["period"] = period
        if record:
            self._record_hits([i["id"] for i in result["items"]], req.now)
        return result

    def _record_hits(self, node_ids: list[int], at: str) -> None:
        """Best-effort bookkeeping for reconsolidation and heat: never waits on a busy store, and
        never fails a read on a full or read-only disk."""
        if not node_ids or self.read_only:
            return
        self.conn.setbusytimeout(20)
        try:
            with immediate(self.conn):
                recall_hits.record(self.conn, node_ids, at)
                nodes.warm(self.conn, node_ids)
        except (StoreBusy, StorageError, apsw.BusyError):
            pass
        finally:
            self.conn.setbusytimeout(self.settings.busy_timeout_ms)

    @staticmethod
    def _as_of(as_of: str | None, clock: str) -> AsOf | None:
        if not as_of:
            return None
        moment = parse_iso(as_of)
        if clock not in ("both", "valid", "recorded"):
            raise InvalidInput("clock must be 'valid', 'recorded' or 'both'")
        return AsOf(valid=moment if clock in ("both", "valid") else None,
                    recorded=moment if clock in ("both", "recorded") else None)

    def show(self, node_id, *, scopes: Sequence[str] | None = None, as_of: str | None = None,
             clock: str = "both") -> dict:
        node_id = check_id(node_id)
        read = self.read_scopes(scopes, all_scopes=True)
        moment = self._as_of(as_of, clock)
        found = nodes.get_visible(self.conn, [node_id], read, moment)
        if node_id not in found:
            raise NotFound(self._why_not_visible(node_id, read, moment))
        item = views.describe(self.conn, found, [node_id], read, moment)[0]
        # the lineage shares one scope. Archived and forgotten versions are listed without text;
        # as of a recorded time, versions recorded after it are not listed at all
        limit = moment.recorded if moment else None
        versions = nodes.merged_into(self.conn, node_id) + nodes.versions(self.conn, node_id)
        item["versions"] = [{**v, "content": v["content"] if v["status"] in ("live", "superseded") else None}
                            for v in versions if not limit or v["recorded_at"] <= limit]
        origin = _import_schema.origin(self.conn, node_id)
        if origin:                            # an imported unit: which note, which file, under which headings
            item["note"] = origin
        return item

    def export(self, fmt: str, directory: str, *, scopes: Sequence[str] | None = None) -> dict:
        """Every live memory of the scopes (all readable ones when none are named) as files:
        `jsonl` to bring back with `import_export`, `markdown` for people and Obsidian."""
        from . import portable

        return portable.export(self, fmt, directory, self.read_scopes(scopes, all_scopes=True))

    def import_export(self, path: str, *, scope: str | None = None) -> dict:
        """A jsonl export brought into this store, memories kept as who they are (see `portable`)."""
        from . import portable

        return portable.import_jsonl(self, path, scope)

    def prepare(self, hint: str | None = None, budget_chars: int = 9_000, scopes: Sequence[str] | None = None) -> dict:
        from . import prepare as prepare_mod

        read = self.read_scopes(scopes)
        write_scope = self.writable[0] if self.writable else read[0]
        return prepare_mod.build(self.conn, read, write_scope, hint, budget_chars, today=self.now())

    # -- bearer tokens of the HTTP server (tokens.py, store/access_tokens.py) ---------------------
    TOKEN_USE_RESOLUTION = dt.timedelta(minutes=1)   # last_used_at is this exact: not a write per request

    def _person_only(self, what: str) -> None:
        if self.readable is not None:        # a server or hook bounded by scopes never hands out access
            raise ScopeDenied(f"{what} is for the person who runs TideMind (tidemind tokens), not a scoped session")

    def token_add(self, name: str, scopes: Sequence[str]) -> dict:
        """A new token for `name`, bounded by `scopes` (the first gets writes). The token is in the
        answer and nowhere else: the store keeps its digest."""
        self._person_only("adding a token")
        name = tokens_mod.check_name(name)
        scopes = list(dict.fromkeys(check_scope(s) for s in scopes or ()))
        if not scopes:
            raise InvalidInput("a token needs at least one --scope (the first gets its writes)")
        token, now = tokens_mod.new_token(), self.now()
        with immediate(self.conn):
            if access_tokens.live_named(self.conn, name) is not None:
                raise Conflict(f"a token named {name!r} exists; revoke it first (tidemind tokens revoke {name})")
            token_id = access_tokens.add(self.conn, name, tokens_mod.digest(token), scopes, now)
            audit.record(self.conn, at=now, actor=self.actor, action="token_add", token_id=token_id, token_name=name,
                         scopes=scopes)
        return {"name": name, "scopes": scopes, "created_at": now, "token": token}

    def tokens(self) -> list[dict]:
        self._person_only("listing tokens")
        return access_tokens.listed(self.conn)

    def token_revoke(self, name: str) -> dict:
        self._person_only("revoking a token")
        name, now = tokens_mod.check_name(name), self.now()
        with immediate(self.conn):
            held = access_tokens.live_named(self.conn, name)
            if held is None:
                raise NotFound(f"no live token named {name!r} (tidemind tokens list shows them)")
            access_tokens.revoke(self.conn, name, now)
            audit.record(self.conn, at=now, actor=self.actor, action="token_revoke", token_id=held["id"],
                         token_name=name)
        return {"name": name, "revoked_at": now}

    def live_token_count(self) -> int:
        return access_tokens.live_count(self.conn)

    def token_holder(self, token: str) -> dict | None:
        """Who holds `token` ({id, name, scopes, revoked_at}), or None for a token never given.
        Read from the store on every call, so a revocation by any process counts at once."""
        row = access_tokens.by_digest(self.conn, tokens_mod.digest(token))
        if row is None or not tokens_mod.matches(row["token_sha256"], token):
            return None
        if row["revoked_at"] is None:
            with contextlib.suppress(StoreBusy, StorageError):    # a use not recorded never refuses the request
                with immediate(self.conn):
                    access_tokens.touch(self.conn, row["id"], self.now(),
                                        unless_after=to_iso(self.clock() - self.TOKEN_USE_RESOLUTION))
        return {k: row[k] for k in ("id", "name", "scopes", "revoked_at")}

    # -- digests --------------------------------------------------------------------------------
    def digests(self, *, scopes: Sequence[str] | None = None, week: str | None = None, day: str | None = None,
                limit: int = 50) -> dict:
        """Daily and weekly digests (by valid time) the caller may read: of one ISO week (its weekly
        digest, then its days), of one day (its digest, then its week's), or the newest ones.
        Only digests whose every member is visible now are listed. The desktop's digest view and
        `tidemind digests` call this."""
        from . import periods

        read = self.read_scopes(scopes, all_scopes=True)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 500:
            raise InvalidInput("limit must be a whole number between 1 and 500")
        if week is not None and day is not None:
            raise InvalidInput("give a week or a day, not both")
        if week is not None:
            named = periods.named_period(week if re.search(r"(?i)w|week", week) else f"week {week}", self.now())
            if named is None or named[0] != "week":
                raise InvalidInput(f"not a week: {week!r} (use e.g. 2026-W10, 'week 10', 'this week', 'last week')")
            first, last = periods.bounds(*named)
            found = syntheses.digests_covering(self.conn, read, first, last, limit)
            return {"scopes": read, "week": named[1], "digests": found}
        if day is not None:
            day = parse_iso(day)[:10]
            found = syntheses.digests_covering(self.conn, read, day, day, limit)
            return {"scopes": read, "day": day, "digests": found}
        return {"scopes": read, "digests": syntheses.listing(self.conn, read, ("daily", "weekly"), limit=limit)}

    def period_digests(self, question: str, scopes: Sequence[str] | None = None, limit: int = 8) -> dict | None:
        """The digests of the period a question names ("what happened in week 10?", "on
        2026-03-03", "last week"), or None when it names none: {"kind", "period", "digests"}.
        Recall attaches the same answer to a question that names a period."""
        return self._period_digests(limits.check_query(question), self.read_scopes(scopes, all_scopes=True), limit)

    def _period_digests(self, question: str, read: list[str], limit: int = 8) -> dict | None:
        from . import periods

        named = periods.named_period(question, self.now())
        if named is None:
            return None
        first, last = periods.bounds(*named)
        return {"kind": named[0], "period": named[1], "scopes": read,
                "digests": syntheses.digests_covering(self.conn, read, first, last, limit)}

    # -- clarification -------------------------------------------------------------------------
    def clarify_questions(self, scopes: Sequence[str] | None = None, state: str | None = "open",
                          limit: int = 200) -> list[dict]:
        """Questions about units in the readable scopes (open ones by default), newest first."""
        return clarify.listing(self, self.read_scopes(scopes, all_scopes=True), state, limit)

    def clarify_answer(self, question_id: int, answer, *, by_node: bool = False) -> dict:
        return clarify.answer(self, question_id, answer, by_node=by_node)

    def clarify_skip(self, question_id: int, *, by_node: bool = False) -> dict:
        return clarify.skip(self, question_id, by_node=by_node)

    def clarified(self, node_id: int) -> list[dict]:
        """The clarified layer of a visible node: the person's answers, oldest first."""
        self.show(node_id)
        return clarifications.for_node(self.conn, check_id(node_id))

    def propose_lessons(self, lessons: list[dict], session: str | None = None) -> list[int]:
        """File heuristic findings (corrections, repeated failures) as `proposed_lesson` review items in
        the write scope. They are proposals for a person, never authored memories. Repeats of an
        open proposal are not filed twice: a repeated failure seen again adds its count to the open
        item, and what failed and what worked after it, when this session saw them (the lesson
        made from it says "do X instead" with that)."""
        scope = self._write_scope(None)
        now = self.now()
        filed = []
        with immediate(self.conn):
            for lesson in lessons:
                digest = text.sha256(lesson["kind"] + "\x00" + lesson["said"])
                open_item = review.open_with_digest(self.conn, scope, digest)
                if open_item is not None:
                    if lesson["kind"] == "repeated_failure":
                        self._add_to_failure(open_item, lesson, session, now)
                    continue
                filed.append(review.file(self.conn, "proposed_lesson", node_id=None, other_node_id=None, at=now,
                                         scope=scope, digest=digest, session=session,
                                         finding=lesson["kind"], **{k: v for k, v in lesson.items() if k != "kind"}))
                audit.record(self.conn, at=now, actor=self.actor, action="propose_lesson", scope=scope,
                             review_item=filed[-1])
        return filed

    def _add_to_failure(self, item_id: int, lesson: dict, session: str | None, now: str) -> None:
        """Counts per session: a host runs the stop hook after every turn, and each run reads the
        whole transcript again, so a session's count replaces its earlier one instead of adding."""
        payload = review.payload_of(self.conn, item_id)
        sessions = payload.get("sessions") or {payload.get("session") or "?": int(payload.get("times", 1))}
        key = session or "?"
        sessions[key] = max(int(sessions.get(key, 0)), int(lesson.get("times", 1)))
        times = sum(int(n) for n in sessions.values())
        review.set_payload_key(self.conn, item_id, "sessions", sessions)
        review.set_payload_key(self.conn, item_id, "times", times)
        for key in ("command", "instead"):
            if isinstance(lesson.get(key), str) and lesson[key].strip():
                review.set_payload_key(self.conn, item_id, key, lesson[key])
        audit.record(self.conn, at=now, actor=self.actor, action="propose_lesson_again", scope=None,
                     review_item=item_id, times=times)

    # -- a person's decisions (review queue, tags, links): each audited and reversible ----------
    def review_list(self, status: str | None = "open", scopes: Sequence[str] | None = None) -> list[dict]:
        return review.listing(self.conn, self.read_scopes(scopes, all_scopes=True), status)

    def review_show(self, item_id: int, scopes: Sequence[str] | None = None) -> dict:
        read = self.read_scopes(scopes, all_scopes=True)
        item = review.get(self.conn, check_id(item_id, "review item"), read)
        if item is None:
            raise NotFound(f"no review item {item_id} in scope(s) {', '.join(read)}")
        named = [i for i in (item["node_id"], item["other_node_id"]) if i]
        found = nodes.get_visible(self.conn, named, read)
        item["nodes"] = views.describe(self.conn, found, named, read)
        if item["payload"].get("synthesis"):
            item["synthesis"] = syntheses.for_review(self.conn, item["payload"]["synthesis"], read)
        return item

    def review_forget(self, item_id: int) -> dict:
        """Erase a review item's words (a proposed lesson quotes a transcript; a finding may quote
        a memory), keeping the item as a tombstone; audited, irreversible like forget."""
        now = self.now()
        with immediate(self.conn):
            item = review.get(self.conn, check_id(item_id, "review item"), self.read_scopes(None, all_scopes=True))
            if item is None or (self.writable is not None and item.get("scope") not in self.writable):
                raise NotFound(f"no review item {item_id} in a scope writable here")
            if item["payload"].get("forgotten"):
                raise Conflict(f"review item {item['id']} is already forgotten")
            # what was made from the item goes with it: the synthesis it asked about, and a lesson
            # built on a repeated failure it reported (prepare served it after the items were gone)
            payload = item["payload"]
            if isinstance(payload.get("synthesis"), int):
                syntheses.erase(self.conn, synthesis_id=payload["synthesis"], at=now)
            if payload.get("finding") == "repeated_failure":
                syntheses.erase(self.conn, subject=syntheses.failure_subject(item["scope"], payload.get("said", "")),
                                at=now)
            review.scrub_item(self.conn, item["id"])
            audit.record(self.conn, at=now, actor=self.actor, action="review_forget", review_item=item["id"],
                         kind=item["kind"])
        return {"review_item": item["id"], "done": f"review item {item['id']}'s words were erased"}

    def review_decide(self, item_id: int, decision: str, stands: int | None = None) -> dict:
        """Approve, reject or reopen an item. Approving a contradiction says which memory stands
        (`stands`, one of its two; by default a correction over the claim it corrected, else the
        later one): recall then serves that one first and flags the other."""
        if decision not in ("approved", "rejected", "open"):
            raise InvalidInput("decision must be approved, rejected or open")
        now = self.now()
        with immediate(self.conn):
            r = self._decide_item(item_id, decision, stands, now)
        return r

    def review_decide_many(self, item_ids: Sequence[int], decision: str) -> dict:
        """The same decision on many items in one transaction (all or none), each audited as if
        decided alone; each result keeps what the item was (`previous`, `previous_stands`) so
        the caller can put every one back exactly."""
        if decision not in ("approved", "rejected", "open"):
            raise InvalidInput("decision must be approved, rejected or open")
        ids = [check_id(i, "review item") for i in item_ids]
        if not ids or len(ids) > 5000:
            raise InvalidInput("give between 1 and 5000 review items")
        now = self.now()
        with immediate(self.conn):
            results = [self._decide_item(i, decision, None, now) for i in dict.fromkeys(ids)]
        return {"items": results, "status": decision, "done": f"{len(results)} review item(s) {decision}"}

    def _decide_item(self, item_id: int, decision: str, stands: int | None, now: str) -> dict:
        """One decision inside the caller's transaction."""
        item = review.get(self.conn, check_id(item_id, "review item"), self.read_scopes(None, all_scopes=True))
        if item is None:
            raise NotFound(f"no review item {item_id}")
        previous_stands = item["payload"].get("stands")
        stands = self._standing(item, decision, stands)
        if decision == "approved" and item["payload"].get("synthesis"):
            made = syntheses.get(self.conn, item["payload"]["synthesis"])
            if made is not None and made["status"] == "withdrawn":
                raise Conflict(f"review item {item['id']}: its {made['kind']} was withdrawn"
                               f" ({made['withdrawn_why'] or 'its members changed'}); nothing to approve"
                               " until the metabolism makes it again")
        review.decide(self.conn, item["id"], decision, now, self.actor)
        audit.record(self.conn, at=now, actor=self.actor, action=f"review_{decision}", node_id=item["node_id"],
                     review_item=item["id"], kind=item["kind"], previous=item["status"],
                     **({"stands": stands} if stands else {}),
                     **({"previous_stands": previous_stands} if previous_stands else {}))
        if item["kind"] == "merge":
            self._apply_merge(item, decision, now)
        if item["kind"] == "workstream":
            from .workstreams import Workstreams

            Workstreams(self).apply_review(item, decision)
        if item["payload"].get("synthesis"):
            syntheses.set_status(self.conn, item["payload"]["synthesis"],
                                 {"approved": "approved", "rejected": "rejected", "open": "unreviewed"}[decision])
        done = f"review item {item['id']} {decision} (was {item['status']})"
        if stands:
            other = item["other_node_id"] if stands == item["node_id"] else item["node_id"]
            done += f"; node {stands} stands, node {other} is served after it, flagged"
        return {"review_item": item["id"], "kind": item["kind"], "status": decision, "previous": item["status"],
                "stands": stands, "previous_stands": previous_stands, "done": done}

    def _standing(self, item: dict, decision: str, stands: int | None) -> int | None:
        """Which memory of an approved contradiction stands, noted on the item (None otherwise)."""
        pair = (item["node_id"], item["other_node_id"])
        if stands is not None and (item["kind"] != "contradiction" or decision != "approved"):
            raise InvalidInput("stands is for approving a contradiction: the id of the memory that is right")
        if item["kind"] != "contradiction":
            return None
        if decision != "approved":
            review.set_payload_key(self.conn, item["id"], "stands", None)
            return None
        if stands is None:
            corrected = item["payload"].get("reason") == "reasserts_corrected_claim"
            stands = item["other_node_id"] if corrected else max(i for i in pair if i)
        if check_id(stands) not in pair:
            raise InvalidInput(f"stands must be node {pair[0]} or node {pair[1]} (the two memories of item"
                               f" {item['id']})")
        review.set_payload_key(self.conn, item["id"], "stands", stands)
        return stands

    def _apply_merge(self, item: dict, decision: str, now: str) -> None:
        """Approving a merge supersedes the older node by the newer (both texts stay, as versions);
        taking the approval back restores the older node."""
        newer, older = item["node_id"], item["other_node_id"]
        row = nodes.get_any(self.conn, older)
        if decision == "approved" and item["status"] != "approved":
            target = nodes.get_any(self.conn, newer)
            if row["status"] != "live" or target["status"] != "live":
                raise Conflict(f"merge {item['id']}: both nodes must be live (they are {row['status']} and"
                               f" {target['status']})")
            nodes.supersede(self.conn, older, newer, now)
            vectors.drop_from_index(self.conn, older)
            self._withdraw_syntheses(older, f"node {older} was merged into node {newer}", now)
            links.add(self.conn, older, newer, relation="merged-into", status="confirmed", proposed_by=self.actor,
                      at=now, reason=f"review item {item['id']}")
            audit.record(self.conn, at=now, actor=self.actor, action="merged", node_id=older, into=newer)
        elif item["status"] == "approved" and decision != "approved" and row["status"] == "superseded" \
                and row["superseded_by"] == newer:
            nodes.restore(self.conn, older)
            vectors.enqueue(self.conn, older, now)
            audit.record(self.conn, at=now, actor=self.actor, action="unmerged", node_id=older, from_node=newer)

    def undo_last(self, expect: Sequence[int] | None = None) -> dict:
        """Put back what this actor's latest decision changed, read from the audit log (so it
        works after the window or command that decided is gone): `tidemind.undo`. `expect`: the
        decision's audit rows (`decisions_after`): refused when the latest is another."""
        from . import undo

        return undo.undo_last(self, expect)

    def decisions_after(self, audit_id: int) -> list[list[int]]:
        """This actor's decisions since audit row `audit_id` (`change_mark()[0]`), newest first."""
        from . import undo

        return undo.made_after(self, int(audit_id))

    def last_decision(self) -> dict | None:
        """This actor's latest decision an `undo_last` would put back: {"label", "rows"} or None."""
        from . import undo

        group = undo.latest(self)
        return {"label": undo.describe(group), "rows": [r["id"] for r in group]} if group else None

    def tag_decide(self, node_id: int, name: str, reject: bool) -> dict:
        """A person's no on a tag is a tombstone every later pass consults; unreject lifts it."""
        name = limits.check_tag_name(name, strip_hash=False)
        now = self.now()
        with immediate(self.conn):
            row = self._live_node(node_id, "tag")
            if reject:
                tags.reject(self.conn, row["id"], name, now)
            elif not tags.unreject(self.conn, row["id"], name):
                raise NotFound(f"tag {name!r} is not rejected on node {row['id']}")
            audit.record(self.conn, at=now, actor=self.actor, action="tag_reject" if reject else "tag_unreject",
                         node_id=row["id"], tag=name)
        verb = "rejected (it will not be proposed again)" if reject else "no longer rejected"
        return {"node_ids": [row["id"]], "tag": name, "done": f"tag {name!r} on node {row['id']} {verb}"}

    def tag_add(self, node_id: int, name: str) -> dict:
        """A person's own tag: confirmed at once (it is not an inference)."""
        name = limits.check_tag_name(name)
        now = self.now()
        with immediate(self.conn):
            row = self._live_node(node_id, "tag")
            previous = tags.assignment(self.conn, row["id"], name)
            tags.unreject(self.conn, row["id"], name)          # adding it yourself lifts your own earlier no
            tags.assign(self.conn, row["id"], name, status="confirmed", source=f"person:{self.actor}", at=now)
            # (what it replaced, for an undo after the window that added it is gone: `undo`)
            audit.record(self.conn, at=now, actor=self.actor, action="tag_add", node_id=row["id"], tag=name,
                         previous=previous)
        return {"node_ids": [row["id"]], "tag": name, "previous": previous,
                "done": f"tag {name!r} added to node {row['id']}"}

    def tag_restore(self, node_id: int, name: str, previous: dict | None) -> dict:
        """Undo `tag_add`: the assignment becomes exactly what `tag_add` returned as `previous`
        (a proposal again, a rejection again with what it replaced, or nothing)."""
        name = limits.check_tag_name(name)
        if previous is not None and (not isinstance(previous, dict) or previous.get("status") not in
                                     ("proposed", "confirmed", "rejected_by_user")):
            raise InvalidInput("previous must be what tag_add returned as previous")
        now = self.now()
        with immediate(self.conn):
            row = self._live_node(node_id, "tag")
            tags.put_back(self.conn, row["id"], name, previous)
            audit.record(self.conn, at=now, actor=self.actor, action="tag_restore", node_id=row["id"], tag=name,
                         status=previous["status"] if previous else None)
        return {"node_ids": [row["id"]], "tag": name, "done": f"tag {name!r} on node {row['id']} is as it was before"}

    def tag_reject_everywhere(self, name: str, scope: str) -> dict:
        """"Never this tag here": no pass proposes the name in the scope again, and its proposals
        there are rejected (a person's own tags of that name stay). Reversible, audited."""
        name, scope = self._tag_name(name), self._write_scope(scope)
        now = self.now()
        with immediate(self.conn):
            touched = tags.reject_everywhere(self.conn, name, scope, now, self.actor)
            audit.record(self.conn, at=now, actor=self.actor, action="tag_reject_everywhere", scope=scope, tag=name,
                         nodes=touched)
        return {"tag": name, "scope": scope, "node_ids": touched,
                "done": f"tag {name!r} rejected everywhere in {scope} ({len(touched)} proposal(s) withdrawn; no pass"
                        " proposes it there again)"}

    def tag_accept_everywhere(self, name: str, scope: str) -> dict:
        """"Yes, this tag" for every memory of the scope it is proposed on, in one step: each
        proposal becomes a person's confirmed tag. `previous` (each node's assignment as it was)
        is what `tag_accept_everywhere_undo` puts back. Audited."""
        name, scope = self._tag_name(name), self._write_scope(scope)
        now = self.now()
        with immediate(self.conn):
            touched = tags.proposed_in_scope(self.conn, name, scope)
            previous = {node_id: tags.assignment(self.conn, node_id, name) for node_id in touched}
            for node_id in touched:
                tags.assign(self.conn, node_id, name, status="confirmed", source=f"person:{self.actor}", at=now)
            audit.record(self.conn, at=now, actor=self.actor, action="tag_accept_everywhere", scope=scope, tag=name,
                         nodes=touched, previous={str(k): v for k, v in previous.items()})
        return {"tag": name, "scope": scope, "node_ids": touched, "previous": previous,
                "done": f"tag {name!r} accepted on {len(touched)} memor{'y' if len(touched) == 1 else 'ies'} in {scope}"}

    def tag_accept_everywhere_undo(self, name: str, previous: dict) -> dict:
        """Put back what `tag_accept_everywhere` confirmed, as it was (a person's later decision on
        one of them stands: only assignments still confirmed by that step go back)."""
        name = self._tag_name(name)
        if not isinstance(previous, dict):
            raise InvalidInput("previous must be what tag_accept_everywhere returned")
        now = self.now()
        restored = []
        with immediate(self.conn):
            for node_id, row in previous.items():
                if not isinstance(row, dict) or row.get("status") != "proposed":
                    continue                    # (only proposals were accepted: nothing else to put back)
                if isinstance(node_id, str) and node_id.isdigit():
                    node_id = int(node_id)      # (JSON keys are text: the CLI's answer read back)
                found = self._live_node(node_id, "untag")         # a scope writable here, or NotFound
                current = tags.assignment(self.conn, found["id"], name)
                if current and current["status"] == "confirmed":
                    tags.put_back(self.conn, found["id"], name, row)
                    restored.append(found["id"])
            audit.record(self.conn, at=now, actor=self.actor, action="tag_accept_everywhere_undo", tag=name,
                         nodes=restored)
        return {"tag": name, "node_ids": restored,
                "done": f"tag {name!r} proposed again on {len(restored)} memor{'y' if len(restored) == 1 else 'ies'}"}

    def tag_unreject_everywhere(self, name: str, scope: str) -> dict:
        name, scope = self._tag_name(name), self._write_scope(scope)
        now = self.now()
        with immediate(self.conn):
            restored = tags.unreject_everywhere(self.conn, name, scope)
            if restored is None:
                raise NotFound(f"tag {name!r} is not rejected everywhere in {scope}")
            audit.record(self.conn, at=now, actor=self.actor, action="tag_unreject_everywhere", scope=scope, tag=name,
                         nodes=restored)
        return {"tag": name, "scope": scope, "node_ids": restored,
                "done": f"tag {name!r} no longer rejected in {scope} ({len(restored)} proposal(s) back as they were)"}

    def tag_listing(self, status: str | None = None, scopes: Sequence[str] | None = None) -> dict:
        """Tag names by status with how many memories carry them, and the scope-wide rejections."""
        if status not in (None, "proposed", "confirmed", "rejected_by_user"):
            raise InvalidInput("status is proposed, confirmed or rejected_by_user")
        read = self.read_scopes(scopes, all_scopes=True)
        return {"tags": tags.listing(self.conn, read, status), "rejected_everywhere": tags.tombstones(self.conn, read)}

    @staticmethod
    def _tag_name(name) -> str:
        return limits.check_tag_name(name)

    def link_decide(self, link_id: int, status: str) -> dict:
        _check_link_status(status)
        now = self.now()
        with immediate(self.conn):
            link = links.get(self.conn, check_id(link_id, "link"))
            ends = [link["source_id"], link["target_id"]] if link else []
            if link is None or len(nodes.get_visible(self.conn, ends, self.read_scopes(None, all_scopes=True))) != 2:
                raise NotFound(f"no link {link_id} between memories visible here")
            links.set_status(self.conn, link["id"], status, now, f"set by {self.actor}")
            audit.record(self.conn, at=now, actor=self.actor, action=f"link_{status}", node_id=link["source_id"],
                         link=link["id"], previous=link["status"])
        return {"link": link["id"], "status": status, "previous": link["status"],
                "done": f"link {link['id']} {status} (was {link['status']})"}

    def link_decide_many(self, link_ids: Sequence[int], status: str) -> dict:
        """`link_decide` on many links in one transaction (all or none), each audited alone."""
        _check_link_status(status)
        ids = [check_id(i, "link") for i in link_ids]
        if not ids or len(ids) > 5000:
            raise InvalidInput("give between 1 and 5000 links")
        with immediate(self.conn):
            return self._decide_links(ids, status)

    def link_decide_at(self, node_id: int, status: str, *, scopes: Sequence[str] | None = None,
                       tag: str | None = None) -> dict:
        """Every pending link at one memory decided in one step: the inbox's grouped decision,
        narrowed as the inbox was (`scopes`: both ends in these; `tag`: the other end or this one
        carries it), so only what the person saw listed is decided. Each is audited alone and
        comes back with what it was."""
        _check_link_status(status)
        with immediate(self.conn):
            read = self.read_scopes(scopes, all_scopes=True)
            node = check_id(node_id)
            if not nodes.get_visible(self.conn, [node], read):
                raise NotFound(f"no node {node_id} visible here")
            ids = links.pending_ids(self.conn, read, node, 5001, tag)
            if len(ids) > 5000:
                raise InvalidInput(f"node {node} has over 5000 pending links; decide them a page at a time")
            return self._decide_links(ids, status)

    def _decide_links(self, ids: list[int], status: str) -> dict:
        """Inside the caller's transaction: each link set to `status`, audited with what it was."""
        now = self.now()
        read = self.read_scopes(None, all_scopes=True)
        results = []
        for link_id in dict.fromkeys(ids):
            link = links.get(self.conn, link_id)
            ends = [link["source_id"], link["target_id"]] if link else []
            if link is None or len(nodes.get_visible(self.conn, ends, read)) != 2:
                raise NotFound(f"no link {link_id} between memories visible here; nothing was decided")
            links.set_status(self.conn, link["id"], status, now, f"set by {self.actor}")
            audit.record(self.conn, at=now, actor=self.actor, action=f"link_{status}", node_id=link["source_id"],
                         link=link["id"], previous=link["status"])
            results.append({"link": link["id"], "status": status, "previous": link["status"]})
        return {"links": results, "status": status, "done": f"{len(results)} link(s) {status}"}

    def graph(self, node_id: int, *, depth: int = 2, limit: int = 500, include_rejected: bool = False,
              scopes: Sequence[str] | None = None, link_statuses: Sequence[str] | None = None) -> dict:
        """The neighbourhood of a node for drawing: every node passes the visibility predicate;
        confirmed and pending links are walked for display, rejected ones only when asked
        (`link_statuses`: exactly these kinds, so a memory reached only through a hidden kind is
        not drawn). Walked a level at a time: when a level would pass `limit`, its memories with
        the most links into what is drawn are kept and the answer says so (`capped`, `reachable`:
        at least that many within `depth`, `complete_depth`: the levels drawn whole)."""
        start = self.show(node_id, scopes=scopes)
        read = self.read_scopes(scopes, all_scopes=True)
        statuses = list(link_statuses) if link_statuses is not None else \
            ["confirmed", "pending"] + (["rejected_by_model", "rejected_by_user"] if include_rejected else [])
        bad = set(statuses) - set(browse.LINK_STATUSES)
        if bad:
            raise InvalidInput(f"unknown link status {sorted(bad)[0]!r}")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 10:
            raise InvalidInput("depth must be between 1 and 10")
        seen, frontier = {start["id"]}, [start["id"]]
        capped, reachable, complete = False, 1, 0
        for level in range(1, depth + 1 if statuses else 1):       # (no kind of link shown: the memory alone)
            ties: Counter = Counter()
            for a, b in links.touching(self.conn, frontier, statuses):
                for other, here in ((a, b), (b, a)):
                    if other not in seen and here in seen:
                        ties[other] += 1
            found = nodes.get_visible(self.conn, list(ties), read)
            if not found:
                complete = level
                break
            reachable += len(found)
            room = limit - len(seen)
            if len(found) > room:          # the cap: the best tied into what is drawn, said so
                chosen = sorted(found, key=lambda i: (-ties[i], i))[:max(0, room)]
                seen.update(chosen)
                capped = True
                break
            seen.update(found)
            frontier = list(found)
            complete = level
        found = nodes.get_visible(self.conn, sorted(seen), read)
        described = views.describe(self.conn, found, sorted(found), read)
        noted = browse.note_titles(self.conn, sorted(found))
        return {"center": start["id"],
                "nodes": [{"id": n["id"], "title": noted.get(n["id"]) or views.title_of(n), "heat": found[n["id"]]["heat"],
                           "scope": n["scope"], "kind": n["derived"].get("kind", {}).get("value", "memory"),
                           "tags": [t["name"] for t in n["tags"]]}
                          for n in described],
                "edges": links.among(self.conn, sorted(found), statuses) if statuses else [],
                "depth": depth, "limit": limit, "capped": capped, "reachable": reachable,
                "complete_depth": complete if capped else depth}

    # -- browsing without a query (the desktop's sidebar, inbox and graph): tidemind.browse ----
    def titles(self, node_ids: Sequence[int], scopes: Sequence[str] | None = None) -> dict[int, str]:
        """Titles of the visible nodes among `node_ids` (others are absent): links name their ends."""
        return browse.titles(self.conn, [check_id(i) for i in node_ids], self.read_scopes(scopes, all_scopes=True))

    def browse(self, view: str = "recent", *, tag: str | None = None, scopes: Sequence[str] | None = None,
               offset: int = 0, limit: int = 50) -> dict:
        """A page of memories without a query: recent, all (by title), tag, archived, flagged."""
        return browse.listing(self.conn, self.read_scopes(scopes, all_scopes=True), view, tag, offset, limit)

    def title_index(self, scopes: Sequence[str] | None = None) -> list[dict]:
        """Every visible memory's id, scope and title (`browse.title_index`): names to match."""
        return browse.title_index(self.conn, self.read_scopes(scopes, all_scopes=True))

    def sidebar(self, scopes: Sequence[str] | None = None) -> dict:
        return browse.sidebar(self.conn, self.read_scopes(scopes, all_scopes=True))

    def review_page(self, status: str | None = "open", kind: str | None = None, *, offset: int = 0, limit: int = 50,
                    scopes: Sequence[str] | None = None, sort: str | None = None, tag: str | None = None,
                    node: int | None = None) -> dict:
        """A page of the review inbox with counts per kind and titles (pending links: kind `link`),
        sorted and narrowed to a tag or a memory (`browse.review_page`)."""
        return browse.review_page(self.conn, self.read_scopes(scopes, all_scopes=True), status, kind, offset, limit,
                                  sort, tag, None if node is None else check_id(node))

    def graph_overview(self, *, scopes: Sequence[str] | None = None, tag: str | None = None,
                       link_statuses: Sequence[str] = ("confirmed", "pending"), orphans: bool = True,
                       limit: int = 3000, flagged: bool = False) -> dict:
        """The whole graph of the scopes (or of one tag, or of the flagged memories), for drawing."""
        return browse.graph(self.conn, self.read_scopes(scopes, all_scopes=True), tag, link_statuses, orphans, limit,
                            flagged)

    def changes_since(self, audit_id: int) -> dict:
        """What changed since audit row `audit_id`: the actions and the nodes they touched (a
        window refreshes only those)."""
        found = audit.after(self.conn, check_id(audit_id, "audit row") if audit_id else 0)
        return {"actions": sorted({a for a, _ in found}), "nodes": sorted({n for _, n in found if n}),
                "complete": len(found) < 5000}

    def pending_links(self, limit: int = 200, scopes: Sequence[str] | None = None) -> list[dict]:
        """Links waiting for a judge or a person, both ends visible here."""
        return links.pending(self.conn, limit, self.read_scopes(scopes, all_scopes=True))

    def import_file_of(self, node_id: int) -> str | None:
        from .importers import store as import_store

        self.show(node_id)                    # visible here, or NotFound
        return import_store.file_of(self.conn, node_id)

    def note_page(self, node_id: int, scopes: Sequence[str] | None = None) -> list[dict] | None:
        """The visible sections of the note an imported memory belongs to, in the note's order
        ({"id", "content"} each; the memory itself among them), or None for a memory of no note.
        Each section stays its own memory for recall and links; a person reads them as one page."""
        from .importers import store as import_store

        self.show(node_id, scopes=scopes)          # visible here, or NotFound
        origin = import_store.origin(self.conn, node_id)
        if origin is None:
            return None
        ids = import_store.note_units(self.conn, origin["source"], origin["folder"], origin["file"])
        found = nodes.get_visible(self.conn, ids, self.read_scopes(scopes, all_scopes=True))
        return [{"id": i, "content": found[i]["content"]} for i in ids if i in found]

    def note_image(self, node_id: int, name: str, scopes: Sequence[str] | None = None) -> str | None:
        """The image file an imported memory's note embeds as `name`, inside its vault (None:
        no such image there, or a memory of no note): `importers.attachments`."""
        from .importers import attachments, store as import_store

        node = self.show(node_id, scopes=scopes)       # visible here, or NotFound
        origin = import_store.origin(self.conn, node["id"])
        if origin is None:
            return None
        found = attachments.image_path(origin["folder"], origin["file"], str(name))
        return str(found) if found is not None else None

    def conversation(self, node_id: int, scopes: Sequence[str] | None = None) -> list[dict] | None:
        """The turns around a conversation's memory, as said (`browse.conversation`)."""
        return browse.conversation(self.conn, check_id(node_id), self.read_scopes(scopes, all_scopes=True))

    def unlinked_mentions(self, node_id: int, scopes: Sequence[str] | None = None, limit: int = 20) -> list[dict]:
        """Memories that name the note an imported memory belongs to without linking to it, as
        Obsidian lists them under a note ([] for a memory of no note)."""
        from .importers import store as import_store

        node = self.show(node_id, scopes=scopes)       # visible here, or NotFound
        origin = import_store.origin(self.conn, node["id"])
        if origin is None:
            return []
        read = self.read_scopes(scopes, all_scopes=True)
        own = import_store.note_units(self.conn, origin["source"], origin["folder"], origin["file"])
        linked = {o for _, o, _ in links.confirmed_neighbours(self.conn, own, read)}     # (either way)
        return browse.unlinked_mentions(self.conn, origin["note"], own, sorted(linked), read, limit)

    def note_link(self, node_id: int, name: str, scopes: Sequence[str] | None = None) -> int | None:
        """Where a [[link]] in an imported memory's text leads: a visible unit of the note it names
        in the same folder (the heading's unit for `Note#Heading`), or None."""
        from .importers import store as import_store

        self.show(node_id, scopes=scopes)          # visible here, or NotFound
        origin = import_store.origin(self.conn, node_id)
        if origin is None or not isinstance(name, str):
            return None
        found = import_store.note_unit(self.conn, origin["source"], origin["folder"], name)
        read = self.read_scopes(scopes, all_scopes=True)
        return found if found is not None and nodes.get_visible(self.conn, [found], read) else None

    def tags_of(self, node_id: int, scopes: Sequence[str] | None = None) -> list[dict]:
        """Every tag assignment of a visible node, rejected ones included (a person's view)."""
        node = self.show(node_id, scopes=scopes)
        return tags.for_nodes(self.conn, [node["id"]])[node["id"]]

    def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap way for a window to notice."""
        return data_version(self.conn)

    def change_mark(self) -> tuple:
        """What a person could see change: the newest audit row (every mutation writes one) and
        the newest finished task run. Comparable across connections, unlike `data_version`, and
        untouched by a search's own bookkeeping."""
        from .store import task_runs

        return audit.latest_id(self.conn), task_runs.latest_finish(self.conn)

    def task_state(self) -> dict:
        from .store import task_runs

        return task_runs.state(self.conn)

    def neighbourhood(self, node_id, *, scopes: Sequence[str] | None = None, limit: int = 20) -> dict:
        """The node and the nodes one confirmed link away; links in other states are listed, not walked."""
        start = self.show(node_id, scopes=scopes)
        read = self.read_scopes(scopes, all_scopes=True)
        hop = [other for _, other, _ in links.confirmed_neighbours(self.conn, [start["id"]], read)][:limit]
        found = nodes.get_visible(self.conn, hop, read)
        return {"node": start, "neighbours": views.describe(self.conn, found, hop, read)}

    def _why_not_visible(self, node_id: int, read: list[str], moment: AsOf | None) -> str:
        row = nodes.get_any(self.conn, node_id)
        if row is None or row["scope"] not in read:
            return f"no node {node_id} in scope(s) {', '.join(read)}"
        if row["status"] == "archived":
            return f"node {node_id} is archived (hidden); `tidemind unarchive {node_id}` restores it"
        if row["status"] == "forgotten":
            return f"node {node_id} was forgotten"
        if row["status"] == "live" and nodes.held_among(self.conn, [node_id]):
            q = clarifications.open_for_node(self.conn, node_id)
            asked = f" ({q['question']})" if q else ""
            return (f"node {node_id} waits for the answer to a question{asked}; it is out of search until it is"
                    f" answered or skipped (brain_digest intent \"clarify\" with target_node {node_id}, or"
                    f" `tidemind clarify`), or until {row['held_until'][:16].replace('T', ' ')} UTC")
        if moment and moment.active:
            return f"node {node_id} was not recorded or not valid at that time"
        return f"node {node_id} was corrected; the current version is node {row['superseded_by']}"

    def stats(self, scopes: Sequence[str] | None = None) -> dict:
        """Counts by status; limited to the given scopes, and always to the readable ones."""
        if self.readable is not None or scopes:
            scopes = self.read_scopes(scopes)
        return {
            "nodes": nodes.count_by_status(self.conn, scopes),
            "links": links.count_by_status(self.conn, scopes),
            "tags": tags.count_by_status(self.conn, scopes),
            "review": review.count_by_status(self.conn, scopes),
            "questions": clarifications.count_by_state(self.conn, scopes),
            "captures": captures.count(self.conn, scopes),
            "embed_queue": vectors.queue_length(self.conn, scopes),
            **({} if scopes else {"llm": llm_calls.totals(self.conn)}),
            "embedder": self.embedder.name,
            "scopes": [s for s in nodes.scopes_in_use(self.conn) if not scopes or s in scopes],
            **({} if scopes else {"db_bytes": backend_for(self.settings.store_location).size(self.conn,
                                                                                              self.settings.store_location)}),
        }

    # -- maintenance ----------------------------------------------------------------------------
    def serving_embedder(self):
        """The embedder whose vectors answer recall: the configured one once its vectors cover
        nearly as many memories as any other's, else (right after switching embedders, while the
        background re-embeds) the one with the most vectors, so the old index keeps serving."""
        from . import embed as embed_pkg

        if vectors.embedders(self.conn) in ([], [self.embedder.name]):
            return self.embedder                   # no switch under way (the common case: one row read)
        counts = vectors.coverage(self.conn)
        mine = counts.get(self.embedder.name, 0)
        best = max(counts, key=lambda n: counts[n], default=None)
        if best is None or best == self.embedder.name or mine >= SERVING_SHARE * counts[best]:
            return self.embedder
        if self._previous is None or self._previous.name != best:
            self._previous = embed_pkg.for_vectors(self.settings, self.conn, best)
        return self._previous or self.embedder

    def embed_pending(self, batch: int = 256, limit: int | None = None) -> dict:
        """Drain the embed queue: learn statistics, embed, store vectors. Safe to run concurrently.
        After a switch of embedders every live memory is queued once for the new one; when the new
        one covers them all, the old vectors are retired."""
        done = 0
        emb = self.embedder
        switching = vectors.embedders(self.conn) not in ([], [emb.name])
        counts = vectors.coverage(self.conn) if switching else {}
        if switching and counts.get(emb.name, 0) < vectors.live_count(self.conn) \
                and not vectors.queue_length(self.conn):
            with immediate(self.conn):
                vectors.enqueue_stale(self.conn, emb.name, self.now())
        while limit is None or done < limit:
            size = batch if limit is None else min(batch, limit - done)
            with immediate(self.conn):
                items = vectors.queued(self.conn, size)
                if items:
                    emb.observe(self.conn, [(i, c) for i, c, _ in items])
            if not items:
                break
            mat = emb.embed([c for _, c, _ in items])
            now = self.now()
            with immediate(self.conn):
                # live, not `visible`: a unit awaiting clarification is embedded too (reads still hide it)
                still = nodes.live_among(self.conn, [i for i, _, _ in items])
                for (node_id, _, scope), vec in zip(items, mat):
                    if node_id in still:
                        vectors.put(self.conn, node_id, scope, emb.name, vec, now)
            done += len(items)
        retired: list[str] = []
        if switching and not vectors.queue_length(self.conn) \
                and vectors.coverage(self.conn).get(emb.name, 0) >= vectors.live_count(self.conn):
            with immediate(self.conn):
                retired = vectors.retire(self.conn, emb.name)
        return {"embedded": done, "embedder": emb.name, "queue": vectors.queue_length(self.conn),
                **({"retired": retired} if retired else {})}

    def reembed_all(self) -> dict:
        with immediate(self.conn):
            queued = vectors.enqueue_stale(self.conn, self.embedder.name, self.now())
        return {"queued": queued, **self.embed_pending()}

    def backup(self, path) -> dict:
        target = Path(path).expanduser().resolve()
        location = self.settings.store_location
        if location.path is not None and target == location.path.resolve():
            raise InvalidInput("backup target is the live database itself")
        if target.exists() and target.is_dir():
            target = target / f"tidemind-backup-{self.now()[:19].replace(':', '')}.db"
        try:
            backend_for(location).backup(self.conn, target)
        except (apsw.CantOpenError, OSError) as exc:
            raise InvalidInput(f"cannot write a backup to {target}: {exc}") from None
        return {"backup": str(target), "bytes": target.stat().st_size}

    def migrate_to(self, target: str) -> dict:
        """Copy this store whole into the empty store `target` names (tidemind/relocation.py)."""
        from .relocation import migrate

        return migrate(self, target)

    def restore(self, path) -> dict:
        """Replace this store's contents by a backup (see `tidemind.restore`; that module also
        restores a store that will not open)."""
        from .restore import restore

        if self._side is not None:           # the vector side connection must not hold a snapshot
            self._side[0].shutdown(wait=True)
            self._side[1].close()
            self._side = None
        r = restore(self.settings, path, self.now(), live=self.conn)
        self._embedder = None                   # its corpus statistics came from the old contents
        return {**r, "doctor": self.doctor()}

    def prune_stream(self, older_than_minutes: int = ORPHAN_AGE_MINUTES) -> dict:
        """Remove the stream entries of digests that never committed (doctor lists them as
        orphans), once they are old enough that no digest can still be committing them."""
        cutoff = to_iso(parse_iso_dt(self.now()) - dt.timedelta(minutes=older_than_minutes))
        removed = stream.remove_orphans(self.settings.stream_dir,
                                        lambda: {(c["id"], c["stream_key"]) for c in captures.all_with_stream(self.conn)},
                                        cutoff)
        return {"removed": removed, "done": f"removed {removed} orphan stream entr{'y' if removed == 1 else 'ies'}"}

    def date_order(self) -> tuple[bool, str]:
        """(day first?, why): how 05/07/2023 in a question is read here (search/when.store_order,
        from the memories this reader may read), looked at again for every 500 new memories."""
        newest = nodes.newest_id(self.conn)
        readable = self.read_scopes(None, all_scopes=True)
        # (keyed on the scopes too: a server answering several tokens with one Memory must not read
        # one token's dates the way another's scopes write them; found by review)
        key = (newest // 500, tuple(sorted(readable)))
        if self._date_order is None or self._date_order[0] != key:
            found = when.store_order(self.settings.extra.get("date_order"),
                                     nodes.with_slashed_dates(self.conn, readable))
            self._date_order = (key, found)
        return self._date_order[1]

    def doctor(self) -> dict:
        """Integrity of SQLite, FTS, vectors, authored text and the stream files, read in one
        snapshot; and the state of each model service (configured, reachable now, what the
        metabolism last saw of it). A service away is a note, never a problem."""
        problems: list[str] = []
        checks: dict[str, str] = {}
        notes: list[str] = [f"opened read-only: {self.read_only}"] if self.read_only else []
        self.conn.execute("BEGIN")          # one read snapshot: a digest landing meanwhile cannot skew counts
        try:
            found, found_problems = integrity.check(self.conn)
            checks.update(found)
            problems += found_problems
            known = captures.all_with_stream(self.conn)
            unembedded = vectors.queue_length(self.conn)
        finally:
            self.conn.execute("COMMIT")
        in_stream = stream.all_entries(self.settings.stream_dir)
        missing = [c["id"] for c in known if (c["id"], c["stream_key"]) not in in_stream]
        orphans = len(set(in_stream) - {(c["id"], c["stream_key"]) for c in known})
        if missing and self.settings.store_location.path is None:
            # a server store is written from several homes, and each home's stream holds what was
            # said through it: the others' entries are in their homes
            notes.append(f"{len(missing)} capture(s) have no entry in this home's stream: on a shared server"
                         " store, those written from another machine are in that machine's stream")
            missing = []
        checks["stream"] = "ok" if not missing else f"{len(missing)} capture(s) missing from the stream files"
        if missing:
            problems.append(f"stream: captures {missing[:10]} have no stream entry")
        if orphans:
            notes.append(f"{orphans} stream entr{'y' if orphans == 1 else 'ies'} from digests that were never"
                         " acknowledged (their transaction did not commit); `tidemind doctor --prune-orphans`"
                         " removes them")
        from . import health

        services = health.report(self.settings, self.conn)
        if unembedded:
            # advice that works in the state found: `tidemind embed` fails while the embedder is away
            away = services["embedder"]["reachable"] is False
            notes.append(f"{unembedded} node(s) waiting for embeddings" + (
                f" (the embedder {services['embedder']['configured']} is away: they are embedded once it answers)"
                if away else " (run `tidemind embed`)"))
        for what, s in services.items():
            if s.get("unusable"):
                if s["unusable"].startswith("unknown"):
                    problems.append(f"{what}: {s['unusable']}")
                else:
                    notes.append(f"{what} {s['configured']} cannot be used: {s['unusable']}; the store works without"
                                 " it: recall answers from its words, the metabolism runs its offline passes")
            elif s["reachable"] is False or s.get("state") == "unreachable":
                notes.append(f"{what} {s['configured']} is unreachable ({s.get('error') or s.get('last_error')});"
                             " the store works without it: recall answers from its words, the metabolism waits"
                             + (f" (next try {s['retry_at']})" if s.get("retry_at") else ""))
        from .config import older_file

        if older_file(self.settings):
            notes.append(older_file(self.settings))
        day_first, why = self.date_order()
        notes.append(f"dates written 05/07/2023 are read {'day' if day_first else 'month'} first: {why}")
        return {"ok": not problems, "problems": problems, "checks": checks, "notes": notes, "providers": services}
