"""Embeddings from a local Ollama server (host and model from settings or OLLAMA_HOST)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import ProviderUnavailable
from . import normalise, register


class OllamaEmbedder:
    def __init__(self, host: str, model: str, dim: int | None = None):
        try:
            import ollama  # imported here so the default path never pays for it
        except ImportError:
            raise ProviderUnavailable(f"ollama/{model} needs the `ollama` package: pip install 'tidemind[ollama]'",
                                      f"ollama/{model}", "embedder") from None

        self._client = ollama.Client(host=host, timeout=60)     # bounded: a daemon must stop in time
        self.host = host
        self.model = model
        self.name = f"ollama/{model}"
        self.dim = dim or 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        try:
            result = self._client.embed(model=self.model, input=list(texts))
        except Exception as exc:  # the client raises ConnectionError, ResponseError, httpx errors...
            raise ProviderUnavailable(f"ollama embed failed ({self.model}): {exc}", self.name, "embedder") from None
        mat = normalise(np.asarray(result.embeddings, dtype=np.float32))
        self.dim = mat.shape[1]
        return mat

    def observe(self, conn, items) -> None:
        return None

    def unobserve(self, conn, node_ids) -> None:
        return None


register("ollama", lambda settings, conn: OllamaEmbedder(settings.ollama_host, settings.ollama_model))
