"""Syntheses: derived text about several nodes (crystals, daily/weekly digests, lessons).

Each cites its member ids, records its generator, and is served only as derived: labelled
`unreviewed` until a person approves it. A synthesis belongs to a *subject* (a cluster's memories
by lineage, a scope's day or week, a chain of corrections): the pass that makes it recomputes the
subject when its members change, and the new row replaces the old one (`replaced_by`). A
synthesis is withdrawn the moment one of its members is corrected, archived or forgotten (in the
same transaction), and nothing serves a synthesis whose members are not all visible to the
reader: `servable` checks that in SQL, with the one visibility predicate.

`members` are the memories a synthesis speaks for, and must be live to serve it; `history` are the
versions a lesson names as replaced (superseded by design, cited by id, never quoted).
"""
from __future__ import annotations

import json
from typing import Sequence

import apsw

from .. import secrets
from ..text import sha256
from . import nodes
from .connection import changed, inserted, rows
from .visibility import visible

DDL = """
CREATE TABLE syntheses(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,                   -- 'crystal' | 'daily' | 'weekly' | 'lesson'
  scope TEXT NOT NULL,
  period TEXT,                          -- '2026-11-29' or '2026-W48' for temporal digests
  members TEXT NOT NULL,                -- JSON list of the node ids it cites
  text TEXT NOT NULL,
  generator TEXT NOT NULL,
  created_at TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'unreviewed' CHECK(status IN ('unreviewed','approved','rejected','withdrawn')),
  digest TEXT NOT NULL UNIQUE           -- the same synthesis of the same members is made once
);
CREATE INDEX syntheses_scope ON syntheses(scope, kind, status);
"""

# A synthesis keeps what it is about (its subject), a title, the replaced versions it cites, and
# what became of it: withdrawn when, why, from which status (a person's approval or rejection comes
# back with it if the same members return), and which row replaced it.
READABLE_DDL = """
ALTER TABLE syntheses ADD COLUMN subject TEXT;
ALTER TABLE syntheses ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE syntheses ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
ALTER TABLE syntheses ADD COLUMN replaced_by INTEGER REFERENCES syntheses(id);
ALTER TABLE syntheses ADD COLUMN status_before TEXT;
ALTER TABLE syntheses ADD COLUMN withdrawn_at TEXT;
ALTER TABLE syntheses ADD COLUMN withdrawn_why TEXT;
CREATE INDEX syntheses_subject ON syntheses(subject, status);
CREATE INDEX syntheses_period ON syntheses(scope, period) WHERE period IS NOT NULL;
"""

CURRENT = ("unreviewed", "approved", "rejected")      # not withdrawn: what the subject stands at
SERVED = ("unreviewed", "approved")                   # a rejected synthesis is never served
FORGOTTEN_TEXT = "[withdrawn: it cited a forgotten memory]"


def _decode(found: list[dict]) -> list[dict]:
    for r in found:
        r["members"] = json.loads(r["members"])
        if "history" in r:
            r["history"] = json.loads(r["history"] or "[]")
    return found


def identity(subject: str, members: Sequence[int], history: Sequence[int], generator: str, basis: str = "") -> str:
    """One row per subject, member set, cited history, generator and basis (what else the text
    was made from, e.g. the review items of a failure lesson): the same synthesis is made once,
    and a member set that returns (an unarchive) finds its earlier row."""
    return sha256(f"{subject}|{sorted(members)}|{sorted(history)}|{generator}|{basis}")


