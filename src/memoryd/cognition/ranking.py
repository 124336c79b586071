"""Cognitive re-ranking: relevance first, then retention, recency and importance.

    final = w_rel * relevance + w_ret * retention + w_rec * recency + w_imp * importance

divided by the sum of the weights, so ``final`` stays in [0, 1]. ``relevance`` is the
fused RRF score scaled to [0, 1], times ``0.5 + 0.5 * s`` where ``s`` is the hit's cosine
similarity relative to the best in the list (1 when the search had no vector side). RRF
alone is rank-based and nearly flat at the top (1.0, 0.98, 0.97, ... for a one-list
result), so without the similarity factor an unrelated but fresh memory one rank below
a relevant old one would overtake it; ``retention`` is :func:`scheduling.retention_score`
(the FSRS-6 curve blended with dual strength); ``recency`` halves every
``half_life_days`` since the memory was last updated; ``importance`` is the memory's own.
With the default weights (0.85 / 0.05 / 0.05 / 0.05) relevance dominates: the other
three together can move a memory past one whose relevance is at most 0.15 higher,
enough to put the current version of a fact above a stale one of similar relevance
without letting a fresh but unrelated memory outrank a relevant one. The recall
benchmark (bench/results/recall.md) compares this against plain hybrid search.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memoryd.cognition.scheduling import retention_score
from memoryd.models import SearchHit, as_utc


@dataclass(frozen=True)
class RankingWeights:
    """Weights of the final score; see the module docstring."""

    relevance: float = 0.85
    retention: float = 0.05
    recency: float = 0.05
    importance: float = 0.05
    half_life_days: float = 30.0


def recency(updated_at: datetime, now: datetime, half_life_days: float) -> float:
    """1.0 now, 0.5 after one half-life, decaying exponentially (future times count as now)."""
    age_days = max(0.0, (as_utc(now) - as_utc(updated_at)).total_seconds() / 86400.0)
    return 0.5 ** (age_days / half_life_days)


def rescore(hits: list[SearchHit], now: datetime, weights: RankingWeights) -> list[SearchHit]:
    """Hits with ``retention`` filled in and ``score`` recomputed, best first."""
    total = weights.relevance + weights.retention + weights.recency + weights.importance
    if total <= 0:
        return hits
    sims = [h.semantic_similarity for h in hits if h.semantic_similarity is not None]
    best = max(sims) if sims else 0.0
    out = []
    for hit in hits:
        memory = hit.memory
        kept = retention_score(memory.state, now)
        score = (
            weights.relevance * hit.fused_score * _similarity_factor(hit, best, bool(sims))
            + weights.retention * kept
            + weights.recency * recency(memory.updated_at, now, weights.half_life_days)
            + weights.importance * memory.importance
        ) / total
        out.append(hit.model_copy(update={"score": score, "retention": kept}))
    return sorted(out, key=lambda h: -h.score)


def _similarity_factor(hit: SearchHit, best: float, has_vectors: bool) -> float:
    if not has_vectors or best <= 0:
        return 1.0
    similarity = max(0.0, hit.semantic_similarity or 0.0)
    return 0.5 + 0.5 * min(1.0, similarity / best)
