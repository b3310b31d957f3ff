"""Review items: what waits for a person (merges, crystals, contradictions, re-asserted corrections)."""
from __future__ import annotations

import json
from typing import Sequence

import apsw

from .. import secrets
from .connection import inserted, rows

DDL = """
CREATE TABLE review_items(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,                  -- 'contradiction' | 'proposed_lesson' | 'merge' | 'crystal' | ...
  scope TEXT,                          -- for items not tied to a node (proposed lessons)
  digest TEXT,                         -- sha256 identifying the proposal, to avoid filing it twice
  status TEXT NOT NULL DEFAULT 'open' CHECK(status IN ('open','approved','rejected')),
  node_id INTEGER REFERENCES nodes(id),
  other_node_id INTEGER REFERENCES nodes(id),
  payload TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  resolved_at TEXT,
  resolved_by TEXT
);
CREATE INDEX review_open ON review_items(status, kind);
CREATE INDEX review_node ON review_items(node_id);
"""


def file(conn: apsw.Connection, kind: str, *, node_id: int | None, other_node_id: int | None, at: str,
         scope: str | None = None, digest: str | None = None, **payload) -> int:
    """File an item. Payloads quote text from outside the store's masked layers (a transcript the
    stop hook read, a model's answer): every string in it is masked here, whoever the caller."""
    payload, _ = secrets.mask_tree(payload)
    return inserted(conn, "INSERT INTO review_items(kind, scope, digest, node_id, other_node_id, payload, created_at)"
                          " VALUES(?,?,?,?,?,?,?)",
                          (kind, scope, digest, node_id, other_node_id, json.dumps(payload, sort_keys=True), at))


def set_payload_key(conn: apsw.Connection, item_id: int, key: str, value) -> None:
    """Note on an item what applying its decision did (so a reopen undoes only that)."""
    payload = json.loads(conn.execute("SELECT payload FROM review_items WHERE id=?", (item_id,)).fetchone()[0])
    payload[key] = secrets.mask_tree(value)[0]
    conn.execute("UPDATE review_items SET payload=? WHERE id=?", (json.dumps(payload, sort_keys=True), item_id))


def remask_payloads(conn: apsw.Connection) -> list[tuple[str, str, str]]:
    """Mask the payloads stored before `file` masked them (a migration). Returns (scope, said
    before, said after) for each repeated-failure proposal whose text changed: the lesson made
    from it is keyed by that text."""
    renamed = []
    for item_id, scope, raw in conn.execute("SELECT id, scope, payload FROM review_items").fetchall():
        before = json.loads(raw)
        after, kinds = secrets.mask_tree(before)
        if not kinds:
            continue
        conn.execute("UPDATE review_items SET payload=? WHERE id=?", (json.dumps(after, sort_keys=True), item_id))
        if isinstance(before, dict) and before.get("finding") == "repeated_failure":
            renamed.append((scope, before.get("said", ""), after.get("said", "")))
    return renamed


def contradictions_touching(conn: apsw.Connection, node_ids: Sequence[int]) -> list[dict]:
    """Contradiction items about any of these nodes that recall must honour: the open ones (both
    memories are served together) and the approved ones that say which memory stands."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    found = rows(conn, f"SELECT id, status, node_id, other_node_id, payload FROM review_items"
                       f" WHERE kind='contradiction' AND status IN ('open','approved')"
                       f" AND (node_id IN ({marks}) OR other_node_id IN ({marks})) ORDER BY id",
                 [*node_ids, *node_ids])
    out = []
    for r in found:
        payload = json.loads(r.pop("payload"))
        r["stands"] = payload.get("stands") if r["status"] == "approved" else None
        r["reason"] = payload.get("reason")
        if r["status"] == "open" or r["stands"]:
            out.append(r)
    return out


def workstream_items(conn: apsw.Connection, scope: str) -> list[tuple[int, str]]:
    return [(i, json.loads(p).get("name", "")) for i, p in conn.execute(
        "SELECT id, payload FROM review_items WHERE kind='workstream' AND scope=?", (scope,))]


def scrub_item(conn: apsw.Connection, item_id: int) -> None:
    conn.execute("UPDATE review_items SET payload='{\"forgotten\": true}' WHERE id=?", (item_id,))


def open_with_digest(conn: apsw.Connection, scope: str, digest: str) -> int | None:
    """The id of the open item with this digest in the scope, or None."""
    for (item_id,) in conn.execute("SELECT id FROM review_items WHERE status='open' AND scope=? AND digest=?"
                                   " ORDER BY id LIMIT 1", (scope, digest)):
        return item_id
    return None


def payload_of(conn: apsw.Connection, item_id: int) -> dict:
    return json.loads(conn.execute("SELECT payload FROM review_items WHERE id=?", (item_id,)).fetchone()[0])


def proposals(conn: apsw.Connection, scopes: Sequence[str], kind: str, limit: int = 50) -> list[dict]:
    marks = ",".join("?" * len(scopes))
    found = rows(conn, f"SELECT id, kind, scope, status, payload, created_at FROM review_items WHERE kind=? AND"
                       f" scope IN ({marks}) ORDER BY id DESC LIMIT ?", [kind, *scopes, limit])
    for r in found:
        r["payload"] = json.loads(r["payload"])
    return found


def open_for_nodes(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {i: [] for i in node_ids}
    if not node_ids:
        return out
    marks = ",".join("?" * len(node_ids))
    for r in rows(conn, f"SELECT id, kind, node_id, other_node_id FROM review_items WHERE status='open'"
                        f" AND (node_id IN ({marks}) OR other_node_id IN ({marks}))", [*node_ids, *node_ids]):
        for key in ("node_id", "other_node_id"):
            if r[key] in out:
                out[r[key]].append(r)
    return out


def count_by_status(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> dict[str, int]:
    """Items by status, as the queue has them (an open item about a withdrawn synthesis waits out of it)."""
    if scopes:
        where, params = _in_scopes_sql(scopes)
    else:
        where, params = _queue_sql(), []
    return {s: n for s, n in conn.execute(f"SELECT r.status, count(*) FROM review_items r WHERE {where}"
                                          " GROUP BY r.status", params)}


def naming(conn: apsw.Connection, node_ids: Sequence[int]) -> list[int]:
    """Items whose payloads may quote these nodes (they name one of them)."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    return [i for (i,) in conn.execute(f"SELECT id FROM review_items WHERE node_id IN ({marks})"
                                       f" OR other_node_id IN ({marks}) ORDER BY id", [*node_ids, *node_ids])]


