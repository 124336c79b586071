"""Read models for people looking at a memory as a whole: the change feed, the timeline,
the overview of a store, a memory's retention curve and the graphs drawn on screen.

These are what the web dashboard shows, but nothing here is specific to a page: each is the
output of an ordinary operation (REST route, and for some an MCP tool), computed for the
caller's view of the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from memoryd.models.kg import GraphNode
from memoryd.models.derive import view
from memoryd.models.knowledge import ScopedNode
from memoryd.models.memory import Memory

SNIPPET_CHARS = 300


class MemoryBrief(view(Memory, [
        "id", "snippet", "node_type", "scope", "agent_id", "domains", "tags", "importance", "tier",
        "created_at", "updated_at", "superseded", "graph_node"], name="MemoryBriefFields",
        own=("snippet", "tier", "superseded", "graph_node"),
        required=("node_type", "scope", "importance"))):
    """A memory in a line: enough to list it, colour it and open it."""

    snippet: str = Field(description=f"The summary, else the first {SNIPPET_CHARS} characters "
                         "of the content.")
    tier: str
    superseded: bool = Field(False, description="Replaced by a newer memory, or expired.")
    graph_node: bool = Field(False, description="A knowledge-graph node.")

    @classmethod
    def of(cls, memory: Memory, now: datetime | None = None) -> MemoryBrief:
        text = memory.summary or memory.content
        snippet = text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
        expired = memory.valid_until is not None and (now is None or memory.valid_until <= now)
        return cls.shown(memory, snippet=snippet, tier=memory.tier,
                         superseded=memory.superseded_by is not None or expired,
                         graph_node="kg" in memory.metadata)


# --- the change feed ---------------------------------------------------------------------
class ChangeItem(BaseModel):
    """One recorded change to a memory the caller may see."""

    seq: int
    at: datetime
    operation: str
    memory_id: str
    actor: str | None = None
    agent_id: str | None = None
    memory: MemoryBrief | None = Field(None, description="The memory as it is now (None when "
                                       "it no longer exists).")
    removed: bool = Field(False, description="This change deleted or purged the memory.")


class ChangeFeed(BaseModel):
    """Changes after ``since``, oldest first; pass ``next`` as ``since`` to continue."""

    since: int
    next: int
    head: int = Field(description="The store's newest change sequence number.")
    more: bool
    changes: list[ChangeItem]


# --- the timeline ------------------------------------------------------------------------
TimelineKind = Literal["learned", "corrected", "strengthened", "weakened", "forgotten", "graph",
                       "other"]


class TimelineDay(BaseModel):
    """What happened on one day (local time), counted by kind."""

    day: str
    learned: int = 0
    corrected: int = 0
    strengthened: int = 0
    weakened: int = 0
    forgotten: int = 0
    graph: int = 0
    other: int = 0


class TimelineEntry(BaseModel):
    """One change of the selected day."""

    seq: int
    at: datetime
    kind: TimelineKind
    operation: str
    memory_id: str
    actor: str | None = None
    snippet: str | None = None
    node_type: str | None = None
    exists: bool = Field(description="Whether the memory still exists (it can be opened).")


class Timeline(BaseModel):
    """Days, newest first, and the changes of ``day`` (newest first, at most ``limit``)."""

    tz: str
    days: list[TimelineDay]
    day: str | None = None
    entries: list[TimelineEntry] = Field(default_factory=list)
    truncated: bool = Field(False, description="More changes than were read.")


# --- the overview ------------------------------------------------------------------------
class LatencySummary(BaseModel):
    """Durations of one operation served by this process since it started, in ms."""

    operation: str
    count: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


class DayCount(BaseModel):
    day: str
    count: int


class Overview(BaseModel):
    """The caller's memories counted by type, tier, state and scope, their retention
    distribution and growth, this process's operation latencies and recent consolidations."""

    memories: int
    sampled: int = Field(description="How many memories the distributions were computed over.")
    by_node_type: dict[str, int]
    by_tier: dict[str, int]
    by_state: dict[str, int]
    by_scope: dict[str, int]
    graph_nodes: int
    superseded: int
    retention_histogram: list[int] = Field(description="Memories per tenth of retention "
                                           "(0-0.1, ..., 0.9-1).")
    growth: list[DayCount] = Field(description="Memories created per day (UTC), last 30 days.")
    latencies: list[LatencySummary]
    consolidations: list[dict] = Field(default_factory=list,
                                       description="The newest consolidation reports.")
    head_seq: int


# --- a memory's retention curve ------------------------------------------------------------
class RetentionPoint(BaseModel):
    at: datetime
    retention: float = Field(description="FSRS retrievability on the curve since the last "
                             "review.")
    score: float = Field(description="The retention score ranking uses (curve, retrieval and "
                         "storage strength).")


class ReviewMark(BaseModel):
    at: datetime
    operation: str


class RetentionCurve(BaseModel):
    """The forgetting curve of one memory from its last review to ``days_ahead`` days from
    now, and the recorded moments that strengthened or weakened it."""

    id: str
    now: datetime
    stability_days: float
    last_review: datetime | None
    points: list[RetentionPoint]
    reviews: list[ReviewMark]


# --- graphs to draw ----------------------------------------------------------------------
class ViewNode(view(Memory, [
        "id", "label", "node_type", "scope", "agent_id", "domains", "importance", "retention",
        "tier", "superseded", "graph_node", "created_at"], name="ViewNodeFields",
        own=("label", "retention", "tier", "superseded", "graph_node"),
        required=("node_type", "scope", "importance"))):
    """A memory as a graph node."""

    label: str
    retention: float
    tier: str
    superseded: bool = False
    graph_node: bool = False


class ViewEdge(BaseModel):
    source: str
    target: str
    type: str
    weight: float


class MemoryGraph(BaseModel):
    """Memories matching the filters (newest first, at most ``limit``) and the edges
    between them valid at ``at``."""

    at: datetime
    total: int = Field(description="How many memories match the filters.")
    nodes: list[ViewNode]
    edges: list[ViewEdge]


class KgViewNode(GraphNode):
    """A knowledge-graph node with its memory, its archival score and its retention."""

    memory_id: str
    score: float = Field(description="Archival score (0-1): what keeps it in the core.")


class KgView(BaseModel):
    """One knowledge graph as it stands at ``at`` (now, or an ``as_of`` moment)."""

    scope: str
    at: datetime
    as_of: datetime | None = None
    nodes: list[KgViewNode]
    edges: list[ViewEdge]
    first: datetime | None = Field(None, description="When its oldest node was created.")
    file: str | None = Field(None, description="The file that mirrors it, if any.")
    problems: list[str] = Field(default_factory=list)


class KgGraphInfo(BaseModel):
    scope: str
    nodes: int
    root: str | None = Field(None, description="The project's root directory, when memoryd "
                             "has mirrored its file there.")


class KgGraphList(BaseModel):
    """The knowledge graphs the caller can see."""

    graphs: list[KgGraphInfo]


class NodeArchived(BaseModel):
    """A node archived by hand."""

    node: ScopedNode
    was_archived: bool = Field(description="It was archived already (nothing changed).")


class CallerView(BaseModel):
    """Who the key presented is: what it may do and what it is bound to."""

    name: str
    key_id: str | None = None
    key_label: str | None = None
    scopes: list[str]
    memory_scope: str | None = None
    agent_id: str | None = Field(None, description="The agent it is bound to.")
    domains: list[str] | None = None
    bound: bool
