"""Prospective memory: what to do later, and when it should come to mind."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models.fields import Label, UTCDateTime

MAX_MINUTES = 525_600  # a year

IntentionStatus = Literal["active", "snoozed", "completed", "cancelled", "fired"]
Priority = Literal["low", "normal", "high", "critical"]


class IntentionTrigger(BaseModel):
    """When an intention fires: at a time, after some minutes, in a context, or on an event."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    type: Literal["time", "context", "event"]
    at: UTCDateTime | None = Field(None, description="time: when (ISO 8601).")
    in_minutes: float | None = Field(default=None, gt=0, le=MAX_MINUTES,
                                     description="time: in how many minutes (at most a year).")
    codebase: Label | None = Field(None, description="context: the codebase (repository).")
    file_pattern: Label | None = Field(None, description="context: a glob such as src/**/*.py.")
    topic: Label | None = Field(None, description="context: words that must all appear.")
    event: Label | None = Field(None, description="event: the event key.")

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
