"""Removing a memory as if it had never been stored: what undoing an import does with the
memories the import added.

Archiving hides a memory and keeps it (and keeps its words out of the next sync); forgetting
erases its words and keeps hash tombstones, so the same words are never stored again. Neither
is "the store as it was": a rolled-back import must leave no memory behind, and must not stop the
same note from being imported again. Removal takes the node out of every table and index, its
capture out of the store and (once the caller committed) its entry out of the stream file, and withdraws what was made from
it since (review items, tags, links, a person's clarifications of it; a synthesis citing it is
withdrawn with its words, as forget does), inside the caller's transaction. The audit log keeps
what happened (ids and hashes, never words).

Only the importer's rollback removes, and only nodes its batch created that nothing else
changed since (`importers.engine._check_undoable`): a memory a person corrected, archived or
forgot, or merged another memory into, is never removed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .store import (audit, captures, clarifications, derived, links, nodes, recall_hits, review, syntheses, tags,
                    vectors)

if TYPE_CHECKING:
    from .memory import Memory


def remove(memory: "Memory", node_id: int, now: str) -> dict:
    """Remove node `node_id` and everything made from it, inside the caller's transaction.
    Returns what the caller finishes once the transaction committed: {"stream": its stream
    entry [(file, capture id, key)] to take out (`stream.remove`: a file rewritten before a
    rollback would lose the entry of a capture that stays), "days": the (scope, day) whose
    workstream composition to redo (`recompose`, once for a whole rollback: per memory it cost
    16 ms of a 18 ms removal)}."""
    from . import clarify, embed as embed_pkg
    from .importers import store as import_store
    from .workstreams import store as workstream_store

    conn = memory.conn
    row = nodes.get_any(conn, node_id)
    if row is None:
        return {"stream": [], "days": set()}
    days = nodes.scope_days(conn, [node_id])
    embed_pkg.unobserve_everywhere(conn, [node_id])
    dependents, words = clarifications.quoted_by_others(conn, node_id)
    clarifications.scrub_node(conn, node_id)
    clarify.after_forget(memory, dependents, words, now, row["content"])
    derived.delete_for_node(conn, node_id)
    vectors.drop(conn, node_id)
    review.delete_naming(conn, node_id)
    # a synthesis made from it is withdrawn with its words (its row keeps a person's verdict and
    # keeps the metabolism from making it again); an open question about it asks about nothing
    review.delete_open_about(conn, syntheses.citing(conn, [node_id]))
    syntheses.withdraw_citing(conn, node_id, now)
    tags.forget_node(conn, node_id)
    workstream_store.forget_node(conn, node_id)
    import_store.drop_node(conn, node_id)
    links.delete_touching(conn, node_id)
    recall_hits.delete_node(conn, node_id)
    nodes.delete(conn, node_id)
    cap = captures.get(conn, row["capture_id"]) if row["capture_id"] is not None else None
    if cap is not None:
        captures.delete(conn, cap["id"])
    audit.record(conn, at=now, actor=memory.actor, action="remove", node_id=node_id, capture_id=row["capture_id"],
                 content_hash=row["content_hash"])
    gone = cap is not None and cap["stream_file"] and captures.get(conn, cap["id"]) is None
    return {"stream": [(cap["stream_file"], cap["id"], cap["stream_key"])] if gone else [], "days": days}


def recompose(memory: "Memory", days: set[tuple[str, str]], now: str) -> None:
    """Inside the caller's transaction: the workstream days the removed memories were on, made
    again without them (and what was known only from their words dropped), as forget does."""
    from .workstreams import after_forget

    if days:
        after_forget(memory.conn, days, now)
