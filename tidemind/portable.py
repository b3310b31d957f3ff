"""Export and import back: every live memory of some scopes, taken out as files that people and
other tools read, and brought back into a store (this one or another).

`export(m, "jsonl", DIR)` writes DIR/tidemind-export.jsonl: one header line, then a line per
memory (its text byte for byte, scope, kind, times, source, the note context of an imported unit,
tags with their status, a person's clarifications), then a line per link between two exported
memories (with its status: pending, confirmed, rejected) and a line per scope-wide tag rejection.
`export(m, "markdown", DIR)` writes a folder per scope and a file per memory that Obsidian opens:
front matter it reads as properties (confirmed tags as `tags`, confirmed links as [[wikilinks]] in
`related`, everything else under `tidemind_*` keys), then the memory's text, unchanged.

`import_jsonl(m, FILE)` reads the jsonl export into this store in one transaction: nothing of a
bad file is written. A memory keeps its identity: one already here (same scope, same text, same
recorded time) is matched rather than stored twice, so importing the same export again changes
nothing, and links and tags land on the memories they were made for; one a person archived,
corrected or forgotten here stays so (an old export does not bring forgotten words back). Only live memories
are exported (archived, superseded and forgotten ones stay behind, and so do their links);
derived values (titles, summaries) are a model's and are made again by the metabolism.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

from . import secrets, text
from .errors import InvalidInput
from .store import clarifications, immediate, links, nodes, tags
from .timeutil import parse_iso

if TYPE_CHECKING:
    from .memory import Memory

FORMAT, VERSION = "tidemind-export", 1
JSONL_FILE = "tidemind-export.jsonl"
FORMATS = ("jsonl", "markdown")
CHUNK = 500                  # ids per IN (...) list: under SQLite's variable limit, short for a server
TAG_STATUSES = ("proposed", "confirmed", "rejected_by_user")
LINK_STATUSES = ("pending", "confirmed", "rejected_by_model", "rejected_by_user", "expired")
_MEMORY_COLUMNS = ("id", "capture_id", "unit_index", "scope", "kind", "content", "source_tool", "session",
                   "recorded_at", "valid_from", "valid_to", "context_text")


# -- reading the store ---------------------------------------------------------------------------
def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), CHUNK):
        yield list(ids[start:start + CHUNK])


def _records(m: "Memory", scopes: Sequence[str]) -> tuple[list[dict], list[dict], list[dict]]:
    """(memories, links between them, scope-wide tag rejections) of the scopes, oldest first."""
    conn = m.conn
    ids = nodes.visible_ids(conn, scopes)
    memories: list[dict] = []
    seen_links: dict[int, dict] = {}
    exported = set(ids)
    for chunk in _chunks(ids):
        found = nodes.get_visible_many(conn, chunk, scopes, columns=_MEMORY_COLUMNS)
        tagged = tags.for_nodes(conn, chunk)
        linked = links.for_nodes(conn, chunk, scopes)
        clarified = clarifications.for_nodes(conn, chunk)
        for node_id in chunk:
            row = found.get(node_id)
            if row is None:            # (gone between the two reads)
                continue
            memories.append({
                "type": "memory", "id": _key(node_id), "scope": row["scope"], "kind": row["kind"],
                "content": row["content"], "content_sha256": text.sha256(row["content"]),
                "recorded_at": row["recorded_at"], "valid_from": row["valid_from"], "valid_to": row["valid_to"],
                "source": {"tool": row["source_tool"], "session": row["session"],
                           "capture": _key(row["capture_id"], "c") if row["capture_id"] is not None else None,
                           "unit": row["unit_index"]},
                "context": row["context_text"] or "",
                "tags": [{"name": t["name"], "status": t["status"], "source": t["source"]} for t in tagged[node_id]],
                "clarified": [{"term": c["term"], "answer": c["answer"], "by": c["actor"], "at": c["at"]}
                              for c in clarified[node_id]],
            })
            for link in linked[node_id]:
                if link["target"] in exported and link["id"] not in seen_links:
                    a, b = (node_id, link["target"]) if link["direction"] == "out" else (link["target"], node_id)
                    seen_links[link["id"]] = {"type": "link", "from": _key(a), "to": _key(b),
                                              "relation": link["relation"], "status": link["status"],
                                              "strength": link["strength"]}
    rejected = [{"type": "tag_rejection", "scope": t["scope"], "name": t["name"], "at": t["created_at"], "by": t["by"]}
                for t in tags.tombstones(conn, scopes)]
    return memories, sorted(seen_links.values(), key=lambda l: (l["from"], l["to"])), rejected


def _key(node_id: int, prefix: str = "n") -> str:
    return f"{prefix}{node_id}"


# -- export ---------------------------------------------------------------------------------------
def export(m: "Memory", fmt: str, directory: str | Path, scopes: Sequence[str]) -> dict:
    """Write the scopes' live memories to `directory` (made if missing; an export already there of
    the same format is replaced, nothing else in the folder is touched)."""
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown export format {fmt!r}; the formats are {', '.join(FORMATS)}")
    folder = Path(directory).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InvalidInput(f"{folder} is a file, not a folder to export into")
    memories, link_rows, rejected = _records(m, scopes)
    folder.mkdir(parents=True, exist_ok=True)
    header = {"type": "export", "format": FORMAT, "version": VERSION, "exported_at": m.now(), "scopes": list(scopes),
              "memories": len(memories), "links": len(link_rows)}
    if fmt == "jsonl":
        written = [_write_atomic(folder / JSONL_FILE, "".join(
            json.dumps(r, ensure_ascii=False) + "\n" for r in [header, *memories, *link_rows, *rejected]))]
    else:
        written = _write_markdown(folder, memories, link_rows)
    return {"format": fmt, "folder": str(folder), "scopes": list(scopes), "memories": len(memories),
            "links": len(link_rows), "tag_rejections": len(rejected), "files": len(written),
            "first_file": str(written[0]) if written else None}


def _write_atomic(path: Path, content: str) -> Path:
    """Written beside, then renamed: a reader never sees half a file, a crash leaves the old one."""
    part = path.with_name(f".{path.name}.part")
    with open(part, "w", encoding="utf-8", newline="") as f:
        f.write(content)
    part.replace(path)
    return path


_UNSAFE = re.compile(r"[^\w\- ]+", re.UNICODE)


def _file_name(memory: dict) -> str:
    """`n123 First words of it`: the id keeps names unique, the words let a person find it."""
    first = next((line.strip() for line in memory["content"].splitlines() if line.strip()), "")
    words = " ".join(_UNSAFE.sub(" ", first).split())[:60].strip()
    return f"{memory['id']} {words}".strip()


def _scope_folder(scope: str) -> str:
    return _UNSAFE.sub("_", scope.replace(":", "-").replace("/", "-")) or "scope"


_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff]")


def _yaml(value) -> str:
    """A YAML flow value: JSON is YAML, and Obsidian reads it as such, except for the characters
    JSON leaves raw that YAML folds as line breaks or refuses (NEL, LS, PS, C1 controls): escaped."""
    return _YAML_UNSAFE.sub(lambda c: f"\\u{ord(c.group()):04x}", json.dumps(value, ensure_ascii=False))


def _obsidian_tag(name: str) -> str:
    """Obsidian's tag property takes no spaces or '#': 'trip planning' → 'trip-planning'."""
    return re.sub(r"[\s#]+", "-", name.strip()).strip("-")


