"""`tidemind proxy`: memory for any client of the Anthropic Messages or OpenAI Chat Completions API
(issue 26). A client changes only its base URL; the proxy forwards everything to the upstream it
would have called, and on `POST /v1/messages` and `POST /v1/chat/completions`:

- before forwarding, asks the memory (driver.py) and adds what it recalled as one delimited system
  block (wire.py); the client's messages go on as they came, with the client's headers only
  (httpx's default Accept, Accept-Encoding and User-Agent are not added);
- while relaying the response (streamed chunk by chunk as it arrives, or whole), reads the answer,
  and queues the question and the answer durably before the response ends; a worker stores them.

Degrade, never block: a memory that cannot be read (locked, missing, failing) leaves the request
as it came, with `x-tidemind-memory: unavailable` on the response and one log line. Upstream
answers (errors and all) reach the client as the upstream sent them; an upstream that cannot be
reached or does not answer in time is a 502 or 504 said in the API's own error shape.

Per request: `x-tidemind-memory: off` turns memory off for it; `x-tidemind-scope: a,b` reads and
writes among the proxy's scopes only (never more). These headers, and `x-tidemind-token`, are not
forwarded. API keys and Authorization headers are forwarded and never logged or stored.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

import anyio

from . import wire
from .driver import MemoryDriver

ANTHROPIC_UPSTREAM = "https://api.anthropic.com"
OPENAI_UPSTREAM = "https://api.openai.com"
MEMORY_PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}
# not forwarded: hop-by-hop headers (RFC 9110 7.6.1), what the HTTP client sets itself, and ours
_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
        "transfer-encoding", "upgrade", "host", "content-length"}
OURS = ("x-tidemind-memory", "x-tidemind-scope", "x-tidemind-token")
RECALL_DEADLINE_S = 2.0      # a store slower than this (hung, far away) is "unavailable" for the request


@dataclass
class Upstreams:
    anthropic: str = ANTHROPIC_UPSTREAM
    openai: str = OPENAI_UPSTREAM

    def for_api(self, api: str) -> str:
        return (self.anthropic if api == "anthropic" else self.openai).rstrip("/")


def which_api(path: str, headers) -> str:
    """Anthropic's clients send `anthropic-version` on every call; its one memory path is its own."""
    if path.rstrip("/") == MEMORY_PATHS["anthropic"] or "anthropic-version" in headers:
        return "anthropic"
    return "openai"


def _error_body(api: str, status: int, message: str) -> bytes:
    if api == "anthropic":
        kind = "timeout_error" if status == 504 else "api_error"
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return json.dumps({"error": {"message": message, "type": "proxy_error", "code": status}}).encode()


