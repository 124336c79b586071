"""``engine.waits``: smart waits — watch a file, terminal, process, URL or window until
something holds (see docs/waits.md).

Each method validates its arguments and hands the acting context to the engine's
:class:`~memoryd.engine.waits.service.WaitService`, which runs this host's waits.

    >>> job = mem.waits.watch("file:~/proj/build.log", "/BUILD (OK|FAILED)/", 1800)
    >>> mem.waits.status(job.id, block_s=30).status
    'resolved'
"""

from __future__ import annotations

from typing import Any, Mapping

from memoryd.engine.context import EngineContext, work_context
from memoryd.engine.waits.jobs import info
from memoryd.engine.waits.service import WaitService
from memoryd.models import WaitInfo


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
