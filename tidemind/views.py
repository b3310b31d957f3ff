"""How a node is shown to a reader: authored text, then its labelled layers and standing.

Tags and links always carry their status; a person's clarifications are labelled `clarified`;
derived values always carry their generator and are labelled `derived`; a superseded node (seen only through an as-of query) says what replaced it.
"""
from __future__ import annotations

from typing import Sequence

import apsw

from .store import AsOf, clarifications, derived, links, nodes, review, tags


def describe(conn: apsw.Connection, found: dict[int, dict], order: Sequence[int], scopes: Sequence[str],
             as_of: AsOf | None = None, scores: dict[int, float] | None = None,
             via: dict[int, str] | None = None) -> list[dict]:
    ids = [i for i in order if i in found]
    tag_map = tags.for_nodes(conn, ids)
    link_map = links.for_nodes(conn, ids, scopes, as_of)
    open_reviews = review.open_for_nodes(conn, ids)
    derived_map = derived.for_nodes(conn, ids)
    written_by = nodes.authors(conn, ids)
    items = []
    for node_id in ids:
        row = found[node_id]
        der = {k: v for k, v in derived_map[node_id].items() if k not in derived.BOOKKEEPING}
        flags = []
        if row["status"] == "superseded" and row["superseded_by"]:
            flags.append(f"superseded_by:{row['superseded_by']}")
        for item in open_reviews[node_id]:
            if item["kind"] == "contradiction":
                flags.append(f"contradiction:review:{item['id']}")
        if der:
            flags.append("has_derived")
        clarified = clarifications.for_node(conn, node_id) if row.get("clarified_text") else []
        if clarified:
            flags.append("has_clarified")
        if via and node_id in via:
            flags.append(f"via:{via[node_id]}")
        items.append({
            "id": node_id,
            "content": row["content"],
            "layer": "authored",
            "written_by": written_by[node_id],      # person, import, agent or system: how far to trust it
            "scope": row["scope"],
            "status": row["status"],
            "score": round(scores.get(node_id, 0.0), 6) if scores else None,
            "tags": [{"name": t["name"], "status": t["status"]} for t in tag_map[node_id]
                     if t["status"] != "rejected_by_user"],
            "links": [{"target": l["target"], "relation": l["relation"], "status": l["status"],
                       "direction": l["direction"]} for l in link_map[node_id]],
            "clarified": [{"term": c["term"], "answer": c["answer"], "by": c["actor"], "at": c["at"],
                           "layer": "clarified"} for c in clarified],
            "derived": {k: {"value": v["value"], "generator": v["generator"], "layer": "derived"}
                        for k, v in der.items()},
            "valid_from": row["valid_from"],
            "valid_to": row["valid_to"],
            "recorded_at": row["recorded_at"],
            "superseded_at": row["superseded_at"],
            "source": {"tool": row["source_tool"], "session": row["session"], "capture": row["capture_id"]},
            "flags": flags,
        })
    return items


def title_of(item: dict) -> str:
    title = item.get("derived", {}).get("title", {}).get("value")
    if title:
        return title
    first = next((line.strip() for line in item["content"].splitlines() if line.strip()), "")
    first = first.lstrip("#").strip() if first.startswith("#") else first      # a section's heading
    first = first[2:] if first.startswith("- ") else first                    # an outliner bullet
    return first[:117] + "..." if len(first) > 120 else first
