"""Links between nodes, each with a status. Only `confirmed` links are ever walked.

Rejections (`rejected_by_model`, `rejected_by_user`) and `expired` stay as rows so an existence
check sees them and nothing re-proposes the pair.
"""
from __future__ import annotations

from typing import Sequence

import apsw

from .. import secrets
from .connection import changed, inserted, rows
from .visibility import AsOf, visible

DDL = """
CREATE TABLE links(
  id INTEGER PRIMARY KEY,
  source_id INTEGER NOT NULL REFERENCES nodes(id),
  target_id INTEGER NOT NULL REFERENCES nodes(id),
  relation TEXT NOT NULL DEFAULT 'related',
  status TEXT NOT NULL CHECK(status IN ('pending','confirmed','rejected_by_model','rejected_by_user','expired')),
  strength REAL,
  reason TEXT,
  proposed_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  decided_at TEXT,
  UNIQUE(source_id, target_id, relation)
);
CREATE INDEX links_target ON links(target_id, status);
CREATE INDEX links_source ON links(source_id, status);
"""


def add(conn: apsw.Connection, source_id: int, target_id: int, *, relation: str = "related", status: str = "pending",
        strength: float | None = None, proposed_by: str, at: str, reason: str | None = None) -> int | None:
    """Insert a link unless the pair already has one in any status (so rejections hold). Returns the id or None."""
    if exists(conn, source_id, target_id):
        return None
    reason = secrets.mask_optional(reason)       # a reason may be a model's words
    return inserted(conn, "INSERT INTO links(source_id, target_id, relation, status, strength, reason, proposed_by, created_at)"
                          " VALUES(?,?,?,?,?,?,?,?)", (source_id, target_id, relation, status, strength, reason, proposed_by, at))


def propose(conn: apsw.Connection, source_id: int, target_id: int, *, strength: float, proposed_by: str, at: str,
            reason: str | None = None, relation: str = "related", rejected_before: str | None = None) -> int | None:
    """A pending link, unless the pair has a link already. An expired proposal comes back (pending
    again, with the new strength) when it is stronger now than it was, and so does a model's
    rejection decided before `rejected_before` (a model's "no" expires; a person's never does)."""
    found = conn.execute("SELECT id, status, strength, decided_at FROM links WHERE (source_id=? AND target_id=?)"
                         " OR (source_id=? AND target_id=?) ORDER BY id LIMIT 1",
                         (source_id, target_id, target_id, source_id)).fetchone()
    if found is None:
        return inserted(conn, "INSERT INTO links(source_id, target_id, relation, status, strength, reason, proposed_by, created_at)"
                              " VALUES(?,?,?,'pending',?,?,?,?)",
                              (source_id, target_id, relation, strength, secrets.mask_optional(reason), proposed_by, at))
    return found[0] if _revive(conn, found, strength, reason, proposed_by, at, rejected_before) else None


def _revive(conn: apsw.Connection, found: tuple, strength: float, reason: str | None, proposed_by: str, at: str,
            rejected_before: str | None) -> bool:
    """Bring an existing pair's link back to pending when its standing lapsed (an expired proposal,
    or a model's rejection older than `rejected_before`) and the new signal is stronger."""
    link_id, status, before, decided = found
    lapsed = status == "expired" or (status == "rejected_by_model" and rejected_before is not None
                                     and (decided or "") < rejected_before)
    if not (lapsed and strength > (before or 0.0)):
        return False
    conn.execute("UPDATE links SET status='pending', strength=?, reason=?, proposed_by=?, created_at=?,"
                 " decided_at=NULL WHERE id=?", (strength, secrets.mask_optional(reason), proposed_by, at, link_id))
    return True


