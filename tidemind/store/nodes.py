"""Nodes (memory units with authored text) and node versions (the lineage of corrections).

A correction never edits a node's text: it adds a node that supersedes the old one, and the
pair share a lineage in `node_versions`. Only `erase` (the forget path) blanks text.
"""
from __future__ import annotations

from typing import Sequence

import apsw

from .. import secrets
from ..text import forget_cached
from . import fts
from .connection import changed, inserted, rows, scalar
from .visibility import AsOf, unheld, visible

DDL = """
CREATE TABLE nodes(
  id INTEGER PRIMARY KEY,
  capture_id INTEGER REFERENCES captures(id),
  unit_index INTEGER NOT NULL DEFAULT 0,      -- position of this unit within its capture
  capture_start INTEGER,                      -- the unit is captures.content[capture_start:capture_end]
  capture_end INTEGER,
  content TEXT NOT NULL,                      -- authored text, verbatim ('' once forgotten)
  content_hash TEXT NOT NULL,                 -- sha256 of content; the tombstone after forget
  norm_hash TEXT NOT NULL,                    -- sha256 of case/space/punctuation-folded text (correction stickiness)
  scope TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'live' CHECK(status IN ('live','archived','superseded','forgotten')),
  kind TEXT NOT NULL DEFAULT 'memory',
  source_tool TEXT,
  session TEXT,
  recorded_at TEXT NOT NULL,
  superseded_at TEXT,
  valid_from TEXT NOT NULL,
  valid_to TEXT,
  superseded_by INTEGER REFERENCES nodes(id),
  heat REAL NOT NULL DEFAULT 1.0,
  derived_text TEXT NOT NULL DEFAULT ''       -- index layer: searchable derived fields, rebuilt from `derived`
);
CREATE INDEX nodes_scope_status ON nodes(scope, status, recorded_at);
CREATE INDEX nodes_scope_id ON nodes(scope, id);
CREATE INDEX nodes_capture ON nodes(capture_id, unit_index);
CREATE INDEX nodes_session ON nodes(session, id) WHERE session IS NOT NULL;
CREATE INDEX nodes_norm_hash ON nodes(norm_hash);

CREATE TABLE node_versions(
  node_id INTEGER PRIMARY KEY REFERENCES nodes(id),
  lineage_id INTEGER NOT NULL,                -- id of the first node of the lineage
  version INTEGER NOT NULL,
  reason TEXT NOT NULL,                       -- 'digest' | 'correct' | 'import'
  actor TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE(lineage_id, version)
);
"""

# index layer: where an imported unit sits in its note (title, headings, properties), set by the
# importer, searchable (fts.CONTEXT_REBUILD), never part of the authored text
CONTEXT_DDL = "ALTER TABLE nodes ADD COLUMN context_text TEXT NOT NULL DEFAULT '';"

# each memory's scope as one token of the full-text index (fts.SCOPE_REBUILD, fts.scope_token):
# computed, never written, so it cannot disagree with `scope`
SCOPE_KEY_DDL = """
ALTER TABLE nodes ADD COLUMN scope_key TEXT GENERATED ALWAYS AS ('s' || lower(hex(scope)) || '0') VIRTUAL;
"""

COLUMNS = ("id", "capture_id", "unit_index", "capture_start", "capture_end", "content", "content_hash", "scope", "status", "kind",
           "source_tool", "session", "recorded_at", "superseded_at", "valid_from", "valid_to",
           "superseded_by", "heat", "derived_text", "clarified_text", "held_until", "context_text")
_SELECT = ", ".join(f"n.{c}" for c in COLUMNS)


