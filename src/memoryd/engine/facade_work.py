"""``engine.tasks`` and ``engine.waits``: work in progress.

``engine.tasks`` is task memory (a long-running task, its plan, its messages, its outcome)
and intentions (what to do at a time, in a context or on an event); ``engine.waits`` is
smart waits (watch a file, terminal, process, URL or window until something holds). Each
method validates its arguments and hands the acting context to a procedure of
:mod:`memoryd.engine.tasks` or :mod:`memoryd.engine.intentions`, or to the engine's
:class:`~memoryd.engine.waits.WaitService`.
"""

from __future__ import annotations

from typing import Any, Mapping

from memoryd.engine import intentions, tasks
from memoryd.engine.context import EngineContext
from memoryd.engine.wait_jobs import info
from memoryd.engine.waits import WaitService
from memoryd.errors import Forbidden
from memoryd.llm import ChatClient
from memoryd.models import (
    Intention,
    IntentionTrigger,
    Task,
    TaskOutcome,
    TaskReport,
    WaitInfo,
)


def work_context(ctx: EngineContext) -> EngineContext:
    """``ctx``, unless its caller is limited to domains: tasks and waits carry a scope and an
    agent but no domains, so such a key would see every task and wait of its scope."""
    if ctx.access.domains is not None:
        raise Forbidden("task memory and smart waits are not available to a key limited "
                        "to domains")
    return ctx


class Waits:
    """The smart waits of one engine, as its caller sees them."""

    def __init__(self, ctx: EngineContext, service: WaitService) -> None:
        self._ctx = ctx
        self._service = service

    def start(self) -> bool:
        """Run this host's smart waits in this process (``memoryd serve`` does), resuming
        the ones that were watching; when another process runs them, stand by and take
        over when it stops. Returns whether this process runs them now."""
        return self._service.start()

    @property
    def running(self) -> bool:
        """Whether this process runs the host's waits."""
        return self._service.running

    def watch(self, target: str, criteria: str | Mapping[str, Any], timeout_s: float, *,
              task_id: str | None = None, wake: Mapping[str, Any] | None = None) -> WaitInfo:
        """Watch a file, terminal, process, URL or window until ``criteria`` holds; returns
        at once with the job (see docs/waits.md for targets and criteria).

        >>> job = mem.waits.watch("file:~/proj/build.log", "/BUILD (OK|FAILED)/", 1800)
        >>> mem.waits.status(job.id, block_s=30).status
        'resolved'
        """
        return info(self._service.submit(work_context(self._ctx), target, criteria, timeout_s,
                                         task_id=task_id, wake=wake))

    def status(self, wait_id: str, block_s: float = 0.0) -> WaitInfo:
        """A wait; with ``block_s`` > 0, wait up to that long (at most 300 s) for it to end."""
        return info(self._service.status(work_context(self._ctx), wait_id, block_s))

    def list(self, status: str | None = None, *, task_id: str | None = None,
             limit: int = 50) -> list[WaitInfo]:
        """Waits, newest first, optionally of one status or one task."""
        return [info(j) for j in self._service.list(work_context(self._ctx), status,
                                                     task_id=task_id, limit=limit)]

    def cancel(self, wait_id: str) -> WaitInfo:
        """Stop a wait (a wait that already ended is returned as it is)."""
        return info(self._service.cancel(work_context(self._ctx), wait_id))


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
        return tasks.register_task(work_context(self._ctx), {
            "name": name, "plan": list(plan or []), "scope": scope,
            "metadata": dict(metadata or {})})

    def update(self, task_id: str, *, message: str | None = None, kind: str | None = None,
               step_done: int | None = None, add_steps: list[str] | None = None,
               status: str | None = None) -> TaskReport:
        """Record progress: a message (its kind — note, progress, decision, blocker — is
        guessed when not given), a plan step done (1-based), new steps, pause or resume.

        >>> mem.tasks.update(task.id, message="Decided to skip the beta", step_done=1)
        """
        report = tasks.update_task(work_context(self._ctx), task_id, message=message,
                                   kind=kind, step_done=step_done, add_steps=add_steps,
                                   status=status, chat=self._chat)
        return self._with_waits(report)

    def get(self, task_id: str, *, refresh: bool = False) -> TaskReport:
        """Where a task stands: the step it is on, what blocks it, what was decided, its
        running summary (``refresh`` writes a new one now) and recent messages."""
        return self._with_waits(tasks.report(work_context(self._ctx), task_id,
                                             refresh=refresh, chat=self._chat))

    def list(self, status: str | None = None, *, limit: int = 50) -> list[Task]:
        """Tasks, most recently updated first (default the open ones: active and paused)."""
        return tasks.list_tasks(work_context(self._ctx), status, limit)

    def complete(self, task_id: str, *, status: str = "completed", outcome: str | None = None,
                 learned: list[str] | None = None) -> TaskOutcome:
        """End a task (completed or failed); a memory of what was done and learned is
        stored through smart ingest."""
        return tasks.complete_task(work_context(self._ctx), task_id, status=status,
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
        return intentions.update_intention(
            self._ctx, intention_id, status, snooze_minutes=snooze_minutes)  # type: ignore[arg-type]

    def list_intentions(self, status: str | None = None) -> list[Intention]:
        """Intentions by status (default: active and snoozed)."""
        return intentions.list_intentions(self._ctx, status)
