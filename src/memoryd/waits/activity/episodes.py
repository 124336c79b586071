"""Deduplication and rate limiting of system activity: readings become episodes.

A reading has a key (``process.memory:1234``, ``disk:/``); readings with the key of an
open episode update it instead of starting another, so an hour-long spike is ONE
episode whose peak, latest numbers and duration evolve, not 3,600 records. The tracker
emits an event when an episode opens, when it grows materially (severity rises, or the
tracked number moves by ``growth`` since the last emission) but at most once per
``min_update_s``, and when it closes (no reading for ``close_after_s``).

>>> t = EpisodeTracker(min_update_s=60)
>>> r = Reading("disk:/", "system.disk", "warning", {"used_percent": 91.0}, "disk / 91% full")
>>> [e.kind for e in t.observe([r], now=0) + t.observe([r], now=1) + t.sweep(now=500)]
['opened', 'closed']
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from memoryd.waits.activity.sources import Reading

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2, "critical": 3}


@dataclass(frozen=True)
class Episode:
    """One ongoing (or finished) condition: a spike, a filling disk, a burst of errors."""

    key: str
    category: str
    severity: str
    summary: str
    started_at: float
    last_seen: float
    numbers: dict[str, float]
    peak: dict[str, float]
    readings: int = 1

    @property
    def duration_s(self) -> float:
        """How long the episode has lasted so far."""
        return self.last_seen - self.started_at

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what a memory's metadata can hold)."""
        return {"key": self.key, "category": self.category, "severity": self.severity,
                "summary": self.summary, "started_at": self.started_at,
                "last_seen": self.last_seen, "duration_s": round(self.duration_s, 1),
                "numbers": self.numbers, "peak": self.peak, "readings": self.readings}


@dataclass(frozen=True)
class ActivityEvent:
    """What the tracker emits: an episode that opened, grew, or closed."""

    kind: str  # "opened", "updated", "closed"
    episode: Episode


@dataclass
class EpisodeTracker:
    """Turns readings into episode events (see the module docstring)."""

    min_update_s: float = 300.0
    close_after_s: float = 120.0
    growth: float = 0.25
    _open: dict[str, Episode] = field(default_factory=dict)
    _emitted: dict[str, tuple[float, Episode]] = field(default_factory=dict)

    def observe(self, readings: list[Reading], now: float) -> list[ActivityEvent]:
        """Fold readings into episodes; the events worth recording now."""
        events = []
        for r in readings:
            ep = self._open.get(r.key)
            if ep is None:
                ep = Episode(r.key, r.category, r.severity, r.summary, now, now,
                             dict(r.numbers), dict(r.numbers))
                self._open[r.key] = ep
                self._emitted[r.key] = (now, ep)
                events.append(ActivityEvent("opened", ep))
                continue
            worst = max(ep.severity, r.severity, key=lambda s: SEVERITY_RANK.get(s, 0))
            peak = {k: max(v, ep.peak.get(k, v)) for k, v in r.numbers.items()}
            ep = replace(ep, severity=worst, summary=r.summary, last_seen=now,
                         numbers=dict(r.numbers), peak=peak, readings=ep.readings + 1)
            self._open[r.key] = ep
            if self._worth_update(ep, now):
                self._emitted[r.key] = (now, ep)
                events.append(ActivityEvent("updated", ep))
        return events

    def _worth_update(self, ep: Episode, now: float) -> bool:
        at, last = self._emitted[ep.key]
        if SEVERITY_RANK.get(ep.severity, 0) > SEVERITY_RANK.get(last.severity, 0):
            return True  # an escalation is news at once (it can happen only a few times)
        if now - at < self.min_update_s:
            return False
        for name, value in ep.peak.items():
            before = last.peak.get(name, 0.0)
            if before and abs(value - before) / abs(before) >= self.growth:
                return True
        return False

    def sweep(self, now: float) -> list[ActivityEvent]:
        """Close the episodes that had no reading for ``close_after_s``."""
        done = [ep for ep in self._open.values() if now - ep.last_seen >= self.close_after_s]
        for ep in done:
            del self._open[ep.key]
            self._emitted.pop(ep.key, None)
        return [ActivityEvent("closed", ep) for ep in done]

    @property
    def open_episodes(self) -> list[Episode]:
        """Episodes still going on."""
        return list(self._open.values())
