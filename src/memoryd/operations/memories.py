"""Operations on memories: smart ingest, the ``memory`` tool, feedback, and the REST
resources (create, get, update, delete, list, history)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.errors import InvalidInput
from memoryd.keys import KeyScope
from memoryd.models import (
    HistoryEntry,
    IngestResult,
    Memory,
    MemoryPatch,
    MemoryStateReport,
    NewMemory,
    Strict,
)
from memoryd.models.derive import pick, settable
from memoryd.models.fields import StrictValidity
from memoryd.models.rules import Rules, When
from memoryd.operations.registry import Caller, MemoryId, operation
from memoryd.operations.search import FilterFields

if TYPE_CHECKING:
    from memoryd.engine import Engine


# --- smart ingest -------------------------------------------------------------------
_INGEST_FIELDS = ["node_type", "tags", "source", "summary", "category", "subcategory",
                  "importance", "severity", "scope", "session_id", "metadata", "content"]


def _ingest_fields(name: str, optional: tuple[str, ...]) -> Any:
    return settable(Memory, _INGEST_FIELDS, name=name, doc="What a memory to ingest may carry.",
                    nullable=("importance", "scope"), optional=optional)


class IngestItem(_ingest_fields("IngestItemFields", ())):  # type: ignore[misc]
    pass


_ONE_OF = Rules(exactly_one=("content", "items"))


class IngestInput(_ingest_fields("IngestFields", ("content",))):  # type: ignore[misc]
    """Arguments of smart_ingest: one ``content`` or up to 50 ``items``."""

    model_config = ConfigDict(json_schema_extra=_ONE_OF.schema)
    items: list[IngestItem] | None = Field(
        None, min_length=1, max_length=50, description="A batch (instead of content)."
    )
    force_create: bool = Field(False, description="Store as new even if a near-duplicate exists.")
    allow_secrets: bool = Field(False, description="Store even if it looks like a credential.")

    @model_validator(mode="after")
    def _one_of(self) -> IngestInput:
        _ONE_OF.check(self)
        return self


class IngestOutput(BaseModel):
    """What smart ingest decided for each item (decision etc. repeat the first item's)."""

    decision: str
    memory_id: str
    similarity: float | None = None
    superseded_id: str | None = None
    reason: str
    results: list[IngestResult]

    @classmethod
    def of(cls, results: list[IngestResult]) -> IngestOutput:
        first = results[0]
        return cls(
            decision=first.decision,
            memory_id=first.memory_id,
            similarity=first.similarity,
            superseded_id=first.superseded_id,
            reason=first.reason,
            results=results,
        )

    def as_text(self) -> str:
        lines = []
        for r in self.results:
            sim = f" (similarity {r.similarity:.2f})" if r.similarity is not None else ""
            lines.append(f"{r.decision.upper()} {r.memory_id}{sim}: {r.reason}")
        return "\n".join(lines)


@operation(
    "smart_ingest",
    title="Store a memory (smart)",
    input=IngestInput,
    output=IngestOutput,
    scope="write",
)
def smart_ingest(engine: Engine, data: IngestInput, caller: Caller) -> IngestOutput:
    """Store something worth remembering. Compares it with what is already stored and decides:
    create a new memory, update or reinforce a near-duplicate, supersede a contradicted one, or
    merge several. Store durable facts, preferences, decisions and lessons, one idea per memory.
    Pass items (up to 50) to store a batch."""
    shared = data.model_dump(
        exclude={"content", "items", "force_create", "allow_secrets"}, exclude_none=True
    )
    if data.items is not None:
        items = [{**shared, **item.model_dump(exclude_unset=True, exclude_none=True)}
                 for item in data.items]
    else:
        items = [{**shared, "content": data.content}]
    results = engine.ingest_many(
        items, force_create=data.force_create, allow_secrets=data.allow_secrets
    )
    return IngestOutput.of(results)


# --- one memory ---------------------------------------------------------------------
_EDIT_FIELDS = ["content", "summary", "node_type", "category", "tags", "importance",
                "severity", "metadata"]


_EDIT = Rules(when=(When("action", ("edit",), "edit needs at least one of "
                         + ", ".join(_EDIT_FIELDS), any_of=tuple(_EDIT_FIELDS)),))


class MemoryActionInput(pick(MemoryPatch, _EDIT_FIELDS, name="MemoryEdit")):  # type: ignore[misc]
    """Arguments of the memory tool."""

    model_config = ConfigDict(json_schema_extra=_EDIT.schema)

    action: Literal[
        "get", "delete", "state", "promote", "demote", "edit", "history", "versions", "purge"
    ]
    id: str = MemoryId
    reason: str | None = Field(None, max_length=2000, description="Why (promote, demote).")

    @model_validator(mode="after")
    def _edit(self) -> MemoryActionInput:
        _EDIT.check(self)
        return self

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude={"action", "id", "reason"}, exclude_none=True)


