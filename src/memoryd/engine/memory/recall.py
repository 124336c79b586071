"""Recall: the memories relevant to a prompt, as the block a model's context receives."""

from __future__ import annotations

from dataclasses import dataclass

from memoryd.engine.context import EngineContext
from memoryd.engine.memory.search import SearchOptions, run_search
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
    min_score: float | None = None,
    session_key: str | None = None,
) -> Recalled:
    """Search with the last ``MAX_QUERY_CHARS`` of ``text`` and format the relevant hits.

    Hits less likely relevant than ``min_score`` (default: the ``recall_threshold``
    setting) are dropped: a prompt about something the memory never heard of yields an
    empty block.
    """
    settings = ctx.settings
    budget = token_budget or settings.recall_token_budget
    items = max_items or settings.recall_max_items
    query = text.strip()[-MAX_QUERY_CHARS:]
    options = SearchOptions(limit=min(100, items * 2), mmr=True, session_key=session_key,
                            mmr_lambda=settings.mmr_lambda,
                            min_score=settings.recall_threshold if min_score is None else min_score,
                            cognitive=settings.cognitive_ranking,
                            associations=settings.activation)
    hits = run_search(ctx, query, filters, options)
    block = build_block([h.memory for h in hits], ctx.clock(), token_budget=budget,
                        max_items=items)
    return Recalled(block, {h.memory.id: h for h in hits}, query, budget)