def propose_many(conn: apsw.Connection, source_id: int, offers: Sequence[tuple[int, float, str | None]], *,
                 proposed_by: str, at: str, rejected_before: str | None = None) -> list[tuple[int, int, float]]:
    """`propose` for many targets of one source at once: one read of the pairs' existing links,
    one insert for the new ones (link-propose offers twenty per memory). Returns (link, target,
    strength) for each link made or brought back."""
    if not offers:
        return []
    targets = [t for t, _, _ in offers]
    marks = ",".join("?" * len(targets))
    existing = {}
    for link_id, a, b, status, before, decided in conn.execute(
            f"SELECT id, source_id, target_id, status, strength, decided_at FROM links WHERE (source_id=? AND target_id"
            f" IN ({marks})) OR (target_id=? AND source_id IN ({marks})) ORDER BY id DESC",
            [source_id, *targets, source_id, *targets]):
        existing[b if a == source_id else a] = (link_id, status, before, decided)
    made, fresh = [], []
    for target, strength, reason in offers:
        found = existing.get(target)
        if found is None:
            fresh.append((source_id, target, strength, secrets.mask_optional(reason), proposed_by, at))
            continue
        if _revive(conn, found, strength, reason, proposed_by, at, rejected_before):
            made.append((found[0], target, strength))
    if fresh:
        conn.executemany("INSERT INTO links(source_id, target_id, relation, status, strength, reason, proposed_by,"
                         " created_at) VALUES(?,?,'related','pending',?,?,?,?)", fresh)
        ids = dict(conn.execute(f"SELECT target_id, id FROM links WHERE source_id=? AND created_at=? AND proposed_by=?"
                                f" AND target_id IN ({','.join('?' * len(fresh))})",
                                [source_id, at, proposed_by, *[f[1] for f in fresh]]))
        made += [(ids[f[1]], f[1], f[2]) for f in fresh if f[1] in ids]
    return made


def partners(conn: apsw.Connection, node_ids: Sequence[int], statuses: Sequence[str],
             proposed_by: str | None = None) -> dict[int, set[int]]:
    """For each node, the nodes it has a link with in one of `statuses` (with `proposed_by`: only
    the links that node itself proposed, by that proposer)."""
    out: dict[int, set[int]] = {i: set() for i in node_ids}
    if not node_ids:
        return out
    marks, smarks = ",".join("?" * len(node_ids)), ",".join("?" * len(statuses))
    if proposed_by is not None:
        for a, b in conn.execute(f"SELECT source_id, target_id FROM links WHERE status IN ({smarks})"
                                 f" AND proposed_by = ? AND source_id IN ({marks})", [*statuses, proposed_by, *node_ids]):
            out[a].add(b)
        return out
    for a, b in conn.execute(f"SELECT source_id, target_id FROM links WHERE status IN ({smarks})"
                             f" AND (source_id IN ({marks}) OR target_id IN ({marks}))",
                             [*statuses, *node_ids, *node_ids]):
        if a in out:
            out[a].add(b)
        if b in out:
            out[b].add(a)
    return out


def proposals(conn: apsw.Connection, node_ids: Sequence[int], proposed_by: str) -> dict[int, list[int]]:
    """For each node, the nodes a link proposed by `proposed_by` joins it to (whichever end
    proposed it; any status but a person's rejection), strongest first."""
    out: dict[int, list[tuple[float, int, int]]] = {i: [] for i in node_ids}
    if not node_ids:
        return {}
    marks = ",".join("?" * len(node_ids))
    for link_id, a, b, strength in conn.execute(
            f"SELECT id, source_id, target_id, coalesce(strength, 0) FROM links WHERE proposed_by = ?"
            f" AND status != 'rejected_by_user' AND (source_id IN ({marks}) OR target_id IN ({marks}))",
            [proposed_by, *node_ids, *node_ids]):
        for me, other in ((a, b), (b, a)):
            if me in out:
                out[me].append((-strength, link_id, other))
    return {i: [other for *_, other in sorted(found)] for i, found in out.items()}


def exists(conn: apsw.Connection, a: int, b: int) -> bool:
    return any(conn.execute("SELECT 1 FROM links WHERE (source_id=? AND target_id=?) OR (source_id=? AND target_id=?)"
                            " LIMIT 1", (a, b, b, a)))


