"""Task memory: long-running tasks with a plan, a message history and a running summary.

A task belongs to the scope and agent of whoever registered it; a caller bound to a scope
or an agent sees and changes only its own (any other id is "not found", so nothing leaks).
Every text a task keeps — its name, plan steps, metadata and messages — passes the secret
screen first. Where a task stands is computed from the plan and the messages
(:mod:`memoryd.tasks`); the summary is refreshed every ``task_summary_every`` messages
(:mod:`memoryd.engine.tasks.summary`). Ending a task leaves a memory through smart ingest.
"""

from __future__ import annotations

import uuid
from typing import Any, Mapping

from pydantic import ValidationError

from memoryd.engine.admin.keys import bound_agents
from memoryd.engine.checks import screen_fields
from memoryd.engine.context import EngineContext
from memoryd.engine.memory.ingest import ingest_many
from memoryd.engine.tasks.summary import latest_summary, refresh_summary
from memoryd.errors import Conflict, Forbidden, InvalidInput, TaskNotFound, validation_message
from memoryd.llm import ChatClient
from memoryd.models import (
    MESSAGE_KINDS,
    TASK_STATUSES,
    PlanStep,
    Task,
    TaskFields,
    TaskMessage,
    TaskOutcome,
    TaskReport,
)
from memoryd.tasks import classify_message, digest, outcome_text

ENDED = ("completed", "failed")
HISTORY = 100  # messages read to find open blockers and the recent ones
DECISIONS = 10


def visible(ctx: EngineContext, task: Task) -> bool:
    """Whether the acting caller may see (and change) ``task``."""
    access = ctx.access
    return (access.scope is None or task.scope == access.scope) and (
        access.agent_id is None or task.agent_id == access.agent_id)


def get_task(ctx: EngineContext, task_id: str) -> Task:
    """A task the caller may see; TaskNotFound otherwise."""
    task = ctx.store.work.get_task(task_id) if isinstance(task_id, str) else None
    if task is None or not visible(ctx, task):
        raise TaskNotFound(str(task_id))
    return task


def register_task(ctx: EngineContext, fields: TaskFields | Mapping[str, Any]) -> Task:
    """Record a new active task with its plan; returns it (id ``t_`` + 12 hex digits)."""
    try:
        given = fields if isinstance(fields, TaskFields) else TaskFields.model_validate(
            dict(fields))
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc)) from exc
    bound = ctx.access.scope
    if bound is not None and given.scope not in (None, bound):
        raise Forbidden(f"this key may only register tasks in scope {bound!r}")
    ctx.check_writes_to(bound or given.scope or "user")
    texts = screen_fields(ctx, {"name": given.name, "plan": given.plan,
                                "metadata": given.metadata}, False)
    now = ctx.clock()
    task = Task(id="t_" + uuid.uuid4().hex[:12], name=texts["name"].strip(),
                plan=[PlanStep(text=step.strip()) for step in texts["plan"]],
                created_at=now, updated_at=now,
                agent_id=ctx.access.agent_id or ctx.actor.agent_id,
                scope=bound or given.scope or "user", metadata=texts["metadata"])
    if any(not step.text for step in task.plan) or not task.name:
        raise InvalidInput("the name and every plan step need some text")
    ctx.store.work.save_task(task)
    return task


def _message(task: Task, content: str, kind: str | None, role: str, ctx: EngineContext,
             **metadata: Any) -> TaskMessage:
    return TaskMessage(task_id=task.id, role=role, kind=kind or classify_message(content),  # type: ignore[arg-type]
                       content=content, created_at=ctx.clock(), metadata=metadata)


def _check_update(task: Task, message: str | None, kind: str | None, step_done: int | None,
                  add_steps: list[str], status: str | None) -> None:
    if task.status in ENDED:
        raise Conflict(f"task {task.id} already ended ({task.status}); register a new one")
    if message is None and step_done is None and not add_steps and status is None:
        raise InvalidInput("nothing to update: give message, step_done, add_steps or status")
    if kind is not None and kind not in MESSAGE_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(MESSAGE_KINDS)}")
    if status in ENDED:
        raise InvalidInput("end a task with task_complete (it leaves a memory of the task)")
    if status is not None and status not in TASK_STATUSES:
        raise InvalidInput("status must be active or paused")
    steps = len(task.plan) + len(add_steps)
    if step_done is not None and not (isinstance(step_done, int) and 1 <= step_done <= steps):
        raise InvalidInput("step_done: this task has no plan steps (add_steps adds some)"
                           if steps == 0 else
                           f"step_done must be a step number from 1 to {steps}")


def update_task(ctx: EngineContext, task_id: str, *, message: str | None = None,
                kind: str | None = None, step_done: int | None = None,
                add_steps: list[str] | None = None, status: str | None = None,
                chat: ChatClient | None = None) -> TaskReport:
    """Add a message, check off a plan step (1-based, counted after ``add_steps``), add
    steps, or pause/resume; returns where the task stands. Every ``task_summary_every``
    messages the running summary is refreshed."""
    task = get_task(ctx, task_id)
    add_steps = list(add_steps or [])
    _check_update(task, message, kind, step_done, add_steps, status)
    texts = screen_fields(ctx, {"message": message, "add_steps": add_steps}, False)
    plan = task.plan + [PlanStep(text=" ".join(s.split())) for s in texts["add_steps"]]
    if any(not step.text for step in plan):
        raise InvalidInput("every plan step needs some text")
    news: list[TaskMessage] = []
    if texts["message"] is not None:
        if not texts["message"].strip():
            raise InvalidInput("message is empty")
        news.append(_message(task, texts["message"].strip(), kind, "agent", ctx))
    now = ctx.clock()
    if step_done is not None and not plan[step_done - 1].done:
        plan[step_done - 1] = PlanStep(text=plan[step_done - 1].text, done=True, done_at=now)
        news.append(_message(task, f"Step {step_done} done: {plan[step_done - 1].text}",
                             "progress", "system", ctx, step=step_done))
    if status is not None and status != task.status:
        news.append(_message(task, "Task resumed" if status == "active" else "Task paused",
                             "note", "system", ctx, status=status))
    task = task.model_copy(update={"plan": plan, "status": status or task.status,
                                   "updated_at": now})
    with ctx.store.transaction():
        ctx.store.work.save_task(task)
        for item in news:
            ctx.store.work.add_task_message(item)
    refresh_summary(ctx, task, chat, force=False)
    return report(ctx, task.id)


