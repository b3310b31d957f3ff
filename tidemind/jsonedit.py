"""Edit a host's JSON (or JSON-with-comments) file in place, touching only the bytes that change.

A host's settings file is the person's: their key order, indentation, comments (VS Code and Gemini
CLI accept `//` and `/* */`) and trailing commas must survive an install, and an uninstall must give
back the very bytes it started from. Re-serialising with `json.dumps` would do neither, so this
module parses the text into nodes that remember where they sit, and each edit splices text at
those offsets: a member added after the last one (`,` + newline + the siblings' indentation), a
member removed together with the comma that joined it. Removing what was added returns the
original text exactly.

The parser descends once per nesting level and refuses a file nested deeper than MAX_DEPTH (no host
writes such a file, and Python's own recursion limit is not a refusal anyone can read).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

MAX_DEPTH = 200
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')


class JSONEditError(ValueError):
    """The text is not (JSON-with-comments) JSON; the message names the line and column."""


@dataclass
class Node:
    start: int
    end: int                              # exclusive
    value: object = None
    kind: str = "scalar"                  # "object" | "array" | "scalar"
    # object: [(key, key_start, value_node)]; array: [value_node]
    members: list = field(default_factory=list)


class Document:
    """Parsed text plus the edits that keep everything else byte-identical."""

    def __init__(self, text: str, comments: bool = False):
        self.text = text
        self.comments = comments
        self.newline = "\r\n" if "\r\n" in text else "\n"       # a file written on Windows stays CRLF
        self.root = _Parser(text, comments).parse()

    # -- reading ----------------------------------------------------------------------------------
    @property
    def value(self):
        return self.root.value if self.root is not None else None

    def find(self, path: list) -> Node | None:
        node = self.root
        for step in path:
            if node is None:
                return None
            if node.kind == "object" and isinstance(step, str):
                node = _member(node, step)
            elif node.kind == "array" and isinstance(step, int) and 0 <= step < len(node.members):
                node = node.members[step]
            else:
                return None
        return node

    # -- editing: each returns the new text and re-parses, so offsets never go stale ----------------
    def set(self, path: list[str], value) -> None:
        """Set the member at `path` (object keys only), creating missing objects on the way."""
        if self.root is None:
            nested = value
            for key in reversed(path):
                nested = {key: nested}
            self._replace(0, len(self.text), self._dump(nested, "") + self.newline)
            return
        parent = self.root
        for i, key in enumerate(path[:-1]):
            child = _member(parent, key) if parent.kind == "object" else None
            if child is None:
                nested = value
                for rest in reversed(path[i + 1:]):
                    nested = {rest: nested}
                self._insert_member(parent, key, nested)
                return
            if child.kind != "object":
                raise JSONEditError(f"'{'.'.join(path[:i + 1])}' is not an object")
            parent = child
        if parent.kind != "object":
            raise JSONEditError("the file does not hold a JSON object")
        existing = _member(parent, path[-1])
        if existing is None:
            self._insert_member(parent, path[-1], value)
        elif existing.value != value or existing.kind == "scalar" and type(existing.value) is not type(value):
            self._replace(existing.start, existing.end, self._dump(value, self._indent_of(existing.start)))

    def remove(self, path: list) -> bool:
        """Remove the member or array item at `path`, with the comma that joined it; False if absent."""
        if not path:
            return False
        parent = self.find(path[:-1])
        if parent is None or parent.kind == "scalar":
            return False
        if parent.kind == "object":
            idx = next((i for i in range(len(parent.members) - 1, -1, -1) if parent.members[i][0] == path[-1]), None)
        else:
            idx = path[-1] if isinstance(path[-1], int) and 0 <= path[-1] < len(parent.members) else None
        if idx is None:
            return False
        starts = [ks for _, ks, _ in parent.members] if parent.kind == "object" else [n.start for n in parent.members]
        ends = [v.end for _, _, v in parent.members] if parent.kind == "object" else [n.end for n in parent.members]
        if idx > 0:
            # from the end of the previous item: exactly what an append inserted
            self._replace(ends[idx - 1], ends[idx], "")
        elif len(starts) > 1:
            self._replace(starts[0], starts[1], "")
        else:
            self._replace(parent.start + 1, parent.end - 1, "")
        return True

    def append(self, path: list[str], item) -> None:
        """Append `item` to the array at `path` (created as [item] when missing)."""
        node = self.find(path)
        if node is None:
            self.set(path, [item])
            return
        if node.kind != "array":
            raise JSONEditError(f"'{'.'.join(map(str, path))}' is not an array")
        self._insert_item(node, self._dump(item, self._child_indent(node)))

    # -- internals --------------------------------------------------------------------------------
    def _insert_member(self, obj: Node, key: str, value) -> None:
        indent = self._child_indent(obj)
        text = f"{json.dumps(key, ensure_ascii=False)}: {self._dump(value, indent)}"
        self._insert_item(obj, text)

    def _insert_item(self, container: Node, text: str) -> None:
        items = container.members
        if items:
            last_end = items[-1][2].end if container.kind == "object" else items[-1].end
            first_start = items[0][1] if container.kind == "object" else items[0].start
            indent = self._indent_of(first_start)
            if "\n" in self.text[container.start:first_start]:
                self._replace(last_end, last_end, f",{self.newline}{indent}{text}")
            else:                       # one-line container: stay on the line
                self._replace(last_end, last_end, f", {text}")
        else:
            indent = self._child_indent(container)
            close = self._indent_of(container.start)
            nl = self.newline
            self._replace(container.start + 1, container.end - 1, f"{nl}{indent}{text}{nl}{close}")

    def _child_indent(self, container: Node) -> str:
        items = container.members
        if items:
            first = items[0][1] if container.kind == "object" else items[0].start
            if "\n" in self.text[container.start:first]:
                return self._indent_of(first)
        return self._indent_of(container.start) + self._unit()

    def _indent_of(self, pos: int) -> str:
        line_start = self.text.rfind("\n", 0, pos) + 1
        m = re.match(r"[ \t]*", self.text[line_start:pos])
        return m.group(0) if m else ""

    def _unit(self) -> str:
        m = re.search(r"\n([ \t]+)\S", self.text)
        return m.group(1) if m else "  "

    def _dump(self, value, indent: str) -> str:
        unit = self._unit()
        text = json.dumps(value, indent=len(unit) if unit.strip(" ") == "" else unit, ensure_ascii=False)
        return text.replace("\n", self.newline + indent)

    def _replace(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]
        self.root = _Parser(self.text, self.comments).parse()


def _member(obj: Node, key: str) -> Node | None:
    """The member a host reads: with a duplicated key, JSON parsers keep the last."""
    return next((v for k, _, v in reversed(obj.members) if k == key), None)


class _Parser:
    def __init__(self, text: str, comments: bool):
        self.text, self.comments, self.i = text, comments, 0

    def fail(self, what: str) -> JSONEditError:
        line = self.text.count("\n", 0, self.i) + 1
        col = self.i - (self.text.rfind("\n", 0, self.i) + 1) + 1
        return JSONEditError(f"{what} at line {line} column {col}")

    def skip(self) -> None:
        t, n = self.text, len(self.text)
        while self.i < n:
            c = t[self.i]
            if c in " \t\r\n\ufeff":
                self.i += 1
            elif c == "/" and self.comments and t.startswith("//", self.i):
                j = t.find("\n", self.i)
                self.i = n if j < 0 else j
            elif c == "/" and self.comments and t.startswith("/*", self.i):
                j = t.find("*/", self.i + 2)
                if j < 0:
                    raise self.fail("unterminated comment")
                self.i = j + 2
            else:
                return

    def parse(self) -> Node | None:
        self.skip()
        if self.i == len(self.text):
            return None                     # an empty file holds nothing yet
        node = self.value(0)
        self.skip()
        if self.i != len(self.text):
            raise self.fail("unexpected text after the JSON value")
        return node

    def value(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail("nested too deeply")
        t, start = self.text, self.i
        if self.i >= len(t):
            raise self.fail("unexpected end of file")
        c = t[self.i]
        if c == "{":
            return self.container(depth, "object", "}")
        if c == "[":
            return self.container(depth, "array", "]")
        if c == '"':
            m = _STRING.match(t, self.i)
            if not m:
                raise self.fail("invalid string")
            self.i = m.end()
            return Node(start, self.i, json.loads(m.group(0)))
        m = _NUMBER.match(t, self.i)
        if m and m.end() > self.i:
            self.i = m.end()
            return Node(start, self.i, json.loads(m.group(0)))
        for word, val in (("true", True), ("false", False), ("null", None)):
            if t.startswith(word, self.i):
                self.i += len(word)
                return Node(start, self.i, val)
        raise self.fail(f"unexpected character {c!r}")

    def container(self, depth: int, kind: str, close: str) -> Node:
        node = Node(self.i, self.i, {} if kind == "object" else [], kind)
        self.i += 1
        while True:
            self.skip()
            if self.i < len(self.text) and self.text[self.i] == close:
                self.i += 1
                node.end = self.i
                return node
            if node.members:
                if self.i >= len(self.text) or self.text[self.i] != ",":
                    raise self.fail(f"expected ',' or '{close}'")
                self.i += 1
                self.skip()
                if self.comments and self.i < len(self.text) and self.text[self.i] == close:
                    continue                # JSONC allows a trailing comma
            if kind == "object":
                key_start = self.i
                if self.i >= len(self.text) or self.text[self.i] != '"':
                    raise self.fail("expected a quoted key")
                key = self.value(depth + 1).value
                self.skip()
                if self.i >= len(self.text) or self.text[self.i] != ":":
                    raise self.fail("expected ':'")
                self.i += 1
                self.skip()
                child = self.value(depth + 1)
                node.members.append((key, key_start, child))
                node.value[key] = child.value
            else:
                child = self.value(depth + 1)
                node.members.append(child)
                node.value.append(child.value)
