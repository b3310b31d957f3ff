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


OCCASION_S = 3600     # the same answer again within this long is the same occasion


def hot_since(conn: apsw.Connection, min_hits: int, limit: int) -> list[dict]:
    """Live nodes recalled at least `min_hits` times since they were last reconsolidated, with
    `company`: for each node recalled beside it, on how many occasions, an occasion being one
    answer (a question asked three times in a row is one occasion; the same answer an hour or
    more after the last one counted, or the pair recalled in other company, is another)."""
    import datetime as dt

    found = rows(conn, """
        SELECT h.node_id, count(*) AS hits, json_group_array(json_array(h.at, h.company)) AS answers
        FROM recall_hits h
        JOIN nodes n ON n.id = h.node_id AND n.status = 'live'
        LEFT JOIN derived d ON d.node_id = h.node_id AND d.field = 'reconsolidated_at'
        WHERE d.value IS NULL OR h.at > d.value
        GROUP BY h.node_id HAVING count(*) >= ? ORDER BY hits DESC LIMIT ?""", (min_hits, limit))
    for r in found:
        last: dict[str, dt.datetime] = {}          # company -> when its last counted occasion began
        counts: dict[int, int] = {}
        for at, company in sorted(tuple(a) for a in json.loads(r.pop("answers"))):
            when = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
            if company in last and (when - last[company]).total_seconds() < OCCASION_S:
                continue
            last[company] = when
            for other in json.loads(company):
                counts[other] = counts.get(other, 0) + 1
        r["company"] = counts
    return found
