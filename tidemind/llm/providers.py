"""Built-in providers. Clients are imported only when chosen.

A provider tells an outage from a bad request: a service that cannot be reached, times out,
refuses the key, does not know the model, is rate limited or fails on its side raises
`ProviderUnavailable` (the metabolism waits and retries later); a request the service rejects
on its merits (400, 413, 422) raises as it came, and that one call is recorded as an error.
"""
from __future__ import annotations

import os
from urllib.parse import urlparse

from ..errors import ProviderUnavailable
from . import Completion, register

# statuses that say "not now" or "not with this configuration" rather than "not this request"
_UNAVAILABLE_STATUS = frozenset({401, 403, 404, 408, 409, 429})


def _outage(status: int | None) -> bool:
    return status is None or status >= 500 or status in _UNAVAILABLE_STATUS


def probe_address(url: str, default_port: int) -> tuple[str, int]:
    """(host, port) a base URL points at, for a reachability check that spends no tokens."""
    parsed = urlparse(url if "://" in url else f"http://{url}")
    port = parsed.port or (443 if parsed.scheme == "https" else default_port)
    return parsed.hostname or "127.0.0.1", port


def _extra(module: str, what: str):
    """The provider's package, or one line naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderUnavailable(f"{what} needs the `{module}` package: pip install 'tidemind[{module}]'",
                                  what, "llm") from None


class AnthropicLLM:
    def __init__(self, model: str, api_key: str | None = None, base_url: str | None = None):
        anthropic = _extra("anthropic", f"anthropic/{model}")
        if not (api_key or os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            # (the client would be made, and every call refused: doctor said "unreachable")
            raise ProviderUnavailable(f"anthropic/{model} has no API key: set ANTHROPIC_API_KEY", f"anthropic/{model}",
                                      "llm")

        self.model = model
        self.name = f"anthropic/{model}"
        self._client = anthropic.Anthropic(api_key=api_key or os.environ.get("ANTHROPIC_API_KEY"),
                                           base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"),
                                           max_retries=1, timeout=30)   # bounded: a daemon must stop in time
        self.base_url = str(self._client.base_url)

    def complete(self, system: str, prompt: str, max_tokens: int = 800) -> Completion:
        import anthropic

        try:
            msg = self._client.messages.create(model=self.model, max_tokens=max_tokens, system=system,
                                               messages=[{"role": "user", "content": prompt}])
        except anthropic.APIConnectionError as exc:           # refused, unreachable, timed out
            raise ProviderUnavailable(f"{self.name} unreachable: {exc}", self.name, "llm") from None
        except anthropic.APIStatusError as exc:
            if _outage(exc.status_code):
                raise ProviderUnavailable(f"{self.name} answered {exc.status_code}: {exc.message}"[:300], self.name,
                                          "llm") from None
            raise
        text = "".join(getattr(b, "text", "") or "" for b in (msg.content or []) if getattr(b, "type", "") == "text")
        usage = getattr(msg, "usage", None)
        return Completion(text, getattr(usage, "input_tokens", 0) or 0, getattr(usage, "output_tokens", 0) or 0)


class OllamaLLM:
    def __init__(self, host: str, model: str):
        ollama = _extra("ollama", f"ollama/{model}")

        self.model = model
        self.name = f"ollama/{model}"
        self.base_url = host
        self._client = ollama.Client(host=host, timeout=60)

    def complete(self, system: str, prompt: str, max_tokens: int = 800) -> Completion:
        import httpx
        import ollama

        try:
            r = self._client.chat(model=self.model, messages=[{"role": "system", "content": system},
                                                              {"role": "user", "content": prompt}],
                                  options={"num_predict": max_tokens}, format="json")
        except (ConnectionError, httpx.TransportError) as exc:   # the client's own ConnectionError, timeouts
            raise ProviderUnavailable(f"{self.name} unreachable: {exc}"[:300], self.name, "llm") from None
        except ollama.ResponseError as exc:
            if _outage(exc.status_code):
                raise ProviderUnavailable(f"{self.name} answered {exc.status_code}: {exc.error}"[:300], self.name,
                                          "llm") from None
            raise
        return Completion(r.message.content or "", getattr(r, "prompt_eval_count", 0) or 0,
                          getattr(r, "eval_count", 0) or 0)


register("none", lambda settings: None)
register("anthropic", lambda s: AnthropicLLM(os.environ.get("TIDEMIND_ANTHROPIC_MODEL")
                                             or s.extra.get("anthropic_model", "claude-haiku-4-5")))
register("ollama", lambda s: OllamaLLM(s.ollama_host, os.environ.get("TIDEMIND_OLLAMA_CHAT_MODEL")
                                       or s.extra.get("ollama_chat_model", "llama3.2")))
