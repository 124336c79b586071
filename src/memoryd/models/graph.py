"""Links between memories: typed, weighted edges, and the neighbourhood of one memory."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from memoryd.models.memory import Memory

EdgeType = Literal[
    "related",
    "derived_from",
    "supersedes",
    "caused_by",
    "part_of",
    "mentions",
    "follows",
    "similar",
    "merged_into",
    # Edge types of the knowledge graphs (memoryd.graph); part_of, supersedes, caused_by
    # and derived_from above serve both.
    "relates_to",
    "depends_on",
    "contradicts",
    "implements",
    "uses",
]
EDGE_TYPES: tuple[str, ...] = get_args(EdgeType)


class Edge(BaseModel):
    """A typed, weighted link between two memories."""

    source_id: str
    target_id: str
    edge_type: EdgeType = "related"
    weight: float = Field(default=0.5, ge=0.0, le=1.0)
    created_at: datetime
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Neighbour(BaseModel):
    """A memory reached from the centre of an exploration."""

    memory: Memory
    depth: int
    via: str
    edge_type: str
    weight: float


class Neighbourhood(BaseModel):
    """The graph around one memory."""

    center: Memory
    neighbours: list[Neighbour]
    edges: list[Edge]


class GraphFileState(BaseModel):
    """What the store remembers of one mirrored graph file (``graph.json``, ``user.json``).

    ``base`` holds the node and edge fingerprints both sides agreed on at the last sync
    (``memoryd.graph.merge.SyncBase.to_json``): the common ancestor of the next three-way
    merge. ``signature`` identifies the file as memoryd last wrote or read it (size,
    modification time, inode), so a read notices a hand edit without parsing the file;
    ``seq`` is the newest change of the graph the file reflects.
    """

    path: str
    scope: str
    base: dict[str, Any] = Field(default_factory=dict)
    signature: str | None = None
    seq: int = 0
    updated_at: datetime