def insert(conn: apsw.Connection, *, capture_id: int | None, unit_index: int, content: str, content_hash: str,
           norm_hash: str, scope: str, source_tool: str | None, session: str | None, recorded_at: str,
           valid_from: str, kind: str = "memory", reason: str = "digest", actor: str = "cli",
           lineage_of: int | None = None, span: tuple[int, int] | None = None, context_text: str = "") -> int:
    secrets.require_masked(content, "the nodes table")
    secrets.require_masked(context_text, "the nodes table")     # (the importer masks a unit's context)
    source_tool, session = secrets.mask_optional(source_tool), secrets.mask_optional(session)   # as captures
    start, end = span if span is not None else (0, len(content))
    node_id = inserted(
        conn,
        "INSERT INTO nodes(capture_id, unit_index, capture_start, capture_end, content, content_hash, norm_hash, scope,"
        " kind, source_tool, session, recorded_at, valid_from, context_text) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (capture_id, unit_index, start, end, content, content_hash, norm_hash, scope, kind, source_tool, session,
         recorded_at, valid_from, context_text))
    fts.count_document(conn, scope, content, +1)
    if lineage_of is None:
        lineage, version = node_id, 1
    else:
        lineage, prev = next(iter(conn.execute(
            "SELECT lineage_id, version FROM node_versions WHERE node_id=?", (lineage_of,))))
        version = scalar(conn, "SELECT max(version) FROM node_versions WHERE lineage_id=?", (lineage,)) + 1
    conn.execute("INSERT INTO node_versions(node_id, lineage_id, version, reason, actor, created_at)"
                 " VALUES(?,?,?,?,?,?)", (node_id, lineage, version, reason, actor, recorded_at))
    return node_id


def get_any(conn: apsw.Connection, node_id: int) -> dict | None:
    """Raw row whatever its status or scope: for write paths that must check state themselves."""
    found = rows(conn, f"SELECT {_SELECT} FROM nodes n WHERE n.id=?", (node_id,))
    return found[0] if found else None


