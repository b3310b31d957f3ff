"""Hybrid recall: FTS arm + vector arm, fused, expanded over neighbours and confirmed links, with abstention."""
from .recall import RecallRequest, recall

__all__ = ["RecallRequest", "recall"]
