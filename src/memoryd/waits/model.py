"""Plain data of the waits layer: what a check saw, and a wait job as it is persisted.

A :class:`WaitJob` is a JSON-friendly record (``to_dict``/``from_dict``) so that any store
can keep it: a JSON file today, a store table later. Times are wall-clock epoch seconds.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any


class WaitStatus(StrEnum):
    """Where a wait job is in its life; every status but WATCHING is final."""

    WATCHING = "watching"
    RESOLVED = "resolved"
    TIMEOUT = "timeout"
    ERROR = "error"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        """True for every status a job never leaves."""
        return self is not WaitStatus.WATCHING


class Verdict(StrEnum):
    """A judge's answer about one frame."""

    YES = "YES"
    NO = "NO"
    PARTIAL = "PARTIAL"


@dataclass(frozen=True)
class Observation:
    """What one check of a target saw.

    matched: the criteria hold. seen: a short excerpt of what was seen (the matching line,
    the HTTP status, the exit code). changed: anything new since the last check (drives
    adaptive polling). cost_ms: wall time of the check. ended: the target can never match
    any more (the process exited without a match, the pane is gone); error says why.
    detail: small extra facts (exit_code, status, changed_fraction, ...).
    """

    matched: bool = False
    seen: str = ""
    changed: bool = False
    cost_ms: float = 0.0
    ended: bool = False
    error: str | None = None
    verdict: Verdict | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)
    # A frame a screen watcher wants judged; never persisted.
    frame: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the verdict as its string, without the frame)."""
        out = {k: v for k, v in asdict(self).items() if k != "frame"}
        out["verdict"] = self.verdict.value if self.verdict else None
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Observation:
        """Inverse of :meth:`to_dict`."""
        values = dict(data)
        if values.get("verdict"):
            values["verdict"] = Verdict(values["verdict"])
        return cls(**values)


@dataclass(frozen=True)
class WakeAttempt:
    """One delivery attempt of a wake message: when, to what, and how it went."""

    at: float
    to: str
    ok: bool
    status: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class WaitJob:
    """A wait job as plain data; the scheduler replaces it on every change.

    ``cursor`` is the watcher's resume point (file offset and inode, tmux row, ...), so a
    restarted scheduler continues where the last one stopped instead of from "now".
    ``owner`` is opaque to this layer (the caller's key, scope, agent).
    """

    id: str
    target: str
    criteria: dict[str, Any]
    timeout_s: float
    created_at: float
    deadline: float
    status: WaitStatus = WaitStatus.WATCHING
    updated_at: float = 0.0
    resolved_at: float | None = None
    task_id: str | None = None
    wake: dict[str, Any] | None = None
    owner: dict[str, Any] = field(default_factory=dict)
    result: str | None = None
    last_observation: Observation | None = None
    checks: int = 0
    cursor: dict[str, Any] = field(default_factory=dict)
    wake_attempts: tuple[WakeAttempt, ...] = ()

    def evolve(self, **changes: Any) -> WaitJob:
        """A copy with ``changes`` applied and ``updated_at`` set to now."""
        changes.setdefault("updated_at", time.time())
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; :meth:`from_dict` reads it back unchanged."""
        out = asdict(self)
        out["status"] = self.status.value
        out["last_observation"] = (
            self.last_observation.to_dict() if self.last_observation else None
        )
        out["wake_attempts"] = [asdict(a) for a in self.wake_attempts]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WaitJob:
        """Rebuild a job from :meth:`to_dict` output."""
        values = dict(data)
        values["status"] = WaitStatus(values["status"])
        obs = values.get("last_observation")
        values["last_observation"] = Observation.from_dict(obs) if obs else None
        values["wake_attempts"] = tuple(WakeAttempt(**a) for a in values.get("wake_attempts", ()))
        return cls(**values)
