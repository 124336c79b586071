"""The memory graph to draw: memories with the links between them.

:func:`memory_graph` takes the newest memories matching the filters (``as_of`` included)
and the links among them that were valid then.
"""

from __future__ import annotations

from datetime import datetime

from memoryd.cognition import scheduling
from memoryd.engine.context import EngineContext
from memoryd.models import Edge, SearchFilters
from memoryd.models.views import MemoryGraph, ViewEdge, ViewNode


def _valid_at(edge: Edge, when: datetime) -> bool:
    return edge.created_at <= when and (edge.valid_until is None or when < edge.valid_until)


def memory_graph(ctx: EngineContext, filters: SearchFilters, limit: int) -> MemoryGraph:
    """The newest ``limit`` memories passing ``filters`` and the edges between them."""
    now = ctx.clock()
    when = filters.as_of or now
    narrowed = ctx.filters(filters)
    total = ctx.store.count(narrowed, now=now)
    memories = ctx.store.list(narrowed, now=now, limit=limit)
    nodes = [ViewNode(id=m.id, label=(m.summary or m.content)[:120], node_type=m.node_type,
                      scope=m.scope, agent_id=m.agent_id, domains=m.domains,
                      importance=m.importance,
                      retention=round(scheduling.retention_score(m.state, when), 4),
                      tier=m.tier, created_at=m.created_at,
                      superseded=m.superseded_by is not None or (
                          m.valid_until is not None and m.valid_until <= when),
                      graph_node="kg" in m.metadata)
             for m in memories]
    ids = {n.id for n in nodes}
    seen: set[tuple[str, str, str]] = set()
    edges = []
    for edge in ctx.store.edges_from(narrowed, now=now):
        key = (edge.source_id, edge.edge_type, edge.target_id)
        if (edge.source_id in ids and edge.target_id in ids and key not in seen
                and _valid_at(edge, when)):
            seen.add(key)
            edges.append(ViewEdge(source=edge.source_id, target=edge.target_id,
                                  type=edge.edge_type, weight=edge.weight))
    return MemoryGraph(at=when, total=total, nodes=nodes, edges=edges)
