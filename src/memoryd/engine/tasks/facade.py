"""``engine.tasks``: task memory (a long-running task, its plan, its messages, its
outcome) and intentions (what to do at a time, in a context or on an event).

Each method validates its arguments and hands the acting context to a procedure of
:mod:`memoryd.engine.tasks.lifecycle` or :mod:`memoryd.engine.tasks.intentions`; a task's
report lists its smart waits (``engine.waits``).

    >>> task = mem.tasks.register("Release 2.0", ["freeze", "build", "publish"])
    >>> mem.tasks.update(task.id, message="Decided to skip the beta", step_done=1)
"""

from __future__ import annotations

from typing import Any, Mapping

from memoryd.engine.context import EngineContext, work_context
from memoryd.engine.tasks import intentions
from memoryd.engine.tasks import lifecycle
from memoryd.engine.waits.facade import Waits
from memoryd.llm import ChatClient
from memoryd.models import Intention, IntentionTrigger, Task, TaskOutcome, TaskReport


class Tasks:
    """Task memory and intentions of one engine, as its caller sees them."""

    def __init__(self, ctx: EngineContext, chat: ChatClient | None, waits: Waits) -> None:
        self._ctx = ctx
        self._chat = chat
        self._waits = waits

    # --- task memory -------------------------------------------------------
    def register(self, name: str, plan: list[str] | None = None, *, scope: str | None = None,
                 metadata: Mapping[str, Any] | None = None) -> Task:
        """Start remembering a long-running task and its plan (a checklist, in order).

        >>> task = mem.tasks.register("Release 2.0", ["freeze", "build", "publish"])
        """
        return lifecycle.register_task(work_context(self._ctx), {
            "name": name, "plan": list(plan or []), "scope": scope,
            "metadata": dict(metadata or {})})

    def update(self, task_id: str, *, message: str | None = None, kind: str | None = None,
               step_done: int | None = None, add_steps: list[str] | None = None,
               status: str | None = None) -> TaskReport:
        """Record progress: a message (its kind — note, progress, decision, blocker — is
        guessed when not given), a plan step done (1-based), new steps, pause or resume.

        >>> mem.tasks.update(task.id, message="Decided to skip the beta", step_done=1)
        """
        report = lifecycle.update_task(work_context(self._ctx), task_id, message=message,
                                   kind=kind, step_done=step_done, add_steps=add_steps,
                                   status=status, chat=self._chat)
        return self._with_waits(report)

    def get(self, task_id: str, *, refresh: bool = False) -> TaskReport:
        """Where a task stands: the step it is on, what blocks it, what was decided, its
        running summary (``refresh`` writes a new one now) and recent messages."""
        return self._with_waits(lifecycle.report(work_context(self._ctx), task_id,
                                             refresh=refresh, chat=self._chat))

    def list(self, status: str | None = None, *, limit: int = 50) -> list[Task]:
        """Tasks, most recently updated first (default the open ones: active and paused)."""
        return lifecycle.list_tasks(work_context(self._ctx), status, limit)

    def complete(self, task_id: str, *, status: str = "completed", outcome: str | None = None,
                 learned: list[str] | None = None) -> TaskOutcome:
        """End a task (completed or failed); a memory of what was done and learned is
        stored through smart ingest."""
        return lifecycle.complete_task(work_context(self._ctx), task_id, status=status,
                                   outcome=outcome, learned=learned, chat=self._chat)

    def _with_waits(self, report: TaskReport) -> TaskReport:
        waits = self._waits.list(task_id=report.task.id, limit=10)
        return report.model_copy(update={"waits": waits}) if waits else report

    # --- intentions --------------------------------------------------------
    def set_intention(self, description: str, trigger: IntentionTrigger | Mapping[str, Any],
                      **kwargs: Any) -> Intention:
        """Remember to do something at a time, in a context or on an event."""
        return intentions.set_intention(self._ctx, description, trigger, **kwargs)

    def check_intentions(self, context: Mapping[str, Any] | None = None) -> list[Intention]:
        """Intentions due now or matching the context (codebase, files, topic, text, event)."""
        return intentions.check_intentions(self._ctx, context)

    def update_intention(self, intention_id: str, status: str, *,
                         snooze_minutes: float | None = None) -> Intention:
        """Complete, snooze or cancel an intention."""
        return intentions.update_intention(self._ctx, intention_id,
                                           status,  # type: ignore[arg-type]
                                           snooze_minutes=snooze_minutes)

    def list_intentions(self, status: str | None = None) -> list[Intention]:
        """Intentions by status (default: active and snoozed)."""
        return intentions.list_intentions(self._ctx, status)
