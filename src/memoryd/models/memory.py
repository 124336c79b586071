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
from memoryd.models.derive import Settable, changes, may_be_empty, settable, settable_fields

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


class Memory(BaseModel):
    """A stored memory."""

    # Each field a caller sets is marked Settable with the type callers give it (its limits);
    # the write inputs below are derived from these marks (models/derive.py).
    id: str
    content: Annotated[str, Settable(Content, new=False,  # NewMemory takes it as given
                                     changed_description="New content (re-embedded).")]
    summary: Annotated[str | None, Settable(Summary)] = None
    node_type: Annotated[str, Settable(NodeType, description="fact, preference, decision, "
                                       "pattern, event, error, insight, ...")] = "fact"
    category: Annotated[str | None, Settable(Category)] = None
    subcategory: Annotated[str | None, Settable(Category)] = None
    tags: Annotated[list[str], Settable(Tags)] = Field(default_factory=list)
    source: Annotated[str | None, Settable(Source)] = None
    agent_id: Annotated[str | None, Settable(Label, changed=False)] = None
    session_id: Annotated[str | None, Settable(
        Label, description="The conversation or session it came from.", changed=False)] = None
    scope: Annotated[str, Settable(Scope)] = "user"
    domains: list[str] = Field(default_factory=list)
    domain_scores: dict[str, float] = Field(default_factory=dict)
    importance: Annotated[float, Settable(Importance)] = 0.5
    severity: Annotated[str | None, Settable(Severity)] = None
    created_at: Annotated[datetime, Settable(  # a new memory takes it as NewMemory says
        UTCDateTime, description="When it happened (default: now).", new=False, changed=False)]
    updated_at: datetime
    valid_from: Annotated[datetime | None, Settable(
        UTCDateTime, description="When it became true.")] = None
    valid_until: Annotated[datetime | None, Settable(
        UTCDateTime, description="When it stopped being true.")] = None
    superseded_by: Annotated[str | None, Settable(str, new=False)] = None
    tier: Annotated[Tier, Settable(Tier, new=False)] = "hot"
    embedding_model: str | None = None
    metadata: Annotated[dict[str, Any], Settable(Metadata)] = Field(default_factory=dict)
    state: SchedulingState = Field(default_factory=SchedulingState)
    seq: int = 0


# Fields a change may clear with null: those a memory may lack. The others must have a value
# (tags [] and metadata {} empty the two collections).
NULLABLE = frozenset(name for name in settable_fields(Memory, changed=True)
                     if may_be_empty(Memory, name))


class _Checked(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class MemoryFields(settable(Memory, name="MemoryFieldsBase", base=_Checked)):  # type: ignore[misc]
    """Fields a caller may set on a memory (shared by every way of storing one)."""

    @model_validator(mode="after")
    def _validity(self) -> MemoryFields:
        check_validity(self.valid_from, self.valid_until)
        return self


class NewMemory(MemoryFields):
    """A memory to create. ``created_at`` may be given (imports of past conversations).

    ``embed_text``, when set, is what the vector side sees instead of ``content``
    (for example the message with its neighbours); it is not stored.
    """

    # As given: the engine checks it (an empty one is EmptyContent, secrets are refused).
    content: str = Field(description="The memory, in one or a few sentences.")
    created_at: UTCDateTime | None = Field(None, description="When it happened (default: now).")
    id: NewMemoryId | None = Field(default=None,
                                    description="Keep this id (imports); new UUID if unset.")
    embed_text: str | None = None


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


class MemoryPatch(changes(Memory, name="MemoryChangesBase", base=_Checked)):  # type: ignore[misc]
    """Changes to an existing memory; unset fields stay as they are.

    An explicit null clears a field that may be empty (summary, category, source, severity,
    validity) and is refused for the others (content, node_type, scope, importance, and tags
    and metadata, which ``[]`` and ``{}`` empty).
    """

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
