"""System activity as observations: optional sources on the waits layer (all off by
default) that notice memory and CPU spikes, swap pressure, disks filling and error
patterns in logs, deduplicated into evolving episodes for the store to remember."""

from memoryd.waits.activity.episodes import ActivityEvent, Episode, EpisodeTracker
from memoryd.waits.activity.monitor import ActivityMonitor, ActivitySettings
from memoryd.waits.activity.sources import (
    DiskFilling,
    LogErrors,
    ProcessSpikes,
    Reading,
    SwapPressure,
    scrub_command_line,
)

__all__ = [
    "ActivityEvent",
    "ActivityMonitor",
    "ActivitySettings",
    "DiskFilling",
    "Episode",
    "EpisodeTracker",
    "LogErrors",
    "ProcessSpikes",
    "Reading",
    "SwapPressure",
    "scrub_command_line",
]
