"""Embedders: a small Protocol and a registry; the provider is chosen by settings.

An embedder's `name` is recorded with every vector it makes, so vectors of different embedders
(or versions) never meet in one comparison. Embedders that learn from the store's own text
(the default one) get `observe`/`unobserve` calls; `unobserve` is how `forget` takes a text's
statistics back out.
"""
from __future__ import annotations

from typing import Callable, Protocol, Sequence, runtime_checkable

import importlib
from typing import TYPE_CHECKING

import apsw

if TYPE_CHECKING:
    import numpy as np

from ..errors import InvalidInput


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text."""

    def observe(self, conn: apsw.Connection, items: Sequence[tuple[int, str]]) -> None:
        """Learn corpus statistics from (node_id, text) not seen before; inside the caller's transaction."""

    def unobserve(self, conn: apsw.Connection, node_ids: Sequence[int]) -> None:
        """Take back what was learned from these nodes (forget); they must still hold their text."""


Factory = Callable[[object, apsw.Connection], Embedder]
_REGISTRY: dict[str, Factory] = {}
# built-in providers are imported on first use, so a process that never embeds (a hook building
# session context) never pays for numpy or an HTTP client
_BUILTIN = {"default": "tidemind.embed.default", "ollama": "tidemind.embed.ollama"}


def register(name: str, factory: Factory) -> None:
    _REGISTRY[name] = factory


def _load(name: str) -> None:
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])


def names() -> list[str]:
    return sorted(set(_REGISTRY) | set(_BUILTIN))


def get_embedder(settings, conn: apsw.Connection) -> Embedder:
    key = settings.embedder.split(":", 1)[0]
    _load(key)
    if key not in _REGISTRY:
        raise InvalidInput(f"unknown embedder {settings.embedder!r}; known: {', '.join(names())}")
    return _REGISTRY[key](settings, conn)


def for_vectors(settings, conn: apsw.Connection, name: str) -> Embedder | None:
    """An embedder that makes vectors named `name` (those already stored), or None when this
    code cannot make them any more (a default embedder of another recipe version)."""
    from dataclasses import replace

    key, _, model = name.partition("/")
    _load(key)
    if key not in _REGISTRY:
        return None
    if key == "ollama" and model:
        settings = replace(settings, ollama_model=model)
    try:
        made = _REGISTRY[key](settings, conn)
    except Exception:          # e.g. its client library is missing
        return None
    return made if made.name == name else None


def unobserve_everywhere(conn: apsw.Connection, node_ids: Sequence[int]) -> None:
    """Forget: take the nodes out of every embedder's learned statistics, whichever is configured now
    (statistics learned while the default embedder was in use stay in its tables otherwise)."""
    for name in names():
        _load(name)
    for factory in _REGISTRY.values():
        learner = getattr(factory, "learner", None)
        if learner is not None:
            learner(conn).unobserve(conn, node_ids)


def normalise(mat: np.ndarray) -> np.ndarray:
    import numpy as np

    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return mat / norms

