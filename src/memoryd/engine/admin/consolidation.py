"""Consolidation ("dream"), garbage collection and purge.

Consolidation never deletes. It (1) recomputes every memory's tier from its retention
and last use, moving long-unused, low-retention memories to ``cold`` (archived: still
searchable, looked at last); (2) merges near-duplicates among recent memories (the
newer copy is superseded by the older one, which is reinforced); (3) links recent
memories to their nearest neighbours; (4) every ``domains_recluster_every``-th run
re-clusters the domains and records proposals (never applied: see docs/domains.md); and
(5) records a report. A dry run computes the same report and writes nothing. It runs on
demand; a schedule exists but is off unless ``MEMORYD_CONSOLIDATE_EVERY_MINUTES`` is set.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Callable

from memoryd.cognition import scheduling
from memoryd.cognition.states import tier_for
from memoryd.engine.context import EngineContext
from memoryd.engine.domains.discovery import recluster
from memoryd.engine.memory.links import same_agent, similar_edges
from memoryd.errors import InvalidInput, MaintenanceBusy
from memoryd.models import ConsolidationReport, Edge, GcReport, Memory
from memoryd.store.base import Actor

RECENT_DAYS = 7
RECENT_MAX = 2000
DUPLICATE_SIMILARITY = 0.95
RUNS_KEY = "domains:consolidations"
_ACTOR = Actor("consolidation")


def consolidate(ctx: EngineContext, *, dry_run: bool = False) -> ConsolidationReport:
    """Run one consolidation pass (see the module docstring).

    Takes the store's ``consolidate`` maintenance lock (a dry run does not need it);
    raises MaintenanceBusy when another process is consolidating the same store.
    """
    ctx.access.require_unrestricted("consolidation")
    ctx = ctx.acting(_ACTOR)
    if dry_run:
        return _consolidate(ctx, dry_run=True)
    with ctx.store.maintenance_lock("consolidate") as mine:
        if not mine:
            raise MaintenanceBusy("another process is consolidating this store; try again later")
        return _consolidate(ctx, dry_run=False)


def _consolidate(ctx: EngineContext, *, dry_run: bool) -> ConsolidationReport:
    started = ctx.clock()
    report = ConsolidationReport(dry_run=dry_run, started_at=started, finished_at=started)
    recent: list[Memory] = []
    changes: dict[str, int] = {}
    for memory in ctx.store.iter_memories():
        report.examined += 1
        if memory.superseded_by is None and memory.created_at >= started - timedelta(days=RECENT_DAYS):
            recent.append(memory)
        tier = tier_for(memory.state, started)
        if tier == memory.tier:
            continue
        key = f"{memory.tier}->{tier}"
        changes[key] = changes.get(key, 0) + 1
        if tier == "cold":
            report.archived.append(memory.id)
        if not dry_run:
            ctx.store.update(memory.id, {"tier": tier}, _ACTOR,
                             operation="archive" if tier == "cold" else "retier",
                             details={"from": memory.tier, "to": tier})
    report.tier_changes = changes
    recent = recent[-RECENT_MAX:]
    report.merged = _merge_duplicates(ctx, recent, dry_run)
    merged_away = {mid for group in report.merged for mid in group[1:]}
    report.new_edges = _connect(ctx, [m for m in recent if m.id not in merged_away], dry_run)
    if not dry_run:
        report.domain_proposals = _recluster_due(ctx)
    report.finished_at = ctx.clock()
    if not dry_run:
        report.report_id = ctx.store.bookkeeping.save_report(
            "consolidation", report.model_dump(mode="json"), report.finished_at
        )
    return report


def _recluster_due(ctx: EngineContext) -> list[str]:
    """Re-cluster the domains on every Nth run (counted in the ``domains:consolidations``
    watermark); the ids of the proposals recorded."""
    every = ctx.settings.domains_recluster_every
    runs = ctx.store.bookkeeping.get_watermark(RUNS_KEY) + 1
    ctx.store.bookkeeping.set_watermark(RUNS_KEY, runs)
    if every == 0 or runs % every or not ctx.store.domains.list_domains():
        return []
    try:
        return [p.id for p in recluster(ctx)]
    except MaintenanceBusy:
        return []  # the domains are being changed right now; the next Nth run re-clusters


def _merge_duplicates(ctx: EngineContext, recent: list[Memory], dry_run: bool) -> list[list[str]]:
    """Fold near-identical recent memories of the same scope and agent into the oldest."""
    vectors = ctx.store.vectors([m.id for m in recent])
    now = ctx.clock()
    gone: set[str] = set()
    groups: list[list[str]] = []
    for memory in recent:
        if memory.id in gone or memory.id not in vectors:
            continue
        hits = ctx.store.vector_search(
            vectors[memory.id], ctx.filters(scope=memory.scope, agent_id=memory.agent_id),
            now=now, limit=5,
        )
        kin = same_agent(ctx, memory, [h.memory_id for h in hits])
        dupes = [h.memory_id for h in hits if h.memory_id != memory.id and h.memory_id in kin
                 and h.memory_id not in gone and h.similarity >= DUPLICATE_SIMILARITY]
        if not dupes:
            continue
        members = ctx.store.get_many([memory.id, *dupes])
        ordered = sorted(members.values(), key=lambda m: (m.created_at, m.seq))
        keeper, rest = ordered[0], ordered[1:]
        groups.append([keeper.id, *[m.id for m in rest]])
        gone.update(m.id for m in rest)
        if dry_run:
            continue
        with ctx.store.transaction():
            for copy in rest:
                ctx.store.update(copy.id, {"superseded_by": keeper.id, "valid_until": now},
                                 _ACTOR, operation="merge", details={"into": keeper.id})
            ctx.store.upsert_edges([
                Edge(source_id=copy.id, target_id=keeper.id, edge_type="merged_into", weight=1.0,
                     created_at=now) for copy in rest
            ])
            state = scheduling.promote(keeper.state, now)
            ctx.store.update_states({keeper.id: state}, record="reinforce", actor=_ACTOR,
                                    details={"merged": [m.id for m in rest]})
    return groups


def _connect(ctx: EngineContext, recent: list[Memory], dry_run: bool) -> int:
    if not recent:
        return 0
    vectors = ctx.store.vectors([m.id for m in recent])
    existing = ctx.store.edges_of([m.id for m in recent])
    linked = {(e.source_id, e.target_id) for e in existing} | {
        (e.target_id, e.source_id) for e in existing}
    new: list[Edge] = []
    for memory in recent:
        if memory.id not in vectors:
            continue
        for edge in similar_edges(ctx, memory, vectors[memory.id], exclude=set()):
            if (edge.source_id, edge.target_id) not in linked:
                linked.update({(edge.source_id, edge.target_id), (edge.target_id, edge.source_id)})
                new.append(edge)
    if not dry_run:
        ctx.store.upsert_edges(new)
    return len(new)


def gc(ctx: EngineContext, *, min_retention: float = 0.1, max_age_days: float | None = None,
       dry_run: bool = True) -> GcReport:
    """Delete memories whose retention fell below ``min_retention`` (and, if given, older
    than ``max_age_days``). Dry run by default: it only lists them."""
    if not 0.0 <= min_retention <= 1.0:
        raise InvalidInput("min_retention must be between 0 and 1")
    if max_age_days is not None and max_age_days < 0:
        raise InvalidInput("max_age_days must not be negative")
    ctx.access.require_unrestricted("garbage collection")
    now = ctx.clock()
    candidates = [
        m.id for m in ctx.store.iter_memories()
        if scheduling.retention_score(m.state, now) < min_retention
        and (max_age_days is None or (now - m.created_at).total_seconds() > max_age_days * 86400)
    ]
    if not dry_run:
        for memory_id in candidates:
            ctx.store.delete(memory_id, ctx.actor if ctx.actor.name else Actor("gc"))
    return GcReport(dry_run=dry_run, min_retention=min_retention, max_age_days=max_age_days,
                    candidates=candidates, deleted=0 if dry_run else len(candidates))


def purge(ctx: EngineContext, memory_id: str) -> None:
    """Remove a memory for good: row, vector, keyword entry, edges and the content kept in
    its history (a tombstone with the content's hash stays)."""
    ctx.get(memory_id)
    ctx.store.delete(memory_id, ctx.actor, purge=True)


class ConsolidationSchedule:
    """Runs a consolidation every ``minutes`` on a daemon thread until stopped."""

    def __init__(self, run: Callable[[], object], minutes: float) -> None:
        self._consolidate = run
        self._interval = minutes * 60.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memoryd-consolidate", daemon=True)

    def start(self) -> None:
        """Start the background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to stop and wait briefly for it."""
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._consolidate()
            except MaintenanceBusy:
                pass  # another server is doing it this time
            except Exception:  # keep the schedule alive; the next run retries
                import logging

                logging.getLogger("memoryd").exception("scheduled consolidation failed")