class Proxy:
    def __init__(self, driver: MemoryDriver | None, upstreams: Upstreams, scopes: list[str],
                 timeout: float = 600.0, token_check=None, log=None, transport=None,
                 recall_deadline_s: float = RECALL_DEADLINE_S):
        import collections

        import httpx

        self.driver = driver
        self.upstreams = upstreams
        self.scopes = scopes
        self.token_check = token_check          # non-loopback: x-tidemind-token names a token of the store
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0)),
                                        follow_redirects=False, transport=transport)
        for name in ("accept", "accept-encoding", "user-agent"):
            # httpx's own defaults: a request goes on with the client's headers alone
            self.client.headers.pop(name, None)
        self.recall_deadline_s = recall_deadline_s
        # threads of their own: recalls stuck on a hung store never hold up queueing an answer
        self.recall_threads = anyio.CapacityLimiter(8)
        self.queue_threads = anyio.CapacityLimiter(8)
        self.recall_ms: collections.deque[float] = collections.deque(maxlen=1000)

    async def close(self) -> None:
        await self.client.aclose()
        if self.driver is not None:
            await anyio.to_thread.run_sync(self.driver.close)

    # -- the ASGI app --------------------------------------------------------------------------
    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        from starlette.requests import Request

        request = Request(scope, receive)
        response = await self.handle(request)
        await response(scope, receive, send)

    async def handle(self, request):
        import httpx
        from starlette.responses import Response, StreamingResponse

        path = request.url.path
        headers = request.headers
        api = which_api(path, headers)
        body = await request.body()
        scopes, refusal = await self._caller_scopes(headers)
        if refusal is not None:
            return Response(_error_body(api, 401, refusal), status_code=401, media_type="application/json")
        wanted = request.method == "POST" and path.rstrip("/") == MEMORY_PATHS[api]
        memory_state = "off"
        conversation = None
        outgoing = body
        if wanted and self.driver is not None and headers.get("x-tidemind-memory", "").lower() != "off":
            memory_state, conversation, outgoing, scopes = await self._before(api, body, headers, scopes)
        named = {n.strip().lower() for n in headers.get("connection", "").split(",") if n.strip()}
        forward = [(k, v) for k, v in headers.items() if k.lower() not in _HOP | named and k.lower() not in OURS]
        if conversation is not None:
            # the answer is read as it passes: asked for uncompressed (the client gets the same bytes)
            forward = [(k, v) for k, v in forward if k.lower() != "accept-encoding"] + [("accept-encoding", "identity")]
        # the path as the client wrote it (decoded, %2F and %3F would change what it names)
        raw_path = request.scope.get("raw_path") or path.encode()
        url = self.upstreams.for_api(api) + raw_path.decode("latin-1") + (f"?{request.url.query}" if request.url.query else "")
        try:
            upstream = await self.client.send(self.client.build_request(request.method, url, headers=forward,
                                                                        content=outgoing), stream=True)
        except httpx.TimeoutException:
            return Response(_error_body(api, 504, f"the upstream {self.upstreams.for_api(api)} did not answer in time"),
                            status_code=504, media_type="application/json")
        except httpx.HTTPError as exc:
            return Response(_error_body(api, 502, f"the upstream {self.upstreams.for_api(api)} could not be reached:"
                                                  f" {type(exc).__name__}"), status_code=502, media_type="application/json")
        dropped = (_HOP - {"content-length"}) | {n.strip().lower() for n in
                                                  upstream.headers.get("connection", "").split(",") if n.strip()}
        back = [(k.lower(), v) for k, v in upstream.headers.raw if k.decode("latin-1").lower() not in dropped]
        back.append((b"x-tidemind-memory", memory_state.encode("ascii", "replace")))
        storing = conversation is not None and upstream.status_code == 200
        streamed = "text/event-stream" in upstream.headers.get("content-type", "")
        reader = wire.StreamReader(api) if storing and streamed else None
        whole: list[bytes] = []

        async def relay():
            nonlocal reader, storing
            held, queued = None, False
            try:
                async for chunk in upstream.aiter_raw():
                    if reader is not None:
                        try:
                            reader.feed(chunk)
                        except Exception as exc:           # the answer is not read; the client still gets it
                            self.log(f"tidemind proxy: this answer is not stored (its stream was not read:"
                                     f" {type(exc).__name__})")
                            reader, storing = None, False
                    if reader is not None:
                        if reader.complete and not queued:
                            # the stream's own end is in this chunk: queued before the client reads it
                            # (a client stops reading there and may hang up before the body ends)
                            await self._queue(conversation, _stream_answer(reader, self.log), scopes)
                            queued = True
                        yield chunk                       # as it arrives: no buffering of a stream
                    elif storing:
                        whole.append(chunk)
                        if held is not None:
                            yield held
                        held = chunk                      # (a whole body's last bytes wait for the queue)
                    else:
                        yield chunk
                if storing and not queued:
                    answer = _stream_answer(reader, self.log) if reader is not None else _whole_answer(api, b"".join(whole))
                    if answer is not None:
                        await self._queue(conversation, answer, scopes)
                if held is not None:
                    yield held
            finally:
                await upstream.aclose()

        response = StreamingResponse(relay(), status_code=upstream.status_code)
        response.raw_headers = back
        return response

    async def _caller_scopes(self, headers) -> tuple[list[str], str | None]:
        if self.token_check is None:
            return list(self.scopes), None
        token = headers.get("x-tidemind-token", "").strip()
        if not token:
            return [], "this TideMind proxy needs the header x-tidemind-token: <token> (tidemind tokens add)"
        held = await anyio.to_thread.run_sync(self.token_check.holder, token)
        if held is None or held["revoked_at"] is not None:
            return [], "the x-tidemind-token is not a live token of this TideMind store"
        return list(held["scopes"]), None

    async def _before(self, api: str, body: bytes, headers, scopes: list[str]):
        """(memory state, the conversation read, the body to forward, the scopes of this request)."""
        asked = [s.strip() for s in headers.get("x-tidemind-scope", "").split(",") if s.strip()]
        if asked:
            if any(s not in scopes for s in asked):
                return "off: x-tidemind-scope names a scope this proxy does not serve", None, body, scopes
            scopes = asked
        try:
            conversation = wire.read_request(api, body)
        except Exception as exc:            # (a shape this reader does not know: the upstream judges it)
            return f"off: the request was not read ({type(exc).__name__})", None, body, scopes
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.recall_deadline_s):
                recalled = await anyio.to_thread.run_sync(self.driver.recall, conversation, scopes,
                                                          abandon_on_cancel=True, limiter=self.recall_threads)
        except Exception as exc:            # degrade, never block
            why = "no answer in time" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {str(exc)[:200]}"
            self.log(f"tidemind proxy: memory unavailable ({why}); forwarded as sent")
            return "unavailable", conversation, body, scopes
        finally:
            self.recall_ms.append((time.perf_counter() - started) * 1000)
        if not recalled.block:
            return "none", conversation, body, scopes
        try:
            injected = wire.inject(api, conversation.request, recalled.block)
        except Exception as exc:
            return f"off: the request was not read ({type(exc).__name__})", conversation, body, scopes
        return f"injected short={recalled.short_term} long={recalled.long_term}", conversation, injected, scopes

    async def _queue(self, conversation, answer: str | None, scopes: list[str]) -> None:
        if answer is None:
            return
        try:
            await anyio.to_thread.run_sync(self.driver.store, conversation, answer, scopes, limiter=self.queue_threads)
        except Exception as exc:
            self.log(f"tidemind proxy: this exchange was not queued ({type(exc).__name__}: {str(exc)[:200]})")


def _stream_answer(reader, log) -> str | None:
    try:
        return reader.answer()
    except Exception as exc:
        log(f"tidemind proxy: this answer is not stored (its stream was not read: {type(exc).__name__})")
        return None


def _whole_answer(api: str, body: bytes) -> str:
    try:
        return wire.read_response(api, body)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return ""
