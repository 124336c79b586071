"""Candidates of one search, described by both sides and scored: the first half of the read path.

The keyword side (memoryd's BM25 over the store's term index) and the vector side (nearest
neighbours) each give their best ``pool``; keyword candidates then get their cosine and
vector candidates their term counts, so every candidate carries both sides' evidence. The
relevance model (:mod:`memoryd.retrieval.relevance`) turns that evidence into the ranking
probability (a hit's ``fused_score`` in hybrid search), and the answer model
(:mod:`memoryd.retrieval.answer`) the pair's own readings into every hit's ``score``: how
likely it answers the query, the same on any store; a conditional standing instruction among the candidates also gets the
cosine of the query to the topic it is conditioned on
(:mod:`memoryd.engine.memory.instruction_topics`).
Ranking by the relevance probability is the fusion; ``fusion="rrf"`` ranks by reciprocal
rank fusion instead, and ``mode`` keyword / vector by one side alone; the score means the
same in every case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from memoryd.engine.context import EngineContext
from memoryd.engine.memory import workers
from memoryd.engine.memory.instruction_topics import topic_cosines
from memoryd.engine.memory.query_vector import QueryVector
from memoryd.models import KeywordHit, SearchFilters, SearchHit, VectorHit
from memoryd.retrieval.bm25 import Candidate, CorpusStats
from memoryd.retrieval.fusion import reciprocal_rank_fusion
from memoryd.retrieval.relevance import ScoredCandidate, relevance_scores

SearchMode = Literal["hybrid", "keyword", "vector"]
Fusion = Literal["relevance", "rrf"]


@dataclass(frozen=True)
class Evidence:
    """Every candidate of one query with what both sides know about it."""

    terms: list[str]
    stats: CorpusStats
    candidates: list[Candidate]  # keyword candidates (best first), then vector-only ones
    cosines: dict[str, float]
    keyword_rank: dict[str, int]  # 1 = the keyword side's best
    vector_rank: dict[str, int]
    query_vector: np.ndarray | None = None
    pool: int = 50  # how many candidates each side contributed at most


def gather(ctx: EngineContext, terms: list[str], query_vector: QueryVector,
           filters: SearchFilters, mode: SearchMode, pool: int) -> Evidence:
    """The best ``pool`` of each side the mode uses, each described by both sides (without a
    query vector, keyword-mode only: the keyword candidates without their cosines).

    The keyword side runs first, while the query is still being embedded on a worker
    (:mod:`memoryd.engine.memory.query_vector`); the vector side then runs here too. Only
    with the vector in hand and a store whose sides overlap (``Store.overlapping_sides``)
    does the vector side start on a worker at once: otherwise the threads' hand-offs cost
    more than the overlap saves (bench/results/search_sides_*_100k*.md).
    """
    settings, now = ctx.settings, ctx.clock()
    at_once = (mode == "hybrid" and query_vector.ready and ctx.store.overlapping_sides
               and query_vector.get() is not None)
    vector_side = (workers.pool("vector-side").submit(
        ctx.store.vector_search, query_vector.get(), filters, now=now, limit=pool)
        if at_once else None)
    keyword = (ctx.store.keyword_candidates(terms, filters, now=now, limit=pool,
                                            k1=settings.bm25_k1, b=settings.bm25_b)
               if mode != "vector" else None)
    found = keyword.candidates if keyword is not None else []
    keyword_ids = {c.memory_id for c in found}
    vector = query_vector.get()
    if mode != "keyword":
        if vector is None:
            raise ValueError("a search other than keyword mode needs the query vector")
        nearest = (vector_side.result() if vector_side is not None
                   else ctx.store.vector_search(vector, filters, now=now, limit=pool))
        extra = ctx.store.term_counts(
            [h.memory_id for h in nearest if h.memory_id not in keyword_ids], terms)
    else:
        nearest, extra = [], []
    cosines = {h.memory_id: h.similarity for h in nearest}
    unseen = [c.memory_id for c in found if c.memory_id not in cosines]
    if unseen and vector is not None:
        cosines.update(ctx.store.cosines(unseen, vector))
    # The keyword side read the corpus statistics; a vector-mode search reads them here.
    stats = keyword.stats if keyword is not None else ctx.store.corpus_stats(terms)
    return Evidence(
        terms=terms,
        stats=stats,
        candidates=[*found, *extra],
        cosines=cosines,
        keyword_rank={c.memory_id: i for i, c in enumerate(found, start=1)},
        vector_rank={h.memory_id: i for i, h in enumerate(nearest, start=1)},
        query_vector=vector,
        pool=pool,
    )


def score(ctx: EngineContext, evidence: Evidence, room: float = 0.0) -> list[ScoredCandidate]:
    """P(relevant) of every candidate, most likely first. ``room``: how far (log-odds) a later
    near-tie reorder may lift a hit; a topic-lifted instruction stays that far below the best
    direct hit (:func:`memoryd.retrieval.relevance.below_best_direct`)."""
    ids = [c.memory_id for c in evidence.candidates]
    return relevance_scores(evidence.terms, evidence.candidates, evidence.stats,
                            [evidence.cosines.get(i) for i in ids],
                            pool=evidence.pool,
                            topic_cosines=topic_cosines(
                                ctx, [c.topic for c in evidence.candidates], evidence.query_vector),
                            instruction_gap=room,
                            k1=ctx.settings.bm25_k1, b=ctx.settings.bm25_b)


def ordered(ctx: EngineContext, evidence: Evidence, scored: list[ScoredCandidate],
            mode: SearchMode) -> list[tuple[ScoredCandidate, float]]:
    """Candidates in the order the mode and fusion rank them, each with the value that ranked
    it: the probability, the normalised RRF score, the BM25 score or the cosine."""
    if mode == "keyword":
        return [(s, s.bm25) for s in sorted(scored, key=lambda s: (-s.bm25, s.memory_id))]
    if mode == "vector":
        return [(s, s.cosine or 0.0)
                for s in sorted(scored, key=lambda s: (-(s.cosine or 0.0), s.memory_id))]
    if ctx.settings.fusion != "rrf":
        return [(s, s.probability) for s in scored]
    by_id = {s.memory_id: s for s in scored}
    keyword = [KeywordHit(s.memory_id, s.bm25) for s in sorted(
        (by_id[mid] for mid in evidence.keyword_rank), key=lambda s: (-s.bm25, s.memory_id))]
    nearest = [VectorHit(mid, evidence.cosines[mid]) for mid in evidence.vector_rank]
    s = ctx.settings
    fused = reciprocal_rank_fusion(keyword, nearest, k=s.rrf_k, keyword_weight=s.keyword_weight,
                                   vector_weight=s.vector_weight)
    return [(by_id[f.memory_id], f.fused) for f in fused if f.memory_id in by_id]


#: Candidates read at least, after the first ``head``, when some of those are gone.
_STAND_INS = 5


def hits_of(ctx: EngineContext, evidence: Evidence, ranked: list[tuple[ScoredCandidate, float]],
            head: int, want: int = 0) -> list[SearchHit]:
    """The first ``head`` ranked candidates as hits, with their memories (those the caller
    may see and that still exist). When fewer than ``want`` of them are left (deleted or
    hidden since they were ranked), the next candidates stand in for them."""
    hits: list[SearchHit] = []
    start, end = 0, head
    while start < len(ranked):
        chosen = ranked[start:end]
        memories = ctx.get_many([s.memory_id for s, _ in chosen])
        hits += [
            SearchHit(
                memory=memories[s.memory_id],
                score=s.answer,
                fused_score=fused,
                keyword_rank=evidence.keyword_rank.get(s.memory_id),
                keyword_score=s.bm25 if s.bm25 > 0 else None,
                semantic_rank=evidence.vector_rank.get(s.memory_id),
                semantic_similarity=s.cosine,
            )
            for s, fused in chosen
            if s.memory_id in memories
        ]
        if len(hits) >= want:
            break
        start, end = end, end + max(want - len(hits), _STAND_INS)
    return hits