def _write_markdown(folder: Path, memories: list[dict], link_rows: list[dict]) -> list[Path]:
    names = {mem["id"]: _file_name(mem) for mem in memories}
    confirmed: dict[str, list[str]] = {}
    others: dict[str, list[dict]] = {}
    for link in link_rows:
        for me, other in ((link["from"], link["to"]), (link["to"], link["from"])):
            if link["status"] == "confirmed":
                confirmed.setdefault(me, []).append(other)
            others.setdefault(me, []).append({"with": other, "relation": link["relation"], "status": link["status"],
                                              "direction": "out" if me == link["from"] else "in"})
    written = []
    for mem in memories:
        sub = folder / _scope_folder(mem["scope"])
        sub.mkdir(exist_ok=True)
        kept_tags = [_obsidian_tag(t["name"]) for t in mem["tags"] if t["status"] == "confirmed"]
        front = [
            ("tidemind_id", mem["id"]), ("scope", mem["scope"]), ("kind", mem["kind"]),
            ("recorded", mem["recorded_at"]), ("valid_from", mem["valid_from"]),
            *((("valid_to", mem["valid_to"]),) if mem["valid_to"] else ()),
            ("source_tool", mem["source"]["tool"]), ("session", mem["source"]["session"]),
            ("tags", [t for t in kept_tags if t]),
            ("related", [f"[[{names[o]}]]" for o in confirmed.get(mem["id"], []) if o in names]),
            ("tidemind_tags", mem["tags"]),
            ("tidemind_links", others.get(mem["id"], [])),
            *((("tidemind_clarified", mem["clarified"]),) if mem["clarified"] else ()),
            *((("tidemind_context", mem["context"]),) if mem["context"] else ()),
        ]
        body = "---\n" + "".join(f"{k}: {_yaml(v)}\n" for k, v in front) + "---\n" + mem["content"]
        written.append(_write_atomic(sub / f"{names[mem['id']]}.md", body))
    return written


