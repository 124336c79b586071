"""Links between memories: explicit links, automatic links on write, exploration,
associations.

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
    kin = same_agent(ctx, memory, [h.memory_id for h in hits])
    return [
        Edge(source_id=memory.id, target_id=h.memory_id, edge_type="similar",
             weight=round(float(h.similarity), 4), created_at=memory.created_at)
        for h in hits
        if h.memory_id in kin and h.memory_id != memory.id and h.memory_id not in exclude
        and h.similarity >= settings.link_similarity
    ][: settings.link_max]


def same_agent(ctx: EngineContext, memory: Memory, ids: list[str]) -> set[str]:
    """Those of ``ids`` (found with the filter ``agent_id=memory.agent_id``) whose agent is
    ``memory``'s. The filter is exact for an agent; without one it matches every agent's
    memories, so those are read and the ones with an agent left out."""
    if memory.agent_id is not None or not ids:
        return set(ids)
    return {i for i, m in ctx.store.get_many(ids).items() if m.agent_id is None}


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


def associated_hits(ctx: EngineContext, hits: list[SearchHit],
                    filters: SearchFilters) -> list[SearchHit]:
    """Memories reached by spreading activation from the top relevant hits, as hits marked
    ``association=True``, strongest first; the hits themselves are never among them.

    Activation flows only through memories the caller may see (as :func:`explore` walks), so
    a bound caller learns nothing of the paths that run through others' memories. Seeds are
    the first ``activation_seeds`` hits that reach the recall threshold, activated
    with their score relative to the best seed (the best starts at 1). A memory reached
    (that passes the filters) scores ``activation × the weakest seed's score``: never more
    than a hit it was reached from.
    """
    settings = ctx.settings
    seeds = [h for h in hits if not h.association and h.score >= settings.recall_threshold]
    seeds = seeds[: settings.activation_seeds]
    if not seeds or settings.activation_hops == 0:
        return []
    best = max(h.score for h in seeds)
    now = ctx.clock()
    params = ActivationParams(settings.activation_decay, settings.activation_hops,
                              settings.activation_threshold)
    reached = spread({h.memory.id: h.score / best for h in seeds},
                     lambda ids: _visible_edges(ctx, ids, now), params)
    known = {h.memory.id for h in hits}
    newcomers = [mid for mid in reached if mid not in known]
    if not newcomers:
        return []
    allowed = ctx.store.matching_ids(newcomers, ctx.access.narrow(filters), now=now)
    floor = min(h.score for h in seeds)
    out = [SearchHit(memory=memory, score=reached[mid].activation * floor, fused_score=0.0,
                     association=True)
           for mid, memory in ctx.get_many(sorted(allowed)).items()]
    return sorted(out, key=lambda h: (-h.score, h.memory.id))


def _visible_edges(ctx: EngineContext, ids: list[str], now: datetime) -> list[Edge]:
    """The edges of ``ids`` whose both ends the caller may see (all of them when it is not
    bound)."""
    edges = ctx.store.edges_of(ids, now=now)
    if not ctx.access.restricted or not edges:
        return edges
    ends = sorted({e.source_id for e in edges} | {e.target_id for e in edges})
    visible = ctx.store.matching_ids(ends, ctx.filters(include_superseded=True), now=now)
    return [e for e in edges if e.source_id in visible and e.target_id in visible]
