"""The FTS5 index: external content over `nodes` (authored text + mirrored derived text).

Triggers keep it in step with `nodes`, so no write path can forget to index. User text never
reaches MATCH as syntax: `match_expression` quotes every token.
"""
from __future__ import annotations

import re
from typing import Sequence

import apsw

DDL = """
CREATE VIRTUAL TABLE nodes_fts USING fts5(
  content, derived_text, content='nodes', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER nodes_fts_ai AFTER INSERT ON nodes BEGIN
  INSERT INTO nodes_fts(rowid, content, derived_text) VALUES (new.id, new.content, new.derived_text);
END;
CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text) VALUES ('delete', old.id, old.content, old.derived_text);
END;
CREATE TRIGGER nodes_fts_au AFTER UPDATE OF content, derived_text ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text) VALUES ('delete', old.id, old.content, old.derived_text);
  INSERT INTO nodes_fts(rowid, content, derived_text) VALUES (new.id, new.content, new.derived_text);
END;
"""

# authored text counts double the derived text (a model's title should not outrank what was said)
WEIGHTS = (1.0, 0.5)
_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text or "")]


def match_expression(terms: Sequence[str]) -> str | None:
    """OR of quoted terms: FTS5 syntax characters in user text become plain tokens."""
    unique = list(dict.fromkeys(t for t in terms if t))
    if not unique:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


def search(conn: apsw.Connection, expression: str, where: str, params: Sequence, limit: int) -> list[tuple[int, float]]:
    """(node_id, bm25) best first; `where` (the visibility predicate and filters on alias n) is applied before LIMIT."""
    sql = (f"SELECT n.id, bm25(nodes_fts, {WEIGHTS[0]}, {WEIGHTS[1]}) AS s FROM nodes_fts"
           f" JOIN nodes n ON n.id = nodes_fts.rowid WHERE nodes_fts MATCH ? AND {where} ORDER BY s LIMIT ?")
    return [(i, s) for i, s in conn.execute(sql, [expression, *params, limit])]


def bare_search(conn: apsw.Connection, expression: str, limit: int) -> list[tuple[int, float]]:
    """The physical floor: the FTS5 query alone, no join, no predicate (bench only)."""
    return list(conn.execute("SELECT rowid, bm25(nodes_fts) AS s FROM nodes_fts WHERE nodes_fts MATCH ?"
                             " ORDER BY s LIMIT ?", (expression, limit)))


def purge_deleted(conn: apsw.Connection) -> None:
    """Merge all segments so deleted entries (forgotten text) leave the index's pages."""
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize')")


def integrity_problems(conn: apsw.Connection) -> list[str]:
    try:
        conn.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('integrity-check', 1)")
    except apsw.Error as exc:
        return [f"fts: {exc}"]
    return []


def rebuild(conn: apsw.Connection) -> None:
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild')")
