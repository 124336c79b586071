"""The Engine's methods for work in progress: task memory and smart waits.

A mixin of :class:`~memoryd.engine.Engine` (split out to keep each file to one concept);
each method validates its arguments and hands the acting context to a procedure of
:mod:`memoryd.engine.tasks` or to the engine's :class:`~memoryd.engine.waits.WaitService`.
"""

from __future__ import annotations

from typing import Any, Mapping

from memoryd.engine import tasks
from memoryd.engine.context import EngineContext
from memoryd.engine.wait_jobs import info
from memoryd.engine.waits import WaitService
from memoryd.errors import Forbidden
from memoryd.llm import ChatClient
from memoryd.models import Task, TaskOutcome, TaskReport, WaitInfo


class WorkMethods:
    """Tasks and waits on the facade."""

    _ctx: EngineContext
    _chat: ChatClient | None
    _waits: WaitService

    @property
    def _work_ctx(self) -> EngineContext:
        # Tasks and waits carry a scope and an agent but no domains: a key limited to
        # domains would see every task and wait of its scope, so it gets none.
        if self._ctx.access.domains is not None:
            raise Forbidden("task memory and smart waits are not available to a key limited "
                            "to domains")
        return self._ctx

    # --- task memory -------------------------------------------------------
    def register_task(self, name: str, plan: list[str] | None = None, *,
                      scope: str | None = None,
                      metadata: Mapping[str, Any] | None = None) -> Task:
        """Start remembering a long-running task and its plan (a checklist, in order).

        >>> task = mem.register_task("Release 2.0", ["freeze", "build", "publish"])
        """
        return tasks.register_task(self._work_ctx, {"name": name, "plan": list(plan or []),
                                               "scope": scope, "metadata": dict(metadata or {})})

    def update_task(self, task_id: str, *, message: str | None = None, kind: str | None = None,
                    step_done: int | None = None, add_steps: list[str] | None = None,
                    status: str | None = None) -> TaskReport:
        """Record progress: a message (its kind — note, progress, decision, blocker — is
        guessed when not given), a plan step done (1-based), new steps, pause or resume.

        >>> mem.update_task(task.id, message="Decided to skip the beta", step_done=1)
        """
        report = tasks.update_task(self._work_ctx, task_id, message=message, kind=kind,
                                   step_done=step_done, add_steps=add_steps, status=status,
                                   chat=self._chat)
        return self._with_waits(report)

    def get_task(self, task_id: str, *, refresh: bool = False) -> TaskReport:
        """Where a task stands: the step it is on, what blocks it, what was decided, its
        running summary (``refresh`` writes a new one now) and recent messages."""
        return self._with_waits(tasks.report(self._work_ctx, task_id, refresh=refresh,
                                             chat=self._chat))

    def list_tasks(self, status: str | None = None, *, limit: int = 50) -> list[Task]:
        """Tasks, most recently updated first (default the open ones: active and paused)."""
        return tasks.list_tasks(self._work_ctx, status, limit)

    def complete_task(self, task_id: str, *, status: str = "completed",
                      outcome: str | None = None,
                      learned: list[str] | None = None) -> TaskOutcome:
        """End a task (completed or failed); a memory of what was done and learned is
        stored through smart ingest."""
        return tasks.complete_task(self._work_ctx, task_id, status=status, outcome=outcome,
                                   learned=learned, chat=self._chat)

    def _with_waits(self, report: TaskReport) -> TaskReport:
        waits = self.list_waits(task_id=report.task.id, limit=10)
        return report.model_copy(update={"waits": waits}) if waits else report

    # --- smart waits -------------------------------------------------------
    def start_waits(self) -> bool:
        """Run this host's smart waits in this process (``memoryd serve`` does), resuming
        the ones that were watching; when another process runs them, stand by and take
        over when it stops. Returns whether this process runs them now."""
        return self._waits.start()

    @property
    def waits_running(self) -> bool:
        """Whether this process runs the host's waits."""
        return self._waits.running

    def smart_wait(self, target: str, criteria: str | Mapping[str, Any], timeout_s: float, *,
                   task_id: str | None = None,
                   wake: Mapping[str, Any] | None = None) -> WaitInfo:
        """Watch a file, terminal, process, URL or window until ``criteria`` holds; returns
        at once with the job (see docs/waits.md for targets and criteria).

        >>> job = mem.smart_wait("file:~/proj/build.log", "/BUILD (OK|FAILED)/", 1800)
        >>> mem.wait_status(job.id, block_s=30).status
        'resolved'
        """
        return info(self._waits.submit(self._work_ctx, target, criteria, timeout_s,
                                       task_id=task_id, wake=wake))

    def wait_status(self, wait_id: str, block_s: float = 0.0) -> WaitInfo:
        """A wait; with ``block_s`` > 0, wait up to that long (at most 300 s) for it to end."""
        return info(self._waits.status(self._work_ctx, wait_id, block_s))

    def list_waits(self, status: str | None = None, *, task_id: str | None = None,
                   limit: int = 50) -> list[WaitInfo]:
        """Waits, newest first, optionally of one status or one task."""
        return [info(j) for j in self._waits.list(self._work_ctx, status, task_id=task_id,
                                                   limit=limit)]

    def cancel_wait(self, wait_id: str) -> WaitInfo:
        """Stop a wait (a wait that already ended is returned as it is)."""
        return info(self._waits.cancel(self._work_ctx, wait_id))
