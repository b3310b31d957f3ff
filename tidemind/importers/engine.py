"""The sync engine shared by every importer.

One run is one batch, in one transaction: every unit is created, superseded (its text changed:
the old node stays as history, no similarity merge on this path), archived (it vanished),
restored (it came back) or left alone (same hash), and a unit whose file moved keeps its
identity when its text is the same. The person's tags arrive `confirmed` and their links
`confirmed` with the person as proposer; unresolved links are kept as dangling references.
Every change is recorded, so `rollback(batch)` restores the state before it.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import Conflict, InvalidInput, NotFound
from ..memory import Memory
from ..store import audit, immediate, links, nodes, tags
from ..text import sha256
from . import ParseResult, Unit, context, get_parser
from .identity import match, note_of
from .resolve import Index
from . import store


def unit_hash(unit: Unit) -> str:
    """Text plus what the source says about it (tags, valid time, properties): a changed
    frontmatter is a change of the unit."""
    meta = json.dumps({"tags": sorted(unit.tags), "valid": unit.valid_from, "props": unit.properties},
                      sort_keys=True, ensure_ascii=False)
    return sha256(unit.text + "\x00" + meta)


def _same_words(node: dict, unit: Unit) -> bool:
    return node["content_hash"] == sha256(unit.text) and (unit.valid_from is None or
                                                          node["valid_from"] == unit.valid_from)


def _contexts(steps, meta: dict, hidden_rows: dict) -> dict[str, dict]:
    """Each unit's context; a heading whose section a person forgot is not repeated in the
    context of the sections under it."""
    gone = {(s.unit.path, tuple(s.unit.heading_path)) for s in steps
            if s.hidden and s.unit.heading_path and hidden_rows[s.hidden]["content_hash"] == s.hash}
    out = {}
    for s in steps:
        path = list(s.unit.heading_path)
        for i in range(len(path)):
            if (s.unit.path, tuple(s.unit.heading_path[:i + 1])) in gone:
                path[i] = context.FORGOTTEN_HEADING
        out[s.unit.key] = context.build(meta.get(s.unit.path), Path(s.unit.path).stem, path)
    return out


def _set_context(conn, batch, source, root, key, row, ctx: dict) -> bool:
    """Bring a kept unit's context up to date (its note renamed, a heading above it or a page
    property edited); recorded so a rollback puts the old one back."""
    encoded = context.encode(ctx)
    if row.get("context") == encoded:
        return False
    store.set_context(conn, source, root, key, encoded)
    nodes.set_context_text(conn, row["node_id"], context.text(ctx))
    store.change(conn, batch, "context", unit_key=key, old_node_id=row["node_id"], old_context=row.get("context"))
    return True


def build_index(result: ParseResult, steps) -> Index:
    index = Index(result.links_by)
    for path in result.notes:
        index.add_note(path)
    for name, paths in result.names.items():
        for path in paths:
            index.add_note(path, [name])
    for step in steps:
        index.add_unit(step.unit.path, step.unit.key, step.unit.heading_path, step.unit.block_ids)
    for s in result.skipped:
        index.skipped.add(s["path"])
    for path in result.attachments:
        index.add_attachment(path)
    return index


def sync(memory: Memory, source: str, root: str | Path, scope: str | None = None, options: dict | None = None,
         progress=None) -> dict:
    """`progress(done, total)` is called now and then while units are written (a CLI bar)."""
    folder = Path(root).expanduser()
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder (was the vault moved or unmounted?)")
    folder = folder.resolve()
    scope = scope or f"vault:{folder.name}"
    parser = get_parser(source)
    result: ParseResult = parser.parse(folder, options or {})
    root_key = str(folder)
    actor_source = f"person:{source}"
    counts = {"created": 0, "updated": 0, "unchanged": 0, "archived": 0, "moved": 0, "restored": 0, "refreshed": 0}
    warnings: list[str] = []
    conn = memory.conn
    now = memory.now()
    with immediate(conn):
        known = store.units(conn, source, root_key)
        elsewhere = store.scopes_of(conn, source, root_key) - {scope}
        if elsewhere:
            raise InvalidInput(f"{folder} was imported into scope {', '.join(sorted(elsewhere))}; import it with that"
                               " --scope (a folder lives in one scope: its history must not cross scopes)")
        batch = store.new_batch(conn, source, root_key, scope, now)
        # sections a person forgot are kept under a hash of their key: recognised, never re-imported
        # while the note is unchanged; their rows go when the note does
        hidden_rows = {k: r for k, r in known.items() if k.startswith(store.FORGOTTEN)}
        known = {k: r for k, r in known.items() if k not in hidden_rows}
        steps, vanished, hidden = match(result.units, [unit_hash(u) for u in result.units], known, hidden_rows)
        contexts = _contexts(steps, result.meta, hidden_rows)
        vanished = {k: r for k, r in vanished.items() if r["status"] == "live"}
        current = {s.unit.key: s.unit for s in steps}
        touched: dict[str, int] = {}           # unit key -> node id whose tags and links to (re)write
        refreshed: set[int] = set()            # ... of which these keep their node (and its links)
        for done, step in enumerate(steps, start=1):
            if progress is not None and (done % 250 == 0 or done == len(steps)):
                progress(done, len(steps))
            unit, key, h, row = step.unit, step.unit.key, step.hash, step.row
            ctx = contexts[key]
            if step.hidden:
                if hidden_rows[step.hidden]["content_hash"] == h:
                    if step.hidden != store.forgotten_key(key):       # the forgotten unit moved: still forgotten
                        store.rekey(conn, source, root_key, step.hidden, store.forgotten_key(key), batch)
                    counts["unchanged"] += 1
                    continue
                store.drop_unit(conn, source, root_key, step.hidden)    # edited since: new words
            if row is not None and row["unit_key"] != key:     # moved, renamed, or a block that gained an id::
                store.rekey(conn, source, root_key, row["unit_key"], key, batch)
                store.change(conn, batch, "moved", unit_key=key, old_key=row["unit_key"])
                if note_of(row["unit_key"]) != unit.path:
                    # the node's path changed: views keyed on paths (workstreams) must see it
                    audit.record(conn, at=now, actor=memory.actor, action="import_move", node_id=row["node_id"],
                                 batch=batch)
                    counts["moved"] += 1
            if row is not None and row.get("position") != step.position:
                store.set_position(conn, source, root_key, key, step.position)
            if row is not None and row["content_hash"] == h:
                relocated = note_of(row["unit_key"]) != unit.path
                if row["status"] == "archived":
                    # the note came back as it was; a node a person corrected meanwhile stays as they left it
                    store.put_unit(conn, source, root_key, key, h, row["node_id"], "live", batch, step.position)
                    if memory.set_hidden(row["node_id"], False, now):
                        store.change(conn, batch, "restored", unit_key=key, old_node_id=row["node_id"])
                        counts["restored"] += 1
                        relocated = True
                    else:
                        store.change(conn, batch, "relisted", unit_key=key, old_node_id=row["node_id"])
                if _set_context(conn, batch, source, root_key, key, row, ctx):
                    counts["refreshed"] += not relocated       # the note's title, a heading or a property
                elif not relocated:
                    counts["unchanged"] += 1
                continue
            lineage = None
            if row is not None:
                old = nodes.get_any(conn, row["node_id"])
                if old is not None and old["status"] in ("live", "archived"):
                    if old["status"] == "live" and row["status"] == "live" and _same_words(old, unit):
                        # only what the source says about the words changed (a tag, a property):
                        # the node stays, its standing is refreshed, no new version
                        store.put_unit(conn, source, root_key, key, h, old["id"], "live", batch, step.position,
                                       context.encode(ctx))
                        nodes.set_context_text(conn, old["id"], context.text(ctx))
                        store.change(conn, batch, "refreshed", unit_key=key, old_node_id=old["id"],
                                     new_node_id=old["id"], old_hash=row["content_hash"], old_context=row["context"])
                        counts["refreshed"] += 1
                        touched[key] = old["id"]
                        refreshed.add(old["id"])
                        continue
                    if old["status"] == "archived":
                        memory.set_hidden(old["id"], False, now)
                    lineage = old["id"]
            try:
                node_id, unit_warnings = memory.store_unit(unit.text, scope=scope, source_tool=source,
                                                           valid_from=unit.valid_from, now=now, lineage_of=lineage,
                                                           context=context.text(ctx))
            except InvalidInput as exc:               # e.g. a section over the size limit: skip it, import the rest
                if lineage is not None and nodes.get_any(conn, lineage)["status"] == "live" and row["status"] == "archived":
                    memory.set_hidden(lineage, True, now)
                result.skipped.append({"path": unit.path, "reason": f"section {unit.anchor or '(top)'!r}: {exc}"})
                continue
            warnings += [f"{unit.path}: {w}" for w in unit_warnings]
            store.put_unit(conn, source, root_key, key, h, node_id, "live", batch, step.position, context.encode(ctx))
            if lineage is None:
                store.change(conn, batch, "created", unit_key=key, new_node_id=node_id)
                counts["created"] += 1
            else:
                store.change(conn, batch, "updated", unit_key=key, old_node_id=lineage, new_node_id=node_id,
                             old_hash=row["content_hash"], old_status=row["status"], old_context=row["context"])
                counts["updated"] += 1
            touched[key] = node_id
        for gone in hidden:
            store.drop_unit(conn, source, root_key, gone)
        for key, row in vanished.items():
            store.put_unit(conn, source, root_key, key, row["content_hash"], row["node_id"], "archived", batch)
            if memory.set_hidden(row["node_id"], True, now):
                store.change(conn, batch, "archived", unit_key=key, old_node_id=row["node_id"])
                counts["archived"] += 1
            else:                                     # not live (a person corrected or forgot it): nothing to hide
                store.change(conn, batch, "delisted", unit_key=key, old_node_id=row["node_id"])
        node_of = {k: r["node_id"] for k, r in store.units(conn, source, root_key).items() if r["status"] == "live"}
        # units whose links were left dangling get another chance: their target may exist now
        # units whose links were left dangling get another chance: their target may exist now; and
        # units linking to a note that vanished read their links again (they are dangling now)
        key_of = {n: k for k, n in node_of.items()}
        linking_to_gone = {key_of[n] for n in links.linked_with(conn, [r["node_id"] for r in vanished.values()],
                                                                actor_source) if n in key_of}
        recheck = {key: node_of[key] for key in [*store.dangling_keys(conn, source, root_key), *sorted(linking_to_gone)]
                   if key in current and key not in touched and key in node_of}
        index = build_index(result, steps)
        for key, node_id in [*touched.items(), *recheck.items()]:
            unit = current[key]
            if key in touched and node_id not in refreshed:
                # a changed note's links are re-read from its text, so a link the person deleted
                # goes (the ones carried over from the previous version are dropped, then re-added)
                for link_id in links.by_proposer(conn, node_id, actor_source):
                    links.delete(conn, link_id)
            if key in touched:
                held = {t["name"]: t for t in tags.for_nodes(conn, [node_id])[node_id]}
                for name in unit.tags:
                    before = held.get(name)
                    if tags.assign(conn, node_id, name, status="confirmed", source=actor_source, at=now):
                        store.change(conn, batch, "tag", unit_key=key, new_node_id=node_id, tag=name,
                                     before=before["status"] if before else None)
                # a tag the note no longer says goes (a correction carried the old words' tags over);
                # tags a person gave or rejected elsewhere stay
                for name, t in held.items():
                    if name not in unit.tags and t["status"] == "confirmed" and t["source"] == actor_source:
                        tags.restore_assignment(conn, node_id, name, None)
                        if node_id in refreshed:        # a new version is hidden by a rollback; this node is not
                            store.change(conn, batch, "untag", unit_key=key, new_node_id=node_id, tag=name,
                                         before=t["status"], source=t["source"])
            store.clear_dangling(conn, source, root_key, key)
            for ref in unit.refs:
                found = index.resolve(ref, unit.path)
                target = node_of.get(found.key) if found.key else None
                if target is None:
                    store.add_dangling(conn, batch, source, root_key, key, ref.shown,
                                       found.reason or "note not imported", ref.as_json())
                    continue
                if target == node_id:
                    continue
                link_id = links.add(conn, node_id, target, relation="embeds" if ref.embed else "links-to",
                                    status="confirmed", proposed_by=actor_source, at=now,
                                    reason=f"[[{ref.shown}]] in {unit.path}")
                if link_id:
                    store.change(conn, batch, "link", unit_key=key, new_node_id=node_id, link=link_id)
        report = {"batch": batch, **counts, "skipped": result.skipped, "warnings": warnings, "scope": scope}
        store.finish_batch(conn, batch, memory.now(), {k: v for k, v in report.items() if isinstance(v, int)})
        audit.record(conn, at=now, actor=memory.actor, action="import", batch=batch, source=source, root=root_key,
                     **counts)
    return report


def rollback(memory: Memory, batch_id: int) -> dict:
    """Undo one batch (the latest for its folder, or every later one first)."""
    conn = memory.conn
    now = memory.now()
    with immediate(conn):
        b = store.batch(conn, int(batch_id))
        if b is None:
            raise NotFound(f"no import batch {batch_id}")
        if b["status"] == "rolled_back":
            raise Conflict(f"batch {batch_id} was already rolled back")
        later = store.later_batches(conn, b)
        if later:
            raise Conflict(f"batch {batch_id} has later imports of the same folder ({', '.join(map(str, later))});"
                           " roll those back first")
        _check_undoable(conn, b["id"])
        undone = 0
        for c in store.changes(conn, b["id"]):
            action = c["action"]
            if action == "created":
                memory.set_hidden(c["new_node_id"], True, now)
                store.drop_unit(conn, b["source"], b["root"], c["unit_key"])
            elif action == "updated":
                memory.set_hidden(c["new_node_id"], True, now)
                nodes.restore(conn, c["old_node_id"])
                if c["detail"].get("old_status") == "archived":
                    nodes.set_status(conn, c["old_node_id"], "archived")
                else:
                    memory.set_hidden(c["old_node_id"], False, now)
                store.put_unit(conn, b["source"], b["root"], c["unit_key"], c["old_hash"], c["old_node_id"],
                               c["detail"].get("old_status", "live"), b["id"], context=c["detail"].get("old_context"))
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
                row = store.units(conn, b["source"], b["root"])[c["unit_key"]]
                store.put_unit(conn, b["source"], b["root"], c["unit_key"], row["content_hash"], c["old_node_id"],
                               "live", b["id"])
            elif action == "restored":
                memory.set_hidden(c["old_node_id"], True, now)
                row = store.units(conn, b["source"], b["root"])[c["unit_key"]]
                store.put_unit(conn, b["source"], b["root"], c["unit_key"], row["content_hash"], c["old_node_id"],
                               "archived", b["id"])
            elif action == "relisted":
                row = store.units(conn, b["source"], b["root"])[c["unit_key"]]
                store.put_unit(conn, b["source"], b["root"], c["unit_key"], row["content_hash"], c["old_node_id"],
                               "archived", b["id"])
            elif action == "delisted":
                row = store.units(conn, b["source"], b["root"])[c["unit_key"]]
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
            undone += 1
        store.set_batch_status(conn, b["id"], "rolled_back")
        audit.record(conn, at=now, actor=memory.actor, action="import_rollback", batch=b["id"], changes=undone)
    return {"batch": b["id"], "undone": undone, "done": f"batch {b['id']} rolled back ({undone} changes undone)"}


def _check_undoable(conn, batch_id: int) -> None:
    """Rollback restores an exact prior state only if nothing touched the batch's nodes since
    (a person's correction, archive or forget): then it refuses, naming the node."""
    expected = {"created": ("new_node_id", ("live",)), "updated": ("new_node_id", ("live",)),
                "archived": ("old_node_id", ("archived",)), "restored": ("old_node_id", ("live",)),
                "refreshed": ("new_node_id", ("live",)), "context": ("old_node_id", ("live", "archived"))}
    for c in store.changes(conn, batch_id):
        if c["action"] in expected:
            column, status = expected[c["action"]]
            row = nodes.get_any(conn, c[column])
            if row is None or row["status"] not in status:
                raise Conflict(f"batch {batch_id} cannot be rolled back exactly: node {c[column]} is"
                               f" {row['status'] if row else 'gone'} now (changed after the import); nothing was undone")