def judge(conn: apsw.Connection, link_id: int, status: str, at: str, reason: str) -> bool:
    """A judge's verdict lands only on a link that is still pending: a person's decision made
    meanwhile always wins. Returns whether it landed."""
    reason = secrets.mask_optional(reason)       # a model judge's words
    return changed(conn, "UPDATE links SET status=?, decided_at=?, reason=? WHERE id=? AND status='pending'",
                         (status, at, reason, link_id)) == 1


def set_status(conn: apsw.Connection, link_id: int, status: str, at: str, reason: str | None = None) -> None:
    reason = secrets.mask_optional(reason)
    conn.execute("UPDATE links SET status=?, decided_at=?, reason=coalesce(?, reason) WHERE id=?",
                 (status, at, reason, link_id))


def for_nodes(conn: apsw.Connection, node_ids: Sequence[int], scopes: Sequence[str],
              as_of: AsOf | None = None) -> dict[int, list[dict]]:
    """Links of each node whose other end is visible, every status shown as it is."""
    out: dict[int, list[dict]] = {i: [] for i in node_ids}
    if not node_ids:
        return out
    pred, params = visible("o", scopes, as_of)
    marks = ",".join("?" * len(node_ids))
    for r in rows(conn, f"""
        SELECT l.id, l.source_id, l.target_id, l.relation, l.status, l.strength FROM links l
        JOIN nodes o ON o.id = CASE WHEN l.source_id IN ({marks}) THEN l.target_id ELSE l.source_id END
        WHERE (l.source_id IN ({marks}) OR l.target_id IN ({marks})) AND {pred}""",
                  [*node_ids, *node_ids, *node_ids, *params]):
        for me, other, direction in ((r["source_id"], r["target_id"], "out"), (r["target_id"], r["source_id"], "in")):
            if me in out:       # 'in': the other node links to this one (785 embeds this, not this embeds 785)
                out[me].append({"id": r["id"], "target": other, "relation": r["relation"],
                                "status": r["status"], "strength": r["strength"], "direction": direction})
    return out


def confirmed_neighbours(conn: apsw.Connection, node_ids: Sequence[int], scopes: Sequence[str],
                         as_of: AsOf | None = None) -> list[tuple[int, int, float]]:
    """(seed, neighbour, strength) over confirmed links only, the neighbour passing the predicate."""
    if not node_ids:
        return []
    pred, params = visible("o", scopes, as_of)
    marks = ",".join("?" * len(node_ids))
    sql = f"""
        SELECT l.source_id, l.target_id, coalesce(l.strength, 1.0) FROM links l JOIN nodes o ON o.id = l.target_id
        WHERE l.status='confirmed' AND l.source_id IN ({marks}) AND {pred}
        UNION ALL
        SELECT l.target_id, l.source_id, coalesce(l.strength, 1.0) FROM links l JOIN nodes o ON o.id = l.source_id
        WHERE l.status='confirmed' AND l.target_id IN ({marks}) AND {pred}"""
    return [tuple(r) for r in conn.execute(sql, [*node_ids, *params, *node_ids, *params])]