def put(conn: apsw.Connection, *, subject: str, kind: str, scope: str, members: Sequence[int], text: str,
        generator: str, at: str, title: str = "", history: Sequence[int] = (), period: str | None = None,
        basis: str = "") -> tuple[int | None, int | None]:
    """Make this the current synthesis of `subject`, inside the caller's transaction. Returns (its
    id, or None when the subject already stands at exactly this; the id of the row it replaced,
    or None). A withdrawn row with the same identity is revived with the status it had (a
    person's decision on it holds again); otherwise a new `unreviewed` row is written. The row it
    replaces is the current one, or the last one withdrawn for a member's change."""
    # a synthesis quotes review payloads and model output, and prepare serves it to every session
    text, _ = secrets.mask(text)
    title, _ = secrets.mask(title)
    digest = identity(subject, members, history, generator, basis)
    now_current = current(conn, subject)
    if now_current is not None and now_current["digest"] == digest:
        return None, None
    latest = rows(conn, "SELECT id, status, replaced_by FROM syntheses WHERE subject=? ORDER BY id DESC LIMIT 1",
                  (subject,))
    earlier = rows(conn, "SELECT id FROM syntheses WHERE digest=?", (digest,))
    if earlier:
        new_id = earlier[0]["id"]
        conn.execute("UPDATE syntheses SET status=coalesce(status_before, 'unreviewed'), status_before=NULL,"
                     " withdrawn_at=NULL, withdrawn_why=NULL, replaced_by=NULL, text=?, title=? WHERE id=?",
                     (text, title, new_id))
    else:
        new_id = inserted(conn, "INSERT INTO syntheses(kind, scope, period, members, history, subject, title, text,"
                                " generator, created_at, digest) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                          (kind, scope, period, json.dumps(sorted(members)), json.dumps(sorted(history)), subject,
                           title, text, generator, at, digest))
    replaced = None
    if now_current is not None:
        withdraw(conn, now_current["id"], "recomputed", at, replaced_by=new_id)
        replaced = now_current["id"]
    elif latest and latest[0]["id"] != new_id and latest[0]["status"] == "withdrawn" and not latest[0]["replaced_by"]:
        conn.execute("UPDATE syntheses SET replaced_by=? WHERE id=?", (new_id, latest[0]["id"]))
        replaced = latest[0]["id"]
    return new_id, replaced


def withdraw_unreviewed(conn: apsw.Connection, synthesis_id: int, why: str, at: str) -> bool:
    """Withdraw it only while nobody has decided on it (checked in the statement itself: a person
    approving or rejecting it after the pass read it wins). Returns whether it was withdrawn."""
    return changed(conn, "UPDATE syntheses SET status_before=status, status='withdrawn', withdrawn_at=?,"
                         " withdrawn_why=? WHERE id=? AND status='unreviewed'", (at, why, synthesis_id)) == 1


def withdraw(conn: apsw.Connection, synthesis_id: int, why: str, at: str, replaced_by: int | None = None) -> None:
    """Take a synthesis out of service, keeping the status it had for a revival."""
    conn.execute("UPDATE syntheses SET status_before=CASE WHEN status='withdrawn' THEN status_before ELSE status END,"
                 " status='withdrawn', withdrawn_at=?, withdrawn_why=?, replaced_by=? WHERE id=?",
                 (at, why, replaced_by, synthesis_id))


def withdraw_for_member(conn: apsw.Connection, node_id: int, why: str, at: str) -> list[int]:
    """A member was corrected, archived or merged away: every current synthesis that speaks for it
    stops being served now (the pass recomputes its subject). Returns the ids withdrawn."""
    ids = [i for (i,) in conn.execute(
        "SELECT s.id FROM syntheses s WHERE s.status IN ('unreviewed','approved','rejected')"
        " AND instr(s.members, ?) AND EXISTS (SELECT 1 FROM json_each(s.members) WHERE value = ?)",
        (str(node_id), node_id))]       # instr: a cheap look at the text before parsing it (an import's undo archives thousands)
    for synthesis_id in ids:
        withdraw(conn, synthesis_id, why, at)
    return ids


