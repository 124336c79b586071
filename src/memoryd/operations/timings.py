"""How long operations take in this process: the last durations of each, for percentiles.

:meth:`Operation.run <memoryd.operations.registry.Operation.run>` records every call that
returns (errors too: a refused search still cost its time). Only this process's calls
are known: several servers sharing a store each keep their own.
"""

from __future__ import annotations

import math
import threading
from collections import deque

from memoryd.models.views import LatencySummary

KEEP = 2048  # durations kept per operation (the newest)


class Timings:
    """A bounded record of durations per operation name, safe across threads."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._durations: dict[str, deque[float]] = {}
        self._counts: dict[str, int] = {}

    def record(self, name: str, seconds: float) -> None:
        """Remember that ``name`` took ``seconds``."""
        with self._lock:
            kept = self._durations.get(name)
            if kept is None:
                kept = self._durations[name] = deque(maxlen=self._keep)
            kept.append(seconds)
            self._counts[name] = self._counts.get(name, 0) + 1

    def summary(self, names: tuple[str, ...] | None = None) -> list[LatencySummary]:
        """Percentiles of the kept durations of each operation (or of ``names``), most
        called first."""
        with self._lock:
            items = {n: sorted(d) for n, d in self._durations.items()
                     if d and (names is None or n in names)}
            counts = dict(self._counts)
        out = [LatencySummary(operation=n, count=counts[n], p50_ms=_pct(d, 0.50),
                              p95_ms=_pct(d, 0.95), p99_ms=_pct(d, 0.99),
                              max_ms=round(d[-1] * 1000, 3))
               for n, d in items.items()]
        return sorted(out, key=lambda s: (-s.count, s.operation))


def _pct(ordered: list[float], q: float) -> float:
    """The nearest-rank percentile of sorted durations, in ms."""
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return round(ordered[index] * 1000, 3)


TIMINGS = Timings()
