"""Where an imported unit sits: its note's title, aliases and properties (frontmatter, Logseq
page properties such as `description::`) and the headings above it.

The person wrote these, but outside the unit's own words: they are not authored text (the unit's
text stays byte-exact) but an index field beside it (`nodes.context_text`, searchable), so a
section is found by the title of its note and the headings it sits under even when it does not
repeat them. The structured form (kept with the unit's import row) lets `tidemind show` name the
note, the file and the heading path. Secrets in properties are masked like any text that enters.
"""
from __future__ import annotations

import json

from ..secrets import mask

FORGOTTEN_HEADING = "…"          # stands for a heading whose section a person forgot


def build(meta: dict | None, title: str, headings: list[str]) -> dict:
    meta = meta or {}
    props = {str(k): mask(str(v))[0] for k, v in (meta.get("properties") or {}).items() if str(v).strip()}
    return {"note": mask(meta.get("title") or title)[0], "headings": [mask(h)[0] for h in headings],
            "aliases": [mask(a)[0] for a in meta.get("aliases") or ()], "properties": props}


def mask_text(text: str) -> str:
    return mask(text)[0]


def encode(context: dict) -> str:
    return json.dumps(context, ensure_ascii=False, sort_keys=True)


def decode(data: str | None) -> dict:
    try:
        found = json.loads(data or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def text(context: dict) -> str:
    """The searchable form: the note's title, the heading path, aliases, one line per property."""
    if not context:
        return ""
    lines = [context.get("note") or ""]
    if context.get("headings"):
        lines.append(" › ".join(context["headings"]))
    if context.get("aliases"):
        lines.append("aliases: " + ", ".join(context["aliases"]))
    lines += [f"{k}: {v}" for k, v in sorted((context.get("properties") or {}).items())]
    return "\n".join(line for line in lines if line)


def scrub_heading(context: dict, headings: list[str]) -> dict | None:
    """The context with the forgotten section's heading replaced, when the unit sits under it
    (its heading path starts with the forgotten one's); None when it does not."""
    path = context.get("headings") or []
    if not headings or path[:len(headings)] != headings:
        return None
    scrubbed = list(path)
    scrubbed[len(headings) - 1] = FORGOTTEN_HEADING
    return {**context, "headings": scrubbed}