def withdraw_citing(conn: apsw.Connection, node_id: int, at: str | None = None) -> int:
    """Forget: a synthesis that cites the node (as a member or as a replaced version) may quote
    it; its text and title go, its row stays."""
    return changed(conn, "UPDATE syntheses SET status_before=CASE WHEN status='withdrawn' THEN status_before ELSE status END,"
                         f" status='withdrawn', text='{FORGOTTEN_TEXT}', title='', withdrawn_why='forgotten',"
                         " withdrawn_at=coalesce(?, withdrawn_at)"
                         " WHERE (instr(syntheses.members, ?) AND EXISTS (SELECT 1 FROM json_each(syntheses.members) WHERE value = ?))"
                         " OR (instr(syntheses.history, ?) AND EXISTS (SELECT 1 FROM json_each(syntheses.history) WHERE value = ?))",
                         (at, str(node_id), node_id, str(node_id), node_id))


def erase(conn: apsw.Connection, *, synthesis_id: int | None = None, subject: str | None = None,
          at: str | None = None) -> int:
    """Forget: what a synthesis was made from was erased (a review item a lesson was built on,
    the item that asked about it): every row of it, current or withdrawn, loses its text and
    title and stops being served. Returns how many rows."""
    return changed(conn, "UPDATE syntheses SET status_before=CASE WHEN status='withdrawn' THEN status_before ELSE status END,"
                         f" status='withdrawn', text='{FORGOTTEN_TEXT}', title='', withdrawn_why='forgotten',"
                         " withdrawn_at=coalesce(?, withdrawn_at) WHERE id=? OR subject=?", (at, synthesis_id, subject))


def failure_lesson_digest(scope: str, said: str) -> str:
    """The identity of the lesson made from a repeated tool failure before lessons had subjects:
    one per scope and error text (kept so a store's older rows stay recognised)."""
    return sha256(f"lesson:failure:{scope}:{said}")


def failure_subject(scope: str, said: str) -> str:
    """The subject of a lesson from a repeated tool failure: one per scope and error text (named
    by the identity such a lesson had before subjects, so older rows keep theirs)."""
    return f"lesson:failure:{failure_lesson_digest(scope, said)}"


def remask_texts(conn: apsw.Connection) -> int:
    """Mask the texts stored before `add` masked them (a migration); returns how many changed."""
    changed = 0
    for synthesis_id, text in conn.execute("SELECT id, text FROM syntheses").fetchall():
        masked, kinds = secrets.mask(text)
        if kinds:
            conn.execute("UPDATE syntheses SET text=? WHERE id=?", (masked, synthesis_id))
            changed += 1
    return changed


def rename_digest(conn: apsw.Connection, old: str, new: str) -> None:
    """The text a synthesis is keyed by changed (masked): keep it recognised, so it is not made twice."""
    conn.execute("UPDATE OR IGNORE syntheses SET digest=? WHERE digest=?", (new, old))


def current(conn: apsw.Connection, subject: str) -> dict | None:
    """What the subject stands at now (the newest row not withdrawn), or None."""
    found = _decode(rows(conn, "SELECT * FROM syntheses WHERE subject=? AND status IN ('unreviewed','approved',"
                               "'rejected') ORDER BY id DESC LIMIT 1", (subject,)))
    return found[0] if found else None


def current_of_kind(conn: apsw.Connection, kind: str, scope: str | None = None) -> list[dict]:
    """Every current (not withdrawn) synthesis of a kind, in one scope or all."""
    sql = "SELECT * FROM syntheses WHERE kind=? AND status IN ('unreviewed','approved','rejected')"
    params: list = [kind]
    if scope is not None:
        sql += " AND scope=?"
        params.append(scope)
    return _decode(rows(conn, sql + " ORDER BY id", params))


def set_status(conn: apsw.Connection, synthesis_id: int, status: str) -> None:
    """A person's decision. On a withdrawn synthesis it is kept for the day it is revived: a
    decision never puts a stale synthesis back into service."""
    conn.execute("UPDATE syntheses SET status=CASE WHEN status='withdrawn' THEN 'withdrawn' ELSE ? END,"
                 " status_before=CASE WHEN status='withdrawn' THEN ? ELSE status_before END WHERE id=?",
                 (status, status, synthesis_id))


