"""What recall returned: one row per returned node with the other nodes returned beside it.

Written best-effort after a recall (never waited for: a locked store drops the record), read by
the `reconsolidate` pass. Ids only, never text.
"""
from __future__ import annotations

import json
from typing import Sequence

import apsw

from .connection import rows

DDL = """
CREATE TABLE recall_hits(
  id INTEGER PRIMARY KEY,
  node_id INTEGER NOT NULL,
  at TEXT NOT NULL,
  company TEXT NOT NULL DEFAULT '[]'      -- JSON ids returned in the same answer
);
CREATE INDEX recall_hits_node ON recall_hits(node_id, at);
"""


def record(conn: apsw.Connection, node_ids: Sequence[int], at: str) -> None:
    conn.executemany("INSERT INTO recall_hits(node_id, at, company) VALUES(?,?,?)",
                     [(i, at, json.dumps([o for o in node_ids if o != i])) for i in node_ids])


def hot_since(conn: apsw.Connection, min_hits: int, limit: int) -> list[dict]:
    """Live nodes recalled at least `min_hits` times since they were last reconsolidated, with
    `company`: for each node recalled beside it, on how many occasions, an occasion being one
    answer within one hour (a question asked three times in a row is one occasion; the pair
    recalled in other company, or in another hour, is another)."""
    found = rows(conn, """
        SELECT h.node_id, count(*) AS hits, json_group_array(json_array(substr(h.at, 1, 13), h.company)) AS answers
        FROM recall_hits h
        JOIN nodes n ON n.id = h.node_id AND n.status = 'live'
        LEFT JOIN derived d ON d.node_id = h.node_id AND d.field = 'reconsolidated_at'
        WHERE d.value IS NULL OR h.at > d.value
        GROUP BY h.node_id HAVING count(*) >= ? ORDER BY hits DESC LIMIT ?""", (min_hits, limit))
    for r in found:
        counts: dict[int, int] = {}
        for _hour, company in {tuple(a) for a in json.loads(r.pop("answers"))}:
            for other in json.loads(company):
                counts[other] = counts.get(other, 0) + 1
        r["company"] = counts
    return found
