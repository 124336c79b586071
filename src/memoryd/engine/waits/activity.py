"""System activity as memories: each activity episode (a memory spike, swap pressure, a
disk filling, a burst of log errors) is ONE memory of category ``system.*``, created when
the episode opens and updated as it grows and when it closes, so that "why is my system
slow?" finds it.

Episodes come from :mod:`memoryd.waits.activity` on the wait scheduler's thread; they are
written here, through the engine's own writes (embedding, history, ledger), on a worker
thread so that the wait loop never waits for the embedding model. Every text is passed
through the secret scanner and redacted before it is stored.
"""

from __future__ import annotations

import logging
import queue
import threading
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memoryd.cognition import secrets
from memoryd.engine.context import EngineContext
from memoryd.engine.memory import writes
from memoryd.errors import MemorydError, MemoryNotFound
from memoryd.models import Memory

if TYPE_CHECKING:
    from memoryd.waits.activity import ActivityEvent, Episode

log = logging.getLogger("memoryd.activity")

SEVERITY = {"info": "low", "warning": "medium", "error": "high", "critical": "critical"}
IMPORTANCE = {"low": 0.3, "medium": 0.5, "high": 0.7, "critical": 0.9}


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return secrets.redact(value, secrets.scan(value))
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def episode_text(episode: Episode, kind: str) -> str:
    """The memory's content: what happened, since when, for how long, and its peak.

    >>> from memoryd.waits.activity import Episode
    >>> ep = Episode("disk:/", "system.disk", "warning", "disk / 93% full",
    ...              1.75e9, 1.75e9 + 600, {"used_percent": 93.0}, {"used_percent": 94.5}, 61)
    >>> episode_text(ep, "closed")
    'disk / 93% full. From 2025-06-15 15:06 UTC for 10 min (ended); peak used_percent 94.5.'
    """
    peak = ", ".join(f"{name} {value:g}" for name, value in episode.peak.items()
                     if name != "pid")
    span = (f"From {_clock(episode.started_at)} for {_duration(episode.duration_s)}"
            + (" (ended)" if kind == "closed" else " (ongoing)"))
    return f"{episode.summary.rstrip('.')}. {span}" + (f"; peak {peak}." if peak else ".")


def memory_fields(episode: Episode, kind: str, scope: str) -> dict[str, Any]:
    """The fields of the memory of an episode, secrets redacted."""
    severity = SEVERITY.get(episode.severity, "medium")
    parts = episode.category.split(".")
    return _redacted({
        "content": episode_text(episode, kind), "node_type": "event",
        "category": episode.category, "severity": severity,
        "importance": IMPORTANCE[severity], "scope": scope, "source": "memoryd.activity",
        "tags": ["system", parts[1] if len(parts) > 1 else parts[0]],
        "metadata": {"activity": episode.to_dict(), "event": kind},
    })


class ActivityRecorder:
    """Writes activity events as memories on its own thread (one memory per episode)."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx
        self._ids: dict[str, str] = {}
        self._queue: queue.Queue[ActivityEvent | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="memoryd-activity", daemon=True)
        self._thread.start()

    def submit(self, event: ActivityEvent) -> None:
        """Queue an event (called on the wait scheduler's thread)."""
        self._queue.put(event)

    def _run(self) -> None:
        while (event := self._queue.get()) is not None:
            try:
                self.record(event)
            except MemorydError as exc:  # the next event of the episode tries again
                log.warning("could not record system activity %s: %s", event.episode.key, exc)

    def record(self, event: ActivityEvent) -> Memory:
        """Create the episode's memory, or update it; returns the memory as stored."""
        episode = event.episode
        fields = memory_fields(episode, event.kind, self._ctx.settings.activity_scope)
        memory_id = self._ids.get(episode.key)
        memory = None
        if memory_id is not None:
            changes = {k: fields[k] for k in ("content", "severity", "importance", "metadata")}
            try:
                memory = writes.update(self._ctx, memory_id, changes)
            except MemoryNotFound:  # someone deleted it: the episode starts a new memory
                memory = None
        if memory is None:
            memory = writes.add_many(self._ctx, [fields])[0]
        if event.kind == "closed":
            self._ids.pop(episode.key, None)
        else:
            self._ids[episode.key] = memory.id
        return memory

    def close(self) -> None:
        """Write the events already queued, then stop."""
        self._queue.put(None)
        self._thread.join(timeout=60)
