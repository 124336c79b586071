"""The read path: candidates → fuse → rescore → associate → diversify → cut → record.

1. Keyword (BM25) and vector candidates from the store, fused by RRF, among the memories the
   caller may see (the filters are narrowed to its bindings before the store is asked).
2. Tiers: unless the caller names tiers, look in the hot tier first and widen to warm,
   then cold, while fewer than ``tier_min_results`` good hits (a keyword match or a
   semantic similarity of at least ``tier_min_similarity``) were found.
3. Cognitive re-ranking (relevance first; see cognition/ranking.py).
4. Spreading activation from the top hits adds or boosts associated memories.
5. ``min_score``, then MMR diversity if asked, then the limit.
6. The testing effect: returned memories are strengthened a little (once per session).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from memoryd.cognition.ranking import RankingWeights, rescore
from memoryd.engine.context import EngineContext
from memoryd.engine.feedback import record_retrieval
from memoryd.engine.graph import with_associations
from memoryd.models import SearchFilters, SearchHit, Tier
from memoryd.retrieval.fusion import reciprocal_rank_fusion
from memoryd.retrieval.mmr import mmr_order

SearchMode = Literal["hybrid", "keyword", "vector"]
_TIER_PASSES: tuple[list[Tier], ...] = (["hot"], ["hot", "warm"])


@dataclass(frozen=True)
class SearchOptions:
    """How one search runs (validated by Engine.search)."""

    limit: int
    mode: SearchMode = "hybrid"
    min_score: float | None = None
    mmr: bool = False
    mmr_lambda: float = 0.7
    cognitive: bool = True
    associations: bool = True
    record_access: bool = True
    session_key: str | None = None


def run_search(
    ctx: EngineContext,
    query: str,
    filters: SearchFilters,
    options: SearchOptions,
    query_vector: np.ndarray | None = None,
) -> list[SearchHit]:
    """Run the whole read path and return at most ``options.limit`` hits."""
    filters = ctx.access.narrow(filters)
    if options.mode != "keyword" and query_vector is None:
        query_vector = ctx.embedder.embed([query])[0]
    hits = _tiered_candidates(ctx, query, filters, options, query_vector)
    now = ctx.clock()
    if options.cognitive:
        s = ctx.settings
        weights = RankingWeights(s.rank_relevance_weight, s.rank_retention_weight,
                                 s.rank_recency_weight, s.rank_importance_weight,
                                 s.recency_half_life_days)
        hits = rescore(hits, now, weights)
    if options.associations:
        hits = with_associations(ctx, hits, filters)
    if options.min_score is not None:
        hits = [h for h in hits if h.score >= options.min_score]
    if options.mmr and len(hits) > 1:
        hits = _diversify(ctx, hits, options.limit, options.mmr_lambda)
    hits = hits[: options.limit]
    if options.record_access:
        record_retrieval(ctx, hits, options.session_key)
    return hits


def _tiered_candidates(
    ctx: EngineContext,
    query: str,
    filters: SearchFilters,
    options: SearchOptions,
    query_vector: np.ndarray | None,
) -> list[SearchHit]:
    settings = ctx.settings
    if filters.tiers is not None or settings.tier_min_results == 0:
        return _candidates(ctx, query, filters, options, query_vector)
    wanted = min(settings.tier_min_results, options.limit)
    for tiers in _TIER_PASSES:
        hits = _candidates(ctx, query, filters.model_copy(update={"tiers": tiers}), options,
                           query_vector)
        good = sum(1 for h in hits if h.keyword_rank is not None
                   or (h.semantic_similarity or -1.0) >= settings.tier_min_similarity)
        if good >= wanted or not _has_colder(ctx, tiers):
            return hits
    return _candidates(ctx, query, filters, options, query_vector)


def _has_colder(ctx: EngineContext, tiers: list[Tier]) -> bool:
    colder = [t for t in ("warm", "cold") if t not in tiers]
    return bool(colder) and ctx.store.count(
        ctx.filters(tiers=colder, include_superseded=True), now=ctx.clock()
    ) > 0


def _candidates(
    ctx: EngineContext,
    query: str,
    filters: SearchFilters,
    options: SearchOptions,
    query_vector: np.ndarray | None,
) -> list[SearchHit]:
    settings = ctx.settings
    pool = max(settings.candidate_pool, options.limit * 3)
    now = ctx.clock()
    keyword = (ctx.store.keyword_search(query, filters, now=now, limit=pool)
               if options.mode != "vector" else [])
    vector = (ctx.store.vector_search(query_vector, filters, now=now, limit=pool)
              if options.mode != "keyword" and query_vector is not None else [])
    hybrid = options.mode == "hybrid"
    fused = reciprocal_rank_fusion(
        keyword,
        vector,
        k=settings.rrf_k,
        keyword_weight=settings.keyword_weight if hybrid else 1.0,
        vector_weight=settings.vector_weight if hybrid else 1.0,
    )
    # Re-ranking moves hits only a little (relevance dominates), so the tail of the
    # fused list never reaches the top: hydrate just the head.
    fused = fused[: max(options.limit * 3, 30)]
    memories = ctx.get_many([f.memory_id for f in fused])
    return [
        SearchHit(
            memory=memories[f.memory_id],
            score=f.fused,
            fused_score=f.fused,
            keyword_rank=f.keyword_rank,
            keyword_score=f.keyword_score,
            semantic_rank=f.semantic_rank,
            semantic_similarity=f.semantic_similarity,
        )
        for f in fused
        if f.memory_id in memories
    ]


def _diversify(ctx: EngineContext, hits: list[SearchHit], limit: int, lam: float) -> list[SearchHit]:
    vectors = ctx.store.vectors([h.memory.id for h in hits])
    dims = ctx.embedder.dims
    matrix = np.stack([vectors.get(h.memory.id, np.zeros(dims, np.float32)) for h in hits])
    order = mmr_order([h.score for h in hits], matrix, lam=lam, limit=limit)
    return [hits[i] for i in order]
