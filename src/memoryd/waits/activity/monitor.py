"""The activity monitor: polls the enabled sources on the wait scheduler's thread and
hands episode events to a sink (the engine will store them as ``system.*`` memories,
one memory per episode key, updated as the episode evolves).

Every source is off by default; :class:`ActivitySettings` turns them on one by one::

    monitor = ActivityMonitor(ActivitySettings(disk=True, swap=True), sink=print)
    monitor.attach(scheduler)      # polls every settings.interval_s on the wait loop
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from memoryd.waits.activity.episodes import ActivityEvent, EpisodeTracker
from memoryd.waits.activity.sources import (
    DiskFilling,
    LogErrors,
    ProcessSpikes,
    Reading,
    SwapPressure,
)


class Source(Protocol):
    """Anything that returns threshold-crossing readings when polled."""

    def poll(self) -> list[Reading]:
        """Readings now."""
        ...


@dataclass(frozen=True)
class ActivitySettings:
    """Which sources run and their thresholds (every source off by default)."""

    processes: bool = False
    process_rss_mb: float = 2048.0
    process_cpu_percent: float = 90.0
    swap: bool = False
    swap_percent: float = 80.0
    disk: bool = False
    disk_percent: float = 90.0
    log_files: tuple[str, ...] = ()
    log_pattern: str = r"(?i)\b(error|fatal|panic|exception|traceback)\b"
    interval_s: float = 10.0
    min_update_s: float = 300.0
    close_after_s: float = 120.0

    def build_sources(self) -> list[Source]:
        """The enabled sources."""
        sources: list[Source] = []
        if self.processes:
            sources.append(ProcessSpikes(self.process_rss_mb, self.process_cpu_percent))
        if self.swap:
            sources.append(SwapPressure(self.swap_percent))
        if self.disk:
            sources.append(DiskFilling(self.disk_percent))
        sources.extend(LogErrors(path, self.log_pattern) for path in self.log_files)
        return sources


@dataclass
class ActivityMonitor:
    """Polls sources, folds readings into episodes, passes events to ``sink``."""

    settings: ActivitySettings
    sink: Callable[[ActivityEvent], None]
    sources: list[Source] = field(default_factory=list)
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        if not self.sources:
            self.sources = self.settings.build_sources()
        self.tracker = EpisodeTracker(self.settings.min_update_s, self.settings.close_after_s)
        self.polls = 0
        self.errors: list[str] = []

    def tick(self) -> list[ActivityEvent]:
        """One round: poll every source, emit what is worth recording."""
        now = self.clock()
        readings: list[Reading] = []
        for source in self.sources:
            try:
                readings.extend(source.poll())
            except Exception as exc:  # noqa: BLE001 - one failing source must not stop the rest
                self.errors = (self.errors + [f"{type(source).__name__}: {exc}"])[-20:]
        events = self.tracker.observe(readings, now) + self.tracker.sweep(now)
        self.polls += 1
        for event in events:
            self.sink(event)
        return events

    def attach(self, scheduler: Any) -> None:
        """Run :meth:`tick` on the scheduler's loop every ``interval_s`` seconds (a no-op
        when no source is enabled)."""
        if self.sources:
            scheduler.add_periodic("activity", self.tick, self.settings.interval_s)
