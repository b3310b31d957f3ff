"""Built-in providers. Clients are imported only when chosen."""
from __future__ import annotations

import os

from . import Completion, register


class AnthropicLLM:
    def __init__(self, model: str, api_key: str | None = None, base_url: str | None = None):
        import anthropic

        self.model = model
        self.name = f"anthropic/{model}"
        self._client = anthropic.Anthropic(api_key=api_key or os.environ.get("ANTHROPIC_API_KEY"),
                                           base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"),
                                           max_retries=1, timeout=30)   # bounded: a daemon must stop in time

    def complete(self, system: str, prompt: str, max_tokens: int = 800) -> Completion:
        msg = self._client.messages.create(model=self.model, max_tokens=max_tokens, system=system,
                                           messages=[{"role": "user", "content": prompt}])
        text = "".join(getattr(b, "text", "") or "" for b in (msg.content or []) if getattr(b, "type", "") == "text")
        usage = getattr(msg, "usage", None)
        return Completion(text, getattr(usage, "input_tokens", 0) or 0, getattr(usage, "output_tokens", 0) or 0)


class OllamaLLM:
    def __init__(self, host: str, model: str):
        import ollama

        self.model = model
        self.name = f"ollama/{model}"
        self._client = ollama.Client(host=host, timeout=60)

    def complete(self, system: str, prompt: str, max_tokens: int = 800) -> Completion:
        r = self._client.chat(model=self.model, messages=[{"role": "system", "content": system},
                                                          {"role": "user", "content": prompt}],
                              options={"num_predict": max_tokens}, format="json")
        return Completion(r.message.content or "", getattr(r, "prompt_eval_count", 0) or 0,
                          getattr(r, "eval_count", 0) or 0)


register("none", lambda settings: None)
register("anthropic", lambda s: AnthropicLLM(os.environ.get("TIDEMIND_ANTHROPIC_MODEL")
                                             or s.extra.get("anthropic_model", "claude-haiku-4-5")))
register("ollama", lambda s: OllamaLLM(s.ollama_host, os.environ.get("TIDEMIND_OLLAMA_CHAT_MODEL")
                                       or s.extra.get("ollama_chat_model", "llama3.2")))