def scrub_node(conn: apsw.Connection, node_id: int) -> None:
    """Forget: payloads may quote text; drop it for items that name the node."""
    conn.execute("UPDATE review_items SET payload='{\"forgotten\": true}' WHERE node_id=? OR other_node_id=?",
                 (node_id, node_id))


def open_in_scopes(conn: apsw.Connection, scopes: Sequence[str], kinds: Sequence[str], limit: int = 20) -> list[dict]:
    """Open items of these kinds whose nodes are all live and in the scopes."""
    from .visibility import visible

    pred_n, params_n = visible("n", scopes)
    pred_o, params_o = visible("o", scopes)
    kind_marks = ",".join("?" * len(kinds))
    found = rows(conn, f"""
        SELECT r.id, r.kind, r.node_id, r.other_node_id, r.created_at, r.payload FROM review_items r
        JOIN nodes n ON n.id = r.node_id LEFT JOIN nodes o ON o.id = r.other_node_id
        WHERE r.status = 'open' AND r.kind IN ({kind_marks}) AND {pred_n}
          AND (r.other_node_id IS NULL OR ({pred_o}))
        ORDER BY r.id DESC LIMIT ?""", [*kinds, *params_n, *params_o, limit])
    for r in found:
        r["payload"] = json.loads(r["payload"])
    return found


def _in_scopes_sql(scopes: Sequence[str], queue: bool = True) -> tuple[str, list]:
    """An item is in the scopes when its scope is (proposals) or all the nodes it names are. In the
    queue (`queue`), an open item about a synthesis that was withdrawn is left out (`_queue_sql`)."""
    marks = ",".join("?" * len(scopes))
    sql = (f"(coalesce(r.scope, (SELECT scope FROM nodes WHERE id = r.node_id)) IN ({marks})"
           f" AND (r.other_node_id IS NULL OR (SELECT scope FROM nodes WHERE id = r.other_node_id) IN ({marks})))")
    if queue:
        sql += f" AND {_queue_sql()}"
    return sql, [*scopes, *scopes]


def _queue_sql() -> str:
    """SQL on `r`: not an open item about a synthesis that was withdrawn (nothing to decide until
    the metabolism makes it again, and re-points the item)."""
    from . import syntheses

    about = "json_extract(r.payload, '$.synthesis')"
    return f"NOT (r.status = 'open' AND {about} IS NOT NULL AND {syntheses.withdrawn_sql(about)})"


def listing(conn: apsw.Connection, scopes: Sequence[str], status: str | None = "open", limit: int = 100) -> list[dict]:
    where, params = _in_scopes_sql(scopes)
    if status:
        where += " AND r.status = ?"
        params.append(status)
    found = rows(conn, f"SELECT r.* FROM review_items r WHERE {where} ORDER BY r.id DESC LIMIT ?", [*params, limit])
    for r in found:
        r["payload"] = json.loads(r["payload"])
    return found


def get(conn: apsw.Connection, item_id: int, scopes: Sequence[str]) -> dict | None:
    where, params = _in_scopes_sql(scopes, queue=False)
    found = rows(conn, f"SELECT r.* FROM review_items r WHERE r.id = ? AND {where}", [item_id, *params])
    if not found:
        return None
    found[0]["payload"] = json.loads(found[0]["payload"])
    return found[0]


