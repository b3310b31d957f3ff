"""The stdio transport of `tidemind serve`: the SDK's, with a guard in front of its reader.

The SDK drops a line it cannot parse (it logs nothing and answers nothing), so a client that sent
malformed JSON, 5,000-deep nesting or a lone surrogate (`JSON.stringify` writes `"\\ud800"`, which
the SDK's JSON parser refuses) waited for its timeout. Here every line is first checked the way
the SDK will read it; a line it would drop is answered with a JSON-RPC error when its request id
can be read (from the parsed object, else by a linear scan of the raw line), and logged to stderr
otherwise (a notification, or an id nobody can read). A request whose id is there but is not one
(1.5, true, an object, null: the SDK took those for notifications and answered nothing) and a
batch are answered with id null and Invalid Request, as JSON-RPC says. Lines are read as bytes
and decoded here: invalid UTF-8 is refused (the SDK's reader replaced it with U+FFFD, storing text
the CLI refuses). Lines the SDK accepts pass through unchanged.
"""
from __future__ import annotations

import json
import re
import sys

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
_ID_VALUE = re.compile(r'\s*(-?\d{1,19}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')
# a request whose id is there but unusable (1.5, true, {}, null, a lone surrogate), or a batch:
# JSON-RPC answers those with id null and Invalid Request
NULL_ID = type("NullId", (), {"__repr__": lambda self: "NULL_ID"})()


def scan_id(line: str) -> int | str | None:
    """The value of the top-level "id" key of a JSON object that may not parse, or None. One pass,
    no recursion: depth is counted outside strings."""
    depth, i, n = 0, 0, len(line)
    while i < n:
        c = line[i]
        if c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            key, i = line[i + 1:j], j + 1
            if depth == 1 and key == "id":
                k = i
                while k < n and line[k] in " \t\r\n":
                    k += 1
                if k < n and line[k] == ":":
                    found = _ID_VALUE.match(line, k + 1)
                    return _usable_id(found.group(1)) if found else None
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1
    return None


def _usable_id(literal: str) -> int | str | None:
    try:
        value = json.loads(literal)
        json.dumps(value, ensure_ascii=False).encode("utf-8")     # a lone surrogate cannot go back out
    except (ValueError, UnicodeEncodeError):
        return None
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _lone_surrogate(obj) -> bool:
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def diagnose(line: str) -> tuple[int | str | None, int, str] | None:
    """None when the SDK will read the line; else (request id, NULL_ID or None, JSON-RPC code,
    message). The SDK read `{"id": 1.5, "method": ...}` (or an id that is true, an object or
    null) as a notification and answered nothing, and dropped a batch without a word."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        message = None
    if message is not None and not isinstance(message, types.JSONRPCNotification):
        return None
    try:
        obj = json.loads(line)
    except RecursionError:
        return scan_id(line), PARSE_ERROR, "Parse error: the JSON is nested too deeply"
    except ValueError as exc:
        return scan_id(line), PARSE_ERROR, f"Parse error: not valid JSON ({exc})"
    if message is not None and not (isinstance(obj, dict) and "id" in obj):
        return None                                    # a notification: nothing to answer
    if isinstance(obj, list):
        return (NULL_ID, INVALID_REQUEST, "Invalid Request: batches (a JSON array of messages) are not supported;"
                " send each request as its own message")
    request_id = None
    if isinstance(obj, dict) and "id" in obj:
        request_id = _usable_id(json.dumps(obj["id"])) if not _lone_surrogate(obj["id"]) else None
        if request_id is None:
            shown = json.dumps(obj["id"])[:40] if not _lone_surrogate(obj["id"]) else "a string with a lone surrogate"
            return NULL_ID, INVALID_REQUEST, f"Invalid Request: an id is a string or a whole number, not {shown}"
    if _lone_surrogate(obj):
        return (request_id, INVALID_PARAMS, "Invalid params: the text holds an unpaired surrogate (\\ud800-\\udfff),"
                " which is not valid Unicode; nothing was done")
    return request_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request or notification"


class _GuardedLines:
    """What the SDK's reader iterates: stdin's lines, minus those answered here."""

    def __init__(self, answer):
        # bytes, decoded here: the SDK's reader replaced invalid UTF-8 with U+FFFD, so text the CLI
        # refuses was stored over MCP with its bytes changed
        self._lines = anyio.wrap_file(sys.stdin.buffer)
        self._answer = answer

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        while True:
            raw = await self._lines.readline()
            if not raw:
                raise StopAsyncIteration
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                await self._answer(scan_id(raw.decode("utf-8", "surrogateescape")), PARSE_ERROR,
                                   f"Parse error: the message is not valid UTF-8 (byte {exc.start}); nothing was done")
                continue
            if not line.strip():
                continue
            problem = diagnose(line)
            if problem is None:
                return line
            await self._answer(*problem)


async def run(server) -> None:
    """Serve `server` (an MCPServer) over stdin/stdout until stdin closes."""
    ready = anyio.Event()
    writer: dict = {}

    async def answer(request_id, code: int, message: str) -> None:
        if request_id is None:
            print(f"tidemind serve: dropped a message whose id could not be read: {message}", file=sys.stderr,
                  flush=True)
            return
        await ready.wait()
        error = types.JSONRPCError(jsonrpc="2.0", id=None if request_id is NULL_ID else request_id,
                                   error=types.ErrorData(code=code, message=message))
        await writer["stream"].send(SessionMessage(error))

    async with stdio_server(stdin=_GuardedLines(answer)) as (read_stream, write_stream):
        writer["stream"] = write_stream
        ready.set()
        low = server._lowlevel_server           # as MCPServer.run_stdio_async does (no public seam for streams)
        await low.run(read_stream, write_stream, low.create_initialization_options())
