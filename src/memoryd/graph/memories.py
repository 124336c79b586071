"""Graph nodes as memories: the knowledge graphs live in the memory store, one contract for
both backends, and memoryd's hybrid search finds their nodes.

A node ``slug`` of graph ``scope`` (``user`` or ``project:<name>``) is the memory

- id ``uuid5(NAMESPACE, scope + "\\x1f" + slug)``: the same node always has the same id;
- content ``name`` + newline + ``body`` (what keyword and vector search see), summary ``name``;
- node_type = the node's kind, tags, scope, created_at / updated_at, valid_from / valid_until;
- ``metadata.kg = {slug, kind, touches, archived}``.

Its use count and last use are the memory's ``access_count`` and ``last_accessed``. An edge
is a memory edge of one of the graph edge types between two nodes of the same graph.

    >>> fields = node_fields(node, "project:shop")       # a NewMemory's fields
    >>> memory_to_node(memory).id                          # back to the graph node
    'wal-busy'
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from memoryd.models.kg import (
    _ID_RE,
    GRAPH_EDGE_TYPES,
    MAX_BODY_CHARS,
    MAX_NAME_CHARS,
    MAX_TAGS,
    MAX_TOUCHES,
    NODE_KINDS,
    Graph,
    GraphEdge,
    GraphNode,
    check_touch_path,
)
from memoryd.models import Edge, Memory

NAMESPACE = uuid.UUID("8f7d2c1e-4b6a-4f0e-9c3d-2a1b5e6f7d80")
KG_KEY = "kg"


def node_memory_id(scope: str, slug: str) -> str:
    """The id of the memory that holds node ``slug`` of graph ``scope``."""
    return str(uuid.uuid5(NAMESPACE, f"{scope}\x1f{slug}"))


def node_content(node: GraphNode) -> str:
    """What the memory's content holds: the name, then the body on the next line."""
    return f"{node.name}\n{node.body}" if node.body else node.name


def kg_metadata(node: GraphNode) -> dict[str, Any]:
    """``metadata.kg`` of the node's memory."""
    return {"slug": node.id, "kind": node.type, "touches": list(node.touches),
            "archived": node.archived}


def node_fields(node: GraphNode, scope: str, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fields of a new memory for ``node`` (``metadata`` keeps other keys a memory had)."""
    return {
        "id": node_memory_id(scope, node.id),
        "content": node_content(node),
        "summary": node.name,
        "node_type": node.type,
        "tags": list(node.tags),
        "scope": scope,
        "created_at": node.created,
        "valid_from": node.valid_from,
        "valid_until": node.valid_until,
        "metadata": {**dict(metadata or {}), KG_KEY: kg_metadata(node)},
    }


def node_changes(memory: Memory, node: GraphNode) -> dict[str, Any]:
    """The memory fields that differ between ``memory`` and what ``node`` says it holds."""
    wanted = node_fields(node, memory.scope, memory.metadata)
    changes = {
        name: value
        for name, value in wanted.items()
        if name not in ("id", "scope", "created_at") and getattr(memory, name) != value
    }
    return changes


def is_node(memory: Memory) -> bool:
    """Whether the memory is a knowledge-graph node (it has ``metadata.kg.slug``)."""
    kg = memory.metadata.get(KG_KEY)
    return isinstance(kg, dict) and isinstance(kg.get("slug"), str)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@functools.lru_cache(maxsize=65536)
def _touch(path: str) -> str | None:
    """A stored touches entry checked once per distinct path (None: not a project path)."""
    try:
        return check_touch_path(path)
    except ValueError:
        return None


def _touches(raw: Any) -> list[str]:
    out: list[str] = []
    for path in raw if isinstance(raw, list) else []:
        clean = _touch(str(path))
        if clean is not None and clean not in out:  # changed outside the graph tools
            out.append(clean)
    return out[:MAX_TOUCHES]


def _node_data(memory: Memory, kg: dict[str, Any]) -> dict[str, Any]:
    name = (memory.summary or memory.content.split("\n", 1)[0]).strip()
    body = memory.content.removeprefix(name)
    valid_from = memory.valid_from
    if valid_from and memory.valid_until and memory.valid_until <= valid_from:
        valid_from = None
    return {
        "id": kg["slug"],
        "name": _clip(" ".join((name or kg["slug"]).split()), MAX_NAME_CHARS),
        "type": kg.get("kind") or memory.node_type,
        "body": _clip(body.strip(), MAX_BODY_CHARS),
        "touches": _touches(kg.get("touches")),
        "tags": memory.tags[:MAX_TAGS],
        "created": memory.created_at,
        "updated": memory.updated_at if memory.updated_at > memory.created_at else None,
        "last_used": memory.state.last_accessed,
        "use_count": memory.state.access_count,
        "valid_from": valid_from,
        "valid_until": memory.valid_until,
        "archived": bool(kg.get("archived", False)),
    }


def memory_to_node(memory: Memory) -> GraphNode | None:
    """The graph node a memory holds, or None when it holds none (or a broken one).

    Memories changed through the plain memory tools stay readable: text over the node
    limits is clipped, touches that are not project paths are dropped. The fields are
    checked here, cheaply, and the node built without a second validation (a store holds
    thousands of nodes; reading them is the cold path of kg_read).
    """
    kg = memory.metadata.get(KG_KEY)
    if not isinstance(kg, dict) or not isinstance(kg.get("slug"), str):
        return None
    data = _node_data(memory, kg)
    if not (_ID_RE.match(data["id"]) and data["type"] in NODE_KINDS and data["name"]):
        return None
    return GraphNode.model_construct(**data)


def memory_edge(edge: GraphEdge, scope: str, now: datetime) -> Edge:
    """The memory edge that holds a graph edge of graph ``scope``."""
    return Edge(
        source_id=node_memory_id(scope, edge.source),
        target_id=node_memory_id(scope, edge.target),
        edge_type=edge.type,
        weight=edge.weight,
        created_at=edge.created or now,
        valid_until=edge.valid_until,
    )


def graph_edges(edges: Iterable[Edge], slugs: Mapping[str, str], when: datetime) -> list[GraphEdge]:
    """The graph edges among memory ``edges``: graph types, both ends in ``slugs`` (memory id
    -> slug), existing and not expired at ``when``; one per (source, type, target)."""
    out: dict[tuple[str, str, str], GraphEdge] = {}
    for edge in edges:
        source, target = slugs.get(edge.source_id), slugs.get(edge.target_id)
        if source is None or target is None or edge.edge_type not in GRAPH_EDGE_TYPES:
            continue
        if edge.created_at > when or (edge.valid_until is not None and edge.valid_until <= when):
            continue
        if source != target:  # checked ends and type (a store edge is already validated)
            out[(source, edge.edge_type, target)] = GraphEdge.model_construct(
                source=source, target=target, type=edge.edge_type, weight=edge.weight,
                created=edge.created_at, valid_until=None)
    return list(out.values())


def build_graph(scope: str, memories: Iterable[Memory], edges: Iterable[Edge],
                when: datetime) -> tuple[Graph, dict[str, str]]:
    """The graph of ``scope`` from its node memories and their edges (as of ``when``), and
    the memory id -> slug map of its nodes."""
    nodes: dict[str, GraphNode] = {}
    slugs: dict[str, str] = {}
    for memory in memories:
        node = memory_to_node(memory)
        if node is not None and memory.scope == scope and node.id not in nodes:
            nodes[node.id] = node
            slugs[memory.id] = node.id
    graph = Graph(scope=scope, nodes=list(nodes.values()), edges=graph_edges(edges, slugs, when))
    return graph, slugs
