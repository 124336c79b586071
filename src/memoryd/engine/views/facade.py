"""``engine.views``: read-only views of a memory store — the change feed, the timeline, the
overview, the memory graph, and one memory's state, retention curve and importance.

Each method hands the acting context to a procedure of :mod:`memoryd.engine.views.feed`,
:mod:`memoryd.engine.views.overview`, :mod:`memoryd.engine.views.link_map` or
:mod:`memoryd.engine.memory.feedback`, so a caller bound to a scope, agent or domains sees only its
own memories in every view.

    >>> feed = mem.views.changes(0); [c.operation for c in feed.changes][:2]  # doctest: +SKIP
    ['create', 'create']
"""

from __future__ import annotations

from datetime import date, tzinfo
from typing import Any, Mapping

from memoryd.cognition.importance import ImportanceScore, importance_score
from memoryd.engine.checks import check_content, parse_filters
from memoryd.engine.context import EngineContext
from memoryd.engine.domains.facade import reading
from memoryd.engine.memory import feedback
from memoryd.engine.views import feed, overview
from memoryd.engine.views.link_map import memory_graph
from memoryd.errors import InvalidInput
from memoryd.models import MemoryStateReport, SearchFilters
from memoryd.models.views import (
    ChangeFeed,
    MemoryGraph,
    Overview,
    RetentionCurve,
    Timeline,
)


class Views:
    """Feed, timeline, overview, memory graph and per-memory readings of one engine."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx

    def last_change(self) -> int:
        """The store's newest change sequence number (0 while there is no history): cheap,
        and the same for every process sharing the store, so it tells when to look again."""
        return self._ctx.store.last_seq()

    def changes(self, since: int = 0, *, limit: int = 200) -> ChangeFeed:
        """Changes after sequence number ``since`` to memories this engine may see, oldest
        first; pass the answer's ``next`` as ``since`` to continue."""
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

    def memory_graph(self, filters: SearchFilters | Mapping[str, Any] | None = None, *,
                     limit: int = 500) -> MemoryGraph:
        """The newest ``limit`` memories passing ``filters`` (``as_of`` for time travel) and
        the typed links between them."""
        if not 1 <= limit <= 5000:
            raise InvalidInput("limit must be 1-5000")
        return memory_graph(self._ctx, reading(self._ctx, parse_filters(filters)), limit)

    def memory_state(self, memory_id: str) -> MemoryStateReport:
        """Retention, strengths, state (active/dormant/silent/unavailable) and tier."""
        return feedback.state_report(self._ctx, memory_id)

    def retention_curve(self, memory_id: str, *, days_ahead: float = 90,
                        points: int = 60) -> RetentionCurve:
        """A memory's FSRS forgetting curve from its last review to ``days_ahead`` days from
        now, and the moments it was reviewed."""
        if not 0 < days_ahead <= 3650 or not 2 <= points <= 500:
            raise InvalidInput("days_ahead must be in (0, 3650] and points 2-500")
        return overview.retention_curve(self._ctx, memory_id, days_ahead=days_ahead,
                                        points=points)

    def importance_score(self, content: str) -> ImportanceScore:
        """Importance of ``content`` from its signals and its novelty against the store."""
        ctx = self._ctx
        check_content(ctx, content)
        vector = ctx.embedder.embed([content])[0]
        hits = ctx.store.vector_search(vector, ctx.filters(), now=ctx.clock(), limit=1)
        novelty = 1.0 - max(0.0, hits[0].similarity) if hits else 1.0
        return importance_score(content, novelty)
