"""Knowledge graphs read from the store, kept per scope until the store changes.

A graph is loaded once (its node memories and their edges) and then refreshed from the
history: while the store's change sequence number stays put, the cached graph is
returned as it is; when it moves, only the memories changed since are read again (a
full reload after many changes). Graphs are values: a refresh makes a new one.

The cache belongs to the engine's knowledge graphs (``engine.kg``), shared by every caller
of one engine; it is keyed by scope and by the caller's agent binding, and a caller is
checked against the scope (``ctx.filters``) before anything is read.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from memoryd.engine.context import EngineContext
from memoryd.engine.kg.cache import GraphCache, Loaded
from memoryd.graph.memories import (
    build_graph,
    graph_edges,
    is_node,
    memory_to_node,
    node_memory_id,
)
from memoryd.models.kg import Graph
from memoryd.graph.rewind import by_memory, rewind
from memoryd.models import Memory

# More changes than this since a graph was cached: read it again whole.
MAX_INCREMENTAL = 1000
_ALL = 10_000_000
_HISTORY_PAGE = 10_000
# History times are the store's own clock, which may run ahead of the engine's.
_END_OF_TIME = datetime(9000, 1, 1, tzinfo=UTC)


def _node_filters(ctx: EngineContext, scope: str) -> Any:
    return ctx.filters(scope=scope, graph=True, include_superseded=True)


def _full(ctx: EngineContext, scope: str, seen: int, now: datetime) -> Loaded:
    filters = _node_filters(ctx, scope)
    memories = ctx.store.list(filters, now=now, limit=_ALL)
    mine = [m for m in memories if m.scope == scope and _canonical(m)]
    edges = ctx.store.edges_from(filters, now=now)
    graph, slugs = build_graph(scope, mine, edges, now)
    kept = [m for m in mine if m.id in slugs]
    return Loaded(graph, slugs, seen, max((m.seq for m in kept), default=0))


def _canonical(memory: Memory) -> bool:
    return is_node(memory) and memory.id == node_memory_id(memory.scope,
                                                            memory.metadata["kg"]["slug"])


def load(ctx: EngineContext, scope: str, cache: GraphCache | None = None) -> Loaded:
    """The graph of ``scope`` as the caller may see it, from the cache when the store has
    not changed since (Forbidden when the caller is bound to another scope)."""
    filters = _node_filters(ctx, scope)  # raises Forbidden first
    key = (scope, ctx.access.agent_id)
    seen = ctx.store.last_seq()
    now = ctx.clock()
    cached = cache.graphs.get(key) if cache is not None else None
    if cached is not None and cached.seen == seen:
        return cached
    if cached is None or seen < cached.seen:
        fresh = _full(ctx, scope, seen, now)
    else:
        fresh = _refresh(ctx, scope, cached, seen, now, filters)
    if cache is not None:
        with cache.lock:
            cache.graphs[key] = fresh
    return fresh


def _refresh(ctx: EngineContext, scope: str, cached: Loaded, seen: int, now: datetime,
             filters: Any) -> Loaded:
    """Read again only the memories changed since ``cached`` was read, and their edges."""
    changes = ctx.store.changes_since(cached.seen, limit=MAX_INCREMENTAL + 1)
    if len(changes) > MAX_INCREMENTAL:
        return _full(ctx, scope, seen, now)
    touched = sorted({c.memory_id for c in changes})
    allowed = ctx.store.matching_ids(touched, filters, now=now) if touched else set()
    fresh = [m for m in ctx.store.get_many(sorted(allowed)).values()
             if m.scope == scope and _canonical(m)]
    if not fresh and not any(i in cached.slugs for i in touched):
        return replace(cached, seen=seen)
    nodes = {n.id: n for n in cached.graph.nodes}
    slugs = dict(cached.slugs)
    for memory_id in touched:
        if memory_id in slugs:
            nodes.pop(slugs.pop(memory_id), None)
    for memory in fresh:
        node = memory_to_node(memory)
        if node is not None:
            nodes[node.id] = node
            slugs[memory.id] = node.id
    changed = {cached.slugs.get(i) for i in touched} | {slugs.get(m.id) for m in fresh}
    kept = [e for e in cached.graph.edges
            if e.source in nodes and e.target in nodes
            and e.source not in changed and e.target not in changed]
    ids = [i for i in touched if i in slugs]
    edges = graph_edges(ctx.store.edges_of(ids), slugs, now) if ids else []
    keys = {e.key for e in kept}
    graph = Graph(scope=scope, nodes=list(nodes.values()),
                  edges=kept + [e for e in edges if e.key not in keys])
    top = max((m.seq for m in fresh), default=0)
    return Loaded(graph, slugs, seen, max(cached.scope_seq, top))


def graph_as_of(ctx: EngineContext, scope: str, when: datetime) -> Graph:
    """The graph of ``scope`` as it was recorded at ``when``: node memories rewound through
    the history (their text, validity and archived state then), nodes valid then, and the
    edges that existed then. Nodes removed for good since are not there."""
    filters, now = _node_filters(ctx, scope), ctx.clock()
    memories = ctx.store.list(filters, now=now, limit=_ALL)
    later = by_memory(_history_after(ctx, when))
    then = [m for m in (rewind(m, later.get(m.id, [])) for m in memories) if m is not None]
    mine = [m for m in then if m.scope == scope and _canonical(m)]
    graph, _ = build_graph(scope, mine, ctx.store.edges_from(filters, now=now), when)
    return graph.as_of(when)


def _history_after(ctx: EngineContext, when: datetime) -> list[Any]:
    """Every history entry recorded at or after ``when`` (paged by time)."""
    end = _END_OF_TIME
    seen: set[int] = set()
    out = []
    start = when
    while True:
        page = ctx.store.changes_between(start, end, limit=_HISTORY_PAGE)
        out.extend(e for e in page if e.seq not in seen)
        seen.update(e.seq for e in page)
        if len(page) < _HISTORY_PAGE or page[-1].at <= start:
            return out
        start = page[-1].at
