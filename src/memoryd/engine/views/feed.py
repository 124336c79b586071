"""The change feed and the timeline: the store's history as the caller may see it.

Every change to a memory is a history row with a change sequence number (the same on
SQLite and PostgreSQL, and across every process sharing a store), so following the store
is asking for the rows after the last one seen. :func:`changes` pages through them;
:func:`timeline` counts them per day.

A caller bound to a scope, an agent or domains sees only changes to memories it may see
now. A deleted memory is gone, so whose it was cannot be checked: removals are shown to
unbound callers only (the same rule as the knowledge-graph feed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timedelta, tzinfo

from memoryd.dates import day_bounds
from memoryd.engine.context import EngineContext
from memoryd.engine.views.journal import iter_changes
from memoryd.models import HistoryEntry, Memory
from memoryd.models.views import (
    ChangeFeed,
    ChangeItem,
    MemoryBrief,
    Timeline,
    TimelineDay,
    TimelineEntry,
    TimelineKind,
)

REMOVALS = frozenset({"delete", "purge", "kg_remove"})
_KINDS: dict[str, TimelineKind] = {
    "create": "learned",
    "update": "corrected", "supersede": "corrected", "merge": "corrected",
    "reinforce": "strengthened", "promote": "strengthened",
    "demote": "weakened",
    "delete": "forgotten", "purge": "forgotten",
}
# Changes read at most for one timeline (a day's worth of a busy store is far below this).
MAX_TIMELINE_CHANGES = 200_000


def kind_of(operation: str) -> TimelineKind:
    """The timeline kind of a history operation (``kg_*`` changes are the graph's)."""
    if operation.startswith("kg_"):
        return "graph"
    return _KINDS.get(operation, "other")


def changes(ctx: EngineContext, since: int, limit: int = 200) -> ChangeFeed:
    """Changes after sequence number ``since`` to memories the caller may see, oldest first
    (at most ``limit`` history rows are read; ``more`` says whether others follow)."""
    head = ctx.store.last_seq()
    page = ctx.store.changes_since(since, limit=limit)
    visible = ctx.get_many(sorted({e.memory_id for e in page}))
    now = ctx.clock()
    items = []
    for entry in page:
        item = _item(ctx, entry, visible.get(entry.memory_id), now)
        if item is not None:
            items.append(item)
    last = page[-1].seq if page else max(since, 0)
    return ChangeFeed(since=since, next=last, head=head,
                      more=len(page) == limit and last < head, changes=items)


def _item(ctx: EngineContext, entry: HistoryEntry, memory: Memory | None,
          now: datetime) -> ChangeItem | None:
    if memory is None and ctx.access.restricted:
        return None
    return ChangeItem(seq=entry.seq, at=entry.at, operation=entry.operation,
                      memory_id=entry.memory_id, actor=entry.actor, agent_id=entry.agent_id,
                      memory=MemoryBrief.of(memory, now) if memory is not None else None,
                      removed=entry.operation in REMOVALS)


def timeline(ctx: EngineContext, *, days: int, tz: tzinfo, day: date | None,
             limit: int = 200) -> Timeline:
    """Counts per local day for the ``days`` days up to today, newest first, and the
    changes of ``day`` if given."""
    today = ctx.clock().astimezone(tz).date()
    first = today - timedelta(days=days - 1)
    start, _ = day_bounds(first, tz)
    _, end = day_bounds(today, tz)
    counts: dict[str, Counter[str]] = {}
    entries: list[TimelineEntry] = []
    chosen = day_bounds(day, tz) if day is not None else None
    read = 0
    for batch in _batches(iter_changes(ctx.store, start, end), 1000):
        read += len(batch)
        visible = ctx.get_many(sorted({e.memory_id for e in batch}))
        for entry in batch:
            memory = visible.get(entry.memory_id)
            if memory is None and ctx.access.restricted:
                continue
            label = entry.at.astimezone(tz).date().isoformat()
            counts.setdefault(label, Counter())[kind_of(entry.operation)] += 1
            if chosen is not None and chosen[0] <= entry.at < chosen[1]:
                entries.append(_timeline_entry(entry, memory))
        if read >= MAX_TIMELINE_CHANGES:
            break
    out_days = [TimelineDay(day=(today - timedelta(days=i)).isoformat(),
                            **counts.get((today - timedelta(days=i)).isoformat(), {}))
                for i in range(days)]
    entries.sort(key=lambda e: -e.seq)
    return Timeline(tz=str(tz), days=out_days,
                    day=day.isoformat() if day is not None else None,
                    entries=entries[:limit], truncated=read >= MAX_TIMELINE_CHANGES)


def _timeline_entry(entry: HistoryEntry, memory: Memory | None) -> TimelineEntry:
    snippet = None
    node_type = None
    if memory is not None:
        brief = MemoryBrief.of(memory)
        snippet, node_type = brief.snippet, brief.node_type
    elif isinstance(entry.details.get("content"), str):  # a tombstone (never a purge's)
        snippet = entry.details["content"][:300]
        node_type = entry.details.get("node_type")
    return TimelineEntry(seq=entry.seq, at=entry.at, kind=kind_of(entry.operation),
                         operation=entry.operation, memory_id=entry.memory_id,
                         actor=entry.actor, snippet=snippet, node_type=node_type,
                         exists=memory is not None)


def _batches(items: Iterable[HistoryEntry], size: int) -> Iterator[list[HistoryEntry]]:
    batch: list[HistoryEntry] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
