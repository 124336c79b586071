"""Writing knowledge-graph nodes and edges into the memory store, all or nothing.

A write is planned first — every node checked, screened for secrets and embedded, with
nothing stored yet — and then applied in one store transaction. Nodes are memories
(:mod:`memoryd.graph.memories`); an edge change also records a history entry on its source
node (``kg_link``), so the change feed, the cache and time travel see it.

    >>> plan = WritePlan(scope)
    >>> plan_nodes(ctx, plan, nodes); plan_edges(ctx, plan, add=edges)
    >>> apply(ctx, plan)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from memoryd.engine.checks import build, new_memory, screen_fields
from memoryd.engine.context import EngineContext
from memoryd.errors import Forbidden
from memoryd.graph.memories import KG_KEY, memory_edge, node_changes, node_fields, node_memory_id
from memoryd.models.kg import GraphEdge, GraphNode
from memoryd.models import Edge, Memory

EdgeKey = tuple[str, str, str]


@dataclass
class _Update:
    memory_id: str
    changes: dict[str, Any]
    operation: str
    details: dict[str, Any] | None = None
    vector: np.ndarray | None = None


@dataclass
class WritePlan:
    """What one graph write will store (nothing is stored until :func:`apply`)."""

    scope: str
    inserts: list[Memory] = field(default_factory=list)
    vectors: np.ndarray | None = None
    updates: list[_Update] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    expire: list[EdgeKey] = field(default_factory=list)  # memory ids and type
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether applying the plan would change nothing."""
        return not (self.inserts or self.updates or self.edges or self.expire)


def not_yours(scope: str, node_id: str) -> Forbidden:
    """The one answer a key bound to an agent gets for a node id that is not one of its own
    nodes, whether the id is free or held by a node it cannot see (no existence oracle)."""
    return Forbidden(f"node {node_id!r} is not one of this key's nodes in {scope}: a key bound "
                     "to an agent changes its own nodes by id and adds nodes by name (the id "
                     "is chosen for it)")


def _stored(ctx: EngineContext, scope: str, slugs: Iterable[str]) -> dict[str, Memory]:
    """The memories of these nodes that exist; Forbidden if one is not the caller's."""
    ids = {node_memory_id(scope, s): s for s in slugs}
    found = ctx.store.get_many(list(ids))
    for memory in found.values():
        if not ctx.access.allows(memory):
            raise not_yours(scope, ids[memory.id])
    return {ids[i]: m for i, m in found.items()}


def plan_nodes(ctx: EngineContext, plan: WritePlan, nodes: list[GraphNode], *,
               operation: str = "kg_update") -> None:
    """Plan creating the new nodes and updating the changed ones (screened and embedded)."""
    now = ctx.clock()
    stored = _stored(ctx, plan.scope, [n.id for n in nodes])
    news, changed = [], []
    for node in nodes:
        memory = stored.get(node.id)
        if memory is None:
            news.append((node, new_memory(ctx, node_fields(node, plan.scope))))
            continue
        changes = node_changes(memory, node)
        if not changes:
            plan.unchanged.append(node.id)
            continue
        changes = screen_fields(ctx, changes, allow_secrets=False)
        if set(changes) != {"metadata"} or _content_changed(memory, changes):
            changes["updated_at"] = node.updated or now
        changed.append((node, changes))
    texts = [n.content for _, n in news] + [c["content"] for _, c in changed if "content" in c]
    vectors = ctx.embedder.embed(texts) if texts else None
    for i, (node, new) in enumerate(news):
        memory = build(ctx, new, now)
        if node.updated is not None:
            memory = memory.model_copy(update={"updated_at": node.updated})
        plan.inserts.append(memory)
        plan.created.append(node.id)
    plan.vectors = vectors[: len(news)] if vectors is not None and news else None
    offset = len(news)
    for node, changes in changed:
        vector = None
        if "content" in changes and vectors is not None:
            vector, offset = vectors[offset], offset + 1
        plan.updates.append(_Update(node_memory_id(plan.scope, node.id), changes, operation,
                                    vector=vector))
        plan.updated.append(node.id)


def _content_changed(memory: Memory, changes: dict[str, Any]) -> bool:
    """Whether a change touches more than the archived flag in ``metadata.kg``."""
    if "metadata" not in changes:
        return False
    old = dict(memory.metadata.get(KG_KEY) or {})
    new = dict(changes["metadata"].get(KG_KEY) or {})
    old.pop("archived", None)
    new.pop("archived", None)
    return old != new or {k: v for k, v in memory.metadata.items() if k != KG_KEY} != {
        k: v for k, v in changes["metadata"].items() if k != KG_KEY}


def plan_edges(ctx: EngineContext, plan: WritePlan, *, add: Iterable[GraphEdge] = (),
               remove: Iterable[EdgeKey] = ()) -> None:
    """Plan adding (or re-weighting) and removing edges between nodes of the plan's graph.
    A removed edge is expired, not deleted, so the graph as it was stays readable."""
    now = ctx.clock()
    notes: dict[str, dict[str, list[Any]]] = {}
    for edge in add:
        plan.edges.append(memory_edge(edge, plan.scope, now))
        notes.setdefault(edge.source, {}).setdefault("added", []).append(
            [edge.type, edge.target, edge.weight])
    for source, edge_type, target in remove:
        plan.expire.append((node_memory_id(plan.scope, source),
                            node_memory_id(plan.scope, target), edge_type))
        notes.setdefault(source, {}).setdefault("removed", []).append([edge_type, target])
    _stored(ctx, plan.scope, notes)  # the caller may change these nodes
    for source, details in notes.items():
        plan.updates.append(_Update(node_memory_id(plan.scope, source), {}, "kg_link",
                                    details={"edges": details}))


def plan_archived(ctx: EngineContext, plan: WritePlan, nodes: Iterable[GraphNode],
                  archived: bool, *, operation: str, used_at: datetime | None = None) -> None:
    """Plan archiving (or bringing back) nodes: a change of ``metadata.kg.archived`` that
    history records; ``used_at`` also counts a use (kg_recall)."""
    nodes = list(nodes)
    stored = _stored(ctx, plan.scope, [n.id for n in nodes])
    for node in nodes:
        memory = stored.get(node.id)
        if memory is None:
            continue
        kg = dict(memory.metadata.get(KG_KEY) or {})
        changes: dict[str, Any] = {}
        if bool(kg.get("archived")) != archived:
            changes["metadata"] = {**memory.metadata, KG_KEY: {**kg, "archived": archived}}
        if used_at is not None:
            changes["access_count"] = memory.state.access_count + 1
            changes["last_accessed"] = used_at
        if changes:
            plan.updates.append(_Update(memory.id, changes, operation))
            plan.archived.append(node.id)


def apply(ctx: EngineContext, plan: WritePlan) -> None:
    """Store the plan in one transaction: all of it or nothing."""
    if plan.empty:
        return
    store = ctx.store
    with store.transaction():
        if plan.inserts:
            store.insert(plan.inserts, plan.vectors, ctx.actor)
        if plan.edges:
            store.upsert_edges(plan.edges)
        for source, target, edge_type in plan.expire:
            store.expire_edge(source, target, edge_type, ctx.clock())
        for update in plan.updates:
            store.update(update.memory_id, update.changes, ctx.actor, vector=update.vector,
                         operation=update.operation, details=update.details)
