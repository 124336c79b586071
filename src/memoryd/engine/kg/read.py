"""Reading the knowledge graphs: the always-loaded core (``kg_read``), a summary of the
graphs (``kg_ping``) and a graph as the text of its file (export).

The core is the user graph's and the project graph's active nodes as compact text within
the token budget, best first, with memory traces for edges to archived nodes
(:func:`memoryd.graph.core.build_core`). Graphs come from the cache (kept until the store's
change sequence moves); a rendered core is reused while its graphs are the same objects,
for at most ``kg_cache_seconds``. Before reading, each graph's file is checked: a hand edit
is merged, an invalid file is reported and left alone.

``as_of`` reads the graphs as they were recorded then (:func:`kg_graphs.graph_as_of`),
scored as of that moment; it bypasses the cache.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from memoryd.engine.context import EngineContext
from memoryd.engine.kg.files import sync
from memoryd.engine.kg.load import GraphCache, graph_as_of, load
from memoryd.engine.kg.targets import Target, graph_file, read_targets, write_target
from memoryd.errors import InvalidInput
from memoryd.graph.archival import ArchivalWeights, score_nodes
from memoryd.graph.core import CoreView, build_core
from memoryd.graph.jsonfile import GraphFileError, dumps_graph
from memoryd.models.kg import Graph
from memoryd.graph.tokens import TokenCounter, get_counter
from memoryd.models.knowledge import (
    CoreRead,
    GraphExport,
    GraphPing,
    GraphSummary,
    MergeConflict,
)


def weights(ctx: EngineContext) -> ArchivalWeights:
    """The archival weights the settings name."""
    s = ctx.settings
    return ArchivalWeights(recency=s.kg_weight_recency, connectivity=s.kg_weight_connectivity,
                           files=s.kg_weight_files, usage=s.kg_weight_usage,
                           half_life_days=s.kg_half_life_days, degree_cap=s.kg_degree_cap)


def counter(ctx: EngineContext) -> TokenCounter:
    """The token counter the settings name (cl100k by default), loaded once per process."""
    return get_counter(ctx.settings.kg_token_counter)


def sync_files(ctx: EngineContext, targets: Sequence[Target], cache: GraphCache
               ) -> tuple[list[str], list[MergeConflict], list[str]]:
    """Merge hand edits of the targets' files: (files, conflicts, problems)."""
    files: list[str] = []
    conflicts: list[MergeConflict] = []
    problems: list[str] = []
    for target in targets:
        path = graph_file(ctx, target)
        if path is None:
            continue
        files.append(str(path))
        try:
            outcome = sync(ctx, target.scope, path, cache)
        except GraphFileError as exc:
            problems.append(f"{exc} (not merged; fix the file, nothing was changed)")
            continue
        conflicts += outcome.conflicts
        problems += [f"{p} (kept in the file, not merged; the rest was)" for p in outcome.problems]
    return files, conflicts, problems


def read(ctx: EngineContext, cache: GraphCache, *, project: str | None = None,
         budget: int | None = None, as_of: datetime | None = None,
         files: Sequence[str] = (), include_user: bool = True) -> CoreRead:
    """The core of the user graph and the project's graph within ``budget`` tokens."""
    budget = budget or ctx.settings.kg_budget
    targets = read_targets(ctx, project, include_user)
    scopes = [t.scope for t in targets]
    if as_of is not None:
        graphs = [graph_as_of(ctx, s, as_of) for s in scopes]
        view = _render(ctx, graphs, as_of, budget, files)
        return _result(ctx, view, scopes, as_of)
    mirrored, conflicts, problems = sync_files(ctx, targets, cache)
    graphs = [load(ctx, s, cache).graph for s in scopes]
    key = (tuple(scopes), budget, ctx.settings.kg_token_counter, weights(ctx), tuple(files),
           ctx.access.agent_id)
    stamp = time.monotonic()
    hit = cache.core(key, stamp, ctx.settings.kg_cache_seconds)
    if hit is not None and all(a is b for a, b in zip(hit[0], graphs, strict=True)):
        view = hit[1]
    else:
        view = _render(ctx, graphs, ctx.clock(), budget, files)
        cache.put_core(key, stamp, (graphs, view))
    out = _result(ctx, view, scopes, None)
    return out.model_copy(update={"files": mirrored, "conflicts": conflicts, "problems": problems})


def _render(ctx: EngineContext, graphs: list[Graph], now: datetime, budget: int,
            files: Sequence[str]) -> CoreView:
    w = weights(ctx)
    scores = score_nodes(graphs, now, w, active_files=files or None)
    try:
        return build_core(graphs, now=now, budget=budget, counter=counter(ctx), scores=scores)
    except ValueError as exc:  # the budget does not even hold the header
        raise InvalidInput(f"budget: {exc}") from None


def _result(ctx: EngineContext, view: CoreView, scopes: list[str],
            as_of: datetime | None) -> CoreRead:
    return CoreRead(text=view.text, tokens=view.tokens, budget=view.budget, counter=view.counter,
                    scopes=scopes, shown=len(view.included), active=view.active,
                    traces=view.traces, as_of=as_of, seq=ctx.store.last_seq())


def ping(ctx: EngineContext, cache: GraphCache, project: str | None = None) -> GraphPing:
    """The store's change sequence number and the size of each graph the caller sees."""
    summaries = []
    now = ctx.clock()
    for target in read_targets(ctx, project):
        graph = load(ctx, target.scope, cache).graph
        path = graph_file(ctx, target)
        summaries.append(GraphSummary(
            scope=target.scope, nodes=len(graph.nodes),
            active=sum(1 for n in graph.nodes if not n.archived
                       and (n.valid_until is None or now < n.valid_until)),
            edges=len(graph.edges), files=[str(path)] if path is not None else []))
    return GraphPing(seq=ctx.store.last_seq(), at=now, graphs=summaries)


def export(ctx: EngineContext, cache: GraphCache, project: str | None = None,
           graph: str | None = None) -> GraphExport:
    """One graph as the text of its reviewable file (use counts left out)."""
    target = write_target(ctx, project, graph)  # type: ignore[arg-type]
    loaded = load(ctx, target.scope, cache).graph
    return GraphExport(scope=target.scope, nodes=len(loaded.nodes), edges=len(loaded.edges),
                       text=dumps_graph(loaded))
