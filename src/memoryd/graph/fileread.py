"""Reading a graph file the way people edit it: node by node, every problem located.

:func:`read_graph_text` parses the text of a ``graph.json``:

- text that is not JSON, not a memoryd graph, of another version or of another graph is
  refused whole (:class:`GraphFileError`, with path, line and column);
- inside, each node and edge is checked on its own. A bad one is *held*: reported with its
  path, line and column and left out of the graph, while every other node and edge is read
  (a caller that rewrites the file writes held items back verbatim, so nothing a person
  typed is lost). An edge that joins a held node is held with it, silently;
- what a person does not write is filled in: a node without ``created`` was created at
  ``now`` (the moment of the merge). Without ``now`` a missing ``created`` is a problem.

:func:`loads_graph` (in :mod:`memoryd.graph.jsonfile`) is the strict reading: the first
problem is raised.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from memoryd.errors import InvalidInput
from memoryd.graph.locate import Locator
from memoryd.models.kg import Graph, GraphEdge, GraphNode

FORMAT = "memoryd-knowledge-graph"
VERSION = 1
_TOP_KEYS = ("format", "version", "scope", "nodes", "edges")


class GraphFileError(InvalidInput):
    """A graph file (or a part of one) that cannot be read: not JSON, not a memoryd graph, or
    invalid data. ``line`` and ``column`` (1-based) point at the problem when it is known."""

    def __init__(
        self, path: str, message: str, line: int | None = None, column: int | None = None
    ) -> None:
        where = (
            f":{line}:{column}"
            if line is not None and column is not None
            else (f":{line}" if line is not None else "")
        )
        super().__init__(f"{path}{where}: {message}")
        self.path, self.line, self.column = path, line, column


@dataclass
class ReadGraph:
    """A graph file as read: its valid graph, the problems found, and the held items."""

    graph: Graph
    problems: list[GraphFileError] = field(default_factory=list)
    held_nodes: list[Any] = field(default_factory=list)  # as they stand in the file
    held_edges: list[Any] = field(default_factory=list)
    held_ids: set[str] = field(default_factory=set)  # the ids of held nodes that have one
    filled: set[str] = field(default_factory=set)  # nodes whose ``created`` was filled in
    at_held: list[GraphEdge] = field(default_factory=list)  # valid edges joining a held node

    def merge_input(self, store: Graph) -> Graph:
        """The file's graph to merge with ``store``: a held node the store has stands there as
        the store holds it, with its edges (so the merge neither archives it nor drops its
        edges), and a node the store has keeps the store's ``created`` if the file had none."""
        stored = store.node_map()
        nodes = [n.model_copy(update={"created": stored[n.id].created})
                 if n.id in self.filled and n.id in stored else n for n in self.graph.nodes]
        nodes += [stored[i] for i in sorted(self.held_ids) if i in stored]
        ids = {n.id for n in nodes}
        edges = {e.key: e for e in self.graph.edges}
        for edge in self.at_held:  # the file's version of an edge at a held node
            if edge.source in ids and edge.target in ids:
                edges.setdefault(edge.key, edge)
        for edge in store.edges:  # and the store's edges at held nodes stand
            if self.held_ids & {edge.source, edge.target} and edge.source in ids \
                    and edge.target in ids:
                edges.setdefault(edge.key, edge)
        return Graph(scope=self.graph.scope, nodes=nodes, edges=list(edges.values()))


