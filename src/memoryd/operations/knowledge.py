"""Knowledge operations: codebase patterns and decisions, intentions, graph exploration,
the daily journal."""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memoryd.dates import DAY_PATTERN, TZ_PATTERN, parse_day, parse_tz
from memoryd.models import (
    CodebaseContext,
    Intention,
    IntentionTrigger,
    Memory,
    Neighbourhood,
    Priority,
)
from memoryd.models.fields import CodebaseName, UTCDateTime
from memoryd.models.rules import Rules, When
from memoryd.models.text import Matches
from memoryd.operations.registry import Caller, MemoryId, Strict, operation

if TYPE_CHECKING:
    from memoryd.engine import Engine


# --- codebase -----------------------------------------------------------------------
_CODEBASE = Rules(mode="text", when=(
    When("action", ("remember_pattern",), "remember_pattern needs name and description",
         needs=("name", "description")),
    When("action", ("remember_decision",), "remember_decision needs decision",
         needs=("decision",)),
))


class CodebaseInput(Strict):
    """Arguments of the codebase tool."""

    model_config = ConfigDict(json_schema_extra=_CODEBASE.schema)

    action: Literal["remember_pattern", "remember_decision", "get_context"]
    codebase: CodebaseName = Field(description="The codebase (repository) name.")
    name: str | None = Field(None, max_length=200, description="Pattern name (remember_pattern).")
    description: str | None = Field(None, max_length=20_000, description="Pattern description.")
    decision: str | None = Field(
        None, max_length=20_000, description="The decision (remember_decision)."
    )
    rationale: str | None = Field(None, max_length=20_000)
    alternatives: list[str] = Field(default_factory=list, max_length=50)
    files: list[str] = Field(default_factory=list, max_length=200, description="Files it concerns.")
    limit: int = Field(10, ge=1, le=200, description="get_context: how many of each kind.")

    @model_validator(mode="after")
    def _needs(self) -> CodebaseInput:
        _CODEBASE.check(self)
        return self


class CodebaseOutput(BaseModel):
    action: str
    memory: Memory | None = None
    context: CodebaseContext | None = None

    def as_text(self) -> str:
        if self.memory is not None:
            return f"Stored {self.memory.node_type} {self.memory.id}: {self.memory.content}"
        assert self.context is not None
        c = self.context
        lines = [f"Codebase {c.codebase}: {len(c.patterns)} patterns, {len(c.decisions)} decisions"]
        lines += [f"- pattern: {m.content}" for m in c.patterns]
        lines += [f"- decision: {m.content}" for m in c.decisions]
        lines += [f"- intention ({i.priority}): {i.description}" for i in c.intentions]
        return "\n".join(lines)


@operation(
    "codebase",
    title="Codebase patterns and decisions",
    input=CodebaseInput,
    output=CodebaseOutput,
    scope=lambda d: "read" if d.action == "get_context" else "write",
)
def codebase(engine: Engine, data: CodebaseInput, caller: Caller) -> CodebaseOutput:
    """Remember how a codebase works. remember_pattern: a code pattern or convention (name,
    description, files); remember_decision: an architectural decision with its rationale and the
    alternatives considered; get_context: the patterns, decisions and due intentions for a
    codebase, optionally only those touching some files. Call get_context when starting work."""
    if data.action == "remember_pattern":
        memory = engine.codebase.remember_pattern(data.name, data.description, data.files,
                                                  data.codebase)
        return CodebaseOutput(action=data.action, memory=memory)
    if data.action == "remember_decision":
        memory = engine.codebase.remember_decision(
            data.decision, data.rationale, data.alternatives, data.files, data.codebase
        )
        return CodebaseOutput(action=data.action, memory=memory)
    context = engine.codebase.context(data.codebase, files=data.files or None, limit=data.limit)
    return CodebaseOutput(action=data.action, context=context)


# --- intentions ---------------------------------------------------------------------
class IntentionCheckContext(Strict):
    codebase: str | None = None
    files: list[str] = Field(default_factory=list, max_length=200)
    topic: str | None = None
    text: str | None = Field(None, max_length=20_000)
    event: str | None = None


_INTENTION = Rules(mode="text", when=(
    When("action", ("set",), "set needs description and trigger",
         needs=("description", "trigger")),
    When("action", ("update",), "update needs id and status complete, snooze or cancel",
         needs=("id",), choices=(("status", ("complete", "snooze", "cancel")),)),
    When("action", ("list",), "status must be one of active, all, cancelled, completed, fired, "
         "snoozed", choices=(("status", (None, "active", "all", "cancelled", "completed",
                                         "fired", "snoozed")),)),
))


