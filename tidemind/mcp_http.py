"""`tidemind serve --http HOST:PORT`: the three tools of `mcp_server.py` over the MCP streamable HTTP
transport of the official SDK, at `/mcp`, in plain HTTP (TLS is a reverse proxy's job: docs/HOSTS.md).

Who may call: a person's bearer token (`tidemind tokens add NAME --scope S`), looked up in the store
on every request, so a token added or revoked by any process on the same store counts at the next
request, and each call runs in the token's scopes exactly as a server started with them as
`--scope` does (mcp_server.caller). A request without a token, with one the store does not know, or
with a revoked one is answered 401 with a JSON error saying which, before the SDK sees it.

Only a server bound to loopback (127.0.0.1, ::1, localhost) may serve a request without a token,
in its own scopes, as the stdio server serves whoever starts it, and only while the store holds no
token: from the first token on, every request needs one (a reverse proxy on the same machine makes
every request look local). Any other address refuses to start while no token is defined.

A token is never logged, printed or kept: refusals are logged as one line naming the client's
address and the reason, and the SDK's view of a caller (`AccessToken.token`) holds the token's id.
"""
from __future__ import annotations

import ipaddress
import json
import socket
import sys
import threading

import anyio
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from .config import load_settings
from .errors import InvalidInput
from .memory import Memory

PATH = "/mcp"
LOOPBACK_NAMES = ("localhost",)
REALM = "tidemind"


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT, [IPv6]:PORT; port 0 lets the system pick one (the ready line says which)."""
    text = (text or "").strip()
    if text.startswith("["):
        host, sep, port = text[1:].partition("]:")
    else:
        host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535 or (":" in host and not text.startswith("[")):
        raise InvalidInput(f"--http takes HOST:PORT, e.g. 127.0.0.1:8765, [::1]:8765 or 0.0.0.0:8765; got {text[:80]!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TokenCheck:
    """Looks tokens up on a connection of its own, so a check never waits behind a tool call."""

    def __init__(self, memory: Memory):
        self.memory = memory
        self.lock = threading.Lock()

    def holder(self, token: str) -> dict | None:
        with self.lock:
            return self.memory.token_holder(token)

    def any_defined(self) -> bool:
        with self.lock:
            return self.memory.live_token_count() > 0


class TokenGate:
    """ASGI middleware in front of the SDK's app: every HTTP request is let through with its caller
    (`scope["user"]`, the shape the SDK's own bearer middleware gives, so the session manager binds
    each session to the token that opened it), or answered 401 here."""

    def __init__(self, app: ASGIApp, check: TokenCheck, open_while_no_token: bool, log=None):
        self.app = app
        self.check = check
        self.open = open_while_no_token
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)          # the lifespan: nothing to check
            return
        header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
        if header is None:
            if self.open and not await anyio.to_thread.run_sync(self.check.any_defined):
                scope["user"] = None                       # the server's own scopes (mcp_server.caller)
                await self.app(scope, receive, send)
                return
            self.open = False                              # tokens exist now: from here on, always asked for
            await self._refuse(scope, send, "no bearer token",
                               "This TideMind server needs a bearer token: send the header 'Authorization: Bearer"
                               " <token>'. Whoever runs the server makes one with `tidemind tokens add NAME --scope"
                               " SCOPE`.")
            return
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            await self._refuse(scope, send, "not a bearer token",
                               "The Authorization header must be 'Bearer <token>' (a token from `tidemind tokens"
                               " add`).")
            return
        held = await anyio.to_thread.run_sync(self.check.holder, token)
        if held is None:
            await self._refuse(scope, send, "unknown token",
                               "This bearer token is not one this TideMind store knows (mistyped, or made for"
                               " another store); ask whoever runs the server for a token.")
            return
        if held["revoked_at"] is not None:
            await self._refuse(scope, send, f"revoked token of {held['name']}",
                               f"This bearer token ({held['name']}) was revoked at {held['revoked_at']}; ask whoever"
                               " runs the server for a new one.")
            return
        scopes = list(held["scopes"])
        access = AccessToken(token=f"access_tokens:{held['id']}", client_id=held["name"], scopes=scopes,
                             subject=f"access_tokens:{held['id']}")
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(scopes)
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, reason: str, sentence: str) -> None:
        client = scope.get("client") or ("?", 0)
        self.log(f"tidemind serve: refused {scope.get('method', '?')} {scope.get('path', '?')} from {client[0]}:"
                 f" {reason}")
        body = json.dumps({"error": "invalid_token", "error_description": sentence}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", f'Bearer realm="{REALM}", error="invalid_token"'.encode())]})
        await send({"type": "http.response.body", "body": body})


def build_app(home: str | None, scopes: list[str] | None, host: str, require_token: bool = False):
    """(the ASGI app, a sentence saying who may call). Refuses, before anything listens, an address
    other than loopback (or --require-token) while the store holds no token."""
    from .mcp_server import build_server

    check = TokenCheck(Memory(load_settings(home), actor="mcp:http"))
    defined = check.any_defined()
    local = is_loopback(host)
    if not defined and (not local or require_token):
        check.memory.close()
        why = (f"{host} is not a loopback address, so other machines could reach it" if not local
               else "--require-token was given")
        raise InvalidInput(f"refusing to serve over HTTP without a token: {why}, and the store holds no token. Make"
                           " one first with `tidemind tokens add NAME --scope SCOPE`, or bind 127.0.0.1.")
    server = build_server(home, scopes)
    sdk_app = server.streamable_http_app(streamable_http_path=PATH, host=host,
                                         stateless_http=True)   # any server on the store answers any request
    gate = TokenGate(sdk_app, check, open_while_no_token=local and not require_token and not defined)
    own = ", ".join(server.memory.readable or [])
    who = ("every request needs a bearer token (tidemind tokens list)" if not gate.open else
           f"no token is defined: requests without one are served in scope(s) {own} until the first token is added")
    return gate, who


def serve(home: str | None, scopes: list[str] | None, address: str, require_token: bool = False) -> None:
    host, port = parse_address(address)
    app, who = build_app(home, scopes, host, require_token)
    run_asgi(app, host, port, address, lambda url: f"tidemind serve: listening on {url}{PATH}; {who}")


def run_asgi(app, host: str, port: int, address: str, ready_line, interface: str = "auto") -> None:
    """Serve an ASGI app with uvicorn on HOST:PORT until stopped; `ready_line(url)` is printed to
    stderr once it listens (the line a supervisor or a test waits for: with port 0, it names the
    port the system picked). Shared by `serve --http` and `proxy`."""
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InvalidInput(f"cannot listen on {address}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    # access_log off: uvicorn's lines would be the only ones without a reason; refusals are logged
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", interface=interface)
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            while not server.started and not server.should_exit:
                await anyio.sleep(0.02)
            if server.started:
                print(ready_line(f"http://{shown}:{bound}"), file=sys.stderr, flush=True)

    anyio.run(run)
