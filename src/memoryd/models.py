"""Pydantic models shared by the engine, the stores and every face (CLI, REST, MCP)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NODE_TYPES: tuple[str, ...] = (
    "fact",
    "preference",
    "decision",
    "pattern",
    "event",
    "observation",
    "note",
    "concept",
    "person",
    "code",
    "message",
    "summary",
    "insight",
    "error",
    "task",
    "intention",
)
NodeType = Literal[
    "fact",
    "preference",
    "decision",
    "pattern",
    "event",
    "observation",
    "note",
    "concept",
    "person",
    "code",
    "message",
    "summary",
    "insight",
    "error",
    "task",
    "intention",
]
Tier = Literal["hot", "warm", "cold"]
Severity = Literal["low", "medium", "high", "critical"]
TIMEFRAMES: dict[str, timedelta | None] = {
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
    "all": None,
}
_SCOPE_RE = re.compile(r"^(user|project:[A-Za-z0-9_.\-/]{1,128})$")
_TAG_MAX = 64


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def as_utc(value: datetime) -> datetime:
    """Treat naive datetimes as UTC and convert aware ones to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _check_scope(value: str) -> str:
    if not _SCOPE_RE.match(value):
        raise ValueError("scope must be 'user' or 'project:<name>'")
    return value


def _clean_tags(tags: list[str]) -> list[str]:
    out: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if not tag:
            raise ValueError("tags must be non-empty strings")
        if len(tag) > _TAG_MAX:
            raise ValueError(f"tag longer than {_TAG_MAX} characters: {tag[:20]!r}...")
        if tag not in out:
            out.append(tag)
    return out


class MemoryFields(BaseModel):
    """Fields a caller may set on a memory (shared by create and import)."""

    model_config = ConfigDict(extra="forbid")

    summary: str | None = None
    node_type: NodeType = "fact"
    category: str | None = Field(default=None, max_length=128)
    subcategory: str | None = Field(default=None, max_length=128)
    tags: list[str] = Field(default_factory=list, max_length=64)
    source: str | None = Field(default=None, max_length=1024)
    agent_id: str | None = Field(default=None, max_length=256)
    session_id: str | None = Field(default=None, max_length=256)
    scope: str = "user"
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    severity: Severity | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str) -> str:
        return _check_scope(value)

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        return _clean_tags(value)

    @field_validator("valid_from", "valid_until")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None


class NewMemory(MemoryFields):
    """A memory to create. ``created_at`` may be given (imports of past conversations).

    ``embed_text``, when set, is what the vector side sees instead of ``content``
    (for example the message with its neighbours); it is not stored.
    """

    content: str
    created_at: datetime | None = None
    id: str | None = Field(default=None, description="Keep this id (imports); new UUID if unset.")
    embed_text: str | None = None

    @field_validator("created_at")
    @classmethod
    def _created_utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None


class RestoredMemory(NewMemory):
    """A memory read back from an export: also keeps the fields the store computes
    (used by import so that export → import round-trips)."""

    updated_at: datetime | None = None
    tier: Tier | None = None
    superseded_by: str | None = None
    domains: list[str] | None = None
    domain_scores: dict[str, float] | None = None
    state: SchedulingState | None = None

    @field_validator("updated_at")
    @classmethod
    def _updated_utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None

    def restored_fields(self) -> dict[str, Any]:
        """The computed fields that were present in the export."""
        names = ("updated_at", "tier", "superseded_by", "domains", "domain_scores", "state")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}