class MemoryActionOutput(BaseModel):
    """The result of a memory action: the memory, its state or its history."""

    action: str
    id: str
    memory: Memory | None = None
    state: MemoryStateReport | None = None
    history: list[HistoryEntry] | None = None
    versions: list[Memory] | None = None
    deleted: bool = False

    def as_text(self) -> str:
        if self.deleted:
            return f"Deleted memory {self.id}."
        if self.history is not None:
            return "\n".join(
                f"#{h.seq} {h.at:%Y-%m-%d %H:%M} {h.operation}{' by ' + h.actor if h.actor else ''}"
                for h in self.history
            )
        if self.versions is not None:
            return "\n".join(
                f"{'current' if i == 0 else 'older'} {m.id} ({m.updated_at:%Y-%m-%d}): {m.content}"
                for i, m in enumerate(self.versions)
            )
        if self.state is not None:
            s = self.state
            return (
                f"Memory {s.id}: {s.state}, tier {s.tier}, retention {s.retention:.2f}, "
                f"stability {s.stability_days:.1f} days, accessed {s.access_count} times"
            )
        assert self.memory is not None
        m = self.memory
        tags = ",".join(m.tags)
        return f"[{m.node_type}] {m.content}\nid={m.id} tags={tags} updated={m.updated_at:%Y-%m-%d}"


_MEMORY_SCOPES: dict[str, KeyScope] = {
    "get": "read",
    "state": "read",
    "history": "read",
    "versions": "read",
    "purge": "admin",
}


@operation(
    "memory",
    title="Read or change one memory",
    input=MemoryActionInput,
    output=MemoryActionOutput,
    scope=lambda d: _MEMORY_SCOPES.get(d.action, "write"),
    destructive=True,
)
def memory_action(engine: Engine, data: MemoryActionInput, caller: Caller) -> MemoryActionOutput:
    """Act on one memory by id. get: the memory; state: how strong it is now (active, dormant,
    silent); history: every change; versions: it and the older memories it superseded;
    promote: it was right or helpful (strengthens it); demote: it was wrong or stale (weakens
    it, keeps it); edit: change content/tags/type/importance; delete: remove it (history
    keeps a tombstone); purge: remove it and scrub its history (admin)."""
    memory = engine.get(data.id)
    out = MemoryActionOutput(action=data.action, id=data.id)
    if data.action == "get":
        out.memory = memory
    elif data.action == "state":
        out.state = engine.views.memory_state(data.id)
    elif data.action == "history":
        out.history = engine.history(data.id)
    elif data.action == "versions":
        out.versions = engine.versions(data.id)
    elif data.action == "promote":
        out.memory = engine.promote(data.id, reason=data.reason)
    elif data.action == "demote":
        out.memory = engine.demote(data.id, reason=data.reason)
    elif data.action == "edit":
        changes = data.changes()
        if not changes:
            raise InvalidInput(
                "edit needs at least one of content, summary, node_type, "
                "category, tags, importance, severity, metadata"
            )
        out.memory = engine.update(data.id, **changes)
    elif data.action == "delete":
        engine.delete(data.id)
        out.deleted = True
    else:  # purge
        engine.admin.purge(data.id)
        out.deleted = True
    return out


class FeedbackInput(Strict):
    """Arguments of promote and demote."""

    id: str = MemoryId
    reason: str | None = Field(None, max_length=2000)


@operation("promote", title="Promote a memory", input=FeedbackInput, output=Memory, scope="write")
def promote(engine: Engine, data: FeedbackInput, caller: Caller) -> Memory:
    """The memory was right or helpful: strengthen it."""
    return engine.promote(data.id, reason=data.reason)


@operation("demote", title="Demote a memory", input=FeedbackInput, output=Memory, scope="write")
def demote(engine: Engine, data: FeedbackInput, caller: Caller) -> Memory:
    """The memory was wrong or stale: weaken it (it is kept, and can be promoted again)."""
    return engine.demote(data.id, reason=data.reason)


# --- resources (REST /api/v1) --------------------------------------------------------
_CREATE_FIELDS = ["content", "summary", "node_type", "category", "subcategory", "tags",
                  "source", "session_id", "scope", "importance", "severity", "created_at",
                  "valid_from", "valid_until", "metadata"]


class MemoryCreateInput(settable(Memory, _CREATE_FIELDS, name="MemoryFieldsGiven",  # type: ignore[misc]
                                 nullable=("scope",), optional=("created_at",),
                                 base=StrictValidity)):
    """A memory to store as given (no similarity gating)."""


