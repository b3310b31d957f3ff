"""The two request shapes the proxy reads (issue 26): the Anthropic Messages API and the OpenAI Chat
Completions API. For each: the conversation a request carries as plain turns, where the recalled
block goes, and the answer a response (whole or streamed as server-sent events) carries.

Nothing here changes a client's messages: the block goes into the system prompt (Anthropic's
`system` field, appended after the client's own text, so a cache breakpoint the client marked
inside its system text keeps its prefix; a breakpoint on the messages does not, since the block
changes with each question) or as one system message of its own (OpenAI), after the client's
leading system and developer messages.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Turn:
    role: str            # "user" | "assistant" | "system" | "tool"
    text: str


@dataclass
class Conversation:
    """What one request carries, read for the memory."""
    api: str                               # "anthropic" | "openai"
    model: str
    stream: bool
    turns: list[Turn] = field(default_factory=list)
    request: dict = field(default_factory=dict, repr=False)   # the body as parsed (inject reuses it)

    @property
    def question(self) -> str:
        """The newest user turn: what recall is asked about, and what is stored with the answer."""
        for turn in reversed(self.turns):
            if turn.role == "user":
                return turn.text
        return ""


class NotReadable(ValueError):
    """A request body the proxy cannot read as its API's: it is forwarded untouched."""


def _tool_call_text(name: str, arguments) -> str:
    """A tool call as text, its arguments dumped the one same way whether they came as an object
    (a request's tool_use block) or as the JSON text a stream spelled out: an answer read from a
    stream and the same answer sent back in the next request read alike (branches.py hashes both)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            return f"[tool call {name} {arguments}]"
    return f"[tool call {name} {json.dumps(arguments, ensure_ascii=False, sort_keys=True)}]"


def _anthropic_block_text(block) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return _tool_call_text(str(block.get("name", "?")), block.get("input", {}))
    if kind == "tool_result":
        inner = block.get("content")
        inner = inner if isinstance(inner, str) else " ".join(_anthropic_block_text(b) for b in inner or [])
        return f"[tool result {inner}]"
    if kind in ("image", "document"):
        return f"[{kind}]"
    return ""


def _anthropic_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_anthropic_block_text(b) for b in content) if t)
    return ""


def _openai_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type"):
                parts.append(f"[{part['type']}]")
        text = "\n".join(p for p in parts if p)
    else:
        text = ""
    calls = [_tool_call_text(str((c.get("function") or {}).get("name", "?")), (c.get("function") or {}).get("arguments", ""))
             for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    return "\n".join(t for t in [text, *calls] if t)


def read_request(api: str, body: bytes) -> Conversation:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise NotReadable(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise NotReadable("no messages list")
    model = str(data.get("model", ""))
    stream = data.get("stream") is True
    turns = []
    if api == "anthropic":
        for m in data["messages"]:
            if isinstance(m, dict) and m.get("role") in ("user", "assistant"):
                turns.append(Turn(m["role"], _anthropic_text(m.get("content"))))
    else:
        for m in data["messages"]:
            if isinstance(m, dict) and isinstance(m.get("role"), str):
                role = "system" if m["role"] == "developer" else m["role"]
                turns.append(Turn(role, _openai_text(m)))
    return Conversation(api, model, stream, turns, data)


def inject(api: str, request: dict, block: str) -> bytes:
    """The request (as `read_request` parsed it, left as it is) with `block` added as system text;
    the client's messages are the same values."""
    data = dict(request)
    if api == "anthropic":
        system = data.get("system")
        if system is None or system == "":
            data["system"] = block
        elif isinstance(system, str):
            data["system"] = system + "\n\n" + block
        elif isinstance(system, list):
            data["system"] = [*system, {"type": "text", "text": block}]
        else:
            raise NotReadable("a system field that is neither text nor a list of blocks")
    else:
        messages = data["messages"]
        at = 0
        while at < len(messages) and isinstance(messages[at], dict) and messages[at].get("role") in ("system", "developer"):
            at += 1
        data["messages"] = [*messages[:at], {"role": "system", "content": block}, *messages[at:]]
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


# -- the answer ------------------------------------------------------------------------------------
def read_response(api: str, body: bytes) -> str:
    """The assistant's answer in a whole (not streamed) response, tool calls as text."""
    data = json.loads(body)
    if api == "anthropic":
        return _anthropic_text(data.get("content") or [])
    choices = data.get("choices") or []
    return _openai_text((choices[0] or {}).get("message") or {}) if choices else ""


class StreamReader:
    """Reads a server-sent event stream as it is relayed, chunk by chunk, and gathers the answer
    (text and tool calls, in the order the blocks came)."""

    def __init__(self, api: str):
        self.api = api
        self._pending = b""
        self._blocks: dict[int, dict] = {}        # anthropic: index -> {"text"} or {"name", "args"}
        self._text: list[str] = []                # openai: content deltas
        self._calls: dict[int, dict] = {}         # openai: tool call index -> {"name", "args"}
        self.complete = False                     # the stream's own end was seen

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._pending:
            event, self._pending = self._pending.split(b"\n\n", 1)
            data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
            if data:
                self._event(data)

    def _event(self, data: bytes) -> None:
        if data.strip() == b"[DONE]":
            self.complete = True
            return
        try:
            event = json.loads(data)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        if self.api == "anthropic":
            kind = event.get("type")
            index = event.get("index", 0)
            if kind == "content_block_start":
                block = event.get("content_block") or {}
                self._blocks[index] = ({"name": block.get("name", "?"), "args": ""} if block.get("type") == "tool_use"
                                       else {"text": str(block.get("text", ""))})
            elif kind == "content_block_delta":
                delta = event.get("delta") or {}
                block = self._blocks.setdefault(index, {"text": ""})
                if delta.get("type") == "text_delta":
                    block["text"] = block.get("text", "") + str(delta.get("text", ""))
                elif delta.get("type") == "input_json_delta":
                    block["args"] = block.get("args", "") + str(delta.get("partial_json", ""))
            elif kind == "message_stop":
                self.complete = True
            return
        for choice in event.get("choices") or []:
            delta = (choice or {}).get("delta") or {}
            if isinstance(delta.get("content"), str):
                self._text.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = self._calls.setdefault(call.get("index", 0), {"name": "", "args": ""})
                function = call.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["args"] += function.get("arguments") or ""

    def answer(self) -> str:
        if self.api == "anthropic":
            parts = [b["text"] if "text" in b else _tool_call_text(b["name"], b["args"])
                     for _, b in sorted(self._blocks.items())]
        else:
            parts = ["".join(self._text)] + [_tool_call_text(c["name"] or "?", c["args"])
                                             for _, c in sorted(self._calls.items())]
        return "\n".join(p for p in parts if p)
