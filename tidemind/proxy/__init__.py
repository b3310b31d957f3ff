"""`tidemind proxy` (issue 26): memory for any client of the Anthropic or OpenAI chat APIs.

- `wire.py`: the two APIs' request and response shapes (the conversation, the injected block, the answer);
- `branches.py`: which conversation and branch a request continues, from its messages alone;
- `driver.py`: the memory seam (`store`, `recall`, `forget`, `close`) and its drivers;
- `queue.py`: the durable queue between a response and the store;
- `app.py`: the HTTP proxy; `serve` below starts it.
"""
from __future__ import annotations

import sys


def serve(home: str | None, listen: str, scopes: list[str] | None, anthropic_upstream: str | None,
          openai_upstream: str | None, memory: bool = True, timeout: float = 600.0) -> None:
    from ..config import load_settings
    from ..errors import InvalidInput
    from ..memory import Memory
    from ..mcp_http import TokenCheck, is_loopback, parse_address, run_asgi
    from ..scopes import check_scope
    from .app import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM, Proxy, Upstreams
    from .driver import LocalDriver, MemoryConfig

    host, port = parse_address(listen)
    settings = load_settings(home)
    config = MemoryConfig.from_settings(settings.extra)
    section = settings.extra.get("proxy") or {}
    upstreams = Upstreams(_upstream(anthropic_upstream or section.get("anthropic_upstream") or ANTHROPIC_UPSTREAM),
                          _upstream(openai_upstream or section.get("openai_upstream") or OPENAI_UPSTREAM))
    chosen = [check_scope(s) for s in (scopes or config.scopes or [settings.default_scope])]
    token_check = None
    if not is_loopback(host):
        token_check = TokenCheck(Memory(settings, actor="proxy:tokens"))
        if not token_check.any_defined():
            token_check.memory.close()
            raise InvalidInput(f"refusing to proxy on {host}: other machines could reach it and the store holds no"
                               " token. Make one with `tidemind tokens add NAME --scope SCOPE` (clients send it as"
                               " x-tidemind-token), or listen on 127.0.0.1.")
    log = lambda line: print(line, file=sys.stderr, flush=True)       # noqa: E731
    driver = LocalDriver(home, config, log) if memory else None
    app = Proxy(driver, upstreams, chosen, timeout=timeout, token_check=token_check, log=log)
    state = f"memory in scope(s) {', '.join(chosen)}" if memory else "memory off"
    run_asgi(app, host, port, listen, lambda url: f"tidemind proxy: listening on {url} (Anthropic ->"
             f" {upstreams.anthropic}, OpenAI -> {upstreams.openai}); {state}", interface="asgi3")


def _upstream(url: str) -> str:
    from urllib.parse import urlsplit

    from ..errors import InvalidInput

    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.username or parts.password:
        raise InvalidInput(f"an upstream is an http(s) URL without credentials, e.g. https://api.anthropic.com;"
                           f" got {url[:80]!r}")
    return url.rstrip("/")
