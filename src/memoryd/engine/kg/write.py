"""Changing the knowledge graphs: ``kg_write`` (nodes and edges in one call), ``kg_link``,
``kg_recall`` (bring an archived node back, counting a use), and importing a graph file.

Each call changes one graph. It runs with the graph's file held (:func:`write_through`):
hand edits are merged first, then the whole change is checked against the graph (every
edge must join two of its nodes) and stored in one transaction, then the file is
rewritten. Bad input fails the call with nothing stored.

    >>> write(ctx, cache, project="/src/shop", nodes=[NodeSpec(name="SQLite busy timeout",
    ...       type="gotcha", body="Set busy_timeout before WAL writes.")])
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import ValidationError

from memoryd.engine.context import EngineContext
from memoryd.engine.kg.files import SyncOutcome, to_conflict, write_through
from memoryd.engine.kg.load import GraphCache, load
from memoryd.engine.kg.store_writes import (
    EdgeKey,
    WritePlan,
    apply,
    plan_archived,
    plan_edges,
    not_yours,
    plan_nodes,
)
from memoryd.engine.kg.targets import (
    Target,
    graph_file,
    read_targets,
    writable_target,
    write_target,
)
from memoryd.errors import InvalidInput, NodeNotFound, validation_message
from memoryd.graph.core import node_blocks
from memoryd.graph.jsonfile import read_graph_text
from memoryd.graph.memories import is_node, memory_to_node, node_memory_id
from memoryd.graph.merge import merge_graphs
from memoryd.models.kg import (
    Graph,
    GraphEdge,
    GraphNode,
    base_node_id,
    make_node_id,
    slugify,
)
from memoryd.models.knowledge import (
    EdgeRef,
    EdgeSpec,
    GraphWriteResult,
    NodeSpec,
    RecallResult,
    ScopedNode,
)

GraphName = Literal["user", "project"]
_CLEARABLE = ("body", "touches", "tags", "valid_from", "valid_until")


def _existing(spec: NodeSpec, nodes: dict[str, GraphNode],
              agent: str | None) -> GraphNode | None:
    """The node a spec changes: by id, or (without an id) the node of the same name."""
    if spec.id is not None:
        return nodes.get(spec.id)
    if spec.name is None:
        raise InvalidInput("a node needs an id or a name")
    name = " ".join(spec.name.split())
    for candidate in dict.fromkeys((base_node_id(name, agent), slugify(name))):
        same = nodes.get(candidate)
        if same is not None and same.name == name:
            return same
    return None


def _node(spec: NodeSpec, old: GraphNode | None, taken: set[str], now: datetime,
          agent: str | None) -> GraphNode:
    """The node a spec makes: a new one (it needs a name), or ``old`` with the spec's fields."""
    if old is None:
        if spec.name is None:
            raise InvalidInput(f"node {spec.id!r} is new: give it a name")
        node_id = spec.id or make_node_id(spec.name, taken, agent)
        return GraphNode(id=node_id, name=spec.name, type=spec.type or "insight",
                         body=spec.body or "", touches=spec.touches or [], tags=spec.tags or [],
                         created=now, valid_from=spec.valid_from, valid_until=spec.valid_until)
    given = {k: getattr(spec, k) for k in spec.model_fields_set if k != "id"}
    given = {k: v for k, v in given.items() if v is not None or k in _CLEARABLE}
    empty = {"body": "", "touches": [], "tags": []}
    given.update({k: empty[k] for k, v in given.items() if v is None and k in empty})
    data = {**old.model_dump(), **given, "updated": max(now, old.created), "archived": False}
    return GraphNode.model_validate(data)


