"""Task memory: a long-running task, its plan as a checklist, and the messages that record
what happened along the way (the agent's, the system's, and the distilled summaries).

The answer to "what step am I on, what is blocking, what was decided" is a
:class:`TaskReport`, built from the plan, the latest summary and the recent messages.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from memoryd.models.fields import Metadata, Scope, Strict
from memoryd.models.text import NOT_BLANK, Matches
from memoryd.models.memory import IngestResult
from memoryd.models.waits import WaitInfo

TaskStatus = Literal["active", "paused", "completed", "failed"]
TASK_STATUSES: tuple[str, ...] = ("active", "paused", "completed", "failed")
MessageRole = Literal["agent", "system", "distilled"]
MessageKind = Literal["note", "progress", "decision", "blocker"]
MESSAGE_KINDS: tuple[str, ...] = ("note", "progress", "decision", "blocker")

TASK_NAME_CHARS = 200
STEP_CHARS = 500
MAX_STEPS = 100
MESSAGE_CHARS = 20_000

TaskName = Annotated[str, Field(min_length=1, max_length=TASK_NAME_CHARS,
                                description="A short name of the task."),
                     Matches(NOT_BLANK, "the name needs some text")]
StepText = Annotated[str, Field(min_length=1, max_length=STEP_CHARS),
                     Matches(NOT_BLANK, "a step must say something")]
TaskIdText = Annotated[str, Field(min_length=1, max_length=64, description="The task's id.")]
MessageText = Annotated[str, Field(min_length=1, max_length=MESSAGE_CHARS,
                                   description="What happened, in a sentence or a few."),
                        Matches(NOT_BLANK, "is blank: say what was done or learned")]


class PlanStep(BaseModel):
    """One item of a task's checklist."""

    text: str
    done: bool = False
    done_at: datetime | None = None


class TaskFields(Strict):
    """What a caller may set when registering a task (input models derive from these)."""

    name: TaskName
    plan: list[StepText] = Field(default_factory=list, max_length=MAX_STEPS,
                                 description="The plan as a checklist of steps, in order.")
    scope: Scope | None = None
    metadata: Metadata = Field(default_factory=dict)


class Task(BaseModel):
    """A long-running task the agent works on across turns and sessions."""

    id: str
    name: str
    status: TaskStatus = "active"
    plan: list[PlanStep] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    agent_id: str | None = None
    scope: str = "user"
    metadata: dict[str, Any] = Field(default_factory=dict)
    memory_id: str | None = Field(None, description="The memory left when the task ended.")

    @property
    def steps_done(self) -> int:
        """How many plan steps are checked off."""
        return sum(1 for step in self.plan if step.done)

    @property
    def current_step(self) -> int | None:
        """The 0-based index of the first step not done (None when all are, or no plan)."""
        return next((i for i, step in enumerate(self.plan) if not step.done), None)


class TaskMessage(BaseModel):
    """One entry of a task's history; ``id`` grows in the order messages were added."""

    id: int = 0
    task_id: str
    role: MessageRole = "agent"
    kind: MessageKind = "note"
    content: str
    created_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)


class TaskReport(BaseModel):
    """Where a task stands: its step, what blocks it, what was decided, the summary."""

    task: Task
    progress: str = Field(description="e.g. '2 of 5 steps done'.")
    current_step: str | None = Field(None, description="The first step not done yet.")
    next_steps: list[str] = Field(default_factory=list)
    blockers: list[TaskMessage] = Field(
        default_factory=list, description="Blockers reported since the task last moved on.")
    decisions: list[TaskMessage] = Field(default_factory=list, description="Newest first.")
    summary: TaskMessage | None = Field(None, description="The latest distilled summary.")
    recent: list[TaskMessage] = Field(default_factory=list, description="Newest first.")
    waits: list[WaitInfo] = Field(
        default_factory=list, description="Smart waits started for this task (newest first).")


class TaskOutcome(BaseModel):
    """A task that ended, and the memory it left (through smart ingest)."""

    task: Task
    memory: IngestResult
    summary: str = Field(description="The final distilled summary.")
