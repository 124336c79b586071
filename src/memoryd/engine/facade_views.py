"""The Engine's read views of a whole memory: the change feed, the timeline, the overview, a
memory's retention curve and the memory graph (a mixin of :class:`~memoryd.engine.Engine`).

Each method hands the acting context to a procedure of :mod:`memoryd.engine.feed`,
:mod:`memoryd.engine.overview` or :mod:`memoryd.engine.graph_views`, so a caller bound to a
scope, agent or domains sees only its own memories in every view.
"""

from __future__ import annotations

from datetime import date, tzinfo
from typing import Any, Mapping

from memoryd.engine import feed, graph_views, overview
from memoryd.engine.checks import parse_filters
from memoryd.engine.context import EngineContext
from memoryd.errors import InvalidInput
from memoryd.models import SearchFilters
from memoryd.models.views import (
    ChangeFeed,
    MemoryGraph,
    Overview,
    RetentionCurve,
    Timeline,
)


class ViewMethods:
    """Feed, timeline, overview, retention curve and memory graph on the facade."""

    _ctx: EngineContext

    def last_change(self) -> int:
        """The store's newest change sequence number (0 while there is no history): cheap,
        and the same for every process sharing the store, so it tells when to look again."""
        return self._ctx.store.last_seq()

    def changes(self, since: int = 0, *, limit: int = 200) -> ChangeFeed:
        """Changes after sequence number ``since`` to memories this engine may see, oldest
        first; pass the answer's ``next`` as ``since`` to continue.

        >>> feed = mem.changes(0); [c.operation for c in feed.changes][:2]  # doctest: +SKIP
        ['create', 'create']
        """
        if since < 0 or not 1 <= limit <= 1000:
            raise InvalidInput("since must be at least 0 and limit 1-1000")
        return feed.changes(self._ctx, since, limit)

    def timeline(self, *, days: int = 30, tz: tzinfo, day: date | None = None,
                 limit: int = 200) -> Timeline:
        """What was learned, corrected, strengthened, weakened and forgotten per day (in
        ``tz``) for the last ``days`` days, and the changes of ``day``."""
        if not 1 <= days <= 366:
            raise InvalidInput("days must be 1-366")
        return feed.timeline(self._ctx, days=days, tz=tz, day=day, limit=limit)

    def overview(self) -> Overview:
        """Counts by type, tier, state and scope, the retention distribution, growth per day
        and the newest consolidation reports, over the memories this engine may see."""
        return overview.overview(self._ctx)

    def retention_curve(self, memory_id: str, *, days_ahead: float = 90,
                        points: int = 60) -> RetentionCurve:
        """A memory's FSRS forgetting curve from its last review to ``days_ahead`` days from
        now, and the moments it was reviewed."""
        if not 0 < days_ahead <= 3650 or not 2 <= points <= 500:
            raise InvalidInput("days_ahead must be in (0, 3650] and points 2-500")
        return overview.retention_curve(self._ctx, memory_id, days_ahead=days_ahead,
                                        points=points)

    def memory_graph(self, filters: SearchFilters | Mapping[str, Any] | None = None, *,
                     limit: int = 500) -> MemoryGraph:
        """The newest ``limit`` memories passing ``filters`` (``as_of`` for time travel) and
        the typed edges between them."""
        if not 1 <= limit <= 5000:
            raise InvalidInput("limit must be 1-5000")
        reading = self._reading(parse_filters(filters))  # type: ignore[attr-defined]
        return graph_views.memory_graph(self._ctx, reading, limit)
