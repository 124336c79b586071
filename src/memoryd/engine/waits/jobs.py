"""Wait jobs between the watcher layer and the store: who owns a job and who may see it,
how a job reads to the faces (:class:`~memoryd.models.WaitInfo`), and the store-backed
persistence of a running scheduler.

A job's ``owner`` is the caller that started it — its actor, key, memory scope and agent
— plus the ``runner``, the host whose memoryd watches it. A caller bound to a scope or an
agent sees and changes only the jobs of its scope/agent (others are "not found").
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memoryd.engine.context import EngineContext
from memoryd.errors import MemorydError
from memoryd.models import WaitInfo

if TYPE_CHECKING:  # the watcher layer loads when waits are first used
    from memoryd.waits import WaitJob

log = logging.getLogger("memoryd.waits")

FINAL_NOTES = ("resolved", "timeout", "error")  # endings worth a line in the task's history


def runner_name(settings: Any) -> str:
    """This host's name for the waits it runs (``wait_runner``, default the host name)."""
    return settings.wait_runner or socket.gethostname()


def owner_of(ctx: EngineContext, runner: str, scope: str | None = None,
             agent_id: str | None = None) -> dict[str, Any]:
    """The owner record of a job started by the acting caller (Forbidden when the caller may
    not write into the scope the job reports to)."""
    actor, access = ctx.actor, ctx.access
    ctx.check_writes_to(access.scope or scope or "user")
    return {"actor": actor.name, "key": actor.key_label, "runner": runner,
            "scope": access.scope or scope or "user",
            "agent_id": access.agent_id or actor.agent_id or agent_id,
            "confined": access.restricted}


def visible(ctx: EngineContext, owner: dict[str, Any]) -> bool:
    """Whether the acting caller may see (and cancel) a job with this owner."""
    access = ctx.access
    return (access.scope is None or owner.get("scope", "user") == access.scope) and (
        access.agent_id is None or owner.get("agent_id") == access.agent_id)


def _dt(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc)


def info(job: WaitJob) -> WaitInfo:
    """How a job reads to the faces: times as datetimes, the latest sighting, one line."""
    from memoryd.waits import wake_message

    last = job.last_observation.seen if job.last_observation else None
    if job.status.final:
        message = wake_message(job)
    else:
        left = max(0, int(job.deadline - time.time()))
        message = (f"[smart_wait] {job.id} watching {job.target} ({job.checks} checks, "
                   f"{left}s left)" + (f'; last seen "{last}"' if last else ""))
    owner = job.owner or {}
    return WaitInfo(
        id=job.id, target=job.target, criteria=job.criteria, timeout_s=job.timeout_s,
        status=job.status.value, created_at=_dt(job.created_at),  # type: ignore[arg-type]
        updated_at=_dt(job.updated_at or job.created_at),  # type: ignore[arg-type]
        deadline=_dt(job.deadline),  # type: ignore[arg-type]
        resolved_at=_dt(job.resolved_at), task_id=job.task_id, result=job.result,
        last_seen=last or None, checks=job.checks, wake=job.wake,
        wake_attempts=[a.__dict__ for a in job.wake_attempts],
        scope=owner.get("scope") or "user", agent_id=owner.get("agent_id"),
        runner=owner.get("runner"), message=message)


class StoreJobs:
    """The JobStore of the scheduler that runs this host's waits: rows of ``wait_jobs``.

    ``load`` returns the jobs of this runner that were watching; ``save`` writes every
    change and calls ``on_end`` once per job when it reaches a final status (the store
    keeps a status another process set first: see ``store.work.save_wait_job``).
    """

    def __init__(self, ctx: EngineContext, runner: str,
                 on_end: Callable[[WaitJob], None] | None = None) -> None:
        self._ctx, self.runner, self._on_end = ctx, runner, on_end
        self._ended: set[str] = set()
        self._unsaved: dict[str, WaitJob] = {}
        self._lock = threading.Lock()

    def load(self) -> list[WaitJob]:
        """The jobs this runner was watching when it stopped."""
        from memoryd.waits import WaitJob

        rows = self._ctx.store.work.list_wait_jobs(statuses=["watching"], runner=self.runner,
                                              limit=100_000)
        return [WaitJob.from_dict(row) for row in rows]

    def save(self, job: WaitJob) -> None:
        """Upsert the job; report its end once. A store that fails (busy, unreachable)
        must not stop the scheduler: the job is kept and written again by :meth:`flush`."""
        try:
            written = self._ctx.store.work.save_wait_job(job.to_dict())
        except MemorydError as exc:
            log.warning("could not save wait %s (will retry): %s", job.id, exc)
            with self._lock:
                self._unsaved[job.id] = job
            return
        with self._lock:
            self._unsaved.pop(job.id, None)
        if not (written and job.status.final and self._on_end is not None):
            return
        with self._lock:
            first = job.id not in self._ended
            self._ended.add(job.id)
        if first:
            self._on_end(job)

    def flush(self) -> None:
        """Write again the jobs a failing store could not take."""
        with self._lock:
            pending = list(self._unsaved.values())
        for job in pending:
            self.save(job)
