"""The default MCP tools for codebase knowledge and intentions (see :mod:`.tools`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models import Intention, Strict
from memoryd.models.fields import CodebaseName, Label, UTCDateTime
from memoryd.models.rules import Rules, When
from memoryd.models.intentions import MAX_MINUTES, Priority
from memoryd.operations.knowledge import CodebaseInput
from memoryd.operations.registry import Caller, operation
from memoryd.operations.tools import MemoryView
from memoryd.retrieval.context import render_items

if TYPE_CHECKING:
    from memoryd.engine import Engine


class ToolCodebaseOutput(BaseModel):
    stored: MemoryView | None = None
    patterns: list[MemoryView] = []
    decisions: list[MemoryView] = []
    due: list[str] = Field([], description="Intentions this context triggers.")

    def as_text(self) -> str:
        if self.stored is not None:
            return f"Stored {self.stored.type} {self.stored.id}."
        text = render_items([(m, None) for m in self.patterns + self.decisions],
                            "Nothing recorded for this codebase yet.")
        return text + "".join(f"\nDue: {d}" for d in self.due)


_CODEBASE = Rules(mode="text", when=(
    When("action", ("remember_pattern",), "remember_pattern needs name and text",
         needs=("name", "text")),
    When("action", ("remember_decision",), "remember_decision needs text", needs=("text",)),
))


class ToolCodebaseInput(Strict):
    """Arguments of codebase."""

    model_config = ConfigDict(json_schema_extra=_CODEBASE.schema)

    action: Literal["remember_pattern", "remember_decision", "get_context"] = Field(
        description="What to do.")
    codebase: CodebaseName = Field(description="The repository's name.")
    text: str | None = Field(None, max_length=20_000,
                             description="The pattern's description, or the decision.")
    name: str | None = Field(None, max_length=200, description="remember_pattern: its name.")
    rationale: str | None = Field(None, max_length=20_000, description="Why (decisions).")
    alternatives: list[str] = Field(default_factory=list, max_length=50,
                                    description="Options considered (decisions).")
    files: list[str] = Field(default_factory=list, max_length=200, description="Files concerned.")

    @model_validator(mode="after")
    def _needs(self) -> ToolCodebaseInput:
        _CODEBASE.check(self)
        return self

    def rich(self) -> CodebaseInput:
        """The full codebase arguments these stand for."""
        key = "description" if self.action == "remember_pattern" else "decision"
        given = {key: self.text} if self.action != "get_context" else {}
        return CodebaseInput.model_validate(
            {"action": self.action, "codebase": self.codebase, "name": self.name,
             "rationale": self.rationale, "alternatives": self.alternatives,
             "files": self.files, **given})


@operation("tool_codebase", title="Codebase knowledge", input=ToolCodebaseInput,
           output=ToolCodebaseOutput, scope=lambda d: "read" if d.action == "get_context"
           else "write", tools=("codebase",))
def tool_codebase(engine: Engine, data: ToolCodebaseInput,
                  caller: Caller) -> ToolCodebaseOutput:
    """How a codebase works: remember_pattern (name, text), remember_decision (text, rationale,
    alternatives), get_context (its patterns, decisions, due intentions; call it when starting
    work); files narrows all three."""
    data = data.rich()  # type: ignore[assignment]
    if data.action == "remember_pattern":
        memory = engine.codebase.remember_pattern(data.name, data.description, data.files,
                                                  data.codebase)
        return ToolCodebaseOutput(stored=MemoryView.of(memory))
    if data.action == "remember_decision":
        memory = engine.codebase.remember_decision(data.decision, data.rationale, data.alternatives,
                                                   data.files, data.codebase)
        return ToolCodebaseOutput(stored=MemoryView.of(memory))
    context = engine.codebase.context(data.codebase, files=data.files or None, limit=data.limit)
    return ToolCodebaseOutput(patterns=[MemoryView.of(m, 500) for m in context.patterns],
                              decisions=[MemoryView.of(m, 500) for m in context.decisions],
                              due=[i.description for i in context.intentions])


_TRIGGERS = ("at", "in_minutes", "codebase", "file_pattern", "topic", "event")
_INTENTION = Rules(mode="text", when=(
    When("action", ("set",), "set needs a description and one of at, in_minutes, codebase, "
         "file_pattern, topic or event", needs=("description",), any_of=_TRIGGERS),
    When("action", ("update",), "update needs id and status", needs=("id", "status")),
))


class ToolIntentionInput(Strict):
    """Arguments of intention."""

    model_config = ConfigDict(json_schema_extra=_INTENTION.schema)

    action: Literal["set", "check", "update", "list"] = Field(
        description="set one; check what is due or fits the work at hand; update one; list.")
    description: str | None = Field(None, max_length=4000, description="set: what to do.")
    at: UTCDateTime | None = Field(None, description="set: when.")
    in_minutes: float | None = Field(None, gt=0, le=MAX_MINUTES, description="set: in minutes.")
    codebase: Label | None = Field(None, description="set/check: the codebase.")
    file_pattern: Label | None = Field(None, description="set: a glob, e.g. src/**/*.py.")
    files: list[Label] | None = Field(None, max_length=200, description="check: open files.")
    topic: Label | None = Field(None, description="set/check: topic words.")
    event: Label | None = Field(None, description="set/check: an event key.")
    priority: Priority = Field("normal", description="set: how much it matters.")
    id: str | None = Field(None, max_length=256, description="update: which.")
    status: Literal["complete", "snooze", "cancel"] | None = Field(None,
                                                                   description="update: how.")
    snooze_minutes: float | None = Field(None, gt=0, le=MAX_MINUTES, description="snooze: how long.")

    @model_validator(mode="after")
    def _needs(self) -> ToolIntentionInput:
        _INTENTION.check(self)
        return self

    def trigger(self) -> dict[str, Any]:
        if self.at or self.in_minutes:
            return {"type": "time", "at": self.at, "in_minutes": self.in_minutes}
        if self.event:
            return {"type": "event", "event": self.event}
        return {"type": "context", "codebase": self.codebase, "file_pattern": self.file_pattern,
                "topic": self.topic}


class IntentionView(BaseModel):
    id: str
    description: str
    status: str
    priority: str
    due: datetime | None = None

    @classmethod
    def of(cls, i: Intention) -> IntentionView:
        return cls(id=i.id, description=i.description, status=i.status, priority=i.priority,
                   due=i.due_at)


class ToolIntentionOutput(BaseModel):
    intentions: list[IntentionView]

    def as_text(self) -> str:
        if not self.intentions:
            return "No intentions."
        return "\n".join(f"- [{i.priority}] {i.description} (id={i.id}, {i.status})"
                         for i in self.intentions)


@operation("tool_intention", title="Remember to do something", input=ToolIntentionInput,
           output=ToolIntentionOutput,
           scope=lambda d: "write" if d.action in ("set", "update") else "read",
           tools=("intention",))
def tool_intention(engine: Engine, data: ToolIntentionInput,
                   caller: Caller) -> ToolIntentionOutput:
    """Remember to do something at a time (at, in_minutes), in a context (codebase,
    file_pattern, topic) or on an event; check what is due; update or list intentions."""
    if data.action == "set":
        done = [engine.tasks.set_intention(data.description, data.trigger(),
                                           priority=data.priority)]
    elif data.action == "check":
        context = {"codebase": data.codebase, "files": data.files or [], "topic": data.topic,
                   "event": data.event}
        done = engine.tasks.check_intentions({k: v for k, v in context.items() if v})
    elif data.action == "update":
        done = [engine.tasks.update_intention(data.id, data.status,
                                              snooze_minutes=data.snooze_minutes)]
    else:
        done = engine.tasks.list_intentions()
    return ToolIntentionOutput(intentions=[IntentionView.of(i) for i in done])
