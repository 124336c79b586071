"""Reciprocal Rank Fusion of keyword and vector candidate lists."""

from __future__ import annotations

from dataclasses import dataclass

from memoryd.models import KeywordHit, VectorHit


@dataclass
class Fused:
    """One candidate after fusion, with the parts its score came from."""

    memory_id: str
    fused: float = 0.0
    keyword_rank: int | None = None
    keyword_score: float | None = None
    semantic_rank: int | None = None
    semantic_similarity: float | None = None


def reciprocal_rank_fusion(
    keyword: list[KeywordHit],
    vector: list[VectorHit],
    *,
    k: int = 60,
    keyword_weight: float = 1.0,
    vector_weight: float = 1.0,
) -> list[Fused]:
    """Fuse two ranked lists: score = sum of weight / (k + rank), ranks from 1.

    The result is normalised so that 1.0 means "ranked first by every list that
    has a weight", which keeps ``min_score`` meaningful whatever ``k`` is.
    Ties keep keyword order first, then vector order (stable and deterministic).
    """
    by_id: dict[str, Fused] = {}
    for rank, hit in enumerate(keyword, start=1):
        entry = by_id.setdefault(hit.memory_id, Fused(hit.memory_id))
        entry.keyword_rank, entry.keyword_score = rank, hit.score
        entry.fused += keyword_weight / (k + rank)
    for rank, hit in enumerate(vector, start=1):
        entry = by_id.setdefault(hit.memory_id, Fused(hit.memory_id))
        entry.semantic_rank, entry.semantic_similarity = rank, hit.similarity
        entry.fused += vector_weight / (k + rank)
    best = (keyword_weight if keyword else 0.0) + (vector_weight if vector else 0.0)
    scale = (k + 1) / best if best > 0 else 1.0
    for entry in by_id.values():
        entry.fused *= scale
    return sorted(by_id.values(), key=lambda e: -e.fused)
