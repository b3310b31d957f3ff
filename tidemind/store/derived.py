"""Derived fields: model or heuristic output about a node (title, summary, dimensions...).

Each value carries its generator and time; it is regenerable and never overwrites authored
text. Searchable fields are mirrored into `nodes.derived_text` so FTS indexes them.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Sequence

import apsw

from .. import secrets
from . import nodes
from .connection import rows
from .visibility import unheld

DDL = """
CREATE TABLE derived(
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  field TEXT NOT NULL,
  value TEXT NOT NULL,
  generator TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(node_id, field)
);
"""

HISTORY_DDL = """
CREATE TABLE derived_history(           -- earlier derived values, kept when a pass replaces one
  id INTEGER PRIMARY KEY,
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  field TEXT NOT NULL,
  value TEXT NOT NULL,
  generator TEXT NOT NULL,
  created_at TEXT NOT NULL,
  replaced_at TEXT NOT NULL
);
CREATE INDEX derived_history_node ON derived_history(node_id, field);
"""

SEARCHABLE = ("title", "summary", "keyphrases", "anchors")
# a pass's own bookkeeping, kept beside the node but not a reading of it: never shown as derived
VOCABULARY_SIZE = "vocabulary_size"       # how many memories the scope had when annotate tagged the node
RECONSOLIDATED_AT = "reconsolidated_at"   # when reconsolidate last refreshed the node (its hits count after it)
BOOKKEEPING = frozenset({VOCABULARY_SIZE, RECONSOLIDATED_AT})


def put(conn: apsw.Connection, node_id: int, field: str, value: str, generator: str, at: str) -> None:
    """Set a derived value; a different earlier value moves to derived_history (non-destructive).
    A model's answer may quote what it read or invent a key-shaped string: masked here."""
    value, _ = secrets.mask(value)
    conn.execute("INSERT INTO derived_history(node_id, field, value, generator, created_at, replaced_at)"
                 " SELECT node_id, field, value, generator, created_at, ? FROM derived"
                 " WHERE node_id = ? AND field = ? AND (value != ? OR generator != ?)",
                 (at, node_id, field, value, generator))
    conn.execute("INSERT INTO derived(node_id, field, value, generator, created_at) VALUES(?,?,?,?,?)"
                 " ON CONFLICT(node_id, field) DO UPDATE SET value=excluded.value, generator=excluded.generator,"
                 " created_at=excluded.created_at", (node_id, field, value, generator, at))
    if field in SEARCHABLE:         # the others are not in derived_text: no need to index the node again
        _mirror(conn, node_id)


def for_node(conn: apsw.Connection, node_id: int) -> dict[str, dict]:
    return {r["field"]: {"value": r["value"], "generator": r["generator"], "created_at": r["created_at"]}
            for r in rows(conn, "SELECT field, value, generator, created_at FROM derived WHERE node_id=?", (node_id,))}


def for_nodes(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, dict[str, dict]]:
    """`for_node` of many nodes in one query (recall describes twenty items at a time)."""
    out: dict[int, dict[str, dict]] = {i: {} for i in node_ids}
    if node_ids:
        marks = ",".join("?" * len(node_ids))
        for r in rows(conn, f"SELECT node_id, field, value, generator, created_at FROM derived WHERE node_id IN ({marks})",
                      list(node_ids)):
            out[r["node_id"]][r["field"]] = {"value": r["value"], "generator": r["generator"],
                                             "created_at": r["created_at"]}
    return out


def drop_field(conn: apsw.Connection, node_id: int, field: str) -> None:
    """A field and its history go (forget reached words it quoted); the mirror follows."""
    conn.execute("DELETE FROM derived WHERE node_id = ? AND field = ?", (node_id, field))
    conn.execute("DELETE FROM derived_history WHERE node_id = ? AND field = ?", (node_id, field))
    _mirror(conn, node_id)


def delete_for_node(conn: apsw.Connection, node_id: int) -> None:
    """Forget: derived values and their history quote the text; both go."""
    conn.execute("DELETE FROM derived WHERE node_id=?", (node_id,))
    conn.execute("DELETE FROM derived_history WHERE node_id=?", (node_id,))


# a date anchor: "yesterday = Sunday 21 January 2024 (2024-01-21)", "next week = week of ... (2024-01-29
# to 2024-02-04)", "last month = December 2023 (2023-12)": matched on the valid-time axis, never as
# words (a question's "2024" or "January" matched every anchored turn, and a greeting outscored the
# answer two to one)
_DATE_ANCHOR = re.compile(r"^.* = .*\((\d{4}-\d{2}(?:-\d{2})?)(?: to (\d{4}-\d{2}-\d{2}))?\)[ \t]*$")


def searchable_anchors(value: str) -> str:
    """The anchor lines that are words to search (an acronym's expansion), not dates."""
    return "\n".join(line for line in value.splitlines() if not _DATE_ANCHOR.match(line))


