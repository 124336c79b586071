"""Archiving one knowledge-graph node by hand (the counterpart of ``kg_recall``).

Archival (:mod:`memoryd.engine.kg.archive`) chooses what leaves the core by score; a person
looking at a graph may also decide that one node should leave it. Either way it is the same
recorded change of ``metadata.kg.archived`` (operation ``kg_archive``), written through the
graph's file: the node stays searchable, its edges become memory traces, and ``kg_recall``
brings it back.
"""

from __future__ import annotations

from memoryd.engine.context import EngineContext
from memoryd.engine.kg.files import write_through
from memoryd.engine.kg.load import GraphCache, load
from memoryd.engine.kg.store_writes import WritePlan, apply, plan_archived
from memoryd.engine.kg.targets import graph_file
from memoryd.engine.kg.write import GraphName, find_node
from memoryd.graph.memories import node_memory_id
from memoryd.models.knowledge import ScopedNode
from memoryd.models.views import NodeArchived


def archive_node(ctx: EngineContext, cache: GraphCache, node_id: str, *,
                 project: str | None = None, graph: GraphName | None = None) -> NodeArchived:
    """Archive one node (by id, or by its memory's id); archiving an archived node changes
    nothing."""
    target, node = find_node(ctx, node_id, project, graph)

    def change() -> None:
        plan = WritePlan(target.scope)
        plan_archived(ctx, plan, [node], True, operation="kg_archive")
        apply(ctx, plan)

    write_through(ctx, target.scope, graph_file(ctx, target), cache, change)
    fresh = load(ctx, target.scope, cache).graph.node(node.id)
    scoped = ScopedNode(**fresh.model_dump(), scope=target.scope,
                        memory_id=node_memory_id(target.scope, node.id))
    return NodeArchived(node=scoped, was_archived=node.archived)