# -- import ---------------------------------------------------------------------------------------
def read_export(path: str | Path) -> tuple[dict, list[dict], list[dict], list[dict]]:
    """(header, memories, links, tag rejections) of a jsonl export, checked whole before anything
    is written; a folder means its tidemind-export.jsonl."""
    source = Path(path).expanduser()
    if source.is_dir():
        source = source / JSONL_FILE
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InvalidInput(f"{source}: no such file (give the export's folder or its {JSONL_FILE})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from None
    records = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise InvalidInput(f"{source}:{n} is not a JSON object; nothing was imported") from None
        if not isinstance(record, dict):
            raise InvalidInput(f"{source}:{n} is not a JSON object; nothing was imported")
        records.append((n, record))
    if not records or records[0][1].get("type") != "export" or records[0][1].get("format") != FORMAT:
        raise InvalidInput(f"{source} is not a TideMind export (its first line names format {FORMAT!r});"
                           " nothing was imported")
    if records[0][1].get("version") != VERSION:
        raise InvalidInput(f"{source} is export version {records[0][1].get('version')!r}; this TideMind reads"
                           f" version {VERSION}")
    memories, link_rows, rejected = [], [], []
    ids: set[str] = set()
    for n, r in records[1:]:
        kind = r.get("type")
        where = f"{source}:{n}"
        if kind == "memory":
            _check_memory(r, where)
            if r["id"] in ids:
                raise InvalidInput(f"{where}: memory {r['id']!r} appears twice; nothing was imported")
            ids.add(r["id"])
            memories.append(r)
        elif kind == "link":
            if r.get("status") not in LINK_STATUSES or not isinstance(r.get("relation", "related"), str):
                raise InvalidInput(f"{where}: a link's status is one of {', '.join(LINK_STATUSES)}")
            link_rows.append((where, r))
        elif kind == "tag_rejection":
            if not isinstance(r.get("scope"), str) or not isinstance(r.get("name"), str):
                raise InvalidInput(f"{where}: a tag rejection names a scope and a tag")
            rejected.append(r)
        else:
            raise InvalidInput(f"{where}: unknown record type {kind!r}; nothing was imported")
    for where, link in link_rows:
        if link.get("from") not in ids or link.get("to") not in ids:
            raise InvalidInput(f"{where}: the link joins {link.get('from')!r} and {link.get('to')!r}, which are"
                               " not both memories of the export; nothing was imported")
    return records[0][1], memories, [l for _, l in link_rows], rejected


def _check_memory(r: dict, where: str) -> None:
    if not isinstance(r.get("id"), str) or not r["id"]:
        raise InvalidInput(f"{where}: a memory needs its export id")
    if not isinstance(r.get("content"), str) or not isinstance(r.get("scope"), str):
        raise InvalidInput(f"{where}: memory {r['id']!r} needs its content and scope as text")
    if r.get("kind", "memory") not in ("memory", "note"):
        raise InvalidInput(f"{where}: memory {r['id']!r} has kind {r.get('kind')!r} (memory or note)")
    for field in ("recorded_at", "valid_from"):
        try:
            parse_iso(r.get(field))
        except (InvalidInput, TypeError, ValueError):
            raise InvalidInput(f"{where}: memory {r['id']!r} has no readable {field}") from None
    if "content_sha256" in r and text.sha256(r["content"]) != r["content_sha256"]:
        raise InvalidInput(f"{where}: memory {r['id']!r} does not match its checksum (the text was changed"
                           " after export); nothing was imported")
    for t in r.get("tags") or []:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) or t.get("status") not in TAG_STATUSES:
            raise InvalidInput(f"{where}: memory {r['id']!r} has a tag without a name or a known status")
    for c in r.get("clarified") or []:
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) for k in ("term", "answer")):
            raise InvalidInput(f"{where}: memory {r['id']!r} has a clarification without term and answer")


