""""Nothing lost, nothing invented": checks of an imported folder against its files, shared by
the fixture tests and the property tests over generated vaults.

Written from what the formats say a file holds, not from how the parsers split it:
- every non-blank line of every note appears in one of that note's units (a Logseq bullet with
  nothing after it is an empty block), except its properties (Obsidian's YAML frontmatter; Logseq's leading `key:: value` lines, or a first
  bullet made only of them; org's leading `#+key:` lines and drawer);
- every tag on an imported unit is written in its note (`#tag`, `#[[tag]]`, a tags property);
- every link is a link to a unit of the note it names (by path, file name, title or alias;
  under the heading or holding the block it names), or is listed as dangling with a reason.
"""
from __future__ import annotations

import re
from pathlib import Path

from tidemind.importers import get_parser

REASONS = {"missing note", "note without text", "note skipped", "missing heading", "missing block", "attachment",
           "missing attachment"}
_LOGSEQ_PROPERTY = re.compile(r"^\s*(?:- )?[A-Za-z0-9_\-]+::(?:\s.*)?$")
_ORG_PROPERTY = re.compile(r"^#\+[A-Za-z0-9_\-]+:")


def property_lines(source: str, path: str, text: str) -> int:
    """How many leading lines of the file are its properties."""
    lines = text.splitlines()
    if source == "obsidian":
        if lines and lines[0].strip() == "---":
            for i, line in enumerate(lines[1:], start=1):
                if line.strip() == "---":
                    return i + 1
        return 0
    if path.endswith(".org"):
        i, drawer = 0, False
        while i < len(lines) and (drawer or _ORG_PROPERTY.match(lines[i]) or not lines[i].strip()
                                  or (i == 0 and lines[i].strip().upper() == ":PROPERTIES:")):
            drawer = (drawer or lines[i].strip().upper() == ":PROPERTIES:") and lines[i].strip().upper() != ":END:"
            i += 1
        return i
    i = 0
    while i < len(lines) and (not lines[i].strip() or (_LOGSEQ_PROPERTY.match(lines[i]) and not lines[i][0].isspace()
                                                       and not lines[i].startswith("- "))):
        i += 1
    if i < len(lines) and lines[i].startswith("- ") and _LOGSEQ_PROPERTY.match(lines[i]):
        j = i + 1                               # a first bullet made only of properties
        while j < len(lines) and (not lines[j].strip() or _LOGSEQ_PROPERTY.match(lines[j])) \
                and not lines[j].startswith("- "):
            j += 1
        if j == len(lines) or lines[j].startswith("- ") or lines[j].startswith("#"):
            i = j
    return i


def check_folder(mem, source: str, root: Path, report: dict, options: dict | None = None) -> dict:
    """Assert the three promises over an imported folder; returns counts of what was checked."""
    root = Path(root).resolve()
    parsed = get_parser(source).parse(root, options or {})
    skipped = {s["path"] for s in report["skipped"] if "body imported" not in s["reason"]}
    stored = {}                                 # note path -> [(node id, content)]
    keys = {}
    for key, node_id in mem.conn.execute("SELECT unit_key, node_id FROM import_units WHERE source=? AND root=? AND"
                                         " status='live'", (source, str(root))):
        content = mem.conn.execute("SELECT content FROM nodes WHERE id=?", (node_id,)).fetchone()[0]
        stored.setdefault(key.split("#", 1)[0], []).append((node_id, content))
        keys[node_id] = key
    counted = {"lines": 0, "tags": 0, "links": 0, "dangling": 0}
    # 1. nothing lost
    for path in parsed.notes:
        if path in skipped:
            continue
        text = (root / path).read_text(encoding="utf-8")
        units = [c.splitlines() for _, c in stored.get(path, [])]
        for line in text.splitlines()[property_lines(source, path, text):]:
            if line.strip() and not (source == "logseq" and line.strip() in ("-", "*")):   # an empty block
                counted["lines"] += 1
                assert any(line in u for u in units), f"{path}: line lost: {line!r}"
    # 2. nothing invented: every tag is written in its note
    for node_id, key in keys.items():
        raw = (root / key.split("#", 1)[0]).read_text(encoding="utf-8").casefold()
        for (name,) in mem.conn.execute("SELECT t.name FROM node_tags nt JOIN tags t ON t.id = nt.tag_id WHERE"
                                        " nt.node_id=? AND nt.source LIKE 'person:%'", (node_id,)):
            counted["tags"] += 1
            tag = name.casefold()
            forms = ("#" + tag, "#[[" + tag.replace("-", " ") + "]]", "#[[" + tag + "]]")
            listed = any(tag in line or tag.replace("-", " ") in line for line in raw.splitlines()
                         if line.lstrip("- ").startswith(("tags:", "tag:", "#+tags", "  -")))
            assert any(f in raw for f in forms) or listed, f"{key}: tag {name!r} is not written in the note"
    # 3. every link lands in the right note, or is listed dangling with a reason
    dangling = {(r[0], r[1]): r[2] for r in mem.conn.execute(
        "SELECT unit_key, target, reason FROM import_dangling WHERE source=? AND root=?", (source, str(root)))}
    node_of_text = {(p, c): n for p, items in stored.items() for n, c in items}
    names_of: dict[str, set[str]] = {}
    for name, paths in parsed.names.items():
        for p in paths:
            names_of.setdefault(p, set()).add(name.casefold())
    for unit in parsed.units:
        node_id = node_of_text.get((unit.path, unit.text))
        if node_id is None:
            continue                              # a section refused (over the size limit): reported
        for ref in unit.refs:
            counted["links"] += 1
            reason = dangling.get((keys[node_id], ref.shown))
            if reason is not None:
                counted["dangling"] += 1
                assert reason in REASONS, reason
                continue
            targets = [b if a == node_id else a for a, b in mem.conn.execute(
                "SELECT source_id, target_id FROM links WHERE status='confirmed' AND (source_id=? OR target_id=?)",
                (node_id, node_id))]
            candidates = [node_id, *targets]      # (a link to the unit itself is no link)
            assert any(_lands(mem, keys.get(t), t, ref, unit, names_of, source) for t in candidates), \
                f"{unit.path}: link {ref.shown!r} is neither a link to the right note nor dangling"
    return counted


def _lands(mem, key, node_id, ref, unit, names_of, source) -> bool:
    if key is None:
        return False
    path = key.split("#", 1)[0]
    stem = Path(path).with_suffix("").as_posix().casefold()
    content = mem.conn.execute("SELECT content FROM nodes WHERE id=?", (node_id,)).fetchone()[0]
    if ref.target is None:                                         # a Logseq ((block ref))
        return ref.block in content
    target = ref.target.strip().casefold()
    target = target[:-3] if target.endswith(".md") else target
    right_note = (path == unit.path if not target else
                  stem == target or stem.endswith("/" + target) or target in names_of.get(path, ()))
    if not right_note:
        return False
    if ref.block:
        return f"^{ref.block}" in content or f"id:: {ref.block}" in content
    if ref.headings:
        first = content.splitlines()[0].lstrip("#").strip().casefold() if content.strip() else ""
        return first == ref.headings[-1].strip().casefold()
    return True
