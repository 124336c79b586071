"""Knowledge-graph data: compact nodes, typed directed edges, and one graph per scope.

A node is one piece of compressed knowledge (an insight, a decision, a convention, ...)
small enough to sit in a model's context every session. Ids are short slugs, unique
within a graph, because every id is paid for in tokens each time the core is loaded::

    >>> n = GraphNode(id="wal-busy", name="SQLite busy timeout", type="gotcha",
    ...               body="Set busy_timeout before WAL writes.", touches=["src/db.py"],
    ...               created=datetime(2026, 3, 1, tzinfo=timezone.utc))
    >>> Graph(scope="project:demo", nodes=[n]).node("wal-busy").type
    'gotcha'
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Literal, NamedTuple, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from memoryd.models.fields import as_utc, check_scope, clean_tags

NodeKind = Literal[
    "insight",
    "decision",
    "convention",
    "pattern",
    "gotcha",
    "preference",
    "fact",
    "person",
    "component",
    "command",
]
NODE_KINDS: tuple[str, ...] = get_args(NodeKind)

GraphEdgeType = Literal[
    "relates_to",
    "depends_on",
    "part_of",
    "supersedes",
    "contradicts",
    "caused_by",
    "implements",
    "uses",
    "derived_from",
]
GRAPH_EDGE_TYPES: tuple[str, ...] = get_args(GraphEdgeType)

MAX_NAME_CHARS = 120
MAX_BODY_CHARS = 800
MAX_TOUCHES = 32
MAX_PATH_CHARS = 256
MAX_TAGS = 16
NODE_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
NODE_ID_RULE = ("a node id must be 1-64 characters of a-z, 0-9, '.', '_', '-' starting with a "
                "letter or digit")
_ID_RE = re.compile(NODE_ID_PATTERN[:-1] + r"\Z")
_SLUG_JUNK = re.compile(r"[^a-z0-9]+")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def check_node_id(value: str) -> str:
    """Return ``value`` if it is a valid node id (lower-case slug, 1-64 chars), else raise."""
    if not _ID_RE.match(value):
        raise ValueError(NODE_ID_RULE)
    return value


def slugify(name: str, max_len: int = 40) -> str:
    """A node id candidate from a name: ``'SQLite busy timeout'`` -> ``'sqlite-busy-timeout'``."""
    slug = _SLUG_JUNK.sub("-", name.lower()).strip("-")[:max_len].strip("-")
    return slug or "node"


def base_node_id(name: str, namespace: str | None = None) -> str:
    """The id a new node named ``name`` gets when it is free: its slug, or for a writer with a
    ``namespace`` (an agent) ``<slug>.<namespace slug>``, so that the ids of one agent's nodes
    never meet another's (a slug never contains a dot)."""
    slug = slugify(name)
    return slug if namespace is None else f"{slug}.{slugify(namespace, 23)}"


def make_node_id(name: str, taken: set[str], namespace: str | None = None) -> str:
    """A short, readable id for ``name`` that is not in ``taken`` (adds a hash suffix if needed);
    see :func:`base_node_id` for ``namespace``."""
    base = base_node_id(name, namespace)
    if base not in taken:
        return base
    digest = hashlib.sha256(name.encode()).hexdigest()
    for width in range(4, len(digest)):
        candidate = f"{base}-{digest[:width]}"
        if candidate not in taken:
            return candidate
    raise ValueError(f"cannot find a free id for {name!r}")  # pragma: no cover - 2^256 ids


