"""Fusion of the FTS and vector arms: weighted reciprocal-rank fusion plus small priors.

RRF (score = Σ w_arm / (K + rank)) needs no score calibration between BM25 and cosine, which
have unrelated scales, and is robust when one arm is empty (no vectors yet, or no usable
words). Priors only break near-ties: a memory recorded recently or kept hot gains at most
PRIOR_MAX, less than the gap between two adjacent ranks near the top of one arm.
"""
from __future__ import annotations

import math
from typing import Sequence

K = 60
ARM_WEIGHTS = {"fts": 1.0, "vector": 1.0}
PRIOR_MAX = 0.0004
RECENCY_HALF_LIFE_DAYS = 120.0


def rrf(arms: dict[str, Sequence[int]]) -> dict[int, float]:
    scores: dict[int, float] = {}
    for arm, ranked in arms.items():
        weight = ARM_WEIGHTS.get(arm, 1.0)
        for rank, node_id in enumerate(ranked, start=1):
            scores[node_id] = scores.get(node_id, 0.0) + weight / (K + rank)
    return scores


def prior(age_days: float, heat: float) -> float:
    recency = math.exp(-max(age_days, 0.0) * math.log(2) / RECENCY_HALF_LIFE_DAYS)
    return PRIOR_MAX * (0.7 * recency + 0.3 * max(0.0, min(heat, 1.0)))
