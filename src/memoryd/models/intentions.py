"""Prospective memory: what to do later, and when it should come to mind."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models.fields import Label, UTCDateTime
from memoryd.models.rules import Rules, When
from memoryd.models.text import NOT_BLANK, Matches

MAX_MINUTES = 525_600  # a year

IntentionStatus = Literal["active", "snoozed", "completed", "cancelled", "fired"]
Priority = Literal["low", "normal", "high", "critical"]


# A trigger's text: a blank one would never match.
TriggerText = Annotated[Label, Matches(NOT_BLANK, "is blank (it would never match)")]
_COMPLETE = Rules(when=(
    When("type", ("time",), "a time trigger needs 'at' or 'in_minutes'",
         any_of=("at", "in_minutes")),
    When("type", ("context",), "a context trigger needs codebase, file_pattern or topic",
         any_of=("codebase", "file_pattern", "topic"), mode="filled"),
    When("type", ("event",), "an event trigger needs 'event' (the event key)",
         needs=("event",), mode="filled"),
))


class IntentionTrigger(BaseModel):
    """When an intention fires: at a time, after some minutes, in a context, or on an event."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False,
                              json_schema_extra=_COMPLETE.schema)

    type: Literal["time", "context", "event"]
    at: UTCDateTime | None = Field(None, description="time: when (ISO 8601).")
    in_minutes: float | None = Field(default=None, gt=0, le=MAX_MINUTES,
                                     description="time: in how many minutes (at most a year).")
    codebase: TriggerText | None = Field(None, description="context: the codebase (repository).")
    file_pattern: TriggerText | None = Field(None, description="context: a glob such as "
                                             "src/**/*.py.")
    topic: TriggerText | None = Field(None, description="context: words that must all appear.")
    event: TriggerText | None = Field(None, description="event: the event key.")

    @model_validator(mode="after")
    def _complete(self) -> IntentionTrigger:
        _COMPLETE.check(self)
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
