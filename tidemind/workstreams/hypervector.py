"""Deterministic ±1 hypervectors for workstream slugs, their weighted sums, and decoding.

Each slug seeds its own vector (blake2b of seed and slug → PCG64), so a vector can always be
rebuilt from its slug, dimension and seed alone: nothing about it needs storing. Random ±1
vectors of a few thousand dimensions are nearly orthogonal (the dot product of two, divided by
the dimension, is about ±1/√D), so a day's fingerprint, the weighted sum of its slugs' vectors,
can be un-mixed again.

`decode` first correlates the fingerprint with every codebook vector (each slug in the mix
scores close to its weight, each absent one close to zero, with noise of about
√(Σw²)/√D ≈ 0.005 for a dozen slugs at D = 4096), keeps the ones above a floor, then solves the
least-squares problem on those, which removes the cross-talk between them. What the codebook
cannot explain is the residual: a slug nobody has named shows up there, and its weight is
about the residual's norm divided by √D (a ±1 vector has norm √D).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the functions that compute (below), not here: every process that opens a
# Memory imports this package, and a hook on every prompt or an MCP server starting up never
# computes a fingerprint (numpy took 70 ms of their start)

DEFAULT_DIM = 4096
DEFAULT_SEED = "tidemind-workstreams-v1"
MIN_WEIGHT = 0.02          # a decoded weight below this is noise, not an ingredient


@lru_cache(maxsize=4096)
def _cached(slug: str, dim: int, seed: str) -> np.ndarray:
    import numpy as np
    digest = hashlib.blake2b(f"{seed}\x00{slug}".encode("utf-8"), digest_size=16).digest()
    rng = np.random.Generator(np.random.PCG64(int.from_bytes(digest, "little")))
    vec = rng.integers(0, 2, size=dim, dtype=np.int8) * 2 - 1
    vec.setflags(write=False)
    return vec


def vector_for(slug: str, dim: int = DEFAULT_DIM, seed: str = DEFAULT_SEED) -> np.ndarray:
    """The slug's ±1 vector (int8, read-only): the same slug, dimension and seed, the same vector."""
    if not slug:
        raise ValueError("a slug is needed")
    return _cached(slug, int(dim), seed)


def compose(weights: Mapping[str, float], dim: int = DEFAULT_DIM, seed: str = DEFAULT_SEED) -> np.ndarray:
    """The weighted sum of the slugs' vectors (float32)."""
    import numpy as np
    out = np.zeros(dim, dtype=np.float32)
    for slug, weight in weights.items():
        out += np.float32(weight) * vector_for(slug, dim, seed)
    return out


@dataclass
class Decoded:
    weights: dict[str, float]       # slug -> estimated weight, largest first
    correlations: dict[str, float]  # slug -> raw dot product / D, for every codebook slug above the floor
    residual: float                 # share of the fingerprint's norm the codebook does not explain, 0..1
    residual_weight: float          # the weight an unnamed ±1 component would need to leave that residual


def decode(fingerprint: np.ndarray, slugs: Sequence[str], dim: int = DEFAULT_DIM, seed: str = DEFAULT_SEED,
           min_weight: float = MIN_WEIGHT) -> Decoded:
    import numpy as np
    vec = np.asarray(fingerprint, dtype=np.float64)
    if vec.shape != (dim,):
        raise ValueError(f"a fingerprint of {vec.shape} does not match dimension {dim}")
    norm = float(np.linalg.norm(vec))
    unique = list(dict.fromkeys(slugs))
    if norm == 0.0 or not unique:
        return Decoded({}, {}, 0.0 if norm == 0.0 else 1.0, norm / np.sqrt(dim))
    basis = np.stack([vector_for(s, dim, seed) for s in unique]).astype(np.float64)
    corr = basis @ vec / dim
    chosen = [i for i in np.argsort(-corr) if corr[i] >= min_weight / 2]
    weights = np.zeros(0)
    while chosen:             # least squares on the candidates; drop the ones it says are absent
        weights, *_ = np.linalg.lstsq(basis[chosen].T, vec, rcond=None)
        keep = [c for c, w in zip(chosen, weights) if w >= min_weight]
        if len(keep) == len(chosen):
            break
        chosen = keep
    explained = basis[chosen].T @ weights if chosen else np.zeros(dim)
    rest = vec - explained
    order = sorted(zip(chosen, weights), key=lambda p: -p[1])
    return Decoded(weights={unique[i]: round(float(w), 4) for i, w in order},
                   correlations={unique[i]: round(float(corr[i]), 4) for i in np.argsort(-corr)
                                 if corr[i] >= min_weight / 2},
                   residual=round(float(np.linalg.norm(rest)) / norm, 4),
                   residual_weight=round(float(np.linalg.norm(rest)) / np.sqrt(dim), 4))


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two fingerprints (0 when either is empty)."""
    import numpy as np
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(np.dot(a, b) / (na * nb)) if na and nb else 0.0