def changed_graph(
    graph: Graph, specs: Sequence[NodeSpec], add: Sequence[EdgeSpec], remove: Sequence[EdgeRef],
    now: datetime, agent: str | None = None,
) -> tuple[Graph, list[GraphNode], list[GraphEdge], list[EdgeKey]]:
    """The graph after the change (checked whole), and the nodes, edges and removals to store.

    ``graph`` is what the caller sees. For a caller bound to ``agent`` (it sees only its own
    nodes) an id names one of its nodes, and its new nodes get ids of its own
    (:func:`base_node_id`): an id it does not own is refused alike whether it is free or held
    by a node it cannot see."""
    nodes = dict(graph.node_map())
    taken = set(nodes)
    written: dict[str, GraphNode] = {}
    try:
        for spec in specs:
            old = _existing(spec, nodes, agent)
            if agent is not None and old is None and spec.id is not None:
                raise not_yours(graph.scope, spec.id)
            node = _node(spec, old, taken, now, agent)
            nodes[node.id] = written[node.id] = node
            taken.add(node.id)
        edges = {e.key: e for e in graph.edges}
        gone: list[EdgeKey] = [(r.source, r.type, r.target) for r in remove
                               if (r.source, r.type, r.target) in edges]
        for key in gone:
            edges.pop(key)
        new = []
        for spec in add:
            old = edges.get((spec.source, spec.type, spec.target))
            edge = GraphEdge(source=spec.source, target=spec.target, type=spec.type,
                             weight=spec.weight, created=old.created if old else now)
            edges[edge.key] = edge
            new.append(edge)
        after = Graph(scope=graph.scope, nodes=list(nodes.values()), edges=list(edges.values()))
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc)) from exc
    return after, list(written.values()), new, gone


def write(ctx: EngineContext, cache: GraphCache, *, project: str | None = None,
          graph: GraphName | None = None, nodes: Sequence[NodeSpec] = (),
          edges: Sequence[EdgeSpec] = (), remove_edges: Sequence[EdgeRef] = ()) -> GraphWriteResult:
    """Add or change nodes and edges of one graph, all or nothing."""
    if not (nodes or edges or remove_edges):
        raise InvalidInput("nothing to write: give nodes, edges or remove_edges")
    target = writable_target(ctx, project, graph)

    def change() -> WritePlan:
        current = load(ctx, target.scope, cache).graph
        _, written, added, gone = changed_graph(current, nodes, edges, remove_edges, ctx.clock(),
                                                ctx.access.agent_id)
        plan = WritePlan(target.scope)
        if written:
            plan_nodes(ctx, plan, written)
        if added or gone:
            plan_edges(ctx, plan, add=added, remove=gone)
        apply(ctx, plan)
        return plan

    plan, outcome = write_through(ctx, target.scope, graph_file(ctx, target), cache, change)
    return _report(ctx, target, plan, outcome)


def write_nodes(ctx: EngineContext, cache: GraphCache, target: Target, nodes: Sequence[GraphNode],
                edges: Sequence[GraphEdge] = ()) -> GraphWriteResult:
    """Store whole nodes (and edges among them), e.g. from a project scan."""
    ctx.check_writes_to(target.scope)

    def change() -> WritePlan:
        current = load(ctx, target.scope, cache).graph
        merged = {**current.node_map(), **{n.id: n for n in nodes}}
        all_edges = {**{e.key: e for e in current.edges}, **{e.key: e for e in edges}}
        try:
            Graph(scope=target.scope, nodes=list(merged.values()), edges=list(all_edges.values()))
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from exc
        plan = WritePlan(target.scope)
        plan_nodes(ctx, plan, list(nodes))
        if edges:
            plan_edges(ctx, plan, add=edges)
        apply(ctx, plan)
        return plan

    plan, outcome = write_through(ctx, target.scope, graph_file(ctx, target), cache, change)
    return _report(ctx, target, plan, outcome)


