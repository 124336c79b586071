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
