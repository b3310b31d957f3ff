"""Tables of the import engine (its own migration set): batches, the identity of every imported
unit, and the changes each batch made (what rollback undoes)."""
from __future__ import annotations

import hashlib
import json
import re

from .. import secrets
from ..text import content_words, fold

from ..store import nodes
from ..store.connection import inserted, rows
from ..store.migrations import register
from ..store.visibility import visible
from . import context

DDL = """
CREATE TABLE import_batches(
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  root TEXT NOT NULL,
  scope TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL DEFAULT 'running',     -- 'done' | 'rolled_back'
  counts TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE import_units(
  source TEXT NOT NULL,
  root TEXT NOT NULL,
  unit_key TEXT NOT NULL,                     -- relative path '#' anchor
  content_hash TEXT NOT NULL,
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  status TEXT NOT NULL CHECK(status IN ('live','archived')),
  batch_id INTEGER NOT NULL,
  PRIMARY KEY(source, root, unit_key)
);
CREATE TABLE import_changes(
  id INTEGER PRIMARY KEY,
  batch_id INTEGER NOT NULL REFERENCES import_batches(id),
  action TEXT NOT NULL,                       -- created | updated | archived | restored | moved | link | tag
  unit_key TEXT,
  old_key TEXT,
  old_node_id INTEGER,
  new_node_id INTEGER,
  old_hash TEXT,
  detail TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE import_dangling(
  batch_id INTEGER NOT NULL,
  source TEXT NOT NULL,
  root TEXT NOT NULL,
  unit_key TEXT NOT NULL,
  target TEXT NOT NULL
);
"""
# why a link is dangling (see resolve.py) and the link itself, so a later sync can try it again
DANGLING_REASONS_DDL = """
ALTER TABLE import_dangling ADD COLUMN reason TEXT NOT NULL DEFAULT 'missing note';
ALTER TABLE import_dangling ADD COLUMN ref TEXT NOT NULL DEFAULT '{}';
CREATE INDEX import_dangling_unit ON import_dangling(source, root, unit_key);
"""
# a unit's place in its note: a block without an id:: is matched by its place among the blocks
# that did not match by id or text (identity.py)
POSITION_DDL = "ALTER TABLE import_units ADD COLUMN position INTEGER NOT NULL DEFAULT 0;"
# where the unit sits in its note (context.py): shown by `tidemind show`, mirrored as text into
# nodes.context_text for search
CONTEXT_DDL = "ALTER TABLE import_units ADD COLUMN context TEXT NOT NULL DEFAULT '{}';"
# A re-sync reads every file but parses only those whose hash changed: `import_notes` keeps each
# note's hash and the names links may call it by; each unit keeps what links resolve against
# (heading hashes, not words, and block ids), and the hash of its note's path (which survives a
# forget that hashes the unit's key), so only the changed notes' units are loaded.
NOTES_DDL = """
CREATE TABLE import_notes(
  source TEXT NOT NULL,
  root TEXT NOT NULL,
  path TEXT NOT NULL,
  file_hash TEXT NOT NULL,                    -- sha256 of the file and of what shapes its parsing
  names TEXT NOT NULL DEFAULT '[]',           -- what else links may call it (aliases, page names)
  PRIMARY KEY(source, root, path)
);
ALTER TABLE import_units ADD COLUMN note_hash TEXT;
ALTER TABLE import_units ADD COLUMN anchors TEXT NOT NULL DEFAULT '{}';
CREATE INDEX import_units_note ON import_units(source, root, note_hash);
CREATE INDEX import_units_node ON import_units(node_id);
"""