def import_text(ctx: EngineContext, cache: GraphCache, text: str, *, project: str | None = None,
                graph: GraphName | None = None, source: str = "<import>") -> GraphWriteResult:
    """Merge a graph file's text into one graph: new nodes and edges are added; a node on
    both sides keeps the newer ``updated`` (the other is reported as a conflict); nothing
    is removed. Invalid text is refused with its line and column; a node without ``created``
    was created now (or when the graph's node of that id was)."""
    target = writable_target(ctx, project, graph)
    read = read_graph_text(text, source=source, now=ctx.clock())
    if read.problems:
        raise read.problems[0]

    def change() -> tuple[WritePlan, list]:
        current = load(ctx, target.scope, cache).graph
        parsed = read.merge_input(current)
        incoming = Graph(scope=target.scope, nodes=parsed.nodes, edges=parsed.edges)
        if ctx.access.agent_id is not None:  # only its own nodes, as in write()
            mine = current.node_map()
            for node in incoming.nodes:
                if node.id not in mine:
                    raise not_yours(target.scope, node.id)
        result = merge_graphs(incoming, current, None, now=ctx.clock())
        upserts = [c.node for c in result.to_store if c.kind == "upsert_node" and c.node]
        added = [c.edge for c in result.to_store if c.kind == "upsert_edge" and c.edge]
        plan = WritePlan(target.scope)
        if upserts:
            plan_nodes(ctx, plan, upserts, operation="kg_import")
        if added:
            plan_edges(ctx, plan, add=added)
        apply(ctx, plan)
        return plan, result.conflicts

    (plan, conflicts), outcome = write_through(ctx, target.scope, graph_file(ctx, target), cache,
                                               change)
    outcome.conflicts += [to_conflict(target.scope, c) for c in conflicts]
    return _report(ctx, target, plan, outcome)


def _report(ctx: EngineContext, target: Target, plan: WritePlan,
            outcome: SyncOutcome) -> GraphWriteResult:
    path = graph_file(ctx, target)
    return GraphWriteResult(
        scope=target.scope, created=plan.created, updated=plan.updated,
        unchanged=plan.unchanged, archived=plan.archived,
        edges_added=len(plan.edges), edges_removed=len(plan.expire),
        file=str(path) if path is not None else None, conflicts=outcome.conflicts,
        problems=outcome.problems, seq=ctx.store.last_seq())


def find_node(ctx: EngineContext, node_id: str, project: str | None,
              graph: GraphName | None) -> tuple[Target, GraphNode]:
    """A node by its id in the project's graph, then the user graph (or by memory id)."""
    if graph is not None:
        targets = [write_target(ctx, project, graph)]
    else:
        targets = list(reversed(read_targets(ctx, project)))
    if _is_uuid(node_id):
        memory = ctx.get(node_id)
        node = memory_to_node(memory) if is_node(memory) else None
        for target in targets:
            if node is not None and memory.scope == target.scope:
                return target, node
        raise NodeNotFound(node_id, [t.scope for t in targets])
    for target in targets:
        found = ctx.get_many([node_memory_id(target.scope, node_id)])
        node = next((memory_to_node(m) for m in found.values()), None)
        if node is not None:
            return target, node
    raise NodeNotFound(node_id, [t.scope for t in targets])


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def recall(ctx: EngineContext, cache: GraphCache, node_id: str, *, project: str | None = None,
           graph: GraphName | None = None) -> RecallResult:
    """Bring a node back into the core (archived or not, it counts as a use)."""
    target, node = find_node(ctx, node_id, project, graph)
    ctx.check_writes_to(target.scope)

    def change() -> None:
        plan = WritePlan(target.scope)
        plan_archived(ctx, plan, [node], False, operation="kg_recall", used_at=ctx.clock())
        apply(ctx, plan)

    write_through(ctx, target.scope, graph_file(ctx, target), cache, change)
    current = load(ctx, target.scope, cache).graph
    fresh = current.node(node.id)
    text = node_blocks([current], [(target.scope, node.id)])[(target.scope, node.id)]
    scoped = ScopedNode(**fresh.model_dump(), scope=target.scope,
                        memory_id=node_memory_id(target.scope, node.id))
    return RecallResult(node=scoped, was_archived=node.archived, text=text)