def anchored_days(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, list[tuple[dt.date, dt.date]]]:
    """For each node, the stretches of days its date anchors name (first, last), in one query."""
    out: dict[int, list[tuple[dt.date, dt.date]]] = {}
    ids = list(node_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for node_id, value in conn.execute(
                f"SELECT node_id, value FROM derived WHERE field = 'anchors' AND node_id IN ({marks})", chunk):
            for line in value.splitlines():
                found = _DATE_ANCHOR.match(line)
                if found:
                    span = _span(found.group(1), found.group(2))
                    if span:
                        out.setdefault(node_id, []).append(span)
    return out


def anchored_within(conn: apsw.Connection, where: str, params: Sequence, fit) -> list[int]:
    """The nodes (alias n, filtered by `where`: the visibility predicate and a stretch of valid
    time) whose date anchors fit a question's date fully (`fit(first, last)` is 1)."""
    out = []
    for node_id, value in conn.execute(
            f"SELECT n.id, d.value FROM derived d JOIN nodes n ON n.id = d.node_id WHERE d.field = 'anchors' AND {where}",
            list(params)):
        for line in value.splitlines():
            found = _DATE_ANCHOR.match(line)
            span = _span(found.group(1), found.group(2)) if found else None
            if span and fit(*span) >= 1.0:
                out.append(node_id)
                break
    return out


def _span(first: str, last: str | None) -> tuple[dt.date, dt.date] | None:
    try:
        if len(first) == 7:                                   # a month
            year, month = int(first[:4]), int(first[5:])
            begin = dt.date(year, month, 1)
            end = (dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)) if year < 9999 or month < 12 \
                else dt.date(9999, 12, 31)
            return begin, end
        return dt.date.fromisoformat(first), dt.date.fromisoformat(last) if last else dt.date.fromisoformat(first)
    except ValueError:
        return None


def unindex_date_anchors(conn: apsw.Connection) -> None:
    """Migration: date anchors leave the searchable text of the nodes that have them."""
    for (node_id,) in conn.execute("SELECT DISTINCT node_id FROM derived WHERE field = 'anchors'").fetchall():
        _mirror(conn, node_id)


def _mirror(conn: apsw.Connection, node_id: int) -> None:
    marks = ",".join("?" * len(SEARCHABLE))
    text = " \n".join(searchable_anchors(v) if field == "anchors" else v for field, v in conn.execute(
        f"SELECT field, value FROM derived WHERE node_id=? AND field IN ({marks}) ORDER BY field", (node_id, *SEARCHABLE)))
    nodes.set_derived_text(conn, node_id, text)


def outgrown(conn: apsw.Connection, field: str, generator: str, factor: float, limit: int) -> list[dict]:
    """Live nodes whose numeric `field` from `generator` is at most 1/`factor` of their scope's live
    node count now, oldest first (a tag vocabulary built from a young scope is redone as the
    scope grows: each node once per doubling)."""
    hold, params = unheld("n")
    return rows(conn, f"""
        SELECT n.id, n.content, n.scope FROM derived d JOIN nodes n ON n.id = d.node_id
        JOIN (SELECT scope, count(*) AS live FROM nodes WHERE status = 'live' GROUP BY scope) s ON s.scope = n.scope
        WHERE d.field = ? AND d.generator = ? AND n.status = 'live' AND {hold} AND CAST(d.value AS INTEGER) * ? <= s.live
        ORDER BY n.id LIMIT ?""", (field, generator, *params, factor, limit))


def nodes_missing(conn: apsw.Connection, field: str, generators: str | tuple[str, ...], limit: int) -> list[dict]:
    """Live nodes without `field` from any of `generators`, oldest first (a unit awaiting
    clarification waits: its words are not searchable yet)."""
    gens = (generators,) if isinstance(generators, str) else tuple(generators)
    marks = ",".join("?" * len(gens))
    hold, params = unheld("n")
    return rows(conn, f"""
        SELECT n.id, n.content, n.scope FROM nodes n
        WHERE n.status = 'live' AND {hold} AND NOT EXISTS (
            SELECT 1 FROM derived d WHERE d.node_id = n.id AND d.field = ? AND d.generator IN ({marks}))
        ORDER BY n.id LIMIT ?""", (*params, field, *gens, limit))


def title_sql(alias: str) -> str:
    """SQL expression: the node's derived title, else its text (a listing sorted by title)."""
    return f"coalesce((SELECT d.value FROM derived d WHERE d.node_id = {alias}.id AND d.field = 'title'), {alias}.content)"


def titles(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, str]:
    """The derived title of each node that has one (lists show thousands: title only, chunked)."""
    out: dict[int, str] = {}
    ids = list(node_ids)
    for start in range(0, len(ids), 900):
        chunk = ids[start:start + 900]
        marks = ",".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT node_id, value FROM derived WHERE field = 'title' AND node_id IN ({marks})",
                                chunk).fetchall())
    return out


def fallback_nodes(conn: apsw.Connection, since: str | None) -> list[int]:
    """Live nodes whose annotation was an offline stand-in for a model that did not answer: annotate
    labels the title, dimensions and tags it made so `<model generator>+offline-fallback`. Since
    `since` when given."""
    return [i for (i,) in conn.execute(
        "SELECT DISTINCT d.node_id FROM derived d JOIN nodes n ON n.id = d.node_id WHERE n.status = 'live'"
        " AND d.generator LIKE '%+offline-fallback' AND (? IS NULL OR d.created_at >= ?) ORDER BY d.node_id",
        (since, since))]


def release(conn: apsw.Connection, node_ids: Sequence[int], field: str, at: str) -> int:
    """Make a derived field due again (`tidemind rederive`): the value moves to derived_history,
    so the pass that writes it picks the node up; the mirror follows."""
    for node_id in node_ids:
        conn.execute("INSERT INTO derived_history(node_id, field, value, generator, created_at, replaced_at)"
                     " SELECT node_id, field, value, generator, created_at, ? FROM derived WHERE node_id = ? AND field = ?",
                     (at, node_id, field))
        conn.execute("DELETE FROM derived WHERE node_id = ? AND field = ?", (node_id, field))
        _mirror(conn, node_id)
    return len(node_ids)
