"""What a memory's scheduling state means at a moment: its memory state and storage tier.

Both read the strengths of :mod:`memoryd.cognition.scheduling` on its one forgetting curve
and change nothing:

* :func:`memory_state` follows Vestige's *accessibility*,
  ``0.5*curve retention + 0.3*retrieval strength + 0.2*storage strength/10``:
  ``active`` (>= 0.7), ``dormant`` (>= 0.4), ``silent`` (>= 0.1), else ``unavailable``.
* :func:`tier_for` places a memory in the hot, warm or cold tier from its retention score and
  how long ago it was last touched (reviewed or accessed).

Weights and thresholds are fields of :class:`~memoryd.cognition.scheduling.SchedulingParams`.
Like scheduling, every function takes ``now`` and never reads the clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from memoryd.cognition.scheduling import (
    DEFAULT_PARAMS,
    SchedulingParams,
    idle_days,
    retention_score,
    weighted_strength,
)
from memoryd.models import SchedulingState, Tier

__all__ = ["MemoryStateName", "accessibility", "memory_state", "tier_for"]

MemoryStateName = Literal["active", "dormant", "silent", "unavailable"]


def accessibility(
    state: SchedulingState, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> float:
    """Vestige's accessibility: ``0.5*curve retention + 0.3*retrieval + 0.2*storage/10``."""
    return weighted_strength(state, now, params.accessibility_weights, params)


def memory_state(
    state: SchedulingState, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> MemoryStateName:
    """``active`` (accessibility >= 0.7), ``dormant`` (>= 0.4), ``silent`` (>= 0.1) or
    ``unavailable``.

    Note: the FSRS-6 tail is heavy (S = 0.1 d still gives R ~ 0.2 after ten years), so
    ``unavailable`` is reached only by memories that were demoted and then left alone.

    >>> from datetime import timedelta, timezone
    >>> from memoryd.cognition.scheduling import initial_state
    >>> created = datetime(2025, 1, 1, tzinfo=timezone.utc)
    >>> memory_state(initial_state(0.5, created), created + timedelta(days=60))
    'dormant'
    """
    value = accessibility(state, now, params)
    if value >= params.active_threshold:
        return "active"
    if value >= params.dormant_threshold:
        return "dormant"
    if value >= params.silent_threshold:
        return "silent"
    return "unavailable"


def tier_for(
    state: SchedulingState, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> Tier:
    """Storage tier from retention and recency of use.

    hot: retention_score >= 0.7 or last touched (reviewed or accessed) within 14 days;
    warm: retention_score >= 0.45 or touched within 90 days; cold otherwise.
    """
    score = retention_score(state, now, params)
    idle = idle_days(state, now)
    if score >= params.hot_score or idle <= params.hot_days:
        return "hot"
    if score >= params.warm_score or idle <= params.warm_days:
        return "warm"
    return "cold"
