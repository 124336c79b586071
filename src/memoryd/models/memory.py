"""A memory: the fields a caller sets, the stored record, changes to it and its history."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models.fields import (
    Category,
    Content,
    DomainName,
    Importance,
    Label,
    Metadata,
    NewMemoryId,
    NodeType,
    Scope,
    Severity,
    Source,
    Summary,
    Tags,
    Tier,
    UTCDateTime,
    check_validity,
)
from memoryd.models.rules import NotNull

# Fields a change may clear with null; the others must have a value (tags [] and metadata {}
# empty the two collections).
NULLABLE = frozenset({"summary", "category", "subcategory", "source", "severity", "valid_from",
                      "valid_until", "superseded_by"})


class MemoryFields(BaseModel):
    """Fields a caller may set on a memory (shared by every way of storing one)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    summary: Summary | None = None
    node_type: NodeType = Field("fact", description="fact, preference, decision, pattern, "
                                "event, error, insight, ...")
    category: Category | None = None
    subcategory: Category | None = None
    tags: Tags = Field(default_factory=list)
    source: Source | None = None
    agent_id: Label | None = None
    session_id: Label | None = Field(None, description="The conversation or session it came from.")
    scope: Scope = "user"
    importance: Importance = 0.5
    severity: Severity | None = None
    valid_from: UTCDateTime | None = Field(None, description="When it became true.")
    valid_until: UTCDateTime | None = Field(None, description="When it stopped being true.")
    metadata: Metadata = Field(default_factory=dict)

    @model_validator(mode="after")
    def _validity(self) -> MemoryFields:
        check_validity(self.valid_from, self.valid_until)
        return self


class NewMemory(MemoryFields):
    """A memory to create. ``created_at`` may be given (imports of past conversations).

    ``embed_text``, when set, is what the vector side sees instead of ``content``
    (for example the message with its neighbours); it is not stored.
    """

    content: str = Field(description="The memory, in one or a few sentences.")
    created_at: UTCDateTime | None = Field(None, description="When it happened (default: now).")
    id: NewMemoryId | None = Field(default=None,
                                    description="Keep this id (imports); new UUID if unset.")
    embed_text: str | None = None


class SchedulingState(BaseModel):
    """FSRS-6 scheduling and dual-strength state of one memory."""

    model_config = ConfigDict(allow_inf_nan=False)

    stability: float = 1.0
    difficulty: float = 5.0
    reps: int = 0
    lapses: int = 0
    last_review: datetime | None = None
    storage_strength: float = 1.0
    retrieval_strength: float = 1.0
    access_count: int = 0
    last_accessed: datetime | None = None


class RestoredMemory(NewMemory):
    """A memory read back from an export: also keeps the fields the store computes
    (used by import so that export → import round-trips)."""

    updated_at: UTCDateTime | None = None
    tier: Tier | None = None
    superseded_by: NewMemoryId | None = None
    domains: list[DomainName] | None = None
    domain_scores: dict[str, float] | None = None
    state: SchedulingState | None = None

    def restored_fields(self) -> dict[str, Any]:
        """The computed fields that were present in the export."""
        names = ("updated_at", "tier", "superseded_by", "domains", "domain_scores", "state")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}


class MemoryPatch(BaseModel):
    """Changes to an existing memory; unset fields stay as they are.

    An explicit null clears a field that may be empty (summary, category, source, severity,
    validity) and is refused for the others (content, node_type, scope, importance, and tags
    and metadata, which ``[]`` and ``{}`` empty).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # Fields that may not be cleared take no null (NotNull: the schema offers none either).
    content: Annotated[Content | None, NotNull()] = Field(
        None, description="New content (re-embedded).")
    summary: Summary | None = None
    node_type: Annotated[NodeType | None, NotNull()] = None
    category: Category | None = None
    subcategory: Category | None = None
    tags: Annotated[Tags | None, NotNull()] = None
    source: Source | None = None
    scope: Annotated[Scope | None, NotNull()] = None
    importance: Annotated[Importance | None, NotNull()] = None
    severity: Severity | None = None
    valid_from: UTCDateTime | None = None
    valid_until: UTCDateTime | None = None
    superseded_by: str | None = None
    tier: Annotated[Tier | None, NotNull()] = None
    metadata: Annotated[Metadata | None, NotNull()] = None

    @model_validator(mode="after")
    def _nulls(self) -> MemoryPatch:
        refused = [name for name in self.model_fields_set
                   if getattr(self, name) is None and name not in NULLABLE]
        if refused:
            raise ValueError(f"{', '.join(sorted(refused))} cannot be null")
        check_validity(self.valid_from, self.valid_until)
        return self

    def changes(self) -> dict[str, Any]:
        """The fields given (null where a field is cleared)."""
        return self.model_dump(exclude_unset=True)


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


class HistoryEntry(BaseModel):
    """One change to a memory: who did what, when."""

    seq: int
    memory_id: str
    operation: str
    actor: str | None = None
    agent_id: str | None = None
    at: datetime
    details: dict[str, Any] = Field(default_factory=dict)


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