def decide(conn: apsw.Connection, item_id: int, status: str, at: str, by: str) -> None:
    """approved / rejected, or back to open (every decision is reversible)."""
    conn.execute("UPDATE review_items SET status=?, resolved_at=?, resolved_by=? WHERE id=?",
                 (status, None if status == "open" else at, None if status == "open" else by, item_id))


def approved_lessons(conn: apsw.Connection, scopes: Sequence[str], limit: int = 10) -> list[dict]:
    marks = ",".join("?" * len(scopes))
    found = rows(conn, f"SELECT id, payload FROM review_items WHERE kind='proposed_lesson' AND status='approved'"
                       f" AND scope IN ({marks}) ORDER BY id DESC LIMIT ?", [*scopes, limit])
    for r in found:
        r["payload"] = json.loads(r["payload"])
    return found


def exists_with_digest(conn: apsw.Connection, digest: str) -> bool:
    """Any item, decided or not, with this digest: a decided proposal is not filed again."""
    return any(conn.execute("SELECT 1 FROM review_items WHERE digest=? LIMIT 1", (digest,)))


def open_between(conn: apsw.Connection, a: int, b: int) -> bool:
    return any(conn.execute("SELECT 1 FROM review_items WHERE status='open' AND ((node_id=? AND other_node_id=?)"
                            " OR (node_id=? AND other_node_id=?)) LIMIT 1", (a, b, b, a)))


def repeated_failures(conn: apsw.Connection) -> list[dict]:
    """Repeated tool failures the stop hook filed and nobody rejected, one per scope and error
    text (the same error across sessions adds up): {"scope", "said", "times", "items", "command",
    "instead"}, where `command` is what failed and `instead` what worked after it, as the newest
    item that saw them says (None when no item did)."""
    grouped: dict[tuple[str, str], dict] = {}
    for item_id, scope, payload in conn.execute(
            "SELECT id, scope, payload FROM review_items WHERE kind='proposed_lesson' AND status != 'rejected'"
            " ORDER BY id"):
        data = json.loads(payload)
        if data.get("finding") != "repeated_failure":
            continue
        said = data.get("said", "")
        entry = grouped.setdefault((scope, said), {"scope": scope, "said": said, "times": 0, "items": [],
                                                   "command": None, "instead": None})
        entry["times"] += int(data.get("times", 1))
        entry["items"].append(item_id)
        for key in ("command", "instead"):
            if isinstance(data.get(key), str) and data[key].strip():
                entry[key] = data[key].strip()
    return [grouped[k] for k in sorted(grouped)]


def open_for_synthesis(conn: apsw.Connection, synthesis_id: int) -> int | None:
    """The open review item that asks a person about this synthesis, if any."""
    for (item_id,) in conn.execute("SELECT id FROM review_items WHERE status='open' AND kind IN ('crystal','lesson')"
                                   " AND json_extract(payload, '$.synthesis') = ? ORDER BY id LIMIT 1",
                                   (synthesis_id,)):
        return item_id
    return None


def page(conn: apsw.Connection, scopes: Sequence[str], status: str | None, kind: str | None, offset: int,
         limit: int) -> tuple[list[dict], int]:
    """One page of the items (newest first) and how many there are in all: the inbox never
    stops silently at a fixed number."""
    where, params = _in_scopes_sql(scopes)
    if status:
        where, params = where + " AND r.status = ?", [*params, status]
    if kind:
        where, params = where + " AND r.kind = ?", [*params, kind]
    total = conn.execute(f"SELECT count(*) FROM review_items r WHERE {where}", params).fetchone()[0]
    found = rows(conn, f"SELECT r.* FROM review_items r WHERE {where} ORDER BY r.id DESC LIMIT ? OFFSET ?",
                 [*params, int(limit), int(offset)])
    for r in found:
        r["payload"] = json.loads(r["payload"])
    return found, total


def counts_by_kind(conn: apsw.Connection, scopes: Sequence[str], status: str | None = "open") -> dict[str, int]:
    where, params = _in_scopes_sql(scopes)
    if status:
        where, params = where + " AND r.status = ?", [*params, status]
    return dict(conn.execute(f"SELECT r.kind, count(*) FROM review_items r WHERE {where} GROUP BY r.kind"
                             f" ORDER BY r.kind", params).fetchall())


def flagged_sql(alias: str) -> tuple[str, list]:
    """SQL fragment: the node is one side of an open contradiction (what recall flags)."""
    # an IN over one materialised list: other_node_id has no index, and a correlated EXISTS
    # would scan the items once per node
    return (f"{alias}.id IN (SELECT node_id FROM review_items WHERE status = 'open' AND kind = 'contradiction'"
            f" UNION SELECT other_node_id FROM review_items WHERE status = 'open' AND kind = 'contradiction')", [])
