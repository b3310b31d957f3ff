"""A loopback stand-in for the Anthropic and OpenAI APIs, for `tidemind bench --proxy`: it answers at
once, whole or streamed as server-sent events, so what the bench times is the proxy's own work."""
from __future__ import annotations

import json
import socket
import threading
import time

ANSWER = "A short answer from the stand-in upstream."
TOKEN_GAP_S = 0.005     # between streamed events: the end of a real answer comes after its start


def _sse(data: dict | str, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode()


def _events(anthropic: bool) -> list[bytes]:
    if anthropic:
        start = {"id": "msg", "type": "message", "role": "assistant", "model": "stub", "content": [],
                 "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        return [_sse({"type": "message_start", "message": start}, "message_start"),
                _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                     "content_block_start"),
                *[_sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w + " "}},
                       "content_block_delta") for w in ANSWER.split()],
                _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
                _sse({"type": "message_stop"}, "message_stop")]
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "stub"}
    return [*[_sse({**base, "choices": [{"index": 0, "delta": {"content": w + " "}}]}) for w in ANSWER.split()],
            _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), _sse("[DONE]")]


def _whole(anthropic: bool) -> bytes:
    if anthropic:
        return json.dumps({"id": "msg", "type": "message", "role": "assistant", "model": "stub",
                           "content": [{"type": "text", "text": ANSWER}], "stop_reason": "end_turn",
                           "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "stub",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER},
                                    "finish_reason": "stop"}]}).encode()


class StubUpstream:
    def __init__(self):
        import uvicorn

        self.received = 0
        self.first_byte_at: dict[str, float] = {}      # request marker -> when its body arrived here
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self._app, log_level="warning", access_log=False,
                                                    lifespan="off", interface="asgi3"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    async def _app(self, scope, receive, send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.received += 1
        marker = dict(scope["headers"]).get(b"x-bench-marker")
        if marker:
            self.first_byte_at[marker.decode()] = time.perf_counter()
        anthropic = scope["path"] == "/v1/messages"
        if json.loads(body or b"{}").get("stream"):
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
            import anyio

            for event in _events(anthropic):
                await send({"type": "http.response.body", "body": event, "more_body": True})
                await anyio.sleep(TOKEN_GAP_S)       # (a model writes its answer over time)
            await send({"type": "http.response.body", "body": b""})
            return
        data = _whole(anthropic)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})