def report(ctx: EngineContext, task_id: str, *, refresh: bool = False,
           chat: ChatClient | None = None) -> TaskReport:
    """Where a task stands: its step, open blockers, decisions, summary and recent messages.
    ``refresh`` distills a new summary first (on demand)."""
    task = get_task(ctx, task_id)
    if refresh:
        refresh_summary(ctx, task, chat, force=True)
    store = ctx.store
    history = store.work.task_messages(task.id, roles=["agent", "system"], limit=HISTORY)
    decisions = store.work.task_messages(task.id, roles=["agent", "system"], kinds=["decision"],
                                    limit=DECISIONS)
    d = digest(task, history, decisions)
    return TaskReport(task=task, progress=d.progress, current_step=d.current_step,
                      next_steps=d.next_steps, blockers=d.blockers, decisions=d.decisions,
                      summary=latest_summary(ctx, task.id), recent=d.recent)


def list_tasks(ctx: EngineContext, status: str | None = None, limit: int = 50) -> list[Task]:
    """The caller's tasks, most recently updated first (``status``: one status, ``open``
    for active and paused, or ``all``; default ``open``)."""
    if status not in (None, "open", "all", *TASK_STATUSES):
        raise InvalidInput(f"status must be open, all or one of {', '.join(TASK_STATUSES)}")
    if not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidInput("limit must be between 1 and 1000")
    statuses = (None if status == "all" else ["active", "paused"] if status in (None, "open")
                else [status])
    return ctx.store.work.list_tasks(statuses=statuses, scope=ctx.access.scope,
                                agent_id=ctx.access.agent_id, limit=limit)


def complete_task(ctx: EngineContext, task_id: str, *, status: str = "completed",
                  outcome: str | None = None, learned: list[str] | None = None,
                  chat: ChatClient | None = None) -> TaskOutcome:
    """End a task (``completed`` or ``failed``) and leave a memory of it through smart
    ingest: what was done, what was decided, what was learned."""
    task = get_task(ctx, task_id)
    if status not in ENDED:
        raise InvalidInput("status must be completed or failed")
    if task.status in ENDED:
        raise Conflict(f"task {task.id} already ended ({task.status})")
    _check_not_blank(outcome, list(learned or []))
    texts = screen_fields(ctx, {"outcome": outcome, "learned": list(learned or [])}, False)
    now = ctx.clock()
    task = task.model_copy(update={"status": status, "updated_at": now})
    note = f"Task {status}" + (f": {texts['outcome']}" if texts["outcome"] else "")
    decisions = ctx.store.work.task_messages(task.id, roles=["agent", "system"],
                                        kinds=["decision"], limit=DECISIONS)
    content = outcome_text(task, texts["outcome"], texts["learned"], decisions)
    [result] = ingest_many(ctx, [{
        "content": content, "node_type": "task", "category": f"task.{status}",
        "tags": ["task", status], "source": f"task:{task.id}", "scope": task.scope,
        "agent_id": _writer_for(ctx, task),
        "metadata": {"task_id": task.id, "status": status, "name": task.name,
                     "steps_done": task.steps_done, "steps": len(task.plan)},
    }])
    task = task.model_copy(update={"memory_id": result.memory_id})
    with ctx.store.transaction():
        ctx.store.work.save_task(task)
        ctx.store.work.add_task_message(_message(task, note, "progress", "system", ctx,
                                            memory_id=result.memory_id))
    summary = refresh_summary(ctx, task, chat, force=True)
    return TaskOutcome(task=task, memory=result, summary=summary.content if summary else "")


def _check_not_blank(outcome: str | None, learned: list[str]) -> None:
    """InvalidInput for a blank outcome or lesson: the task's memory would read
    'completed: . Learned: ;.'."""
    blank = [("outcome", outcome)] if outcome is not None and not outcome.strip() else []
    blank += [(f"learned.{i}", text) for i, text in enumerate(learned) if not text.strip()]
    if blank:
        raise InvalidInput(f"{blank[0][0]}: is blank: say what was done or learned, or leave "
                           "it out")


def _writer_for(ctx: EngineContext, task: Task) -> str | None:
    """The agent the memory of ``task`` is written as: the task's, unless that agent has a key
    of its own and the caller is not it (only that key writes in its name, as with
    X-Agent-Id); then the caller's own (None: the acting agent, stamped on write)."""
    agent = task.agent_id
    if agent is None or agent in (ctx.actor.agent_id, ctx.access.agent_id):
        return agent
    return None if agent in bound_agents(ctx) else agent


def add_system_message(ctx: EngineContext, task_id: str, content: str, **metadata: Any) -> None:
    """Record something the system saw on a task (a wait that ended); no-op for a task that
    no longer exists."""
    task = ctx.store.work.get_task(task_id)
    if task is not None:
        ctx.store.work.add_task_message(_message(task, content, None, "system", ctx, **metadata))
