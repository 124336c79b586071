"""Where a task stands, from its plan and messages: "what step am I on, what is blocking,
what was decided".

* the step: the first plan step not checked off (the plan is a checklist, in order);
* blocking: blocker messages added after the task last moved on — a step checked off or
  a progress message — so a blocker is open until something moves the task forward;
* decided: every decision message, newest first.

>>> from datetime import datetime, timezone
>>> now = datetime(2025, 1, 1, tzinfo=timezone.utc)
>>> t = Task(id="t_1", name="Ship", created_at=now, updated_at=now,
...          plan=[PlanStep(text="build", done=True), PlanStep(text="deploy")])
>>> digest(t, []).current_step
'deploy'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memoryd.models import PlanStep, Task, TaskMessage

RECENT = 10
MAX_DECISIONS = 10
NEXT_STEPS = 3


@dataclass(frozen=True)
class Digest:
    """Where a task stands; message lists are newest first."""

    progress: str
    current_index: int | None
    current_step: str | None
    next_steps: list[str]
    blockers: list[TaskMessage] = field(default_factory=list)
    decisions: list[TaskMessage] = field(default_factory=list)
    recent: list[TaskMessage] = field(default_factory=list)


def progress_text(plan: list[PlanStep]) -> str:
    """``'2 of 5 steps done'`` (or ``'no plan'``)."""
    if not plan:
        return "no plan"
    done = sum(1 for step in plan if step.done)
    return f"{done} of {len(plan)} step{'s' if len(plan) != 1 else ''} done"


def open_blockers(messages: list[TaskMessage]) -> list[TaskMessage]:
    """Blockers newer than the latest progress message, newest first (``messages`` newest
    first, agent and system messages)."""
    out: list[TaskMessage] = []
    for message in messages:
        if message.kind == "progress":
            break
        if message.kind == "blocker":
            out.append(message)
    return out


def digest(task: Task, messages: list[TaskMessage],
           decisions: list[TaskMessage] | None = None) -> Digest:
    """Where ``task`` stands. ``messages``: its latest agent and system messages, newest
    first; ``decisions``: its decision messages if fetched apart (else taken from
    ``messages``)."""
    index = task.current_step
    current = task.plan[index].text if index is not None else None
    upcoming = task.plan[index + 1:] if index is not None else []
    chosen = decisions if decisions is not None else [m for m in messages
                                                      if m.kind == "decision"]
    return Digest(
        progress=progress_text(task.plan),
        current_index=index,
        current_step=current,
        next_steps=[s.text for s in upcoming if not s.done][:NEXT_STEPS],
        blockers=open_blockers(messages),
        decisions=chosen[:MAX_DECISIONS],
        recent=[m for m in messages if m.role != "distilled"][:RECENT],
    )
