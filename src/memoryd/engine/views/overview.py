"""A store at a glance, and one memory's forgetting curve, for the caller's view.

:func:`overview` counts the memories the caller may see by type, tier, state and scope and
draws their retention distribution and growth; over ``SAMPLE`` memories the distributions
are computed on the newest ones (the counts by type and tier stay exact only up to there
too, and ``sampled`` says so). Consolidation reports cover every scope and agent, so a bound
caller gets none.

:func:`retention_curve` samples the FSRS curve a memory is on (since its last review) up to
some days ahead, with the recorded moments that reviewed it.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from memoryd.cognition import scheduling
from memoryd.cognition.states import memory_state
from memoryd.engine.context import EngineContext
from memoryd.models import Memory, SearchFilters
from memoryd.models.views import (
    DayCount,
    Overview,
    RetentionCurve,
    RetentionPoint,
    ReviewMark,
)

SAMPLE = 50_000
_PAGE = 5_000
GROWTH_DAYS = 30
REVIEWS = frozenset({"create", "promote", "demote", "reinforce", "access", "update"})


def _visible(ctx: EngineContext, now: datetime) -> tuple[int, list[Memory]]:
    filters = ctx.filters(SearchFilters(include_superseded=True))
    total = ctx.store.count(filters, now=now)
    memories: list[Memory] = []
    while len(memories) < min(total, SAMPLE):
        page = ctx.store.list(filters, now=now, limit=_PAGE, offset=len(memories))
        if not page:
            break
        memories.extend(page)
    return total, memories[:SAMPLE]


def overview(ctx: EngineContext) -> Overview:
    """Counts, distributions and growth of the caller's memories (latencies left empty:
    they belong to the process serving, not to the store)."""
    now = ctx.clock()
    total, memories = _visible(ctx, now)
    states: Counter[str] = Counter()
    histogram = [0] * 10
    for memory in memories:
        states[memory_state(memory.state, now)] += 1
        value = scheduling.retention_score(memory.state, now)
        histogram[min(9, max(0, int(value * 10)))] += 1
    today = now.date()
    created = Counter(m.created_at.astimezone(now.tzinfo).date() for m in memories)
    growth = [DayCount(day=(today - timedelta(days=i)).isoformat(),
                       count=created.get(today - timedelta(days=i), 0))
              for i in reversed(range(GROWTH_DAYS))]
    reports = ([] if ctx.access.restricted
               else ctx.store.bookkeeping.list_reports("consolidation", limit=10))
    return Overview(
        memories=total, sampled=len(memories),
        by_node_type=dict(Counter(m.node_type for m in memories).most_common()),
        by_tier=dict(Counter(m.tier for m in memories).most_common()),
        by_state=dict(states.most_common()),
        by_scope=dict(Counter(m.scope for m in memories).most_common()),
        graph_nodes=sum(1 for m in memories if "kg" in m.metadata),
        superseded=sum(1 for m in memories if m.superseded_by is not None
                       or (m.valid_until is not None and m.valid_until <= now)),
        retention_histogram=histogram, growth=growth, latencies=[],
        consolidations=[_jsonable(r) for r in reports], head_seq=ctx.store.last_seq())


def _jsonable(report: dict) -> dict:
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in report.items()}


def retention_curve(ctx: EngineContext, memory_id: str, *, days_ahead: float = 90,
                    points: int = 60) -> RetentionCurve:
    """The memory's retention from its last review (or creation) to ``days_ahead`` days from
    now, in ``points`` steps, and the history entries that reviewed it."""
    memory = ctx.get(memory_id)
    now = ctx.clock()
    state = memory.state
    start = state.last_review or memory.created_at
    end = now + timedelta(days=days_ahead)
    step = (end - start) / max(1, points - 1)
    samples = [start + step * i for i in range(points)]
    if now not in samples:
        samples = sorted([*samples, now])
    curve = [RetentionPoint(at=t, retention=round(scheduling.curve_retention(state, t), 6),
                            score=round(scheduling.retention_score(state, t), 6))
             for t in samples]
    reviews = [ReviewMark(at=e.at, operation=e.operation)
               for e in ctx.store.history(memory.id) if e.operation in REVIEWS]
    return RetentionCurve(id=memory.id, now=now, stability_days=state.stability,
                          last_review=state.last_review, points=curve, reviews=reviews)