def _servable_sql(alias: str, scopes: Sequence[str]) -> tuple[str, list]:
    """SQL: every member of the synthesis is visible to a reader of `scopes` (live, in scope, not
    awaiting clarification). A lesson from tool failures has no members; its scope decides."""
    pred, params = visible("n", scopes)
    marks = ",".join("?" * len(scopes))
    return (f"{alias}.scope IN ({marks}) AND {alias}.status IN ('unreviewed','approved')"
            f" AND NOT EXISTS (SELECT 1 FROM json_each({alias}.members) j WHERE NOT EXISTS"
            f" (SELECT 1 FROM nodes n WHERE n.id = j.value AND {pred}))", [*scopes, *params])


def servable(conn: apsw.Connection, scopes: Sequence[str], kinds: Sequence[str], limit: int = 20) -> list[dict]:
    """Approved, then unreviewed syntheses of these kinds whose every member the reader can see,
    newest first."""
    where, params = _servable_sql("s", scopes)
    k_marks = ",".join("?" * len(kinds))
    return _decode(rows(conn, f"SELECT s.* FROM syntheses s WHERE s.kind IN ({k_marks}) AND {where}"
                              f" ORDER BY (s.status='approved') DESC, s.id DESC LIMIT ?", [*kinds, *params, limit]))


def served(conn: apsw.Connection, scopes: Sequence[str], kinds: Sequence[str], limit: int = 20) -> list[dict]:
    """Kept for callers written before `servable`: the same rows (members are checked now)."""
    return servable(conn, scopes, kinds, limit)


def digests_covering(conn: apsw.Connection, scopes: Sequence[str], first_day: str, last_day: str,
                     limit: int = 20) -> list[dict]:
    """The servable daily and weekly digests of the scopes whose period overlaps the valid days
    first_day..last_day (ISO dates, inclusive): the weekly digests first, then the days, in time
    order. This is the lookup for "what happened in week X / on DATE"."""
    from ..periods import weeks_between

    where, params = _servable_sql("s", scopes)
    weeks = weeks_between(first_day, last_day)
    w_marks = ",".join("?" * len(weeks)) or "NULL"
    return _decode(rows(conn, f"""
        SELECT s.* FROM syntheses s WHERE {where} AND (
            (s.kind = 'daily' AND s.period >= ? AND s.period <= ?)
         OR (s.kind = 'weekly' AND s.period IN ({w_marks})))
        ORDER BY (s.kind = 'weekly') DESC, s.period, s.scope LIMIT ?""",
                        [*params, first_day, last_day, *weeks, limit]))


def listing(conn: apsw.Connection, scopes: Sequence[str], kinds: Sequence[str], periods: Sequence[str] = (),
            include_withdrawn: bool = False, limit: int = 100) -> list[dict]:
    """Syntheses of these kinds in the scopes (a person's view, `tidemind digests`): the servable
    ones, and with `include_withdrawn` every row with what became of it. Newest period first."""
    if include_withdrawn:
        marks = ",".join("?" * len(scopes))
        where, params = f"s.scope IN ({marks})", list(scopes)
    else:
        where, params = _servable_sql("s", scopes)
    k_marks = ",".join("?" * len(kinds))
    sql = f"SELECT s.* FROM syntheses s WHERE s.kind IN ({k_marks}) AND {where}"
    params = [*kinds, *params]
    if periods:
        sql += f" AND s.period IN ({','.join('?' * len(periods))})"
        params += list(periods)
    return _decode(rows(conn, sql + " ORDER BY s.period DESC, (s.kind='weekly') DESC, s.scope, s.id DESC LIMIT ?",
                        [*params, limit]))


