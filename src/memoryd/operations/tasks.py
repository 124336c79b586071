"""Task memory operations: register a long-running task with its plan, record progress,
ask where it stands, list tasks, and end one (which leaves a memory of it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models import (
    MessageKind,
    Task,
    TaskFields,
    TaskMessage,
    TaskOutcome,
    TaskReport,
)
from memoryd.models.rules import Rules
from memoryd.models.tasks import MessageText, StepText, TaskIdText
from memoryd.operations.registry import Caller, Strict, operation

if TYPE_CHECKING:
    from memoryd.engine import Engine


def _line(message: TaskMessage) -> str:
    when = message.created_at.strftime("%m-%d %H:%M")
    return f"- [{message.role}/{message.kind} {when}] {message.content}"


class TaskAnswer(TaskReport):
    """Where a task stands (what task_register, task_update and task_get return)."""

    def as_text(self) -> str:
        t = self.task
        lines = [f'Task {t.id} "{t.name}" ({t.status}): {self.progress}.']
        if self.current_step:
            lines.append(f"Now: {self.current_step}" + (
                f" (next: {'; '.join(self.next_steps)})" if self.next_steps else ""))
        lines += ["Blocking:"] + [_line(m) for m in self.blockers] if self.blockers else []
        lines += ["Decided:"] + [_line(m) for m in self.decisions] if self.decisions else []
        if self.summary is not None:
            lines.append(f"Summary: {self.summary.content}")
        if self.recent:
            lines += ["Recent:"] + [_line(m) for m in self.recent[:5]]
        if self.waits:
            lines += ["Waits:"] + [f"- {w.message}" for w in self.waits]
        return "\n".join(lines)


def _answer(report: TaskReport) -> TaskAnswer:
    return TaskAnswer.model_validate(dict(report))


@operation(
    "task_register",
    title="Register a task",
    input=TaskFields,
    output=TaskAnswer,
    scope="write",
    tools=("task_register",),
)
def task_register(engine: Engine, data: TaskFields, caller: Caller) -> TaskAnswer:
    """Start remembering a long-running task (a build, a migration, a multi-day change) and its
    plan as a checklist of steps, in order. Returns the task id: record progress with
    task_update, ask where it stands with task_get (after a restart or a context reset), end it
    with task_complete."""
    task = engine.tasks.register(data.name, data.plan, scope=data.scope, metadata=data.metadata)
    return _answer(engine.tasks.get(task.id))


_SOME = Rules(at_least_one=("message", "step_done", "add_steps", "status"), mode="filled",
              message="nothing to update: give message, step_done, add_steps or status")


class TaskUpdateInput(Strict):
    """Arguments of task_update: at least one of message, step_done, add_steps, status."""

    model_config = ConfigDict(json_schema_extra=_SOME.schema)

    id: TaskIdText
    message: MessageText | None = None
    kind: MessageKind | None = Field(
        None, description="note, progress, decision or blocker (guessed from the text if unset).")
    step_done: int | None = Field(None, ge=1, description="A plan step now done (1-based).")
    add_steps: list[StepText] = Field(default_factory=list, max_length=100,
                                      description="Steps to append to the plan.")
    status: Literal["active", "paused"] | None = Field(None, description="Pause or resume.")

    @model_validator(mode="after")
    def _some(self) -> TaskUpdateInput:
        _SOME.check(self)
        return self


@operation(
    "task_update",
    title="Record task progress",
    input=TaskUpdateInput,
    output=TaskAnswer,
    scope="write",
    tools=("task_update",),
)
def task_update(engine: Engine, data: TaskUpdateInput, caller: Caller) -> TaskAnswer:
    """Record what happened on a task: a message (say what was decided, what blocks you, what
    moved forward), a plan step done (step_done, 1-based), new steps, or pause/resume. Returns
    where the task stands; a running summary is distilled every few messages."""
    return _answer(engine.tasks.update(data.id, message=data.message, kind=data.kind,
                                       step_done=data.step_done, add_steps=data.add_steps,
                                       status=data.status))


class TaskGetInput(Strict):
    id: TaskIdText
    refresh: bool = Field(False, description="Distill a new running summary first.")


@operation(
    "task_get",
    title="Where a task stands",
    input=TaskGetInput,
    output=TaskAnswer,
    scope="read",
    read_only=True,
    tools=("task_get",),
)
def task_get(engine: Engine, data: TaskGetInput, caller: Caller) -> TaskAnswer:
    """What step am I on, what is blocking, what was decided: a task's plan progress, open
    blockers, decisions, running summary, recent messages and its smart waits. Call it when
    resuming work on a task."""
    return _answer(engine.tasks.get(data.id, refresh=data.refresh))


class TaskListInput(Strict):
    status: Literal["open", "all", "active", "paused", "completed", "failed"] = Field(
        "open", description="open = active and paused.")
    limit: int = Field(50, ge=1, le=1000)


class TaskListOutput(BaseModel):
    tasks: list[Task]

    def as_text(self) -> str:
        if not self.tasks:
            return "No tasks."
        return "\n".join(
            f'- {t.id} "{t.name}" ({t.status}, {t.steps_done}/{len(t.plan)} steps, '
            f"updated {t.updated_at:%Y-%m-%d %H:%M})" for t in self.tasks)


@operation(
    "task_list",
    title="List tasks",
    input=TaskListInput,
    output=TaskListOutput,
    scope="read",
    read_only=True,
    idempotent=True,
    tools=("task_list",),
)
def task_list(engine: Engine, data: TaskListInput, caller: Caller) -> TaskListOutput:
    """Your tasks, most recently updated first (default: the open ones)."""
    return TaskListOutput(tasks=engine.tasks.list(data.status, limit=data.limit))


class TaskCompleteInput(Strict):
    id: TaskIdText
    status: Literal["completed", "failed"] = "completed"
    outcome: MessageText | None = Field(None, description="What was done (or why it failed).")
    learned: list[MessageText] = Field(default_factory=list, max_length=20,
                                       description="Lessons worth remembering.")


class TaskOutcomeOutput(TaskOutcome):
    def as_text(self) -> str:
        m = self.memory
        return (f'Task {self.task.id} "{self.task.name}" {self.task.status}. Remembered as '
                f"{m.memory_id} ({m.decision}): {m.memory.content}")


@operation(
    "task_complete",
    title="End a task",
    input=TaskCompleteInput,
    output=TaskOutcomeOutput,
    scope="write",
    tools=("task_complete",),
)
def task_complete(engine: Engine, data: TaskCompleteInput, caller: Caller) -> TaskOutcomeOutput:
    """End a task as completed (or failed) with its outcome and what was learned. A memory of
    the task — what was done, decided and learned — is stored through smart ingest, so later
    searches find it."""
    outcome = engine.tasks.complete(data.id, status=data.status, outcome=data.outcome,
                                    learned=data.learned)
    return TaskOutcomeOutput.model_validate(dict(outcome))
