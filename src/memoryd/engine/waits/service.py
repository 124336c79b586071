"""Smart waits in the engine: one scheduler per host runs them, every process can use them.

The process that holds the host's wait lock (``maintenance_lock("waits@<runner>")``) is
the **runner**: its :class:`~memoryd.waits.WaitScheduler` watches every job of this host,
persisted in the store's ``wait_jobs`` table, and resumes the jobs that were watching when
it starts. ``memoryd serve`` (and ``memoryd mcp`` when no server runs) calls
:meth:`WaitService.start`; a process that finds the lock taken stands by and takes over
when the runner stops.

Any other process (the CLI, a second MCP server) is a **client**: ``submit`` checks the
request the same way and records the job as watching; the runner adopts it within a
second (a store sync on its loop), and cancels jobs that a client cancelled. Status and
lists read the store; long-polls wait on the scheduler's condition in the runner and poll
the store elsewhere. At most ``wait_max_blocking`` long-polls block at once (faces run
them in a thread pool that REST requests share); the others answer at once.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memoryd.engine.checks import screen_fields
from memoryd.engine.context import EngineContext
from memoryd.engine.tasks import lifecycle
from memoryd.engine.waits.jobs import FINAL_NOTES, StoreJobs, owner_of, runner_name, visible
from memoryd.errors import InvalidInput
from memoryd.store.base import Actor

if TYPE_CHECKING:  # the watcher layer loads when waits are first used
    from memoryd.engine.waits.activity import ActivityRecorder
    from memoryd.waits import WaitJob, WaitPolicy, WaitScheduler

log = logging.getLogger("memoryd.waits")

SYNC_S = 1.0  # how often the runner looks for jobs other processes recorded or cancelled
STANDBY_S = 5.0  # how often a standing-by process tries to become the runner
POLL_S = 0.5  # store polling of a long-poll outside the runner
MAX_BLOCK_S = 300.0


class WaitsNotRunning(InvalidInput):
    """No memoryd process on this host runs waits, so a new wait would never be watched."""


class WaitService:
    """The waits of one engine (see the module docstring)."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx.acting(Actor("waits"))
        self.runner = runner_name(ctx.settings)
        self._scheduler: WaitScheduler | None = None
        self._lock_cm: AbstractContextManager[bool] | None = None
        self._activity: ActivityRecorder | None = None
        self._jobs: StoreJobs | None = None
        self._policy: WaitPolicy | None = None
        self._standby: threading.Thread | None = None
        self._stopping = threading.Event()
        self._mutex = threading.Lock()
        self._blocking = threading.BoundedSemaphore(ctx.settings.wait_max_blocking)
        self._synced = time.time()

    # ------------------------------------------------------------------ lifecycle
    @property
    def running(self) -> bool:
        """Whether this process runs the host's waits now."""
        return self._scheduler is not None

    @property
    def policy(self) -> WaitPolicy:
        """What waits may watch (from the settings)."""
        if self._policy is None:
            from memoryd.engine.waits.setup import wait_policy

            self._policy = wait_policy(self._ctx.settings)
        return self._policy

    def start(self) -> bool:
        """Run this host's waits here, or stand by while another process does; True when
        this process is the runner now."""
        if self.running or self._try_to_run():
            return True
        if self._standby is None:
            self._standby = threading.Thread(target=self._stand_by, name="memoryd-waits-standby",
                                             daemon=True)
            self._standby.start()
        return False

    def _lock(self) -> AbstractContextManager[bool]:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.runner)
        return self._ctx.store.maintenance_lock(f"waits@{name}")

    def _try_to_run(self) -> bool:
        lock = self._lock()
        if not lock.__enter__():
            lock.__exit__(None, None, None)
            return False
        try:
            scheduler = self._build_scheduler()
        except BaseException:
            lock.__exit__(None, None, None)
            raise
        with self._mutex:
            stopped = self._stopping.is_set()
            if not stopped:
                self._scheduler, self._lock_cm = scheduler, lock
        if stopped:  # closed while the scheduler was being built
            scheduler.close()
            if self._activity is not None:
                self._activity.close()
            lock.__exit__(None, None, None)
            return False
        return True

    def _build_scheduler(self) -> WaitScheduler:
        from memoryd.engine.waits.activity import ActivityRecorder
        from memoryd.engine.waits.setup import activity_settings, frame_judge, wake_dispatcher
        from memoryd.waits import WaitScheduler, WatcherKit
        from memoryd.waits.activity import ActivityMonitor

        settings = self._ctx.settings
        jobs = self._jobs = StoreJobs(self._ctx, self.runner, self._ended)
        scheduler = WaitScheduler(policy=self.policy, jobs=jobs, kit=WatcherKit(self.policy),
                                  judge=frame_judge(settings), wake=wake_dispatcher(settings))
        scheduler.start()
        self._synced = time.time()
        scheduler.add_periodic("store-sync", self._sync, SYNC_S)
        monitor = ActivityMonitor(activity_settings(settings), sink=lambda event: None)
        if monitor.sources:
            self._activity = ActivityRecorder(self._ctx.acting(Actor("activity")))
            monitor.sink = self._activity.submit
            monitor.attach(scheduler)
        return scheduler

    def _stand_by(self) -> None:
        while not self._stopping.wait(STANDBY_S):
            try:
                if self._try_to_run():
                    return
            except Exception as exc:  # noqa: BLE001 - a store hiccup: try again at the next tick
                log.warning("could not take over the waits of %s: %s", self.runner, exc)

    def close(self) -> None:
        """Stop the scheduler (watching jobs keep their status and cursor for the next
        runner) and release the host's wait lock."""
        self._stopping.set()
        with self._mutex:
            scheduler, lock = self._scheduler, self._lock_cm
            self._scheduler = self._lock_cm = None
        if scheduler is not None:
            scheduler.close()
        if self._activity is not None:
            self._activity.close()
        if lock is not None:
            lock.__exit__(None, None, None)

    # ------------------------------------------------------------------ runner callbacks
    def _ended(self, job: WaitJob) -> None:
        if job.task_id and job.status.value in FINAL_NOTES:
            from memoryd.waits import wake_message

            lifecycle.add_system_message(self._ctx, job.task_id, wake_message(job),
                                           wait_id=job.id, status=job.status.value)

    def _sync(self) -> None:
        """Adopt jobs other processes recorded for this host; stop those they cancelled;
        write again what the store could not take. A failing store is retried next time."""
        try:
            self._sync_once()
        except Exception as exc:  # noqa: BLE001 - the wait loop must outlive a store hiccup
            log.warning("wait store sync failed (will retry): %s", exc)

    def _sync_once(self) -> None:
        from memoryd.waits import WaitJob

        scheduler, jobs = self._scheduler, self._jobs
        if scheduler is None or jobs is None:
            return
        jobs.flush()
        since, self._synced = self._synced - 5.0, time.time()
        for row in self._ctx.store.work.list_wait_jobs(runner=self.runner, updated_after=since,
                                                  limit=10_000):
            local = scheduler.get(row["id"])
            if row["status"] == "watching" and local is None:
                scheduler.adopt(WaitJob.from_dict(row))
            elif row["status"] != "watching" and local is not None and not local.status.final:
                scheduler.cancel(row["id"])

    # ------------------------------------------------------------------ operations
    def submit(self, ctx: EngineContext, target: str, criteria: str | Mapping[str, Any],
               timeout_s: float, *, task_id: str | None = None,
               wake: Mapping[str, Any] | None = None) -> WaitJob:
        """Start a wait for the acting caller; returns at once. InvalidWait (nothing
        started) for a bad request; TaskNotFound for a task the caller may not see."""
        from memoryd.waits import WaitRequest

        screened = screen_fields(ctx, {"target": target, "criteria": criteria}, False)
        target, criteria = screened["target"], screened["criteria"]
        task = lifecycle.get_task(ctx, task_id) if task_id is not None else None
        owner = owner_of(ctx, self.runner, task.scope if task else None,
                         task.agent_id if task else None)
        scheduler = self._scheduler
        if scheduler is not None:
            return scheduler.submit(WaitRequest(target, criteria, timeout_s, task_id, wake, owner))
        return self._record_for_runner(target, criteria, timeout_s, task_id, wake, owner)

    def _record_for_runner(self, target: str, criteria: Any, timeout_s: Any,
                           task_id: str | None, wake: Mapping[str, Any] | None,
                           owner: dict[str, Any]) -> WaitJob:
        from memoryd.engine.waits.setup import wake_settings
        from memoryd.waits import WaitJob
        from memoryd.waits.validate import check_request, check_wake

        parsed_target, parsed, timeout = check_request(target, criteria, timeout_s, self.policy,
                                                       confined=bool(owner.get("confined")))
        checked_wake = check_wake(wake, wake_settings(self._ctx.settings).routes)
        if self._runner_missing():
            raise WaitsNotRunning("no memoryd process on this host runs waits: start "
                                  "`memoryd serve` (or call Engine.start_waits())")
        watching = self._ctx.store.work.list_wait_jobs(statuses=["watching"], runner=self.runner,
                                                  limit=self.policy.max_watching)
        if len(watching) >= self.policy.max_watching:
            raise InvalidInput(f"target: {self.policy.max_watching} waits are already watching")
        now = time.time()
        job = WaitJob(id="w_" + uuid.uuid4().hex[:12], target=parsed_target.raw,
                      criteria=parsed.to_dict(), timeout_s=timeout, created_at=now,
                      deadline=now + timeout, updated_at=now, task_id=task_id,
                      wake=checked_wake, owner=owner,
                      cursor=self._starting_point(parsed_target, parsed))
        self._ctx.store.work.save_wait_job(job.to_dict())
        return job

    def _starting_point(self, target: Any, criteria: Any) -> dict[str, Any]:
        """Where the runner starts watching a recorded job: for a file, its end now (so
        lines written before the runner adopts the job count) and for a pid, that it
        exists; other targets start, and are checked, when adopted."""
        if target.kind not in ("file", "pid"):
            return {}
        from memoryd.waits import WatcherKit
        from memoryd.waits.watchers import build_watcher

        watcher = build_watcher(target, criteria, WatcherKit(self.policy))
        try:
            return watcher.cursor()
        finally:
            watcher.close(final=False)

    def _runner_missing(self) -> bool:
        lock = self._lock()
        free = lock.__enter__()
        lock.__exit__(None, None, None)
        return bool(free)

    def _find(self, ctx: EngineContext, job_id: str) -> WaitJob:
        from memoryd.waits import WaitJob, WaitNotFound

        scheduler = self._scheduler
        job = scheduler.get(job_id) if scheduler is not None else None
        if job is None:
            row = self._ctx.store.work.get_wait_job(job_id) if isinstance(job_id, str) else None
            job = WaitJob.from_dict(row) if row is not None else None
        if job is None or not visible(ctx, job.owner):
            raise WaitNotFound(str(job_id))
        return job

    def status(self, ctx: EngineContext, job_id: str, block_s: float = 0.0) -> WaitJob:
        """A job the caller may see; with ``block_s`` (at most 300) wait up to that long
        for it to end (when too many long-polls already block, answer at once)."""
        if isinstance(block_s, bool) or not isinstance(block_s, (int, float)) \
                or not 0 <= block_s <= MAX_BLOCK_S:
            raise InvalidInput(f"block_s must be between 0 and {MAX_BLOCK_S:g} seconds")
        job = self._find(ctx, job_id)
        if job.status.final or block_s <= 0 or not self._blocking.acquire(blocking=False):
            return job
        try:
            scheduler = self._scheduler
            if scheduler is not None and scheduler.get(job.id) is not None:
                return scheduler.status(job.id, block_s)
            deadline = time.monotonic() + block_s
            while not job.status.final and time.monotonic() < deadline:
                time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
                job = self._find(ctx, job.id)
            return job
        finally:
            self._blocking.release()

    def list(self, ctx: EngineContext, status: str | None = None, *, task_id: str | None = None,
             limit: int = 50) -> list[WaitJob]:
        """The caller's jobs, newest first (``status``: one status or None for all)."""
        from memoryd.models import WAIT_STATES
        from memoryd.waits import WaitJob

        if status is not None and status not in WAIT_STATES:
            raise InvalidInput(f"status must be one of {', '.join(WAIT_STATES)}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        rows = self._ctx.store.work.list_wait_jobs(
            statuses=[status] if status else None, scope=ctx.access.scope,
            agent_id=ctx.access.agent_id, task_id=task_id, limit=limit)
        scheduler = self._scheduler
        jobs = [WaitJob.from_dict(row) for row in rows]
        # The runner's own copy is fresher (checks and sightings are saved every few seconds).
        fresher = [scheduler.get(j.id) if scheduler is not None else None for j in jobs]
        return [j if f is None or (j.status.final and not f.status.final) else f
                for j, f in zip(jobs, fresher)]

    def cancel(self, ctx: EngineContext, job_id: str) -> WaitJob:
        """Stop a job the caller may see; one that already ended is returned unchanged."""
        job = self._find(ctx, job_id)
        if job.status.final:
            return job
        scheduler = self._scheduler
        if scheduler is not None and scheduler.get(job.id) is not None:
            return scheduler.cancel(job.id)
        from memoryd.waits import WaitStatus

        ended = job.evolve(status=WaitStatus.CANCELLED, result="cancelled",
                           resolved_at=time.time())
        if not self._ctx.store.work.save_wait_job(ended.to_dict()):
            return self._find(ctx, job.id)  # it ended meanwhile: report how
        return ended
