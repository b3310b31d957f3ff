"""What a person browses without a query: lists a page at a time (recent, all by title, one
tag, archived, flagged), the counts beside them, the review inbox a page at a time with the
titles of the memories each item names, and the whole-scope graph.

Reads only. Every list of memories is built on the one visibility predicate
(`store.visibility.visible`); the archived list, which is a person's way back to what they hid,
on `visibility.archived`. The SQL stays in the store modules; shells reach this through `Memory`.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import apsw

from .errors import InvalidInput
from .store import derived, fts, links, nodes, review, tags
from .store.visibility import archived, visible
from .views import title_of

VIEWS = ("recent", "all", "tag", "archived", "flagged")
RECENT = "n.recorded_at DESC, n.id DESC"
PAGE_MAX = 500
LINK_STATUSES = ("confirmed", "pending", "rejected_by_model", "rejected_by_user")


def _title(row: dict, derived_title: str | None) -> str:
    return title_of({"content": row.get("content") or "",
                     "derived": {"title": {"value": derived_title}} if derived_title else {}})


def _page_args(offset, limit) -> tuple[int, int]:
    for name, value in (("offset", offset), ("limit", limit)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(f"{name} must be a whole number of 0 or more")
    if not 1 <= limit <= PAGE_MAX:
        raise InvalidInput(f"limit must be between 1 and {PAGE_MAX}")
    return offset, limit


def titles(conn: apsw.Connection, node_ids: Sequence[int], scopes: Sequence[str]) -> dict[int, str]:
    """The title of each visible node among `node_ids` (the others are simply absent)."""
    found = nodes.get_visible_many(conn, node_ids, scopes, ("id", "content"))
    named = derived.titles(conn, list(found))
    return {i: _title(r, named.get(i)) for i, r in found.items()}


def note_titles(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, str]:
    """The titles of imported sections by their note and heading ("Shop › Payments"; a note's
    first section, or one whose heading is the note's name, by the note alone), for those of
    `node_ids` that were imported."""
    from .importers import store as import_store

    out = {}
    for i, key in import_store.unit_keys_of(conn, node_ids).items():
        path, _, heading = key.partition("#")
        note = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        heading = heading.rsplit("/", 1)[-1]
        out[i] = f"{note} › {heading}" if heading and heading.casefold() != note.casefold() else note
    return out


def title_index(conn: apsw.Connection, scopes: Sequence[str]) -> list[dict]:
    """Every visible memory's id, scope and title, to match names against (the quick switcher):
    an imported section by its note and heading ("Shop › Payments"), anything else by its title."""
    ids = nodes.visible_ids(conn, scopes)
    found = nodes.get_visible_many(conn, ids, scopes, ("id", "scope", "content"))
    named = derived.titles(conn, list(found))
    noted = note_titles(conn, list(found))
    return [{"id": i, "scope": row["scope"], "title": noted.get(i) or _title(row, named.get(i))}
            for i, row in found.items()]


CONVERSATION_REACH = 6       # turns shown before and after the one read


def conversation(conn: apsw.Connection, node_id: int, scopes: Sequence[str],
                 reach: int = CONVERSATION_REACH) -> list[dict] | None:
    """The turns around a memory of a conversation, in the order they were said: its capture's
    other units and its session's other memories, `reach` on each side of each kind, visible
    ones only; the memory itself marked `here`. None for a memory of no session, or alone in it."""
    row = nodes.get_visible(conn, [node_id], scopes).get(node_id)
    if row is None or not row.get("session"):
        return None
    near = nodes.neighbours(conn, [node_id], scopes, reach=reach)
    # (ids grow with time, and a capture's units with their order: one sort puts them as said)
    ids = sorted({node_id, *(other for _, other, _, _ in near)})
    if len(ids) < 2:
        return None
    found = nodes.get_visible(conn, ids, scopes)
    return [{"id": i, "content": found[i]["content"], "valid_from": found[i]["valid_from"],
             "source_tool": found[i]["source_tool"], "here": i == node_id} for i in ids if i in found]


def unlinked_mentions(conn: apsw.Connection, name: str, own: Sequence[int], linked: Sequence[int],
                      scopes: Sequence[str], limit: int = 20) -> list[dict]:
    """Memories that name `name` (a note's title, as a phrase) without a link: not the note's own
    sections (`own`), not those already linked either way (`linked`). Titles, best match first."""
    expression = fts.match_expression([" ".join(fts.tokens(name))])
    if expression is None:
        return []
    pred, params = visible("n", scopes)
    skip = set(own) | set(linked)
    hits = [i for i, _ in fts.search(conn, expression, pred, params, limit + len(skip), scopes=scopes)
            if i not in skip][:limit]
    named = titles(conn, hits, scopes)
    return [{"id": i, "title": named[i]} for i in hits if i in named]


def listing(conn: apsw.Connection, scopes: Sequence[str], view: str = "recent", tag: str | None = None,
            offset: int = 0, limit: int = 50) -> dict:
    """One page of a list and its total: `recent` (newest first), `all` (by title), `tag` (the
    memories carrying `tag`, proposed or confirmed), `archived`, `flagged` (one side of an open
    contradiction)."""
    if view not in VIEWS:
        raise InvalidInput(f"view must be one of {', '.join(VIEWS)}")
    offset, limit = _page_args(offset, limit)
    pred, params = archived("n", scopes) if view == "archived" else visible("n", scopes)
    filters = []
    if view == "tag":
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidInput("the tag view needs a tag name")
        filters.append(tags.filter_sql("n", [tag.strip()]))
    if view == "flagged":
        filters.append(review.flagged_sql("n"))
    for sql, more in filters:
        pred, params = f"{pred} AND {sql}", [*params, *more]
    order = f"{derived.title_order_sql(conn, 'n')}, n.id" if view == "all" else RECENT
    found, total = nodes.listing(conn, pred, params, order, offset, limit)
    named = derived.titles(conn, [r["id"] for r in found])
    served = tags.served_names(conn, [r["id"] for r in found])
    items = [{"id": r["id"], "title": _title(r, named.get(r["id"])), "scope": r["scope"], "status": r["status"],
              "recorded_at": r["recorded_at"], "valid_from": r["valid_from"], "content": r["content"],
              "tags": served.get(r["id"], [])} for r in found]
    return {"view": view, "tag": tag, "items": items, "total": total, "offset": offset}


def sidebar(conn: apsw.Connection, scopes: Sequence[str], tag_limit: int = 100) -> dict:
    """The counts a sidebar shows: live memories per scope, archived, flagged, the most used tags."""
    pred, params = visible("n", scopes)
    per_scope = nodes.count_by_scope(conn, pred, params)
    hidden_pred, hidden_params = archived("n", scopes)
    flagged_sql, flagged_params = review.flagged_sql("n")
    flagged = nodes.count_by_scope(conn, f"{pred} AND {flagged_sql}", [*params, *flagged_params])
    return {"live": sum(per_scope.values()), "scopes": per_scope,
            "archived": sum(nodes.count_by_scope(conn, hidden_pred, hidden_params).values()),
            "flagged": sum(flagged.values()), "tags": tags.counts(conn, pred, params, tag_limit)}


SORTS = ("newest", "oldest", "strongest", "weakest")


def review_page(conn: apsw.Connection, scopes: Sequence[str], status: str | None = "open", kind: str | None = None,
                offset: int = 0, limit: int = 50, sort: str | None = None, tag: str | None = None,
                node: int | None = None) -> dict:
    """A page of the inbox, the count of each kind, and the titles of the memories the page
    names. Pending links are the kind `link` (they live in the links table, not as items).
    `sort`: newest, oldest, strongest or weakest (a pair's similarity, a link's strength; by
    default items newest first and links oldest first); `tag`, `node`: only what names a memory
    carrying the tag, or that memory; the counts are of the same narrowed inbox."""
    if status not in (None, "open", "approved", "rejected"):
        raise InvalidInput("status must be open, approved, rejected or None (all)")
    if sort is not None and sort not in SORTS:
        raise InvalidInput(f"sort must be one of {', '.join(SORTS)}")
    offset, limit = _page_args(offset, limit)
    counts = review.counts_by_kind(conn, scopes, status, tag, node)
    if status in (None, "open"):
        counts["link"] = links.count_pending(conn, scopes, tag, node)
    if kind == "link":
        found = links.pending_page(conn, scopes, offset, limit, sort or "oldest", tag, node)
        items = [{"id": r["id"], "kind": "link", "status": "open", "node_id": r["source_id"],
                  "other_node_id": r["target_id"],
                  "payload": {"relation": r["relation"], "strength": r["strength"], "proposed_by": r["proposed_by"],
                              "reason": r["reason"]}} for r in found]
        total = counts.get("link", 0)
    else:
        items, total = review.page(conn, scopes, status, kind, offset, limit, sort or "newest", tag, node)
    named = titles(conn, sorted({i for r in items for i in (r["node_id"], r["other_node_id"]) if i}), scopes)
    for r in items:
        r["titles"] = {i: named.get(i) for i in (r["node_id"], r["other_node_id"]) if i}
    return {"items": items, "total": total, "counts": counts, "kind": kind, "status": status, "offset": offset,
            "sort": sort, "tag": tag, "node": node}


def graph(conn: apsw.Connection, scopes: Sequence[str], tag: str | None = None,
          link_statuses: Sequence[str] = ("confirmed", "pending"), orphans: bool = True, limit: int = 3000,
          flagged: bool = False) -> dict:
    """Every visible memory of the scopes (those carrying `tag`, when given; only the flagged
    ones, one side of an open contradiction, with `flagged`) and the links among them in
    `link_statuses`. Over `limit` memories, the best connected are kept and `total` says how
    many there were."""
    bad = set(link_statuses) - set(LINK_STATUSES)
    if bad:
        raise InvalidInput(f"unknown link status {sorted(bad)[0]!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 20_000:
        raise InvalidInput("limit must be between 1 and 20000")
    filters = ([tags.filter_sql("n", [tag])] if tag else []) + ([review.flagged_sql("n")] if flagged else [])
    ids = nodes.visible_ids(conn, scopes, filters)
    inside = set(ids)
    edges = [e for e in links.between_visible(conn, scopes, list(link_statuses)) if e[1] in inside and e[2] in inside]
    degree = Counter(i for e in edges for i in (e[1], e[2]))
    chosen = ids if orphans else [i for i in ids if degree[i]]
    if len(chosen) > limit:
        chosen = sorted(chosen, key=lambda i: (-degree[i], -i))[:limit]
    kept = set(chosen)
    rows = nodes.get_visible_many(conn, chosen, scopes, ("id", "scope", "heat", "content"))
    named = derived.titles(conn, chosen)
    noted = note_titles(conn, chosen)
    served = tags.served_names(conn, chosen)
    return {"nodes": [{"id": i, "title": noted.get(i) or _title(rows[i], named.get(i)), "scope": rows[i]["scope"],
                       "heat": rows[i]["heat"], "tags": served.get(i, []), "degree": degree[i]}
                      for i in chosen if i in rows],
            "edges": [{"id": e[0], "source_id": e[1], "target_id": e[2], "status": e[3], "relation": e[4]} for e in edges
                      if e[1] in kept and e[2] in kept],
            "total": len(ids), "center": None}
