"""Undo a person's decisions from the audit log, so an undo outlives the window or the command
that made the decision.

A decision is the audit rows one call wrote for one actor: consecutive rows of the same actor
and time (a bulk decision writes one row per item, at one time). The decisions undone here are a
person's verdicts: review items, links, tags (a rejection, an addition, a scope-wide yes or no)
and archiving. `undo_last` takes the actor's latest decision not undone yet and puts back what
each of its rows says was there before, in one transaction, then writes an `undo` row naming the
rows it undid and the rows it wrote itself: the next undo goes one further back, and never undoes
an undo. A part that was decided again since (by anyone) is left as it is now and named in
`kept`; the rest of the decision is still put back. Corrections and forgets are not decisions of
this kind: a correction is undone by correcting back, a forget by nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .errors import Conflict, NotFound
from .store import audit, immediate, links, nodes, review, tags

if TYPE_CHECKING:
    from .memory import Memory

UNDOABLE = frozenset({"link_confirmed", "link_rejected_by_user", "link_pending", "review_approved", "review_rejected",
                      "review_open", "tag_reject", "tag_unreject", "tag_add", "tag_reject_everywhere",
                      "tag_accept_everywhere", "tag_unreject_everywhere", "archive", "unarchive"})
LOOK_BACK = 20_000        # audit rows of the actor read to find its latest decision (an undo of a bulk
                          # decision wrote as many rows as it put back: they are stepped over)


def latest(memory: "Memory") -> list[dict]:
    """The audit rows of the actor's latest decision not undone yet, newest first ([]: none):
    found among its newest rows, then read whole by its time (a bulk decision of 5,000 rows)."""
    undone: set[int] = set()
    for row in audit.recent_by_actor(memory.conn, memory.actor, LOOK_BACK):
        if row["action"] == "undo":
            undone |= _undid(row)
        elif row["id"] not in undone and row["action"] in UNDOABLE:
            return _whole(memory, row["at"], undone)
    return []


def _undid(row: dict) -> set[int]:
    return set(row["details"].get("undid", [])) | set(row["details"].get("made", []))


def _whole(memory: "Memory", at: str, undone: set[int]) -> list[dict]:
    """The undoable rows of the actor's decision made at `at` (what it did besides, a merge's
    supersession, is put back by undoing the decision itself)."""
    return [r for r in audit.by_actor_at(memory.conn, memory.actor, at)
            if r["action"] in UNDOABLE and r["id"] not in undone]


def _the_decision(memory: "Memory", ids: Sequence[int]) -> list[dict]:
    """The rows `ids` of one decision of the actor's, newest first: refused when one is not such
    a row, or was undone already."""
    wanted = {int(i) for i in ids}
    first = audit.row(memory.conn, min(wanted)) if wanted else None
    same = audit.by_actor_at(memory.conn, memory.actor, first["at"]) if first and first["actor"] == memory.actor else []
    found = [r for r in same if r["id"] in wanted]
    if not wanted or len(found) != len(wanted) or any(r["action"] not in UNDOABLE for r in found):
        raise NotFound(f"audit rows {sorted(wanted)[:5]} are not one decision of {memory.actor}")
    undone = {i for r in audit.recent_by_actor(memory.conn, memory.actor, 1_000_000, after_id=min(wanted))
              if r["action"] == "undo" for i in _undid(r)}
    if wanted & undone:
        raise Conflict(f"that decision ({describe(found)}) was undone already")
    return found


def made_after(memory: "Memory", audit_id: int) -> list[list[int]]:
    """The actor's decisions written after audit row `audit_id`, newest first, each as its rows'
    ids: what a window just decided, to undo exactly that later (`undo_last(expect=...)`)."""
    groups: list[list[dict]] = []
    for row in audit.recent_by_actor(memory.conn, memory.actor, 1_000_000, after_id=audit_id):
        if row["action"] not in UNDOABLE:
            continue
        if groups and groups[-1][0]["at"] == row["at"]:
            groups[-1].append(row)
        else:
            groups.append([row])
    return [[r["id"] for r in g] for g in groups]


def describe(group: list[dict]) -> str:
    """What the decision was, in a few words ("3 links confirmed", "archive #12")."""
    if not group:
        return "nothing"
    action = group[0]["action"]
    d = group[0]["details"]
    if action.startswith("link_"):
        return f"{len(group)} link(s) set {action[5:].replace('_', ' ')}"
    if action.startswith("review_"):
        return f"{len(group)} review item(s) set {action[7:]}"
    if action in ("tag_reject_everywhere", "tag_accept_everywhere", "tag_unreject_everywhere"):
        verb = {"tag_reject_everywhere": "rejected", "tag_accept_everywhere": "accepted",
                "tag_unreject_everywhere": "allowed again"}[action]
        return f"tag {d.get('tag', '(forgotten)')!r} {verb} everywhere in {d.get('scope')}"
    if action.startswith("tag_"):
        verb = {"tag_reject": "rejected on", "tag_unreject": "no longer rejected on", "tag_add": "added to"}[action]
        return f"tag {d.get('tag', '(forgotten)')!r} {verb} #{group[0]['node_id']}"
    return f"{action} #{group[0]['node_id']}"


def undo_last(memory: "Memory", expect: Sequence[int] | None = None) -> dict:
    """Put back what the actor's latest decision changed (see the module's docstring). `expect`:
    the audit rows of one decision of the actor's (from `made_after`): that one, even when a
    later one came since (a window's own last decision while a second window decided too); its
    parts decided again since stay as they are, like any undo's."""
    conn = memory.conn
    with immediate(conn):
        group = latest(memory) if expect is None else _the_decision(memory, expect)
        if not group:
            raise NotFound(f"no decision of {memory.actor} left to undo")
        if expect is not None:
            group = _the_decision(memory, expect)
        now = memory.now()
        before = audit.last_id(conn)
        kept = []
        for row in group:                     # newest first: the reverse of the order they were made
            try:
                why = _put_back(memory, row, now)
            except (Conflict, NotFound) as exc:     # (a synthesis withdrawn since: that part cannot go back)
                why = f"audit row {row['id']}: {exc}"
            if why:
                kept.append(why)
        made = audit.ids_after(conn, before)    # (this transaction's own rows: the writer holds the lock)
        label = describe(group)
        audit.record(conn, at=now, actor=memory.actor, action="undo", undid=[r["id"] for r in group], made=made,
                     kept=kept)
    done = f"undone: {label}" + (f" ({len(kept)} part(s) changed since were left as they are)" if kept else "")
    return {"undone": label, "rows": [r["id"] for r in group], "kept": kept, "done": done}


def _put_back(memory: "Memory", row: dict, now: str) -> str | None:
    """Undo one audit row inside the caller's transaction; a reason when it was left alone."""
    conn, action, d = memory.conn, row["action"], row["details"]
    read = memory.read_scopes(None, all_scopes=True)
    if action.startswith("link_"):
        link = links.get(conn, d["link"])
        if link is None or link["status"] != action[5:]:
            return f"link {d['link']} was decided again since"
        if len(nodes.get_visible(conn, [link["source_id"], link["target_id"]], read)) != 2:
            return f"link {d['link']} is no longer between memories visible here"
        links.set_status(conn, link["id"], d["previous"], now, f"set back by {memory.actor}")
        audit.record(conn, at=now, actor=memory.actor, action=f"link_{d['previous']}", node_id=link["source_id"],
                     link=link["id"], previous=link["status"])
        return None
    if action.startswith("review_"):
        item = review.get(conn, d["review_item"], read)
        if item is None or item["status"] != action[7:]:
            return f"review item {d['review_item']} was decided again since"
        stands = d.get("previous_stands") if item["kind"] == "contradiction" and d["previous"] == "approved" else None
        memory._decide_item(item["id"], d["previous"], stands, now)
        return None
    if action in ("archive", "unarchive"):
        row_now = nodes.get_any(conn, row["node_id"])
        want = "archived" if action == "archive" else "live"
        if row_now is None or row_now["status"] != want:
            return f"node {row['node_id']} changed since"
        try:
            row_now = memory._live_node(row_now["id"], "undo")
        except NotFound:
            return f"node {row['node_id']} is not in a scope writable here"
        (memory._unarchive_in if action == "archive" else memory._archive_in)(row_now, now)
        return None
    name = d.get("tag")
    if name is None:                   # (a forget scrubbed the name: nothing left to put back)
        return f"the tag of audit row {row['id']} was forgotten"
    if action in ("tag_reject_everywhere", "tag_accept_everywhere", "tag_unreject_everywhere"):
        if memory.writable is not None and d["scope"] not in memory.writable:
            return f"scope {d['scope']} is not writable here"
        if action == "tag_unreject_everywhere":      # "never here" said again, its proposals withdrawn again
            touched = tags.reject_everywhere(conn, name, d["scope"], now, memory.actor)
            audit.record(conn, at=now, actor=memory.actor, action="tag_reject_everywhere", scope=d["scope"],
                         tag=name, nodes=touched)
            return None
        if action == "tag_reject_everywhere":
            restored = tags.unreject_everywhere(conn, name, d["scope"])
            if restored is None:
                return f"tag {name!r} is no longer rejected everywhere in {d['scope']}"
            audit.record(conn, at=now, actor=memory.actor, action="tag_unreject_everywhere", scope=d["scope"],
                         tag=name, nodes=restored)
            return None
        if "previous" not in d:
            return f"audit row {row['id']} predates what undo needs (accept again by hand)"
        restored = []
        for node_id, was in d["previous"].items():
            current = tags.assignment(conn, int(node_id), name)
            if was and was.get("status") == "proposed" and current and current["status"] == "confirmed":
                tags.put_back(conn, int(node_id), name, was)
                restored.append(int(node_id))
        audit.record(conn, at=now, actor=memory.actor, action="tag_accept_everywhere_undo", tag=name, nodes=restored)
        return None
    try:
        node = memory._live_node(row["node_id"], "undo")
    except (NotFound, Conflict) as exc:         # (superseded, forgotten, not writable: said why)
        return f"node {row['node_id']}: {exc}"
    current = tags.assignment(conn, node["id"], name)
    if action == "tag_reject":
        if current is None or current["status"] != "rejected_by_user":
            return f"tag {name!r} on node {node['id']} changed since"
        tags.unreject(conn, node["id"], name)
        audit.record(conn, at=now, actor=memory.actor, action="tag_unreject", node_id=node["id"], tag=name)
    elif action == "tag_unreject":
        if current is not None and current["status"] == "rejected_by_user":
            return f"tag {name!r} on node {node['id']} changed since"
        tags.reject(conn, node["id"], name, now)
        audit.record(conn, at=now, actor=memory.actor, action="tag_reject", node_id=node["id"], tag=name)
    else:                                        # tag_add
        if "previous" not in d:
            return f"audit row {row['id']} predates what undo needs (remove the tag by hand)"
        if current is None or current["status"] != "confirmed":
            return f"tag {name!r} on node {node['id']} changed since"
        tags.put_back(conn, node["id"], name, d["previous"])
        audit.record(conn, at=now, actor=memory.actor, action="tag_restore", node_id=node["id"], tag=name,
                     status=d["previous"]["status"] if d["previous"] else None)
    return None
