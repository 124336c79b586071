"""Rank fusion for the tuning grid: the same arithmetic and tie order as memoryd's RRF.

``memoryd.retrieval.fusion.reciprocal_rank_fusion`` scores ``weight / (k + rank)`` per list,
scales by a positive constant and sorts by score with ties in insertion order (keyword list
first, then vector-only candidates). This lightweight copy skips the objects so that
thousands of configurations run in seconds; the benchmark checks that it reproduces
``Engine.search(mode="hybrid")`` on the baseline settings.
"""

from __future__ import annotations

from typing import Sequence


def effective_pool(candidate_pool: int, limit: int = 10) -> int:
    """What Engine._candidates uses: max(candidate_pool, limit * 3)."""
    return max(candidate_pool, limit * 3)


def rrf(
    keyword: Sequence[str],
    vector: Sequence[str],
    *,
    k: int = 60,
    keyword_weight: float = 1.0,
    vector_weight: float = 1.0,
    pool: int = 50,
    limit: int = 10,
) -> list[str]:
    scores: dict[str, float] = {}
    for rank, mid in enumerate(keyword[:pool], start=1):
        scores[mid] = scores.get(mid, 0.0) + keyword_weight / (k + rank)
    for rank, mid in enumerate(vector[:pool], start=1):
        scores[mid] = scores.get(mid, 0.0) + vector_weight / (k + rank)
    return sorted(scores, key=lambda m: -scores[m])[:limit]