def note_hash(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8")).hexdigest()[:16]


def _backfill_note_hashes(conn) -> None:
    conn.execute(NOTES_DDL)
    conn.executemany("UPDATE import_units SET note_hash=? WHERE rowid=?", [
        (note_hash(key.split("#", 1)[0]), rowid) for rowid, key in
        conn.execute("SELECT rowid, unit_key FROM import_units").fetchall() if not key.startswith(FORGOTTEN)])


# whether the importer itself archived a unit's node (its file vanished): only then may the
# note's return bring it back; a node a person archived stays archived (rows archived before
# this column were archived by the importer)
HIDDEN_DDL = """
ALTER TABLE import_units ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
UPDATE import_units SET hidden = 1 WHERE status = 'archived';
"""
# an import commits in chunks and a rollback undoes in chunks: a batch is 'running' until its
# last chunk, 'interrupted' when its process died first (what it did is recorded and can be
# rolled back), 'rolling_back' while undone; each change is marked once undone
CHUNKS_DDL = """
ALTER TABLE import_changes ADD COLUMN undone INTEGER NOT NULL DEFAULT 0;
CREATE INDEX import_changes_batch ON import_changes(batch_id, id);
"""
# What a person took out of a folder's memory (forgot, or archived) is kept out of every later
# sync by what the text was, not only where it sat: moving a forgotten section to another note,
# renaming its heading, or editing it revived it when only its key was remembered. A forgotten
# text is kept as hashes only (of its body and of each sentence, as a tombstone is); an archived
# one is compared with its node's words, which archiving keeps.
KEPT_OUT_DDL = """
CREATE TABLE import_kept_out(
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  root TEXT NOT NULL,
  reason TEXT NOT NULL CHECK(reason IN ('forgotten','archived')),
  node_id INTEGER,                            -- the archived node (NULL once forgotten)
  body_hash TEXT NOT NULL,                    -- the text without its heading, case and spacing folded
  sentence_hashes TEXT NOT NULL DEFAULT '[]', -- each folded sentence's hash
  at TEXT NOT NULL
);
CREATE INDEX import_kept_out_root ON import_kept_out(source, root);
CREATE INDEX import_kept_out_node ON import_kept_out(node_id);
"""
register("importers", [("0001_engine", DDL), ("0002_dangling_reasons", DANGLING_REASONS_DDL),
                       ("0003_unit_position", POSITION_DDL), ("0004_unit_context", CONTEXT_DDL),
                       ("0005_notes_index", _backfill_note_hashes), ("0006_hidden_by_import", HIDDEN_DDL),
                       ("0007_chunked_batches", CHUNKS_DDL), ("0008_kept_out", KEPT_OUT_DDL)])

_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t].*$|^[ \t]*-?[ \t]*title::.*$", re.MULTILINE)
# what a block's words are not: a Logseq marker or priority, a tag, a property ("TODO call the bank"
# marked DONE, or given #home, says the same thing)
_NOT_WORDS = re.compile(r"^[ \t]*[-*+]?[ \t]*(?:TODO|DONE|LATER|NOW|DOING|WAITING|WAIT|CANCELED|CANCELLED|IN-PROGRESS)\b|"
                        r"\[#[ABC]\]|(?<![\w#])#(?:\[\[[^\]\n]*\]\]|[\w/-]+)|^[ \t]*[\w-]+::.*$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _strip(text: str) -> str:
    return _NOT_WORDS.sub(" ", _HEADING_LINE.sub(" ", text or ""))


def _body(text: str) -> str:
    """The words a section says, without its heading (renaming a heading is not new text), its
    markers, tags and properties."""
    return fold(_strip(text))


def _sentence_hashes(text: str) -> list[str]:
    body = _strip(text)
    found = {hashlib.sha256(f.encode("utf-8")).hexdigest()[:24]
             for f in (fold(piece) for piece in _SENTENCE_END.split(body)) if len(f.split()) >= 3}
    return sorted(found)


_EMPTY_BODY = hashlib.sha256(b"").hexdigest()


def _fingerprint(text: str) -> tuple[str, list[str]]:
    return hashlib.sha256(_body(text).encode("utf-8")).hexdigest(), _sentence_hashes(text)


def _roots_of_node(conn, node_id: int) -> list[tuple[str, str]]:
    """The folders a node came from: its unit, or (an earlier version a sync replaced) the
    batches that changed it."""
    return [tuple(r) for r in conn.execute(
        "SELECT source, root FROM import_units WHERE node_id=:n UNION SELECT b.source, b.root FROM import_changes c"
        " JOIN import_batches b ON b.id = c.batch_id WHERE c.old_node_id=:n OR c.new_node_id=:n", {"n": node_id})]


def keep_out(conn, node_id: int, text: str, reason: str, at: str) -> None:
    """A person archived or forgot an imported node: its words stay out of its folder's later
    syncs, wherever they move to. A forget replaces an archive's entry by hashes alone."""
    roots = _roots_of_node(conn, node_id)
    conn.execute("DELETE FROM import_kept_out WHERE node_id=?", (node_id,))
    if not roots or not _body(text):
        return                       # a heading alone says nothing to recognise its words by
    body_hash, sentences = _fingerprint(text)
    for source, root in roots:
        conn.execute("INSERT INTO import_kept_out(source, root, reason, node_id, body_hash, sentence_hashes, at)"
                     " VALUES(?,?,?,?,?,?,?)", (source, root, reason, None if reason == "forgotten" else node_id,
                                                body_hash, json.dumps(sentences), at))


def let_in(conn, node_id: int) -> None:
    """A person unarchived the node: its words may come back from its folder."""
    conn.execute("DELETE FROM import_kept_out WHERE node_id=? AND reason='archived'", (node_id,))


class KeptOut:
    """The texts a person took out of notes of this kind (whichever folder: a vault moved or
    renamed is the same person's notes), to test a parsed unit against before it is stored as
    new. A unit is kept out when its body is the same as one of them (markers, tags, properties
    and its heading aside), when at least half of its sentences are theirs, when all of a
    forgotten text of two or more sentences is inside it, or (archived: the words are there to
    compare) when it shares most of its content words with one. A forgotten text is known by
    hashes only, so a one-sentence unit edited word by word is new words to it."""

    def __init__(self, conn, source: str, root: str):
        self.entries = []
        for r in rows(conn, "SELECT k.reason, k.node_id, k.body_hash, k.sentence_hashes, n.content, n.status"
                            " FROM import_kept_out k LEFT JOIN nodes n ON n.id = k.node_id"
                            " WHERE k.source=?", (source,)):
            if r["reason"] == "archived" and r["status"] != "archived":
                continue             # unarchived or corrected since: no longer out
            if r["body_hash"] == _EMPTY_BODY:
                continue             # (kept before empty bodies were skipped: it would match every heading)
            words_of = set(content_words(_strip(r["content"]))) if r["content"] else set()
            self.entries.append((r["reason"], r["body_hash"], set(json.loads(r["sentence_hashes"])), words_of))
        self.by_body = {e[1]: e for e in self.entries}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def reason(self, text: str) -> str | None:
        """Why this unit's text stays out ('forgotten' or 'archived'), or None."""
        if not self.entries:
            return None
        if not _body(text):
            return None              # nothing but a heading, markers or tags: nothing to recognise
        body_hash, sentences = _fingerprint(text)
        if body_hash in self.by_body:
            return self.by_body[body_hash][0]
        mine = set(sentences)
        unit_words = set(content_words(_strip(text)))
        for reason, _, theirs, their_words in self.entries:
            shared = len(mine & theirs)
            if shared and (shared * 2 >= len(mine) or (len(theirs) >= 2 and shared == len(theirs))):
                return reason
            if their_words and unit_words and \
                    len(unit_words & their_words) / len(unit_words | their_words) >= 0.6:
                return reason
        return None


def new_batch(conn, source: str, root: str, scope: str, at: str) -> int:
    return inserted(conn, "INSERT INTO import_batches(source, root, scope, started_at) VALUES(?,?,?,?)",
                    (source, root, scope, at))


def finish_batch(conn, batch_id: int, at: str, counts: dict) -> None:
    conn.execute("UPDATE import_batches SET finished_at=?, status='done', counts=? WHERE id=?",
                 (at, json.dumps(counts, sort_keys=True), batch_id))


FORGOTTEN = "forgotten:"


def forgotten_key(key: str) -> str:
    """What a unit key becomes when its node is forgotten: the key names a heading, which is the
    note's words, so only its hash stays (enough for the next sync to recognise the section)."""
    return FORGOTTEN + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def forget_node(conn, node_id: int, text: str = "", at: str = "") -> None:
    """Forget: the unit's key becomes a hash (also in every change row that named it, through
    its moves), its dangling link targets go, and change details keep only ids; the words are
    kept out of later syncs by their hashes (`keep_out`)."""
    keep_out(conn, node_id, text, "forgotten", at)
    keys: set[str] = set()
    for source, root, key, ctx in conn.execute("SELECT source, root, unit_key, context FROM import_units WHERE"
                                               " node_id=?", (node_id,)).fetchall():
        if key.startswith(FORGOTTEN):
            continue
        keys.add(key)
        _scrub_heading_below(conn, source, root, key.split("#", 1)[0], context.decode(ctx).get("headings") or [])
        conn.execute("UPDATE import_units SET context='{}', anchors='{}' WHERE source=? AND root=? AND unit_key=?",
                     (source, root, key))
        conn.execute("DELETE FROM import_units WHERE source=? AND root=? AND unit_key=?",
                     (source, root, forgotten_key(key)))
        conn.execute("UPDATE import_units SET unit_key=? WHERE source=? AND root=? AND unit_key=?",
                     (forgotten_key(key), source, root, key))
        conn.execute("DELETE FROM import_dangling WHERE source=? AND root=? AND unit_key=?", (source, root, key))
    for _, key, old_key in conn.execute("SELECT id, unit_key, old_key FROM import_changes WHERE"
                                        " old_node_id=? OR new_node_id=?", (node_id, node_id)).fetchall():
        keys |= {k for k in (key, old_key) if k and not k.startswith(FORGOTTEN)}
    while True:                    # follow moves: a "moved" row names the old and new key, no node
        more = {k for row in conn.execute(
            f"SELECT unit_key, old_key FROM import_changes WHERE unit_key IN ({','.join('?' * len(keys))})"
            f" OR old_key IN ({','.join('?' * len(keys))})", [*keys, *keys]) for k in row
            if k and not k.startswith(FORGOTTEN)} - keys if keys else set()
        if not more:
            break
        keys |= more
    for key in keys:
        conn.execute("UPDATE import_changes SET unit_key=? WHERE unit_key=?", (forgotten_key(key), key))
        conn.execute("UPDATE import_changes SET old_key=? WHERE old_key=?", (forgotten_key(key), key))
    for change_id, detail in conn.execute("SELECT id, detail FROM import_changes WHERE old_node_id=? OR"
                                          " new_node_id=?", (node_id, node_id)).fetchall():
        kept = {k: v for k, v in json.loads(detail).items() if k == "link"}
        conn.execute("UPDATE import_changes SET detail=? WHERE id=?", (json.dumps(kept), change_id))


def _scrub_heading_below(conn, source: str, root: str, path: str, headings: list[str]) -> None:
    """The sections under a forgotten one carry its heading in their context: it goes there too."""
    if not headings:
        return
    prefix = path + "#"
    for key, node_id, ctx in conn.execute("SELECT unit_key, node_id, context FROM import_units WHERE source=? AND"
                                          " root=? AND substr(unit_key, 1, ?) = ?",
                                          (source, root, len(prefix), prefix)).fetchall():
        scrubbed = context.scrub_heading(context.decode(ctx), headings)
        if scrubbed is not None:
            conn.execute("UPDATE import_units SET context=? WHERE source=? AND root=? AND unit_key=?",
                         (context.encode(scrubbed), source, root, key))
            nodes.set_context_text(conn, node_id, context.text(scrubbed))


def units_by_key(conn, source: str, root: str, keys) -> dict[str, dict]:
    return _units_where_in(conn, source, root, "unit_key", list(keys))


def _units_where_in(conn, source: str, root: str, column: str, values: list) -> dict[str, dict]:
    """unit key -> row for the folder's units whose `column` is one of `values` (500 to a query)."""
    out: dict[str, dict] = {}
    for start in range(0, len(values), 500):
        chunk = values[start:start + 500]
        for r in rows(conn, f"SELECT * FROM import_units WHERE source=? AND root=? AND {column} IN"
                            f" ({','.join('?' * len(chunk))})", [source, root, *chunk]):
            out[r["unit_key"]] = r
    return out


def put_unit(conn, source, root, key, content_hash, node_id, status, batch_id, position: int | None = None,
             context: str | None = None, anchors: dict | None = None, hidden: bool = False) -> None:
    """Insert or update a unit's row; a position, context or anchors of None keep the stored
    ones. `hidden`: the importer archived the node (its file vanished)."""
    found = json.dumps(anchors, sort_keys=True) if anchors is not None else None
    conn.execute("INSERT INTO import_units(source, root, unit_key, content_hash, node_id, status, batch_id, position,"
                 " context, anchors, note_hash, hidden) VALUES(?,?,?,?,?,?,?,coalesce(?, 0),coalesce(?, '{}'),"
                 "coalesce(?, '{}'),?,?) ON CONFLICT(source, root, unit_key) DO UPDATE SET"
                 " content_hash=excluded.content_hash, node_id=excluded.node_id, status=excluded.status,"
                 " batch_id=excluded.batch_id, position=coalesce(?, import_units.position),"
                 " context=coalesce(?, import_units.context), anchors=coalesce(?, import_units.anchors),"
                 " note_hash=excluded.note_hash, hidden=excluded.hidden",
                 (source, root, key, content_hash, node_id, status, batch_id, position, context, found,
                  note_hash(key.split("#", 1)[0]), int(bool(hidden)), position, context, found))


def set_anchors(conn, source, root, key, anchors: dict) -> None:
    conn.execute("UPDATE import_units SET anchors=? WHERE source=? AND root=? AND unit_key=?",
                 (json.dumps(anchors, sort_keys=True), source, root, key))


def units_of_notes(conn, source: str, root: str, paths, legacy_forgotten: bool = False) -> dict[str, dict]:
    """The rows of these notes' units, forgotten ones included (by their note's hash); with
    `legacy_forgotten`, also forgotten rows from before note hashes were kept."""
    out = _units_where_in(conn, source, root, "note_hash", [note_hash(p) for p in paths])
    if legacy_forgotten:
        for r in rows(conn, "SELECT * FROM import_units WHERE source=? AND root=? AND note_hash IS NULL",
                      (source, root)):
            out[r["unit_key"]] = r
    return out


def count_live(conn, source: str, root: str) -> int:
    return conn.execute("SELECT count(*) FROM import_units WHERE source=? AND root=? AND status='live'",
                        (source, root)).fetchone()[0]


def index_rows(conn, source: str, root: str) -> list[tuple[str, int, dict]]:
    """(key, node id, anchors) of the folder's live units in note order: what links resolve to."""
    return [(k, n, json.loads(a)) for k, n, a in conn.execute(
        "SELECT unit_key, node_id, anchors FROM import_units WHERE source=? AND root=? AND status='live'"
        " ORDER BY note_hash, position, unit_key", (source, root))]


def notes(conn, source: str, root: str) -> dict[str, dict]:
    """path -> {"file_hash", "names"} of every note the folder's last sync read."""
    return {p: {"file_hash": h, "names": json.loads(n)} for p, h, n in conn.execute(
        "SELECT path, file_hash, names FROM import_notes WHERE source=? AND root=?", (source, root))}


def put_note(conn, source: str, root: str, path: str, file_hash: str, names: list[str]) -> None:
    names, _ = secrets.mask_tree(list(names))        # aliases and titles are the note's words
    conn.execute("INSERT INTO import_notes(source, root, path, file_hash, names) VALUES(?,?,?,?,?) ON CONFLICT"
                 "(source, root, path) DO UPDATE SET file_hash=excluded.file_hash, names=excluded.names",
                 (source, root, path, file_hash, json.dumps(names, ensure_ascii=False)))


def drop_note(conn, source: str, root: str, path: str) -> None:
    conn.execute("DELETE FROM import_notes WHERE source=? AND root=? AND path=?", (source, root, path))


def reread_all(conn, source: str, root: str) -> None:
    """Forget the files' hashes (after a rollback): the next sync parses every note again."""
    conn.execute("DELETE FROM import_notes WHERE source=? AND root=?", (source, root))


def set_context(conn, source, root, key, context: str) -> None:
    conn.execute("UPDATE import_units SET context=? WHERE source=? AND root=? AND unit_key=?",
                 (context, source, root, key))


def origin(conn, node_id: int) -> dict | None:
    """Where an imported node came from: source, folder, file, the note's title and the
    headings it sits under (a correction's new version answers for its lineage)."""
    lineage = nodes.lineage_ids(conn, node_id) or [node_id]
    marks = ",".join("?" * len(lineage))
    for source, root, key, ctx in conn.execute(
            f"SELECT source, root, unit_key, context FROM import_units WHERE node_id IN ({marks}) AND"
            f" unit_key NOT LIKE '{FORGOTTEN}%' ORDER BY node_id = ? DESC LIMIT 1", [*lineage, node_id]):
        found = context.decode(ctx)
        return {"source": source, "folder": root, "file": key.split("#", 1)[0],
                "note": found.get("note") or key.split("#", 1)[0].rsplit("/", 1)[-1], "headings":
                found.get("headings") or []}
    return None


def set_position(conn, source, root, key, position: int) -> None:
    conn.execute("UPDATE import_units SET position=? WHERE source=? AND root=? AND unit_key=?",
                 (position, source, root, key))


def rekey(conn, source, root, old_key, new_key, batch_id) -> None:
    """A new key for a unit (moved, renamed, given an id::); a forgotten key keeps its note's hash."""
    hashed = None if new_key.startswith(FORGOTTEN) else note_hash(new_key.split("#", 1)[0])
    conn.execute("UPDATE import_units SET unit_key=?, batch_id=?, note_hash=coalesce(?, note_hash) WHERE source=?"
                 " AND root=? AND unit_key=?", (new_key, batch_id, hashed, source, root, old_key))


def drop_unit(conn, source, root, key) -> None:
    conn.execute("DELETE FROM import_units WHERE source=? AND root=? AND unit_key=?", (source, root, key))


def change(conn, batch_id: int, action: str, *, unit_key=None, old_key=None, old_node_id=None, new_node_id=None,
           old_hash=None, **detail) -> None:
    detail, _ = secrets.mask_tree(detail)       # tag names and link targets, from the note's words
    conn.execute("INSERT INTO import_changes(batch_id, action, unit_key, old_key, old_node_id, new_node_id, old_hash,"
                 " detail) VALUES(?,?,?,?,?,?,?,?)", (batch_id, action, unit_key, old_key, old_node_id, new_node_id,
                                                      old_hash, json.dumps(detail, sort_keys=True)))


def changes(conn, batch_id: int, pending: bool = False) -> list[dict]:
    """The batch's changes, newest first (the order they are undone in); `pending`: not undone yet."""
    found = rows(conn, "SELECT * FROM import_changes WHERE batch_id=?" + (" AND undone=0" if pending else "")
                 + " ORDER BY id DESC", (batch_id,))
    for r in found:
        r["detail"] = json.loads(r["detail"])
    return found


def mark_undone(conn, change_id: int) -> None:
    conn.execute("UPDATE import_changes SET undone=1 WHERE id=?", (change_id,))


def unfinished_batches(conn, source: str, root: str) -> list[dict]:
    """Batches of the folder whose process stopped before their last chunk (an import, or a
    rollback), newest first."""
    return rows(conn, "SELECT * FROM import_batches WHERE source=? AND root=? AND status IN ('running',"
                      " 'rolling_back') ORDER BY id DESC", (source, root))


def batch(conn, batch_id: int) -> dict | None:
    found = rows(conn, "SELECT * FROM import_batches WHERE id=?", (batch_id,))
    return found[0] if found else None


def later_batches(conn, b: dict) -> list[int]:
    """Later batches of the same folder that changed something (a no-change re-sync does not count)."""
    return [r[0] for r in conn.execute(
        "SELECT id FROM import_batches WHERE source=? AND root=? AND id>? AND status IN ('done', 'interrupted')"
        " AND EXISTS (SELECT 1 FROM import_changes c WHERE c.batch_id = import_batches.id AND c.undone = 0)",
        (b["source"], b["root"], b["id"]))]


def scopes_of(conn, source: str, root: str) -> set[str]:
    """Scopes the folder's earlier batches went into."""
    return {s for (s,) in conn.execute("SELECT DISTINCT scope FROM import_batches WHERE source=? AND root=? AND"
                                       " status != 'rolled_back'", (source, root))}


def roots_of_scope(conn, scope: str) -> set[str]:
    """Folders (of any source) whose imports went into this scope."""
    return {r for (r,) in conn.execute("SELECT DISTINCT root FROM import_batches WHERE scope=? AND"
                                       " status != 'rolled_back'", (scope,))}


def set_batch_status(conn, batch_id: int, status: str) -> None:
    conn.execute("UPDATE import_batches SET status=? WHERE id=?", (status, batch_id))


def add_dangling(conn, batch_id, source, root, key, target, reason: str, ref: dict) -> None:
    target, _ = secrets.mask(target)            # a link's text, as the note wrote it
    ref, _ = secrets.mask_tree(ref)
    conn.execute("INSERT INTO import_dangling(batch_id, source, root, unit_key, target, reason, ref)"
                 " VALUES(?,?,?,?,?,?,?)", (batch_id, source, root, key, target, reason,
                                            json.dumps(ref, ensure_ascii=False, sort_keys=True)))


def dangling(conn, source: str, root: str) -> list[dict]:
    """The folder's dangling links: row id, unit key, target as written, reason, the link."""
    found = rows(conn, "SELECT rowid AS id, unit_key, target, reason, ref FROM import_dangling WHERE source=? AND"
                       " root=? ORDER BY rowid", (source, root))
    for r in found:
        r["ref"] = json.loads(r["ref"])
    return found


def dangling_of(conn, source: str, root: str, key: str) -> list[tuple[str, str, dict]]:
    """(target as written, reason, link) of one unit's dangling links, in the order written."""
    return [(t, r, json.loads(ref)) for t, r, ref in conn.execute(
        "SELECT target, reason, ref FROM import_dangling WHERE source=? AND root=? AND unit_key=? ORDER BY rowid",
        (source, root, key))]


def drop_dangling(conn, row_id: int) -> None:
    conn.execute("DELETE FROM import_dangling WHERE rowid=?", (row_id,))


def clear_dangling(conn, source, root, key) -> None:
    conn.execute("DELETE FROM import_dangling WHERE source=? AND root=? AND unit_key=?", (source, root, key))


def file_of(conn, node_id: int) -> str | None:
    """The note (root + path) a node was imported from, if any."""
    for root, key in conn.execute("SELECT root, unit_key FROM import_units WHERE node_id=?", (node_id,)):
        return f"{root}/{key.split('#', 1)[0]}"
    return None


def paths_of(conn, node_ids) -> dict[int, str]:
    """node id -> the note path (relative to its vault) it was imported from, for imported nodes."""
    ids = list(node_ids)
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for node_id, key in conn.execute(f"SELECT node_id, unit_key FROM import_units WHERE node_id IN ({marks})",
                                         chunk):
            out[node_id] = key.split("#", 1)[0]
    return out


def paths_in_scope(conn, scope: str) -> list[tuple[int, str, str]]:
    """(node id, note path relative to its vault, day of its valid_from) for the scope's visible
    imported memories (the folders they sit in say which work they belong to)."""
    pred, params = visible("n", [scope])
    return [(node_id, key.split("#", 1)[0], day) for node_id, key, day in conn.execute(
        "SELECT u.node_id, u.unit_key, substr(n.valid_from, 1, 10) FROM import_units u JOIN nodes n ON n.id = u.node_id"
        f" WHERE u.status = 'live' AND {pred} ORDER BY u.node_id", params)]


def note_paths(conn, scope: str) -> list[str]:
    """Paths (relative to their vault) of the notes imported into a scope that are still live."""
    pred, params = visible("n", [scope])
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT substr(u.unit_key, 1, instr(u.unit_key || '#', '#') - 1) FROM import_units u"
        f" JOIN nodes n ON n.id = u.node_id WHERE u.status = 'live' AND {pred}", params)]