def count_by_status(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> dict[str, int]:
    if not scopes:
        return {s: n for s, n in conn.execute("SELECT status, count(*) FROM links GROUP BY status")}
    marks = ",".join("?" * len(scopes))
    return {s: n for s, n in conn.execute(
        f"SELECT x.status, count(*) FROM links x JOIN nodes a ON a.id = x.source_id JOIN nodes b ON b.id = x.target_id"
        f" WHERE a.scope IN ({marks}) AND b.scope IN ({marks}) GROUP BY x.status", [*scopes, *scopes])}


def pending(conn: apsw.Connection, limit: int, scopes: Sequence[str] | None = None,
            strongest_first: bool = False, room_below: int | None = None,
            bars: tuple[float, float] | None = None) -> list[dict]:
    """Pending links whose two ends are both live (and in `scopes` when given), oldest first (or
    strongest first: the judge decides the clearest pairs before the degree cap fills; with
    `bars` (within one session or note, across them), by how far each clears its own bar, so
    proposals that cannot be confirmed never crowd out weaker ones that can). With `room_below`,
    only links whose two ends have fewer confirmed links than that (the others wait until a
    person removes one, or expire)."""
    in_scopes, params = "", []
    if scopes:
        pred_a, pa = visible("a", scopes)
        pred_b, pb = visible("b", scopes)
        in_scopes, params = f" AND {pred_a} AND {pred_b}", [*pa, *pb]
    if room_below is not None:
        degree = ("(SELECT count(*) FROM links c WHERE c.status='confirmed' AND c.source_id={n})"
                  " + (SELECT count(*) FROM links c WHERE c.status='confirmed' AND c.target_id={n})")
        in_scopes += f" AND {degree.format(n='l.source_id')} < ? AND {degree.format(n='l.target_id')} < ?"
        params += [room_below, room_below]
    order, order_params = ("coalesce(l.strength, 0) DESC, l.id" if strongest_first else "l.id"), []
    if bars is not None:
        same = ("coalesce('s:' || a.session, 'c:' || a.capture_id) = coalesce('s:' || b.session, 'c:' || b.capture_id)")
        order = f"coalesce(l.strength, 0) - CASE WHEN {same} THEN ? ELSE ? END DESC, l.id"
        order_params = list(bars)
    return rows(conn, f"""
        SELECT l.id, l.source_id, l.target_id, l.relation, l.strength, l.created_at, l.proposed_by,
               a.scope AS source_scope, b.scope AS target_scope, a.session AS source_session,
               b.session AS target_session, a.capture_id AS source_capture, b.capture_id AS target_capture
        FROM links l JOIN nodes a ON a.id = l.source_id JOIN nodes b ON b.id = l.target_id
        WHERE l.status = 'pending' AND a.status = 'live' AND b.status = 'live'{in_scopes}
        ORDER BY {order} LIMIT ?""", [*params, *order_params, limit])


def expire_pending(conn: apsw.Connection, created_before: str, at: str) -> int:
    """Unjudged proposals age out to `expired`: a row kept, never deleted, never re-proposed."""
    return changed(conn, "UPDATE links SET status = 'expired', decided_at = ?, reason = 'not judged in time'"
                         " WHERE status = 'pending' AND created_at < ?", (at, created_before))


def get(conn: apsw.Connection, link_id: int) -> dict | None:
    found = rows(conn, "SELECT * FROM links WHERE id = ?", (link_id,))
    return found[0] if found else None


def delete(conn: apsw.Connection, link_id: int) -> None:
    """Only an import rollback removes a link row: it undoes a link that batch itself made."""
    conn.execute("DELETE FROM links WHERE id = ?", (link_id,))


def among(conn: apsw.Connection, node_ids: Sequence[int], statuses: Sequence[str]) -> list[dict]:
    """Links with both ends in `node_ids` (already checked visible by the caller), in these statuses."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    s_marks = ",".join("?" * len(statuses))
    return rows(conn, f"SELECT id, source_id, target_id, relation, status FROM links WHERE source_id IN ({marks})"
                      f" AND target_id IN ({marks}) AND status IN ({s_marks})", [*node_ids, *node_ids, *statuses])


def of_node(conn: apsw.Connection, node_id: int) -> list[dict]:
    """Every link with an end at the node, any status (a correction carries them over)."""
    return rows(conn, "SELECT * FROM links WHERE source_id=? OR target_id=?", (node_id, node_id))


def scrub_node(conn: apsw.Connection, node_id: int) -> None:
    """Forget: a judge's reason may quote the node's words; the link's status stays."""
    conn.execute("UPDATE links SET reason=NULL WHERE (source_id=? OR target_id=?) AND reason IS NOT NULL",
                 (node_id, node_id))


def touching(conn: apsw.Connection, node_ids: Sequence[int], statuses: Sequence[str]) -> list[tuple[int, int]]:
    """(a, b) pairs of links in these statuses with an end in `node_ids`."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    s_marks = ",".join("?" * len(statuses))
    return [tuple(r) for r in conn.execute(
        f"SELECT source_id, target_id FROM links WHERE (source_id IN ({marks}) OR target_id IN ({marks}))"
        f" AND status IN ({s_marks})", [*node_ids, *node_ids, *statuses])]


def delete_if(conn: apsw.Connection, link_id: int, status: str) -> bool:
    return changed(conn, "DELETE FROM links WHERE id = ? AND status = ?", (link_id, status)) == 1


def open_by(conn: apsw.Connection, node_id: int, proposed_by: str) -> int:
    """How many pending or confirmed links touching a node a given proposer made."""
    return conn.execute("SELECT count(*) FROM links WHERE proposed_by = ? AND status IN ('pending','confirmed')"
                        " AND (source_id = ? OR target_id = ?)", (proposed_by, node_id, node_id)).fetchone()[0]


def by_proposer(conn: apsw.Connection, node_id: int, proposed_by: str) -> list[int]:
    """Confirmed links from a node that a given proposer (e.g. person:obsidian) made."""
    return [r[0] for r in conn.execute("SELECT id FROM links WHERE source_id = ? AND proposed_by = ? AND"
                                       " status = 'confirmed'", (node_id, proposed_by))]


def linked_with(conn: apsw.Connection, node_ids: Sequence[int], proposed_by: str) -> set[int]:
    """Nodes at the other end of a confirmed link from this proposer to or from any of these
    (one row holds a pair whichever side linked first; an importer re-reads their links when
    these nodes' notes vanish)."""
    out: set[int] = set()
    ids = list(node_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for a, b in conn.execute(f"SELECT source_id, target_id FROM links WHERE (target_id IN ({marks}) OR"
                                 f" source_id IN ({marks})) AND proposed_by = ? AND status = 'confirmed'",
                                 [*chunk, *chunk, proposed_by]):
            out |= {a, b}
    return out - set(ids)


def count_pending(conn: apsw.Connection, scopes: Sequence[str]) -> int:
    """How many pending links have both ends visible in the scopes (the inbox's count)."""
    pred_a, pa = visible("a", scopes)
    pred_b, pb = visible("b", scopes)
    return conn.execute(f"SELECT count(*) FROM links l JOIN nodes a ON a.id = l.source_id JOIN nodes b ON"
                        f" b.id = l.target_id WHERE l.status = 'pending' AND {pred_a} AND {pred_b}",
                        [*pa, *pb]).fetchone()[0]


def pending_page(conn: apsw.Connection, scopes: Sequence[str], offset: int, limit: int) -> list[dict]:
    """A page of the pending links with both ends visible, oldest first."""
    pred_a, pa = visible("a", scopes)
    pred_b, pb = visible("b", scopes)
    return rows(conn, f"""
        SELECT l.id, l.source_id, l.target_id, l.relation, l.strength, l.created_at, l.proposed_by, l.reason
        FROM links l JOIN nodes a ON a.id = l.source_id JOIN nodes b ON b.id = l.target_id
        WHERE l.status = 'pending' AND {pred_a} AND {pred_b} ORDER BY l.id LIMIT ? OFFSET ?""",
                [*pa, *pb, int(limit), int(offset)])


def between_visible(conn: apsw.Connection, scopes: Sequence[str], statuses: Sequence[str]) -> list[tuple]:
    """(id, source, target, status) of every link in these statuses whose two ends are visible
    in the scopes: a whole-scope graph in one statement."""
    pred_a, pa = visible("a", scopes)
    pred_b, pb = visible("b", scopes)
    s_marks = ",".join("?" * len(statuses))
    return [tuple(r) for r in conn.execute(
        f"SELECT l.id, l.source_id, l.target_id, l.status FROM links l JOIN nodes a ON a.id = l.source_id"
        f" JOIN nodes b ON b.id = l.target_id WHERE l.status IN ({s_marks}) AND {pred_a} AND {pred_b}",
        [*statuses, *pa, *pb])]