def get_any_many(conn: apsw.Connection, node_ids: Sequence[int]) -> list[dict]:
    """Raw rows of these nodes whatever their status or scope, in id order."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    return rows(conn, f"SELECT {_SELECT} FROM nodes n WHERE n.id IN ({marks}) ORDER BY n.id", list(node_ids))


def get_visible(conn: apsw.Connection, node_ids: Sequence[int], scopes: Sequence[str],
                as_of: AsOf | None = None, also: tuple[str, Sequence] | None = None) -> dict[int, dict]:
    """Rows for the ids that pass the live-and-in-scope predicate (and `also`, a caller's filter on
    alias n: tags, source); the others are simply absent."""
    if not node_ids:
        return {}
    pred, params = visible("n", scopes, as_of)
    if also is not None:
        pred, params = f"{pred} AND ({also[0]})", [*params, *also[1]]
    marks = ",".join("?" * len(node_ids))
    found = rows(conn, f"SELECT {_SELECT} FROM nodes n WHERE n.id IN ({marks}) AND {pred}",
                 [*node_ids, *params])
    return {r["id"]: r for r in found}


def visible_in_scope(conn: apsw.Connection, scope: str) -> dict[int, dict]:
    """Every row of `scope` that passes the live-and-in-scope predicate (for passes over a whole scope)."""
    pred, params = visible("n", [scope])
    return {r["id"]: r for r in rows(conn, f"SELECT {_SELECT} FROM nodes n WHERE {pred}", params)}


def unforgotten_texts(conn: apsw.Connection) -> list[tuple[int, str, str]]:
    """(id, scope, content) of every node that still has its text (a backfill reads them all)."""
    return list(conn.execute("SELECT id, scope, content FROM nodes WHERE status != 'forgotten' ORDER BY id"))


def visible_hashes(conn: apsw.Connection, scope: str) -> dict[int, str]:
    """id -> content_hash of every visible node of the scope (a pass that keeps statistics over a
    scope's texts sees from this which memories came, went or changed since it last counted)."""
    pred, params = visible("n", [scope])
    return dict(conn.execute(f"SELECT n.id, n.content_hash FROM nodes n WHERE {pred}", params))


def held_among(conn: apsw.Connection, node_ids: Sequence[int]) -> set[int]:
    """The ids a clarifying question holds out of search right now (the hold rule of `visible`)."""
    if not node_ids:
        return set()
    hold, params = unheld("nodes")
    marks = ",".join("?" * len(node_ids))
    return {i for (i,) in conn.execute(f"SELECT id FROM nodes WHERE id IN ({marks}) AND NOT {hold}",
                                       [*node_ids, *params])}


def live_among(conn: apsw.Connection, node_ids: Sequence[int]) -> set[int]:
    """The ids whose status is live (write paths; reads use `visible`)."""
    if not node_ids:
        return set()
    marks = ",".join("?" * len(node_ids))
    return {i for (i,) in conn.execute(f"SELECT id FROM nodes WHERE id IN ({marks}) AND status = 'live'",
                                       list(node_ids))}


def set_status(conn: apsw.Connection, node_id: int, status: str) -> None:
    conn.execute("UPDATE nodes SET status=? WHERE id=?", (status, node_id))


def supersede(conn: apsw.Connection, old_id: int, new_id: int, at: str) -> None:
    """The old version stops being recorded as current now, and its fact stops holding when the
    new one's starts (a dated correction: it held until then; an undated one inherits the old
    start, so the old fact held never: it was a mistake)."""
    conn.execute("UPDATE nodes SET status='superseded', superseded_at=?, superseded_by=?,"
                 " valid_to=max(valid_from, (SELECT s.valid_from FROM nodes s WHERE s.id = ?)) WHERE id=?",
                 (at, new_id, new_id, old_id))


# stores written before supersede closed the valid time of what it replaced
SUPERSEDED_VALID_TO = """
UPDATE nodes SET valid_to = max(valid_from, (SELECT s.valid_from FROM nodes s WHERE s.id = nodes.superseded_by))
WHERE status = 'superseded' AND superseded_by IS NOT NULL AND valid_to IS NULL;
"""


def erase(conn: apsw.Connection, node_id: int) -> None:
    """Forget: blank the authored and derived text; hashes stay as the tombstone."""
    for scope, *texts in conn.execute("SELECT scope, content, derived_text, clarified_text, context_text FROM nodes"
                                      " WHERE id=?", (node_id,)).fetchall():
        fts.count_document(conn, scope, texts[0], -1)
        for text in texts:              # every column a recall reads is kept by text (fts.stem_counts)
            if text:
                forget_cached(text)
    conn.execute("UPDATE nodes SET content='', derived_text='', clarified_text='', context_text='', held_until=NULL,"
                 " status='forgotten' WHERE id=?", (node_id,))


def set_derived_text(conn: apsw.Connection, node_id: int, text: str) -> None:
    # the FTS trigger re-indexes the whole node on any write of the column, equal or not
    conn.execute("UPDATE nodes SET derived_text=? WHERE id=? AND derived_text IS NOT ?", (text, node_id, text))


def set_context_text(conn: apsw.Connection, node_id: int, text: str) -> None:
    secrets.require_masked(text, "the nodes table")
    conn.execute("UPDATE nodes SET context_text=? WHERE id=? AND status != 'forgotten'", (text, node_id))


def versions(conn: apsw.Connection, node_id: int) -> list[dict]:
    """Every version in the node's lineage, oldest first (text included only while not forgotten)."""
    return rows(conn, """
        SELECT v.version, v.node_id AS id, v.reason, v.actor, n.status, n.content, n.recorded_at, n.superseded_at
        FROM node_versions v JOIN nodes n ON n.id = v.node_id
        WHERE v.lineage_id = (SELECT lineage_id FROM node_versions WHERE node_id=?)
        ORDER BY v.version""", (node_id,))


def lineage_ids(conn: apsw.Connection, node_id: int) -> list[int]:
    return [r[0] for r in conn.execute(
        "SELECT node_id FROM node_versions WHERE lineage_id=(SELECT lineage_id FROM node_versions WHERE node_id=?)",
        (node_id,))]


def family_ids(conn: apsw.Connection, node_id: int) -> list[int]:
    """Every node that carries an earlier form of this memory's words: its correction lineage,
    the nodes merged into any of them, and their lineages in turn (a merge supersedes the older
    node by the newer without sharing a lineage). Forget erases all of them."""
    family: set[int] = set()
    frontier = [node_id]
    while frontier:
        found = set()
        for member in frontier:
            found.update(lineage_ids(conn, member) or [member])
        marks = ",".join("?" * len(found))
        found.update(r[0] for r in conn.execute(f"SELECT id FROM nodes WHERE superseded_by IN ({marks})", list(found)))
        frontier = sorted(found - family)
        family |= found
    return sorted(family)


def of_capture(conn: apsw.Connection, capture_id: int) -> list[dict]:
    return rows(conn, "SELECT id, status, capture_start, capture_end FROM nodes WHERE capture_id=? ORDER BY unit_index",
                (capture_id,))


def shift_spans(conn: apsw.Connection, capture_id: int, after: int, delta: int) -> None:
    """After a redaction changed the capture's length, move the spans of the units that follow."""
    conn.execute("UPDATE nodes SET capture_start = capture_start + ?, capture_end = capture_end + ?"
                 " WHERE capture_id = ? AND capture_start >= ?", (delta, delta, capture_id, after))


def window_start(conn: apsw.Connection, scopes: Sequence[str], size: int) -> int:
    """Smallest id among the newest `size` nodes of each scope (0 when a scope has fewer)."""
    starts = []
    for scope in scopes:
        found = [r[0] for r in conn.execute("SELECT id FROM nodes WHERE scope = ? ORDER BY id DESC LIMIT 1 OFFSET ?",
                                            (scope, size))]
        starts.append(found[0] if found else 0)
    return min(starts, default=0)


def corrected_away(conn: apsw.Connection, scope: str, norm_hash: str) -> list[dict]:
    """Nodes in `scope` with this folded text that a correction replaced."""
    return rows(conn, """
        SELECT n.id, n.superseded_by FROM nodes n JOIN node_versions v ON v.node_id = n.superseded_by
        WHERE n.norm_hash=? AND n.scope=? AND n.status='superseded' AND v.reason='correct'""",
                (norm_hash, scope))


def has_corrections(conn: apsw.Connection, scope: str) -> bool:
    return bool(scalar(conn, "SELECT 1 FROM nodes WHERE scope=? AND status='superseded' LIMIT 1", (scope,)))


def superseded_in_scope(conn: apsw.Connection, scope: str, ids: Sequence[int]) -> list[dict]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return rows(conn, f"""
        SELECT n.id, n.content, n.superseded_by FROM nodes n JOIN node_versions v ON v.node_id = n.superseded_by
        WHERE n.id IN ({marks}) AND n.scope=? AND n.status='superseded' AND v.reason='correct'""", [*ids, scope])


def neighbours(conn: apsw.Connection, node_ids: Sequence[int], scopes: Sequence[str],
               as_of: AsOf | None = None, reach: int = 1) -> list[tuple[int, int, str, int]]:
    """(seed, neighbour, why, offset): the `reach` nearest visible sibling units of the seed's
    capture before (offset -1, -2, ... by unit order) and after it (1, 2, ...), then the `reach`
    nearest visible digests of its session (other captures) before and after it, nearest first.
    Ids grow with time, so "before" is a smaller id of the same session. One statement for all
    seeds (recall asks for the neighbours of thirty hits per query).
    """
    if not node_ids:
        return []
    pred, params = visible("m", scopes, as_of)
    marks = ",".join("?" * len(node_ids))
    sides = [("capture", "m.capture_id = s.capture_id AND m.unit_index < s.unit_index", "m.unit_index", "DESC", -1),
             ("capture", "m.capture_id = s.capture_id AND m.unit_index > s.unit_index", "m.unit_index", "ASC", 1),
             ("session", "m.session = s.session AND m.id < s.id AND m.capture_id IS NOT s.capture_id", "m.id", "DESC", -1),
             ("session", "m.session = s.session AND m.id > s.id AND m.capture_id IS NOT s.capture_id", "m.id", "ASC", 1)]
    columns = ", ".join(f"(SELECT group_concat(id, ',' ORDER BY k {direction}) FROM (SELECT m.id, {key} AS k FROM nodes m"
                        f" WHERE {cond} AND {pred} ORDER BY {key} {direction} LIMIT {int(reach)}))"
                        for _, cond, key, direction, _ in sides)
    sql = f"SELECT s.id, {columns} FROM nodes s WHERE s.id IN ({marks})"
    out: list[tuple[int, int, str, int]] = []
    for seed, *found in conn.execute(sql, [*params * len(sides), *node_ids]):
        for (why, _, _, _, sign), ids in zip(sides, found):
            if ids:
                out += [(seed, int(m), why, sign * d) for d, m in enumerate(ids.split(","), start=1)]
    return out


def count_by_status(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> dict[str, int]:
    counts = {"live": 0, "archived": 0, "superseded": 0, "forgotten": 0}
    if scopes:
        marks = ",".join("?" * len(scopes))
        q = conn.execute(f"SELECT status, count(*) FROM nodes WHERE scope IN ({marks}) GROUP BY status", list(scopes))
    else:
        q = conn.execute("SELECT status, count(*) FROM nodes GROUP BY status")
    for status, n in q:
        counts[status] = n
    # live units held out of search with a clarifying question (counted within `live`)
    hold, params = unheld("nodes")
    where = f" AND scope IN ({','.join('?' * len(scopes))})" if scopes else ""
    counts["awaiting_clarification"] = scalar(conn, f"SELECT count(*) FROM nodes WHERE status = 'live'"
                                                    f" AND held_until IS NOT NULL AND NOT {hold}{where}",
                                              [*params, *(scopes or [])])
    return counts


def scopes_in_use(conn: apsw.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT scope FROM nodes ORDER BY scope")]


def recent(conn: apsw.Connection, scopes: Sequence[str], limit: int, columns: Sequence[str] | None = None) -> list[dict]:
    """The newest visible nodes of the scopes, newest first (only `columns`, when given)."""
    pred, params = visible("n", scopes)
    select = ", ".join(f"n.{c}" for c in columns if c in COLUMNS) if columns else _SELECT
    return rows(conn, f"SELECT {select} FROM nodes n WHERE {pred} ORDER BY n.id DESC LIMIT ?", [*params, limit])


def decay_heat(conn: apsw.Connection, factor: float) -> int:
    """Heat is a ranking prior, not content: cooling changes no authored text."""
    return changed(conn, "UPDATE nodes SET heat = heat * ? WHERE status = 'live' AND heat > 0.0001", (factor,))


def restore(conn: apsw.Connection, node_id: int) -> None:
    """Undo a supersession that a person took back (an unapproved merge)."""
    conn.execute("UPDATE nodes SET status='live', superseded_at=NULL, superseded_by=NULL, valid_to=NULL WHERE id=?",
                 (node_id,))


def merged_into(conn: apsw.Connection, node_id: int) -> list[dict]:
    """Nodes a person merged into this one (not of its correction lineage), as version entries."""
    return rows(conn, """
        SELECT 0 AS version, n.id, 'merge' AS reason, NULL AS actor, n.status, n.content, n.recorded_at,
               n.superseded_at
        FROM nodes n JOIN node_versions v ON v.node_id = n.id
        WHERE n.superseded_by = ? AND v.lineage_id != (SELECT lineage_id FROM node_versions WHERE node_id = ?)
        ORDER BY n.id""", (node_id, node_id))


def confirmed_edges_live(conn: apsw.Connection) -> list[tuple[int, int, float, str, str]]:
    """(a, b, strength, scope of a, scope of b) for confirmed links between live nodes (none
    awaiting clarification: a crystal would quote words that are not searchable yet). A link with
    no strength is one a person or their notes made: as strong as a link gets (1.0)."""
    hold_a, pa = unheld("a")
    hold_b, pb = unheld("b")
    return [tuple(r) for r in conn.execute(f"""
        SELECT l.source_id, l.target_id, COALESCE(l.strength, 1.0), a.scope, b.scope FROM links l
        JOIN nodes a ON a.id = l.source_id JOIN nodes b ON b.id = l.target_id
        WHERE l.status = 'confirmed' AND a.status = 'live' AND b.status = 'live' AND {hold_a} AND {hold_b}""",
        [*pa, *pb])]


# the workstream view reads a scope's memories day by day (by when their fact began)
VALID_DAY_DDL = "CREATE INDEX nodes_scope_valid ON nodes(scope, valid_from);"


def scope_days(conn: apsw.Connection, node_ids: Sequence[int]) -> set[tuple[str, str]]:
    """(scope, day of valid_from) of these nodes, whatever their status."""
    out: set[tuple[str, str]] = set()
    ids = list(node_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        out |= {(s, d) for s, d in conn.execute(
            f"SELECT scope, substr(valid_from, 1, 10) FROM nodes WHERE id IN ({marks})", chunk)}
    return out


def all_scope_days(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> set[tuple[str, str]]:
    if scopes:
        marks = ",".join("?" * len(scopes))
        q = conn.execute(f"SELECT DISTINCT scope, substr(valid_from, 1, 10) FROM nodes WHERE scope IN ({marks})",
                         list(scopes))
    else:
        q = conn.execute("SELECT DISTINCT scope, substr(valid_from, 1, 10) FROM nodes")
    return {(s, d) for s, d in q}


def days_of(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, str]:
    """id -> the day of its valid_from (the day a workstream composition counts it on)."""
    ids = list(node_ids)
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT id, substr(valid_from, 1, 10) FROM nodes WHERE id IN ({marks})", chunk))
    return out


def live_on_day(conn: apsw.Connection, scope: str, day: str) -> list[int]:
    """Visible nodes of the scope whose fact began on `day` (valid_from's date), oldest first."""
    pred, params = visible("n", [scope])
    return [r[0] for r in conn.execute(f"SELECT n.id FROM nodes n WHERE {pred} AND n.valid_from >= ?"
                                       f" AND n.valid_from < ? ORDER BY n.id", [*params, day, day + "\uffff"])]


def valid_days_with_held(conn: apsw.Connection, scope: str) -> set[str]:
    """Days (of valid_from) on which a live unit of the scope still awaits clarification: their
    digests wait for the answer (a digest must not quote words that are not searchable yet)."""
    hold, params = unheld("nodes")
    return {d for (d,) in conn.execute(f"SELECT DISTINCT substr(valid_from, 1, 10) FROM nodes WHERE scope = ? AND"
                                       f" status = 'live' AND NOT {hold}", (scope, *params))}


def ids_by_valid_day(conn: apsw.Connection, scope: str) -> dict[str, list[int]]:
    """{day of valid_from: ids} of the scope's visible nodes, oldest id first: digests are keyed on
    when a fact held, so a memory digested today about last Tuesday counts for last Tuesday."""
    out: dict[str, list[int]] = {}
    pred, params = visible("n", [scope])
    for node_id, day in conn.execute(f"SELECT n.id, substr(n.valid_from, 1, 10) FROM nodes n WHERE {pred}"
                                     " ORDER BY n.id", params):
        out.setdefault(day, []).append(node_id)
    return out


def live_heads(conn: apsw.Connection, lineage_ids: Sequence[int]) -> dict[int, int]:
    """{lineage id: its live version's id} for the lineages that have one."""
    if not lineage_ids:
        return {}
    marks = ",".join("?" * len(lineage_ids))
    return {lin: nid for lin, nid in conn.execute(
        f"SELECT v.lineage_id, n.id FROM node_versions v JOIN nodes n ON n.id = v.node_id"
        f" WHERE v.lineage_id IN ({marks}) AND n.status = 'live'", list(lineage_ids))}


def corrections(conn: apsw.Connection, limit: int) -> list[tuple[int, int, str]]:
    """(correcting node, the node it replaced, scope) for every correction whose lineage still
    has a live version (a chain of corrections yields one pair per step), newest first."""
    return [tuple(r) for r in conn.execute("""
        SELECT n.id, o.id, n.scope FROM node_versions v JOIN nodes n ON n.id = v.node_id
        JOIN nodes o ON o.superseded_by = n.id
        WHERE v.reason = 'correct' AND n.status IN ('live', 'superseded')
          AND EXISTS (SELECT 1 FROM node_versions w JOIN nodes m ON m.id = w.node_id
                      WHERE w.lineage_id = v.lineage_id AND m.status = 'live')
        ORDER BY n.id DESC LIMIT ?""", (limit,))]


def warm(conn: apsw.Connection, node_ids: Sequence[int]) -> None:
    """A recalled node gets warmer (heat is a ranking prior, capped at 1)."""
    conn.executemany("UPDATE nodes SET heat = min(1.0, heat + 0.1) WHERE id = ? AND status = 'live'",
                     [(i,) for i in node_ids])


def none_forgotten(conn: apsw.Connection, node_ids: Sequence[int]) -> bool:
    """Checked inside a write transaction by passes that read text earlier: a forget that landed
    meanwhile must not have its text written back into a derived row."""
    if not node_ids:
        return True
    marks = ",".join("?" * len(node_ids))
    return not any(conn.execute(f"SELECT 1 FROM nodes WHERE id IN ({marks}) AND status = 'forgotten' LIMIT 1",
                                list(node_ids)))


LISTED = ("id", "scope", "status", "recorded_at", "valid_from", "content", "heat")


def listing(conn: apsw.Connection, pred: str, params: Sequence, order_sql: str, offset: int,
            limit: int) -> tuple[list[dict], int]:
    """One page of the nodes matching `pred` (a fragment built by `visibility` and the modules
    that own any further filter) in `order_sql`, and how many match in all."""
    total = scalar(conn, f"SELECT count(*) FROM nodes n WHERE {pred}", list(params))
    found = rows(conn, f"SELECT {', '.join('n.' + c for c in LISTED)} FROM nodes n WHERE {pred}"
                       f" ORDER BY {order_sql} LIMIT ? OFFSET ?", [*params, int(limit), int(offset)])
    return found, total


def count_by_scope(conn: apsw.Connection, pred: str, params: Sequence) -> dict[str, int]:
    return dict(conn.execute(f"SELECT n.scope, count(*) FROM nodes n WHERE {pred} GROUP BY n.scope ORDER BY n.scope",
                             list(params)).fetchall())


def visible_ids(conn: apsw.Connection, scopes: Sequence[str], filters: Sequence[tuple[str, list]] = ()) -> list[int]:
    """Ids of every visible node of the scopes (a whole-scope graph), narrowed by `filters`."""
    pred, params = visible("n", scopes)
    for sql, more in filters:
        pred, params = f"{pred} AND {sql}", [*params, *more]
    return [r[0] for r in conn.execute(f"SELECT n.id FROM nodes n WHERE {pred} ORDER BY n.id", params)]


def get_visible_many(conn: apsw.Connection, node_ids: Sequence[int], scopes: Sequence[str],
                     columns: Sequence[str] = LISTED) -> dict[int, dict]:
    """`get_visible` for thousands of ids (chunked under SQLite's variable limit), fewer columns."""
    pred, params = visible("n", scopes)
    select = ", ".join(f"n.{c}" for c in columns if c in COLUMNS)
    out: dict[int, dict] = {}
    ids = list(node_ids)
    for start in range(0, len(ids), 900):
        chunk = ids[start:start + 900]
        marks = ",".join("?" * len(chunk))
        for r in rows(conn, f"SELECT {select} FROM nodes n WHERE n.id IN ({marks}) AND {pred}", [*chunk, *params]):
            out[r["id"]] = r
    return out


def lineages(conn: apsw.Connection, node_ids: Sequence[int]) -> list[int]:
    """The sorted lineage ids of these nodes (a node without a version row is its own lineage):
    what a synthesis is about survives a correction of one of its members."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    found = dict(conn.execute(f"SELECT node_id, lineage_id FROM node_versions WHERE node_id IN ({marks})",
                              list(node_ids)))
    return sorted({found.get(i, i) for i in node_ids})


def superseded_among(conn: apsw.Connection, node_ids: Sequence[int]) -> set[int]:
    if not node_ids:
        return set()
    marks = ",".join("?" * len(node_ids))
    return {i for (i,) in conn.execute(f"SELECT id FROM nodes WHERE id IN ({marks}) AND status = 'superseded'",
                                       list(node_ids))}


def hash_mismatches(conn: apsw.Connection) -> list[int]:
    """Nodes whose authored text no longer matches the hash taken when it was written: changed
    outside a correction (doctor, and restore's check of a backup)."""
    from ..text import sha256

    return [i for i, c, h in conn.execute("SELECT id, content, content_hash FROM nodes WHERE status != 'forgotten'")
            if sha256(c) != h]


def author_kind(actor: str | None) -> str:
    """Who wrote a memory, as a reader should weigh it: `person` (typed by a person: the CLI, the
    desktop), `import` (a person's notes, brought in by an importer), `agent` (an agent through
    MCP or a hook), or `system` (anything else: the daemon, a merge)."""
    actor = actor or ""
    if actor == "cli" or actor.startswith("person:"):
        return "person"
    if actor.startswith("importer:"):
        return "import"
    if actor.startswith(("mcp", "hook", "proxy")):
        return "agent"
    return "system"


def authors(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, str]:
    """node id → author_kind of the version that wrote it."""
    ids = list(dict.fromkeys(node_ids))
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        for node_id, actor in conn.execute(f"SELECT node_id, actor FROM node_versions WHERE node_id IN"
                                           f" ({','.join('?' * len(chunk))})", chunk):
            out[node_id] = author_kind(actor)
    return {i: out.get(i, "system") for i in ids}


def groups(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, str]:
    """Each node's group: its session when it has one, else its capture (a note's sections)."""
    ids = list(dict.fromkeys(node_ids))
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        for node_id, session, capture in conn.execute(f"SELECT id, session, capture_id FROM nodes WHERE id IN"
                                                      f" ({','.join('?' * len(chunk))})", chunk):
            out[node_id] = f"session:{session}" if session else f"capture:{capture}"
    return out



def speaker_labels(conn: apsw.Connection, scope: str) -> list[str]:
    """The distinct "Name:" openings of the scope's visible memories (candidates: the caller
    checks them as speaker labels). One pass over the scope."""
    pred, params = visible("n", [scope])
    return [label for (label,) in conn.execute(
        "SELECT DISTINCT substr(n.content, 1, instr(n.content, ': ') - 1) FROM nodes n"
        f" WHERE {pred} AND instr(n.content, ': ') BETWEEN 2 AND 64", params)]


def with_slashed_dates(conn: apsw.Connection, scopes: Sequence[str], limit: int = 2000) -> list[str]:
    """The newest visible memories of these scopes that write a date with slashes (05/07/2023),
    for how their people write dates."""
    if not scopes:
        return []
    pred, params = visible("n", scopes)
    return [c for (c,) in conn.execute(
        f"SELECT n.content FROM nodes n WHERE {pred} AND n.content GLOB '*[0-9]/[0-9]*/[0-9][0-9]*'"
        " ORDER BY n.id DESC LIMIT ?", [*params, limit])]


def gone_count(conn: apsw.Connection, scope: str) -> int:
    """How many of the scope's memories are archived, superseded or forgotten (an index range:
    it changes when a memory leaves the live set, where the scope's counts may not)."""
    return scalar(conn, "SELECT count(*) FROM nodes WHERE scope = ? AND status IN ('archived','superseded','forgotten')",
                  (scope,)) or 0


def newest_id(conn: apsw.Connection) -> int:
    return scalar(conn, "SELECT max(id) FROM nodes") or 0
