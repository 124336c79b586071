"""The read path: candidates → relevance → cognitive near-ties → diversify → associate → cut.

1. Candidates from both sides, each described by both (:mod:`memoryd.engine.memory.candidates`):
   the ranking model orders them (``fused_score``, P(relevant) in [0, 1]) and the answer
   model scores them (``score``, how likely the memory answers the query, the same on any
   store). Only memories the caller may see are asked for (the filters are narrowed to its
   bindings first).
2. Tiers: unless the caller names tiers, look in the hot tier first and widen to warm,
   then cold, while fewer than ``tier_min_results`` hits reach the recall threshold.
3. The cognitive layer (:mod:`memoryd.cognition.ranking`): retention, recency and
   importance order hits that tie on relevance and cosine, and (``rank_close_margin`` > 0)
   hits whose relevance is within that margin in log-odds, so it never puts a clearly less
   relevant memory above a clearly more relevant one. A period the query names ("last
   week", "in May") lifts memories created in it by ``time_window_margin`` log-odds, a
   speaker it asks about ("what did I say…", "what did you suggest…") lifts what that party
   said by ``speaker_margin``, and a request for advice lifts the user's preferences and
   standing instructions likely to answer it by ``preference_margin``
   (:mod:`memoryd.engine.memory.cues`): the same kind of bounded reorder. All apply where hits are
   ranked by relevance (hybrid search with ``fusion = "relevance"``).
4. ``min_score`` (on ``score``), then MMR diversity if asked, then the limit.
5. Spreading activation from the top relevant hits: associated memories take only the
   slots after the hits that reach the recall threshold, never pushing one of those out.
6. The testing effect: returned memories are strengthened a little (once per session),
   written in the background (:mod:`memoryd.engine.memory.access_writer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memoryd.cognition.ranking import (
    RankingWeights,
    logit,
    order_within_margin,
    place_associations,
    rescore_calibrated,
)
from memoryd.engine.context import EngineContext
from memoryd.engine.memory.candidates import SearchMode, gather, hits_of, ordered, score
from memoryd.engine.memory.cues import QueryCues, read_cues
from memoryd.engine.memory.access_writer import record_retrieval
from memoryd.engine.memory.running import search_running
from memoryd.engine.memory.links import associated_hits
from memoryd.engine.memory.query_vector import QueryVector
from memoryd.models import SearchFilters, SearchHit, Tier
from memoryd.retrieval.mmr import mmr_order
from memoryd.retrieval.tokens import query_terms

__all__ = ["SearchMode", "SearchOptions", "run_search"]

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
    # False while the model loads (keyword_while_model_loads): keyword candidates only, scored
    # without their cosines, instead of waiting seconds for the model.
    embed_query: bool = True


def run_search(
    ctx: EngineContext,
    query: str,
    filters: SearchFilters,
    options: SearchOptions,
    query_vector: np.ndarray | None = None,
) -> list[SearchHit]:
    """Run the whole read path and return at most ``options.limit`` hits."""
    with search_running() as alone:
        return _search(ctx, query, ctx.access.narrow(filters), options, query_vector, alone)


def _search(ctx: EngineContext, query: str, filters: SearchFilters, options: SearchOptions,
            query_vector: np.ndarray | None, alone: bool) -> list[SearchHit]:
    # Every mode embeds the query (the score needs the cosine of keyword candidates too),
    # on a worker thread while the keyword side runs.
    vector = QueryVector.start(ctx.embedder, query, query_vector, embed=options.embed_query,
                               alone=alone)
    cues = _cues(ctx, query, options)
    hits = _tiered_candidates(ctx, query_terms(query), vector, filters, options, cues)
    if _by_relevance(ctx, options) and (options.cognitive or cues.room > 0):
        hits = _near_ties(ctx, hits, options, cues)
    if options.min_score is not None:
        hits = [h for h in hits if h.score >= options.min_score]
    if options.mmr and len(hits) > 1:
        hits = _diversify(ctx, hits, options.limit, options.mmr_lambda)
    hits = hits[: options.limit]
    if options.associations:
        hits = _with_associations(ctx, hits, filters, options)
    if options.record_access:
        record_retrieval(ctx, hits, options.session_key)
    return hits


def _with_associations(ctx: EngineContext, hits: list[SearchHit], filters: SearchFilters,
                       options: SearchOptions) -> list[SearchHit]:
    """Associated memories take the slots after the likely relevant hits: they may displace a
    direct hit below the recall threshold, never one at or above it."""
    threshold = ctx.settings.recall_threshold
    relevant = [h for h in hits if h.score >= threshold]
    if len(relevant) >= options.limit:
        return hits
    associated = associated_hits(ctx, hits, filters)
    if options.min_score is not None:
        associated = [h for h in associated if h.score >= options.min_score]
    if not associated:
        return hits
    weak = [h for h in hits if h.score < threshold]
    return (place_associations(relevant, associated, options.limit) + weak)[: options.limit]


def _by_relevance(ctx: EngineContext, options: SearchOptions) -> bool:
    return options.mode == "hybrid" and ctx.settings.fusion == "relevance"


def _cues(ctx: EngineContext, query: str, options: SearchOptions) -> QueryCues:
    """The period, speaker and request the query carries, when the ranking may use them."""
    if not _by_relevance(ctx, options):
        return QueryCues()
    return read_cues(query, ctx.clock(), ctx.settings)


def _near_ties(ctx: EngineContext, hits: list[SearchHit], options: SearchOptions,
               cues: QueryCues) -> list[SearchHit]:
    """Reorder hits of close relevance by the cognitive signals and the query's cues."""
    lift = cues.lift(hits)
    if options.cognitive:
        return rescore_calibrated(hits, ctx.clock(), _weights(ctx),
                                  ctx.settings.rank_close_margin, lift)
    order = order_within_margin([h.fused_score for h in hits], [0.0] * len(hits), 0.0, lift,
                                [h.semantic_similarity or 0.0 for h in hits])
    return [hits[i] for i in order]


