"""The memory graph: explicit links, automatic edges on write, exploration, associations.

Every walk stays inside what the caller may see: a bound caller neither reaches nor learns of
memories outside its scope or agent."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from memoryd.cognition.activation import ActivationParams, spread
from memoryd.engine.context import EngineContext
from memoryd.errors import InvalidInput
from memoryd.models import (
    EDGE_TYPES,
    Edge,
    Memory,
    Neighbour,
    Neighbourhood,
    SearchFilters,
    SearchHit,
)


def link(
    ctx: EngineContext,
    source_id: str,
    target_id: str,
    edge_type: str = "related",
    weight: float = 0.5,
    *,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    metadata: dict[str, Any] | None = None,
) -> Edge:
    """Create (or replace) a typed, weighted edge between two existing memories."""
    if source_id == target_id:
        raise InvalidInput("a memory cannot be linked to itself")
    if edge_type not in EDGE_TYPES:
        raise InvalidInput(f"edge_type must be one of {', '.join(EDGE_TYPES)}")
    if not 0.0 <= weight <= 1.0:
        raise InvalidInput("weight must be between 0 and 1")
    ctx.get(source_id)
    ctx.get(target_id)
    edge = Edge(
        source_id=source_id,
        target_id=target_id,
        edge_type=edge_type,  # type: ignore[arg-type]
        weight=weight,
        created_at=ctx.clock(),
        valid_from=valid_from,
        valid_until=valid_until,
        metadata=metadata or {},
    )
    ctx.store.upsert_edges([edge])
    return edge


def similar_edges(ctx: EngineContext, memory: Memory, vector: np.ndarray,
                  exclude: set[str]) -> list[Edge]:
    """Edges to the nearest memories of the same scope and agent above ``link_similarity``."""
    settings = ctx.settings
    if settings.link_max == 0:
        return []
    hits = ctx.store.vector_search(
        vector, ctx.filters(scope=memory.scope, agent_id=memory.agent_id), now=ctx.clock(),
        limit=settings.link_max + 1,
    )
    return [
        Edge(source_id=memory.id, target_id=h.memory_id, edge_type="similar",
             weight=round(float(h.similarity), 4), created_at=memory.created_at)
        for h in hits
        if h.memory_id != memory.id and h.memory_id not in exclude
        and h.similarity >= settings.link_similarity
    ][: settings.link_max]


def session_edges(ctx: EngineContext, memories: list[Memory]) -> list[Edge]:
    """``follows`` edges between consecutive memories of the same session.

    The first new memory of a session links to the newest memory already stored for it.
    """
    edges: list[Edge] = []
    last: dict[str, str] = {}
    for memory in memories:
        session = memory.session_id
        if not session:
            continue
        previous = last.get(session)
        if previous is None:
            stored = ctx.store.list(
                ctx.filters(session_id=session, scope=memory.scope, include_superseded=True),
                now=ctx.clock(), limit=2,
            )
            previous = next((m.id for m in stored if m.id != memory.id
                             and m.created_at <= memory.created_at), None)
        if previous is not None:
            edges.append(Edge(source_id=memory.id, target_id=previous, edge_type="follows",
                              weight=0.5, created_at=memory.created_at))
        last[session] = memory.id
    return edges


def explore(ctx: EngineContext, memory_id: str, depth: int = 2) -> Neighbourhood:
    """The memories within ``depth`` hops of a memory, with the edges between them.

    The walk goes only through memories the caller may see.
    """
    if not 1 <= depth <= 3:
        raise InvalidInput("depth must be 1, 2 or 3")
    center = ctx.get(memory_id)
    now = ctx.clock()
    seen = {memory_id}
    frontier = [memory_id]
    found: dict[str, tuple[int, Edge, str]] = {}
    memories: dict[str, Memory] = {}
    all_edges: dict[tuple[str, str, str], Edge] = {}
    for level in range(1, depth + 1):
        reached: dict[str, tuple[Edge, str]] = {}
        for edge in ctx.store.edges_of(frontier, now=now):
            for here, there in ((edge.source_id, edge.target_id), (edge.target_id, edge.source_id)):
                if here in frontier and there not in seen and there not in reached:
                    reached[there] = (edge, here)
        visible = ctx.get_many(list(reached))
        for mid, (edge, via) in reached.items():
            if mid in visible:
                found[mid] = (level, edge, via)
                memories[mid] = visible[mid]
        seen.update(reached)
        frontier = list(visible)
        if not frontier:
            break
    kept = set(memories) | {memory_id}
    for edge in ctx.store.edges_of(list(kept), now=now):
        if edge.source_id in kept and edge.target_id in kept:
            all_edges[(edge.source_id, edge.target_id, edge.edge_type)] = edge
    neighbours = [
        Neighbour(memory=memories[mid], depth=level, via=via, edge_type=edge.edge_type,
                  weight=edge.weight)
        for mid, (level, edge, via) in sorted(found.items(),
                                              key=lambda kv: (kv[1][0], -kv[1][1].weight))
    ]
    return Neighbourhood(center=center, neighbours=neighbours, edges=list(all_edges.values()))


def with_associations(ctx: EngineContext, hits: list[SearchHit],
                      filters: SearchFilters) -> list[SearchHit]:
    """Boost hits reached by spreading activation from the top hits; add associated memories.

    Seeds are the top ``activation_seeds`` hits, activated with their score. A hit
    that is also reached gets ``+ activation * 0.1``; a memory reached that is not a hit
    (and passes the filters) joins with score ``activation * weakest seed score`` and
    ``association=True``.
    """
    settings = ctx.settings
    if not hits or settings.activation_seeds == 0 or settings.activation_hops == 0:
        return hits
    seeds = {h.memory.id: h.score for h in hits[: settings.activation_seeds]}
    now = ctx.clock()
    params = ActivationParams(settings.activation_decay, settings.activation_hops,
                              settings.activation_threshold)
    reached = spread(seeds, lambda ids: ctx.store.edges_of(ids, now=now), params)
    if not reached:
        return hits
    by_id = {h.memory.id: h for h in hits}
    out = []
    for hit in hits:
        act = reached.get(hit.memory.id)
        out.append(hit.model_copy(update={"score": hit.score + 0.1 * act.activation}) if act else hit)
    newcomers = [mid for mid in reached if mid not in by_id]
    if newcomers:
        allowed = ctx.store.matching_ids(newcomers, ctx.access.narrow(filters), now=now)
        floor = min(seeds.values())
        for mid, memory in ctx.get_many(sorted(allowed)).items():
            score = reached[mid].activation * floor
            out.append(SearchHit(memory=memory, score=score, fused_score=0.0, association=True))
    return sorted(out, key=lambda h: -h.score)
