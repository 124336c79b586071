"""Knowledge graphs to draw: one graph whole, and the list of graphs.

:func:`kg_view` is one knowledge graph as it stands now (after merging hand edits of its
file, as every read does) or as recorded at an ``as_of`` moment, each active node with its
archival score. :func:`kg_graphs` lists the graphs the caller can see.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Literal

from memoryd.engine.context import EngineContext
from memoryd.engine.kg.cache import GraphCache
from memoryd.engine.kg.load import graph_as_of, load
from memoryd.engine.kg.read import sync_files, weights
from memoryd.engine.kg.targets import USER, Target, graph_file, read_targets, write_target
from memoryd.graph.archival import score_nodes
from memoryd.graph.memories import node_memory_id
from memoryd.models import SearchFilters
from memoryd.models.views import (
    KgGraphInfo,
    KgGraphList,
    KgView,
    KgViewNode,
    ViewEdge,
)

_ALL = 10_000_000


def kg_view(ctx: EngineContext, cache: GraphCache, project: str | None,
            graph: Literal["user", "project"] | None, as_of: datetime | None) -> KgView:
    """One knowledge graph now (hand edits of its file merged first) or at ``as_of``."""
    target = write_target(ctx, project, graph)
    problems: list[str] = []
    if as_of is None:
        problems = sync_files(ctx, [target], cache)[2]
    current = load(ctx, target.scope, cache).graph
    now = ctx.clock()
    when = as_of or now
    shown = graph_as_of(ctx, target.scope, as_of) if as_of is not None else current.as_of(now)
    scores = score_nodes([shown], when, weights(ctx))
    nodes = [KgViewNode(**n.model_dump(), memory_id=node_memory_id(target.scope, n.id),
                        score=round(scores[(target.scope, n.id)].score, 4)
                        if (target.scope, n.id) in scores else 0.0)
             for n in shown.nodes]
    edges = [ViewEdge(source=e.source, target=e.target, type=e.type, weight=e.weight)
             for e in shown.edges]
    path = graph_file(ctx, target)
    return KgView(scope=target.scope, at=when, as_of=as_of, nodes=nodes, edges=edges,
                  first=min((n.created for n in current.nodes), default=None),
                  file=str(path) if path is not None else None, problems=problems)


def kg_graphs(ctx: EngineContext) -> KgGraphList:
    """The user graph (unless the caller is bound to a project) and every project graph
    with a node the caller may see, largest first."""
    read_targets(ctx, None)  # Forbidden for a key limited to domains
    filters = ctx.filters(SearchFilters(graph=True, include_superseded=True))
    counts = Counter(m.scope for m in ctx.store.list(filters, now=ctx.clock(), limit=_ALL))
    if ctx.access.scope in (None, USER):
        counts.setdefault(USER, 0)
    out = []
    for scope, count in counts.most_common():
        path = graph_file(ctx, Target(scope)) if scope != USER else None
        root = str(path.parent.parent) if path is not None else None
        out.append(KgGraphInfo(scope=scope, nodes=count, root=root))
    return KgGraphList(graphs=out)
