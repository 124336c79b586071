"""Smart waits as the faces show them: one wait job, its status and what it saw.

The watcher layer (:mod:`memoryd.waits`) keeps jobs as plain data with epoch times; the
engine turns each into a :class:`WaitInfo` for the operations.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

WaitState = Literal["watching", "resolved", "timeout", "error", "cancelled"]
WAIT_STATES: tuple[str, ...] = ("watching", "resolved", "timeout", "error", "cancelled")


class WaitInfo(BaseModel):
    """A smart wait: what it watches, for what, and how it stands."""

    id: str
    target: str
    criteria: dict[str, Any]
    timeout_s: float
    status: WaitState
    created_at: datetime
    updated_at: datetime
    deadline: datetime
    resolved_at: datetime | None = None
    task_id: str | None = None
    result: str | None = Field(None, description="What was seen when the wait ended.")
    last_seen: str | None = Field(None, description="The latest thing a check saw.")
    checks: int = 0
    wake: dict[str, Any] | None = None
    wake_attempts: list[dict[str, Any]] = Field(default_factory=list)
    scope: str = "user"
    agent_id: str | None = None
    runner: str | None = Field(None, description="The host whose memoryd runs the wait.")
    message: str = Field("", description="One line saying how it stands (the wake message).")