class MemoryPatch(BaseModel):
    """Changes to an existing memory; unset fields stay as they are."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    summary: str | None = None
    node_type: NodeType | None = None
    category: str | None = Field(default=None, max_length=128)
    subcategory: str | None = Field(default=None, max_length=128)
    tags: list[str] | None = Field(default=None, max_length=64)
    source: str | None = None
    scope: str | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    severity: Severity | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    tier: Tier | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return _check_scope(value) if value is not None else None

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str] | None) -> list[str] | None:
        return _clean_tags(value) if value is not None else None


class SchedulingState(BaseModel):
    """FSRS-6 scheduling and dual-strength state of one memory."""

    stability: float = 1.0
    difficulty: float = 5.0
    reps: int = 0
    lapses: int = 0
    last_review: datetime | None = None
    storage_strength: float = 1.0
    retrieval_strength: float = 1.0
    access_count: int = 0
    last_accessed: datetime | None = None


class Memory(BaseModel):
    """A stored memory."""

    id: str
    content: str
    summary: str | None = None
    node_type: str = "fact"
    category: str | None = None
    subcategory: str | None = None
    tags: list[str] = Field(default_factory=list)
    source: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    scope: str = "user"
    domains: list[str] = Field(default_factory=list)
    domain_scores: dict[str, float] = Field(default_factory=dict)
    importance: float = 0.5
    severity: str | None = None
    created_at: datetime
    updated_at: datetime
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    tier: Tier = "hot"
    embedding_model: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    state: SchedulingState = Field(default_factory=SchedulingState)
    seq: int = 0


class SearchFilters(BaseModel):
    """Filters shared by search and list. Unknown names or values are rejected."""

    model_config = ConfigDict(extra="forbid")

    timeframe: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    node_types: list[NodeType] | None = None
    categories: list[str] | None = None
    tags: list[str] | None = None
    tags_mode: Literal["any", "all"] = "any"
    scope: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    tiers: list[Tier] | None = None
    include_superseded: bool = False

    @field_validator("timeframe")
    @classmethod
    def _timeframe(cls, value: str | None) -> str | None:
        if value is not None and value not in TIMEFRAMES:
            raise ValueError(f"timeframe must be one of {', '.join(TIMEFRAMES)}")
        return value

    @field_validator("since", "until")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return _check_scope(value) if value is not None else None

    @model_validator(mode="after")
    def _range(self) -> SearchFilters:
        if self.since and self.until and self.since > self.until:
            raise ValueError("since must not be after until")
        return self

    def time_bounds(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """The effective [since, until] window, combining timeframe and explicit bounds."""
        since = self.since
        if self.timeframe and TIMEFRAMES[self.timeframe] is not None:
            window_start = now - TIMEFRAMES[self.timeframe]  # type: ignore[operator]
            since = max(since, window_start) if since else window_start
        return since, self.until


class SearchHit(BaseModel):
    """One search result: the memory, its final score and the parts it came from."""

    memory: Memory
    score: float
    fused_score: float = 0.0
    keyword_rank: int | None = None
    keyword_score: float | None = None
    semantic_rank: int | None = None
    semantic_similarity: float | None = None
    retention: float | None = None
    association: bool = False


class HistoryEntry(BaseModel):
    """One change to a memory: who did what, when."""

    seq: int
    memory_id: str
    operation: str
    actor: str | None = None
    agent_id: str | None = None
    at: datetime
    details: dict[str, Any] = Field(default_factory=dict)


class StoreStats(BaseModel):
    """Counts and facts about a store."""

    url: str
    backend: str
    memories: int
    by_node_type: dict[str, int]
    by_tier: dict[str, int]
    vectors: int
    embedding_model: str | None
    embedding_dims: int | None
    last_seq: int
    schema_version: int
    size_bytes: int | None = None


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


IntentionStatus = Literal["active", "snoozed", "completed", "cancelled", "fired"]
Priority = Literal["low", "normal", "high", "critical"]


class IntentionTrigger(BaseModel):
    """When an intention fires: at a time, after some minutes, in a context, or on an event."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["time", "context", "event"]
    at: datetime | None = None
    in_minutes: float | None = Field(default=None, gt=0)
    codebase: str | None = None
    file_pattern: str | None = None
    topic: str | None = None
    event: str | None = None

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None

    @model_validator(mode="after")
    def _complete(self) -> IntentionTrigger:
        if self.type == "time" and self.at is None and self.in_minutes is None:
            raise ValueError("a time trigger needs 'at' or 'in_minutes'")
        if self.type == "context" and not (self.codebase or self.file_pattern or self.topic):
            raise ValueError("a context trigger needs codebase, file_pattern or topic")
        if self.type == "event" and not self.event:
            raise ValueError("an event trigger needs 'event' (the event key)")
        return self


class Intention(BaseModel):
    """Something to do or remember later (prospective memory)."""

    id: str
    description: str
    trigger: IntentionTrigger
    priority: Priority = "normal"
    status: IntentionStatus = "active"
    deadline: datetime | None = None
    due_at: datetime | None = None
    snoozed_until: datetime | None = None
    created_at: datetime
    updated_at: datetime
    agent_id: str | None = None
    scope: str = "user"
    metadata: dict[str, Any] = Field(default_factory=dict)


class ApiKey(BaseModel):
    """A stored API key: only its hash is kept."""

    id: str
    label: str
    prefix: str
    key_hash: str
    scopes: list[Literal["read", "write", "admin"]]
    memory_scope: str | None = None
    agent_id: str | None = None
    created_at: datetime
    last_used: datetime | None = None
    revoked_at: datetime | None = None


IngestDecision = Literal["create", "update", "reinforce", "supersede", "merge"]


class IngestResult(BaseModel):
    """What smart ingest decided and did."""

    decision: IngestDecision
    memory_id: str
    similarity: float | None = None
    superseded_id: str | None = None
    merged_ids: list[str] = Field(default_factory=list)
    reason: str
    memory: Memory


class MemoryStateReport(BaseModel):
    """A memory's strength right now."""

    id: str
    state: Literal["active", "dormant", "silent", "unavailable"]
    tier: Tier
    retention: float
    curve_retention: float
    retrieval_strength: float
    storage_strength: float
    stability_days: float
    difficulty: float
    reps: int
    lapses: int
    access_count: int
    last_review: datetime | None
    last_accessed: datetime | None


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


class ConsolidationReport(BaseModel):
    """What a consolidation run changed (or would change, in a dry run)."""

    dry_run: bool
    started_at: datetime
    finished_at: datetime
    examined: int = 0
    tier_changes: dict[str, int] = Field(default_factory=dict)
    archived: list[str] = Field(default_factory=list)
    merged: list[list[str]] = Field(default_factory=list)
    new_edges: int = 0
    report_id: int | None = None


class GcReport(BaseModel):
    """Memories a garbage collection removed (or would remove)."""

    dry_run: bool
    min_retention: float
    max_age_days: float | None
    candidates: list[str]
    deleted: int


class CodebaseContext(BaseModel):
    """Patterns and decisions recorded for a codebase, relevant to some files."""

    codebase: str
    files: list[str]
    patterns: list[Memory]
    decisions: list[Memory]
    intentions: list[Intention]
