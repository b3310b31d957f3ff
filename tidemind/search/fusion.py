"""Tie-breaking priors: a memory recorded recently or kept hot gains at most PRIOR_MAX, far less
than any difference the scoring makes (`scoring`), so it only orders near-equal candidates.
"""
from __future__ import annotations

import math

PRIOR_MAX = 0.0004
RECENCY_HALF_LIFE_DAYS = 120.0


def prior(age_days: float, heat: float) -> float:
    recency = math.exp(-max(age_days, 0.0) * math.log(2) / RECENCY_HALF_LIFE_DAYS)
    return PRIOR_MAX * (0.7 * recency + 0.3 * max(0.0, min(heat, 1.0)))