def current_since(conn: apsw.Connection, kinds: Sequence[str], since: str | None) -> list[dict]:
    """Current syntheses of these kinds created at or after `since` (all when None), oldest first:
    what `tidemind rederive` looks through."""
    k_marks = ",".join("?" * len(kinds))
    sql = (f"SELECT * FROM syntheses WHERE kind IN ({k_marks}) AND status IN ('unreviewed','approved','rejected')"
           + (" AND created_at >= ?" if since else ""))
    return _decode(rows(conn, sql + " ORDER BY id", [*kinds, *([since] if since else [])]))


def citing(conn: apsw.Connection, node_ids: Sequence[int]) -> list[int]:
    """Syntheses whose members include one of these nodes."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    return [i for (i,) in conn.execute(f"SELECT DISTINCT s.id FROM syntheses s, json_each(s.members) m"
                                       f" WHERE m.value IN ({marks}) ORDER BY s.id", list(node_ids))]


def get(conn: apsw.Connection, synthesis_id: int) -> dict | None:
    found = _decode(rows(conn, "SELECT * FROM syntheses WHERE id=?", (synthesis_id,)))
    return found[0] if found else None


def for_review(conn: apsw.Connection, synthesis_id: int, scopes: Sequence[str]) -> dict | None:
    """The synthesis a review item asks about, as a reader of `scopes` may see it: its title and text
    only while it is current and every member is visible to that reader; otherwise they are left
    out and `hidden` says why (a withdrawn crystal quoted an archived memory in the queue)."""
    row = get(conn, synthesis_id)
    if row is None:
        return None
    pred, params = visible("n", scopes)
    unseen = [i for (i,) in conn.execute(
        f"SELECT j.value FROM json_each(?) j WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = j.value AND {pred})",
        [json.dumps(row["members"]), *params])]
    why = (f"withdrawn: {row['withdrawn_why'] or 'its members changed'}" if row["status"] == "withdrawn"
           else f"it cites memories not visible here (node {', '.join(map(str, unseen))})" if unseen else None)
    if why:
        row.update(title="", text=f"[{why}]", hidden=why)
    return row


def withdrawn_sql(id_expression: str) -> str:
    """SQL: the synthesis whose id `id_expression` gives is withdrawn (the review queue leaves out
    an open question about it until the metabolism makes it again)."""
    return f"EXISTS (SELECT 1 FROM syntheses ws WHERE ws.id = {id_expression} AND ws.status = 'withdrawn')"


def count_by_status(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> dict[str, int]:
    if scopes:
        marks = ",".join("?" * len(scopes))
        q = conn.execute(f"SELECT status, count(*) FROM syntheses WHERE scope IN ({marks}) GROUP BY status",
                         list(scopes))
    else:
        q = conn.execute("SELECT status, count(*) FROM syntheses GROUP BY status")
    return {s: n for s, n in q}


def backfill_subjects(conn: apsw.Connection) -> None:
    """Rows written before syntheses had subjects get theirs (a migration), so the pass recomputes
    them instead of writing a second synthesis beside them: a crystal's and a lesson's subject
    is the lineages of its members (so it survives a correction of a member, whose new version
    shares the lineage), a digest's its scope and period. A lesson's superseded members become its
    cited history."""
    for r in _decode(rows(conn, "SELECT id, kind, scope, period, members, digest FROM syntheses"
                              " WHERE subject IS NULL")):
        members = r["members"]
        if r["kind"] in ("daily", "weekly"):
            subject = f"{r['kind']}:{r['scope']}:{r['period']}"
        elif r["kind"] == "lesson" and not members:
            subject = f"lesson:failure:{r['digest']}"
        else:
            subject = f"{r['kind']}:{r['scope']}:{nodes.lineages(conn, members)}"
        history = sorted(nodes.superseded_among(conn, members)) if r["kind"] == "lesson" else []
        conn.execute("UPDATE syntheses SET subject=?, history=?, members=? WHERE id=?",
                     (subject, json.dumps(sorted(history)), json.dumps(sorted(set(members) - set(history))), r["id"]))
