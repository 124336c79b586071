"""Recall: the memories relevant to a prompt, as the block a model's context receives."""

from __future__ import annotations

from dataclasses import dataclass

from memoryd.engine.context import EngineContext
from memoryd.engine.search import SearchOptions, run_search
from memoryd.models import SearchFilters, SearchHit
from memoryd.retrieval.context import Block, build_block

MAX_QUERY_CHARS = 1000


@dataclass(frozen=True)
class Recalled:
    """The formatted block and the hits it was made from (by memory id)."""

    block: Block
    hits: dict[str, SearchHit]
    query: str
    token_budget: int


def recall(
    ctx: EngineContext,
    text: str,
    filters: SearchFilters,
    *,
    token_budget: int | None = None,
    max_items: int | None = None,
    min_similarity: float = 0.25,
    session_key: str | None = None,
) -> Recalled:
    """Search with the last ``MAX_QUERY_CHARS`` of ``text`` and format the best hits.

    Vector-only matches less similar than ``min_similarity`` are dropped: a prompt about
    something the memory never heard of yields an empty block.
    """
    budget = token_budget or ctx.settings.recall_token_budget
    items = max_items or ctx.settings.recall_max_items
    query = text.strip()[-MAX_QUERY_CHARS:]
    options = SearchOptions(limit=min(100, items * 2), mmr=True, session_key=session_key,
                            mmr_lambda=ctx.settings.mmr_lambda,
                            cognitive=ctx.settings.cognitive_ranking,
                            associations=ctx.settings.activation)
    hits = [h for h in run_search(ctx, query, filters, options)
            if h.semantic_similarity is None or h.keyword_rank is not None
            or h.semantic_similarity >= min_similarity]
    block = build_block([h.memory for h in hits], ctx.clock(), token_budget=budget,
                        max_items=items)
    return Recalled(block, {h.memory.id: h for h in hits}, query, budget)