@operation(
    "memory_create", title="Create a memory", input=MemoryCreateInput, output=Memory, scope="write"
)
def memory_create(engine: Engine, data: MemoryCreateInput, caller: Caller) -> Memory:
    """Store one memory exactly as given (use smart_ingest to deduplicate)."""
    new = NewMemory.model_validate(data.model_dump(exclude_none=True))
    return engine.add_many([new])[0]


class MemoryIdInput(Strict):
    id: str = MemoryId


@operation(
    "memory_get",
    title="Get a memory",
    input=MemoryIdInput,
    output=Memory,
    scope="read",
    read_only=True,
    idempotent=True,
)
def memory_get(engine: Engine, data: MemoryIdInput, caller: Caller) -> Memory:
    """One memory by id."""
    return engine.get(data.id)


_UPDATE_FIELDS = ["content", "summary", "node_type", "category", "subcategory", "tags",
                  "source", "importance", "severity", "valid_from", "valid_until", "metadata"]


class MemoryUpdateInput(pick(MemoryPatch, _UPDATE_FIELDS, name="MemoryChanges",  # type: ignore[misc]
                             base=StrictValidity)):
    """Changes to a memory: fields left out stay as they are; null clears a field that may be
    empty and is refused for one that may not. At least one field must be given."""

    # The id comes in the REST path, so a body needs one property and the whole input two.
    model_config = ConfigDict(json_schema_extra=lambda s: s.__setitem__(
        "minProperties", 2 if "id" in s.get("properties", {}) else 1))

    id: str = MemoryId

    @model_validator(mode="after")
    def _some(self) -> MemoryUpdateInput:
        if not self.model_fields_set - {"id"}:
            raise ValueError("nothing to update: pass at least one field")
        return self


@operation(
    "memory_update",
    title="Edit a memory",
    input=MemoryUpdateInput,
    output=Memory,
    scope="write",
    idempotent=True,
)
def memory_update(engine: Engine, data: MemoryUpdateInput, caller: Caller) -> Memory:
    """Change fields of a memory by id (new content is re-embedded; history keeps the old
    version). Fields left out stay as they are. Use smart_ingest for new facts instead."""
    changes = data.model_dump(exclude={"id"}, exclude_unset=True)
    return engine.update(data.id, **changes)


class MemoryDeleteInput(Strict):
    id: str = MemoryId
    purge: bool = Field(False, description="Also scrub the content from history (admin).")


class DeleteOutput(BaseModel):
    id: str
    deleted: bool
    purged: bool = False


@operation(
    "memory_delete",
    title="Delete a memory",
    input=MemoryDeleteInput,
    output=DeleteOutput,
    scope=lambda d: "admin" if d.purge else "write",
    destructive=True,
    idempotent=True,
)
def memory_delete(engine: Engine, data: MemoryDeleteInput, caller: Caller) -> DeleteOutput:
    """Delete a memory by id (its history keeps a tombstone); purge (admin keys only) also
    scrubs its content from history."""
    if data.purge:
        engine.admin.purge(data.id)
    else:
        engine.delete(data.id)
    return DeleteOutput(id=data.id, deleted=True, purged=data.purge)


class MemoryListInput(FilterFields):
    limit: int = Field(50, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=10_000_000)
    order: Literal["created_desc", "created_asc", "updated_desc"] = "created_desc"


class MemoryPage(BaseModel):
    items: list[Memory]
    total: int
    limit: int
    offset: int
    next_offset: int | None


@operation(
    "memory_list",
    title="List memories",
    input=MemoryListInput,
    output=MemoryPage,
    scope="read",
    read_only=True,
    idempotent=True,
)
def memory_list(engine: Engine, data: MemoryListInput, caller: Caller) -> MemoryPage:
    """Memories matching the filters, newest first, paged by limit and offset."""
    filters = data.filters()
    items = engine.list(filters, limit=data.limit, offset=data.offset, order=data.order)
    total = engine.count(filters)
    more = data.offset + len(items) < total
    return MemoryPage(
        items=items,
        total=total,
        limit=data.limit,
        offset=data.offset,
        next_offset=data.offset + len(items) if more else None,
    )


class HistoryOutput(BaseModel):
    id: str
    entries: list[HistoryEntry]


@operation(
    "history",
    title="History of a memory",
    input=MemoryIdInput,
    output=HistoryOutput,
    scope="read",
    read_only=True,
    idempotent=True,
)
def history(engine: Engine, data: MemoryIdInput, caller: Caller) -> HistoryOutput:
    """Every recorded change of a memory, oldest first (deleted memories keep theirs)."""
    return HistoryOutput(id=data.id, entries=engine.history(data.id))