class IntentionInput(Strict):
    """Arguments of the intention tool."""

    model_config = ConfigDict(json_schema_extra=_INTENTION.schema)

    action: Literal["set", "check", "update", "list"]
    description: str | None = Field(None, max_length=4000, description="What to do (set).")
    trigger: IntentionTrigger | None = Field(
        None,
        description="set: {type: time, at | in_minutes} | {type: context, codebase, "
        "file_pattern, topic} | {type: event, event}.",
    )
    priority: Priority = "normal"
    deadline: UTCDateTime | None = None
    id: str | None = Field(None, max_length=256, description="The intention (update).")
    status: str | None = Field(
        None,
        description="update: complete | snooze | cancel. list: active, snoozed, completed, "
        "cancelled, fired or all (default: open ones).",
    )
    snooze_minutes: float | None = Field(None, gt=0, le=525_600)
    context: IntentionCheckContext | None = Field(
        None, description="check: what the agent is doing now."
    )

    @model_validator(mode="after")
    def _needs(self) -> IntentionInput:
        _INTENTION.check(self)
        return self


class IntentionOutput(BaseModel):
    action: str
    intention: Intention | None = None
    intentions: list[Intention] = []

    def as_text(self) -> str:
        if self.intention is not None:
            i = self.intention
            due = f", due {i.due_at:%Y-%m-%d %H:%M}" if i.due_at else ""
            return f"Intention {i.id} ({i.status}, {i.priority}{due}): {i.description}"
        if not self.intentions:
            return "No intentions."
        return "\n".join(
            f"- [{i.priority}] {i.description} (id={i.id}, {i.status})" for i in self.intentions
        )


@operation(
    "intention",
    title="Prospective memory",
    input=IntentionInput,
    output=IntentionOutput,
    scope=lambda d: "write" if d.action in ("set", "update") else "read",
)
def intention(engine: Engine, data: IntentionInput, caller: Caller) -> IntentionOutput:
    """Remember to do something later. set: a description plus a trigger (a time: at or
    in_minutes; a context: codebase, file_pattern, topic; or an event); check: the intentions
    due now or matching the current context; update: complete, snooze or cancel one by id;
    list: intentions by status."""
    out = IntentionOutput(action=data.action)
    if data.action == "set":
        out.intention = engine.tasks.set_intention(
            data.description, data.trigger, priority=data.priority, deadline=data.deadline
        )
    elif data.action == "check":
        context = data.context.model_dump() if data.context else {}
        out.intentions = engine.tasks.check_intentions(context)
    elif data.action == "update":
        out.intention = engine.tasks.update_intention(
            data.id, data.status, snooze_minutes=data.snooze_minutes
        )
    else:
        out.intentions = engine.tasks.list_intentions(data.status)
    return out


# --- graph, maintenance, status -----------------------------------------------------
class ExploreInput(Strict):
    id: str = MemoryId
    depth: int = Field(2, ge=1, le=3, description="How many hops.")


class ExploreOutput(Neighbourhood):
    def as_text(self) -> str:
        lines = [f"{self.center.id}: {self.center.content}"]
        lines += [
            f"{'  ' * n.depth}-{n.edge_type}({n.weight:.2f})-> {n.memory.id}: {n.memory.content}"
            for n in self.neighbours
        ]
        return "\n".join(lines)


@operation(
    "explore",
    title="Explore connections",
    input=ExploreInput,
    output=ExploreOutput,
    scope="read",
    read_only=True,
    idempotent=True,
    tools=("explore",),
)
def explore(engine: Engine, data: ExploreInput, caller: Caller) -> ExploreOutput:
    """The memories connected to one memory (related, caused_by, supersedes, ...), up to 3 hops."""
    hood = engine.explore(data.id, depth=data.depth)
    return ExploreOutput.model_validate(hood.model_dump())


# --- journal ------------------------------------------------------------------------
class JournalInput(Strict):
    """Arguments of the journal operation."""

    day: Annotated[str, Matches(DAY_PATTERN, "day must be a date as YYYY-MM-DD")] = Field(
        description="The day as YYYY-MM-DD, midnight to midnight in ``tz``.",
        examples=["2024-05-17"], json_schema_extra={"format": "date"},
    )
    tz: Annotated[str, Matches(TZ_PATTERN, "tz must be an IANA time zone name")] | None = Field(
        None, max_length=64,
        description="IANA time zone of the day, e.g. Europe/Berlin (default: the server's).",
    )

    @field_validator("day")
    @classmethod
    def _day(cls, value: str) -> str:
        return parse_day(value).isoformat()

    @field_validator("tz")
    @classmethod
    def _tz(cls, value: str | None) -> str | None:
        if value is not None:
            parse_tz(value)
        return value


class JournalOutput(BaseModel):
    day: str
    markdown: str

    def as_text(self) -> str:
        return self.markdown


@operation(
    "journal",
    title="Daily journal",
    input=JournalInput,
    output=JournalOutput,
    scope="read",
    read_only=True,
    idempotent=True,
    bound_ok=False,
)
def journal(engine: Engine, data: JournalInput, caller: Caller) -> JournalOutput:
    """What was learned, updated, strengthened and forgotten on one day, as Markdown (purged
    memories by id only). Covers every scope and agent, so keys bound to one cannot use it."""
    tz = parse_tz(data.tz) if data.tz is not None else None
    markdown = engine.admin.journal(date.fromisoformat(data.day), tz=tz)
    return JournalOutput(day=data.day, markdown=markdown)