def check_touch_path(path: str) -> str:
    """Normalise a ``touches`` entry: a relative POSIX path inside the project, or raise.

    Rejected: empty, absolute (``/x``, ``C:\\x``), ``..`` escaping the project, control
    characters, longer than 256 characters. Backslashes become slashes; ``./a`` becomes ``a``.
    A glob (``src/**/*.py``) is allowed: it names files, like a path.
    """
    raw = path.strip()
    if not raw:
        raise ValueError("a touches path must not be empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise ValueError("a touches path must not contain control characters")
    if len(raw) > MAX_PATH_CHARS:
        raise ValueError(f"a touches path must be at most {MAX_PATH_CHARS} characters")
    norm = raw.replace("\\", "/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:/", norm) or norm.startswith("~"):
        raise ValueError("a touches path must be relative to the project root")
    parts = [p for p in PurePosixPath(norm).parts if p != "."]
    if ".." in parts:
        raise ValueError("a touches path must not leave the project ('..')")
    if not parts:
        raise ValueError("a touches path must name a file")
    return "/".join(parts)


def _utc(value: datetime | None) -> datetime | None:
    return as_utc(value) if value is not None else None


class GraphNode(BaseModel):
    """One compact knowledge item of a user or project graph."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: str
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    type: NodeKind = "insight"
    body: str = Field(default="", max_length=MAX_BODY_CHARS)
    touches: list[str] = Field(default_factory=list, max_length=MAX_TOUCHES)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    created: datetime
    updated: datetime | None = None
    last_used: datetime | None = None
    use_count: int = Field(default=0, ge=0)
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    archived: bool = False

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_node_id(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("name must not be blank")
        return value

    @field_validator("body")
    @classmethod
    def _body(cls, value: str) -> str:
        return value.strip()

    @field_validator("touches")
    @classmethod
    def _touches(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for path in value:
            clean = check_touch_path(path)
            if clean not in out:
                out.append(clean)
        return out

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        return clean_tags(value)

    @field_validator("created", "updated", "last_used", "valid_from", "valid_until")
    @classmethod
    def _times(cls, value: datetime | None) -> datetime | None:
        return _utc(value)

    @model_validator(mode="after")
    def _order(self) -> GraphNode:
        if self.valid_from and self.valid_until and self.valid_until <= self.valid_from:
            raise ValueError("valid_until must be after valid_from")
        if self.updated is not None and self.updated < self.created:
            raise ValueError("updated must not be before created")
        return self

    @property
    def changed(self) -> datetime:
        """When the node's content last changed (``updated``, else ``created``)."""
        return self.updated or self.created

    @property
    def last_touched(self) -> datetime:
        """The latest of created, updated and last used: what recency is measured from."""
        return max(t for t in (self.created, self.updated, self.last_used) if t is not None)

    def valid_at(self, when: datetime) -> bool:
        """Whether the node was recorded and believed at ``when``:
        created <= when, valid_from <= when < valid_until."""
        when = as_utc(when)
        start = self.valid_from or self.created
        return (
            self.created <= when
            and start <= when
            and (self.valid_until is None or when < self.valid_until)
        )


class GraphEdge(BaseModel):
    """A typed, directed, weighted link between two nodes of one graph."""

    model_config = ConfigDict(extra="forbid")

    source: str
    target: str
    type: GraphEdgeType = "relates_to"
    weight: float = Field(default=0.5, ge=0.0, le=1.0)
    created: datetime | None = None
    valid_until: datetime | None = None

    @field_validator("source", "target")
    @classmethod
    def _ends(cls, value: str) -> str:
        return check_node_id(value)

    @field_validator("created", "valid_until")
    @classmethod
    def _times(cls, value: datetime | None) -> datetime | None:
        return _utc(value)

    @model_validator(mode="after")
    def _not_self(self) -> GraphEdge:
        if self.source == self.target:
            raise ValueError(f"an edge cannot link node {self.source!r} to itself")
        return self

    @property
    def key(self) -> tuple[str, str, str]:
        """(source, type, target): an edge's identity; at most one edge per key."""
        return (self.source, self.type, self.target)


class EdgeIndex(NamedTuple):
    """A graph's edges by source node id and by target node id."""

    outgoing: dict[str, list[GraphEdge]]
    incoming: dict[str, list[GraphEdge]]


class Graph(BaseModel):
    """The nodes and edges of one scope: ``user`` or ``project:<name>``.

    Node ids are unique; every edge joins two nodes of this graph; at most one edge per
    (source, type, target). Nodes are kept sorted by id and edges by (source, type,
    target), so two graphs with the same content compare equal.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: str = "user"
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)
    # Edge index, built on first use; keyed by the identity of the edges list, so a copy
    # with other edges (model_copy(update=...)) never reuses a stale one.
    _index: tuple[int, int, EdgeIndex] | None = PrivateAttr(default=None)
    _nodes_by_id: tuple[int, int, dict[str, GraphNode]] | None = PrivateAttr(default=None)

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str) -> str:
        return check_scope(value)

    @model_validator(mode="after")
    def _consistent(self) -> Graph:
        ids: set[str] = set()
        for node in self.nodes:
            if node.id in ids:
                raise ValueError(f"duplicate node id {node.id!r}")
            ids.add(node.id)
        keys: set[tuple[str, str, str]] = set()
        for edge in self.edges:
            for end in (edge.source, edge.target):
                if end not in ids:
                    raise ValueError(
                        f"edge {edge.source} -{edge.type}-> {edge.target} "
                        f"names unknown node {end!r}"
                    )
            if edge.key in keys:
                raise ValueError(f"duplicate edge {edge.source} -{edge.type}-> {edge.target}")
            keys.add(edge.key)
        if any(a.id > b.id for a, b in zip(self.nodes, self.nodes[1:], strict=False)):
            self.nodes.sort(key=lambda n: n.id)
        if any(a.key > b.key for a, b in zip(self.edges, self.edges[1:], strict=False)):
            self.edges.sort(key=lambda e: e.key)
        return self

    def node(self, node_id: str) -> GraphNode:
        """The node with ``node_id``; ``KeyError`` naming it if there is none."""
        try:
            return self.node_map()[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id!r} in graph {self.scope}") from None

    def node_map(self) -> dict[str, GraphNode]:
        """Nodes by id, built once per nodes list. Treat it as read-only."""
        key = (id(self.nodes), len(self.nodes))
        if self._nodes_by_id is None or self._nodes_by_id[:2] != key:
            self._nodes_by_id = (*key, {n.id: n for n in self.nodes})
        return self._nodes_by_id[2]

    def edge_index(self) -> EdgeIndex:
        """Edges by source and by target, built once per edges list. Treat it as read-only."""
        key = (id(self.edges), len(self.edges))
        if self._index is None or self._index[:2] != key:
            outgoing: dict[str, list[GraphEdge]] = {}
            incoming: dict[str, list[GraphEdge]] = {}
            for edge in self.edges:
                outgoing.setdefault(edge.source, []).append(edge)
                incoming.setdefault(edge.target, []).append(edge)
            self._index = (*key, EdgeIndex(outgoing, incoming))
        return self._index[2]

    def degree(self, node_id: str) -> int:
        """Number of edges (in or out) at ``node_id``."""
        out, inc = self.edge_index()
        return len(out.get(node_id, ())) + len(inc.get(node_id, ()))

    def degrees(self) -> dict[str, int]:
        """Number of edges (in or out) at each node; nodes without edges have 0."""
        out, inc = self.edge_index()
        return {n.id: len(out.get(n.id, ())) + len(inc.get(n.id, ())) for n in self.nodes}

    def as_of(self, when: datetime) -> Graph:
        """The graph as believed at ``when``: nodes valid then, edges between them that existed."""
        when = as_utc(when)
        nodes = [n for n in self.nodes if n.valid_at(when)]
        ids = {n.id for n in nodes}
        edges = [
            e
            for e in self.edges
            if e.source in ids
            and e.target in ids
            and (e.created is None or e.created <= when)
            and (e.valid_until is None or when < e.valid_until)
        ]
        return Graph(scope=self.scope, nodes=nodes, edges=edges)