def read_graph_text(text: str, *, source: str = "<graph>", scope: str | None = None,
                    now: datetime | None = None) -> ReadGraph:
    """Read file text node by node (see the module); GraphFileError for a file that cannot
    be read at all."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphFileError(source, f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise GraphFileError(source, f'not a memoryd graph file (no "format": "{FORMAT}")', 1, 1)
    where = Locator(text)
    _check_head(data, where, source, scope)
    read = ReadGraph(Graph(scope=data.get("scope", "user")))
    nodes = _valid_nodes(data.get("nodes") or [], where, source, now, read)
    edges = _valid_edges(data.get("edges") or [], where, source, {n.id for n in nodes}, read)
    try:
        read.graph = Graph(scope=read.graph.scope, nodes=nodes, edges=edges)
    except ValidationError as exc:  # pragma: no cover - every item was checked on its own
        raise GraphFileError(source, _message(exc.errors()[0]), 1, 1) from exc
    return read


def _check_head(data: dict[str, Any], where: Locator, source: str, scope: str | None) -> None:
    """The parts whose problem makes the whole file unreadable."""
    def fail(key: str, message: str) -> GraphFileError:
        return GraphFileError(source, message, *where.position(where.value_of(key)))

    if data.get("version") != VERSION:
        raise fail("version", f"graph file version {data.get('version')!r} is not supported "
                              f"(expected {VERSION})")
    for key in data:
        if key not in _TOP_KEYS:
            raise fail(key, f"unknown field {key[:40]!r} (a graph file has "
                            f"{', '.join(_TOP_KEYS)})")
    if scope is not None and data.get("scope") != scope:
        raise fail("scope", f"the file holds graph {data.get('scope')!r}, not {scope!r}")
    try:
        Graph(scope=data.get("scope", "user"))
    except ValidationError as exc:
        raise fail("scope", f"scope: {_message(exc.errors()[0])}") from None
    for key in ("nodes", "edges"):
        if not isinstance(data.get(key) or [], list):
            raise fail(key, f"{key} must be a list")


def _valid_nodes(raw: list[Any], where: Locator, source: str, now: datetime | None,
                 read: ReadGraph) -> list[GraphNode]:
    spans = where.items("nodes")
    nodes: dict[str, GraphNode] = {}
    for i, item in enumerate(raw):
        start = spans[i] if i < len(spans) else None
        name = f"node {item['id']!r}" if isinstance(item, dict) and isinstance(
            item.get("id"), str) else f"node {i + 1}"
        data = dict(item) if isinstance(item, dict) else item
        if isinstance(data, dict) and "created" not in data and now is not None:
            data["created"] = now
        problem = None
        try:
            node = GraphNode.model_validate(data)
        except ValidationError as exc:
            problem = _located(exc.errors()[0], name, where, start, source)
        else:
            if node.id not in nodes:
                nodes[node.id] = node
                if isinstance(item, dict) and "created" not in item:
                    read.filled.add(node.id)
                continue
            problem = _at(source, where, start, f"{name}: a node with this id comes earlier")
        read.problems.append(problem)
        read.held_nodes.append(item)
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            read.held_ids.add(item["id"])
    return list(nodes.values())


def _valid_edges(raw: list[Any], where: Locator, source: str, ids: set[str],
                 read: ReadGraph) -> list[GraphEdge]:
    spans = where.items("edges")
    edges: dict[tuple[str, str, str], GraphEdge] = {}
    for i, item in enumerate(raw):
        start = spans[i] if i < len(spans) else None
        ends = (item.get("source"), item.get("target")) if isinstance(item, dict) else ()
        name = f"edge {i + 1} ({ends[0]} -> {ends[1]})" if ends else f"edge {i + 1}"
        try:
            edge = GraphEdge.model_validate(item)
        except ValidationError as exc:
            read.problems.append(_located(exc.errors()[0], name, where, start, source))
            read.held_edges.append(item)
            continue
        missing = [end for end in (edge.source, edge.target) if end not in ids]
        if not missing and edge.key not in edges:
            edges[edge.key] = edge
            continue
        read.held_edges.append(item)
        if missing and all(end in read.held_ids for end in missing):
            read.at_held.append(edge)
        if any(end not in read.held_ids for end in missing):
            unknown = next(end for end in missing if end not in read.held_ids)
            read.problems.append(_at(source, where, start, f"{name}: no node {unknown!r}"))
        elif not missing:
            read.problems.append(_at(source, where, start, f"{name}: the same edge comes earlier"))
    return list(edges.values())


def _located(error: Any, name: str, where: Locator, start: int | None,
             source: str) -> GraphFileError:
    """A validation error of one item, at the field it is about (or the item's start)."""
    steps = list(error["loc"])
    if error["type"] == "missing":
        steps = steps[:-1]  # the object that lacks the field
    offset = where.path(start, steps) if start is not None else None
    label = name + ("." + ".".join(str(p) for p in error["loc"]) if error["loc"] else "")
    return _at(source, where, offset, f"{label}: {_message(error)}")


def _at(source: str, where: Locator, offset: int | None, message: str) -> GraphFileError:
    line, column = where.position(offset) if offset is not None else (None, None)
    return GraphFileError(source, message, line, column)


def _message(error: Any) -> str:
    return re.sub(r"^Value error, ", "", error["msg"])