def _lift_room(ctx: EngineContext, options: SearchOptions, cues: QueryCues) -> float:
    """How far (log-odds) a hit may rise past more relevant ones: cognition plus the cues."""
    return (ctx.settings.rank_close_margin if options.cognitive else 0.0) + cues.room


def _weights(ctx: EngineContext) -> RankingWeights:
    s = ctx.settings
    return RankingWeights(retention=s.rank_retention_weight, recency=s.rank_recency_weight,
                          importance=s.rank_importance_weight,
                          half_life_days=s.recency_half_life_days)


def _tiered_candidates(ctx: EngineContext, terms: list[str], vector: QueryVector,
                       filters: SearchFilters, options: SearchOptions,
                       cues: QueryCues) -> list[SearchHit]:
    settings = ctx.settings
    room = _lift_room(ctx, options, cues) if _by_relevance(ctx, options) else 0.0
    if filters.tiers is not None or settings.tier_min_results == 0:
        return _candidates(ctx, terms, vector, filters, options, room)
    wanted = min(settings.tier_min_results, options.limit)
    for tiers in _TIER_PASSES:
        hits = _candidates(ctx, terms, vector, filters.model_copy(update={"tiers": tiers}),
                           options, room)
        relevant = sum(1 for h in hits if h.score >= settings.recall_threshold)
        if relevant >= wanted or not _has_colder(ctx, tiers):
            return hits
    return _candidates(ctx, terms, vector, filters, options, room)


def _has_colder(ctx: EngineContext, tiers: list[Tier]) -> bool:
    colder = [t for t in ("warm", "cold") if t not in tiers]
    return bool(colder) and ctx.store.count(
        ctx.filters(tiers=colder, include_superseded=True), now=ctx.clock()
    ) > 0


def _candidates(ctx: EngineContext, terms: list[str], vector: QueryVector,
                filters: SearchFilters, options: SearchOptions, room: float) -> list[SearchHit]:
    pool = max(ctx.settings.candidate_pool, options.limit)
    evidence = gather(ctx, terms, vector, filters, options.mode, pool)
    ranked = ordered(ctx, evidence, score(ctx, evidence, room), options.mode)
    # Diversifying, or a min_score on the answer score (not monotonic in the ranking), may
    # reach past the limit; otherwise the next candidates are read only to stand in for
    # memories deleted (or hidden) between ranking and reading them.
    wide = options.mmr or options.min_score is not None
    head = max(options.limit * 3, 30) if wide else options.limit
    if room > 0 and len(ranked) > options.limit:
        # Hydrate every hit the near-tie reorder (``room`` log-odds) could lift into the
        # first ``limit``.
        floor = logit(ranked[options.limit - 1][0].probability) - room
        while head < len(ranked) and logit(ranked[head][0].probability) >= floor:
            head += 1
    return hits_of(ctx, evidence, ranked, head, want=options.limit)


def _diversify(ctx: EngineContext, hits: list[SearchHit], limit: int, lam: float) -> list[SearchHit]:
    vectors = ctx.store.vectors([h.memory.id for h in hits])
    dims = ctx.embedder.dims
    matrix = np.stack([vectors.get(h.memory.id, np.zeros(dims, np.float32)) for h in hits])
    # Relevance for MMR is what ranked the hits (the probability, BM25, cosine or RRF).
    order = mmr_order([h.fused_score for h in hits], matrix, lam=lam, limit=limit)
    return [hits[i] for i in order]
