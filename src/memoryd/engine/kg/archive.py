"""Archival of the knowledge graphs (``kg_archive``): keep the active nodes within the core's
budget, and list (or, when asked, remove) orphans.

Run on demand, never as a side effect of a write (at 50,000 nodes it takes most of a
minute). A dry run (the default) changes nothing: it lists the orphans first — nodes with
no edges, never used, older than the grace period — then the nodes archival would take
out of the core, lowest score first (:func:`memoryd.graph.compact.compact`). Archiving is a
recorded change of ``metadata.kg.archived``: the node stays searchable, its edges become
memory traces, ``kg_recall`` brings it back. Removing orphans is an explicit choice
(``remove_orphans``); history keeps a ``kg_remove`` entry and a tombstone for each.
"""

from __future__ import annotations

from memoryd.engine.context import EngineContext
from memoryd.engine.kg.files import write_through
from memoryd.engine.kg.load import GraphCache, load
from memoryd.engine.kg.read import counter, weights
from memoryd.engine.kg.store_writes import WritePlan, apply, plan_archived
from memoryd.engine.kg.targets import Target, graph_file, read_targets, require_unbound_agent
from memoryd.graph.archival import Orphan, find_orphans
from memoryd.graph.compact import compact
from memoryd.graph.memories import node_memory_id
from memoryd.models.kg import Graph
from memoryd.models.knowledge import ArchiveReport, NodeRef, OrphanItem


def archive(ctx: EngineContext, cache: GraphCache, *, project: str | None = None,
            dry_run: bool = True, budget: int | None = None,
            remove_orphans: bool = False) -> ArchiveReport:
    """Archive the lowest-scored nodes until the active core fits ``budget``."""
    require_unbound_agent(ctx, "archival")
    budget = budget or ctx.settings.kg_budget
    targets = read_targets(ctx, project)
    graphs = [load(ctx, t.scope, cache).graph for t in targets]
    now = ctx.clock()
    orphans = [o for g in graphs
               for o in find_orphans(g, now, grace_days=ctx.settings.kg_orphan_grace_days)]
    result = compact(graphs, now=now, budget=budget, counter=counter(ctx), weights=weights(ctx),
                     fraction=ctx.settings.kg_archive_fraction)
    names = {(g.scope, n.id): n.name for g in graphs for n in g.nodes}
    report = ArchiveReport(
        dry_run=dry_run, budget=budget, scopes=[t.scope for t in targets],
        orphans=[OrphanItem(scope=o.scope, id=o.id, name=o.name, age_days=o.age_days,
                            archived=o.archived) for o in orphans],
        archived=[NodeRef(scope=s, id=i, name=names[(s, i)]) for s, i in result.archived],
        rounds=result.rounds, tokens_before=result.tokens_before,
        tokens_after=result.tokens_after)
    if dry_run:
        return report
    for target, graph in zip(targets, graphs, strict=True):
        chosen = {i for s, i in result.archived if s == target.scope}
        gone = [o for o in orphans if o.scope == target.scope] if remove_orphans else []
        _apply(ctx, cache, target, graph, chosen - {o.id for o in gone}, gone)
    report.removed = [NodeRef(scope=o.scope, id=o.id, name=o.name) for o in orphans
                      if remove_orphans]
    return report


def _apply(ctx: EngineContext, cache: GraphCache, target: Target, graph: Graph,
           chosen: set[str], orphans: list[Orphan]) -> None:
    if not chosen and not orphans:
        return

    def change() -> None:
        plan = WritePlan(target.scope)
        plan_archived(ctx, plan, [n for n in graph.nodes if n.id in chosen], True,
                      operation="kg_archive")
        with ctx.store.transaction():
            apply(ctx, plan)
            for orphan in orphans:
                memory_id = node_memory_id(target.scope, orphan.id)
                ctx.store.update(memory_id, {}, ctx.actor, operation="kg_remove",
                                 details={"scope": target.scope, "slug": orphan.id,
                                          "reason": "orphan"})
                ctx.store.delete(memory_id, ctx.actor)

    write_through(ctx, target.scope, graph_file(ctx, target), cache, change)