def import_jsonl(m: "Memory", path: str | Path, scope: str | None = None) -> dict:
    """Bring a jsonl export into this store (`scope`: every memory into that one scope instead of
    its own). One transaction: all of it, or nothing."""
    header, memories, link_rows, rejected = read_export(path)
    now = m.now()
    placed: dict[str, int] = {}
    counts = {"stored": 0, "already_here": 0, "left_as_here": 0, "tags": 0, "links": 0, "clarified": 0, "tag_rejections": 0}
    warnings: list[str] = []
    with immediate(m.conn), m.stream_batch():
        for r in memories:
            # (checked before the memory is looked for there: a handle that may not write a scope
            # neither matches its memories nor links to them)
            target = m.writable_scope(scope or r["scope"])
            recorded = parse_iso(r["recorded_at"])
            found = nodes.same_memory(m.conn, target, text.sha256(secrets.mask(r["content"])[0]), recorded)
            if found is not None and found[1] == "live":
                placed[r["id"]] = found[0]
                counts["already_here"] += 1
                continue
            if found is not None:       # archived, corrected or forgotten here: what a person did here stands
                counts["left_as_here"] += 1
                warnings.append(f"memory {r['id']} is {found[1]} in this store (node {found[0]}): left as it is")
                continue
            source = r.get("source") or {}
            node_id, more = m.store_unit(r["content"], scope=target, source_tool=source.get("tool"),
                                         valid_from=parse_iso(r["valid_from"]), now=now, reason="import",
                                         context=r.get("context") or "", session=source.get("session"),
                                         recorded_at=recorded, kind=r.get("kind", "memory"))
            warnings += more
            placed[r["id"]] = node_id
            counts["stored"] += 1
            for t in r.get("tags") or []:
                if t["status"] == "rejected_by_user":
                    tags.reject(m.conn, node_id, t["name"], now)
                    counts["tags"] += 1
                elif tags.assign(m.conn, node_id, t["name"], status=t["status"], source=t.get("source") or "import",
                                 at=now):
                    counts["tags"] += 1
            for c in r.get("clarified") or []:
                clarifications.append(m.conn, node_id=node_id, question_id=None, term=c["term"], answer=c["answer"],
                                      actor=c.get("by") or "import", at=c.get("at") or now)
                counts["clarified"] += 1
        for link in link_rows:
            a, b = placed.get(link["from"]), placed.get(link["to"])
            if a is not None and b is not None and a != b and links.add(m.conn, a, b, relation=link.get("relation") or "related", status=link["status"],
                                    strength=link.get("strength"), proposed_by="import", at=now) is not None:
                counts["links"] += 1
        for t in rejected:
            tags.reject_everywhere(m.conn, t["name"], m.writable_scope(scope or t["scope"]), now, t.get("by") or "import")
            counts["tag_rejections"] += 1
    return {"file": str(path), "exported_at": header.get("exported_at"), "memories": len(memories), **counts,
            "warnings": warnings}


def summary_lines(r: dict) -> Iterable[str]:
    yield (f"{r['memories']} memories read: {r['stored']} stored, {r['already_here']} already here,"
           f" {r['left_as_here']} archived, corrected or forgotten here and left so;"
           f" {r['tags']} tags, {r['links']} links, {r['clarified']} clarifications,"
           f" {r['tag_rejections']} scope-wide tag rejections")
    for w in r.get("warnings", []):
        yield f"warning: {w}"
