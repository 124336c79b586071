"""Finding knowledge-graph nodes and following their changes: ``kg_search`` (memoryd's
hybrid search over nodes, archived ones included) and ``kg_sync`` (what changed since a
sequence number: stateless polling, read from the store's history).
"""

from __future__ import annotations

from memoryd.engine.context import EngineContext
from memoryd.engine.kg.targets import read_targets, write_target
from memoryd.engine.memory.search import SearchOptions, run_search
from memoryd.graph.memories import KG_KEY, is_node, memory_to_node, node_memory_id
from memoryd.models import HistoryEntry, Memory, SearchHit
from memoryd.models.knowledge import GraphChange, GraphChanges, GraphHit, ScopedNode

# Changes read per page while filtering the history for graph nodes.
_PAGE = 500
_MAX_PAGES = 20


def _scoped(memory: Memory) -> ScopedNode | None:
    node = memory_to_node(memory)
    if node is None:
        return None
    return ScopedNode(**node.model_dump(), scope=memory.scope, memory_id=memory.id)


def search(ctx: EngineContext, query: str, *, project: str | None = None, limit: int = 10,
           include_archived: bool = True, graph: str | None = None) -> list[GraphHit]:
    """Nodes of the visible graphs (or of one ``graph``) matching ``query``, best first.

    Searching is not using: it counts no use (kg_recall does).
    """
    if graph is None:
        targets = read_targets(ctx, project)
    else:
        targets = [write_target(ctx, project, graph)]  # type: ignore[arg-type]
    vector = ctx.embedder.embed_query(query)
    options = SearchOptions(limit=min(limit * 2, 1000), associations=False, record_access=False)
    hits: list[SearchHit] = []
    for target in targets:
        filters = ctx.filters(scope=target.scope, graph=True)  # expired nodes left out
        hits += run_search(ctx, query, filters, options, vector)
    out = []
    for hit in sorted(hits, key=lambda h: -h.score):
        node = _scoped(hit.memory)
        if node is None or (node.archived and not include_archived):
            continue
        out.append(GraphHit(**node.model_dump(), score=round(hit.score, 6)))
    return out[:limit]


def changes(ctx: EngineContext, since: int, *, project: str | None = None,
            limit: int = 200) -> GraphChanges:
    """Changes to nodes of the graphs the caller sees, after sequence number ``since``.

    Pass the answer's ``next`` as ``since`` next time. Each change names the operation
    (kg_update, kg_link, kg_archive, kg_recall, kg_merge, kg_remove, create, ...) and carries
    the node as it is now.
    """
    scopes = {t.scope for t in read_targets(ctx, project)}
    found: list[GraphChange] = []
    cursor, more = since, False
    for _ in range(_MAX_PAGES):
        page = ctx.store.changes_since(cursor, limit=_PAGE)
        memories = ctx.get_many(list({e.memory_id for e in page}))
        for entry in page:
            change = _change(ctx, entry, memories.get(entry.memory_id), scopes,
                             removals=ctx.access.agent_id is None)
            cursor = entry.seq
            if change is not None:
                found.append(change)
            if len(found) >= limit:
                break
        more = len(page) == _PAGE or len(found) >= limit
        if len(found) >= limit or len(page) < _PAGE:
            break
    more = more and ctx.store.last_seq() > cursor
    return GraphChanges(since=since, next=cursor, more=more, changes=found)


def _change(ctx: EngineContext, entry: HistoryEntry, memory: Memory | None, scopes: set[str],
            *, removals: bool) -> GraphChange | None:
    if memory is not None:
        if not is_node(memory) or memory.scope not in scopes:
            return None
        slug = memory.metadata[KG_KEY]["slug"]
        return GraphChange(seq=entry.seq, at=entry.at, operation=entry.operation,
                           scope=memory.scope, id=slug, memory_id=memory.id,
                           node=_scoped(memory),
                           details=visible_details(ctx, memory.scope, _details(entry)))
    # A removed node is gone, so whose it was cannot be checked: a caller bound to an agent
    # (who sees only its own agent's nodes) is not told about removals.
    removed = entry.details if removals and entry.operation == "kg_remove" else None
    if removed and removed.get("scope") in scopes:
        return GraphChange(seq=entry.seq, at=entry.at, operation=entry.operation,
                           scope=removed["scope"], id=str(removed.get("slug")),
                           memory_id=entry.memory_id, details=_details(entry))
    return None


def _details(entry: HistoryEntry) -> dict:
    """What a change says beyond the node itself (old text is left out)."""
    return {k: v for k, v in entry.details.items() if k in ("edges", "scope", "slug", "reason")}


def visible_details(ctx: EngineContext, scope: str, details: dict) -> dict:
    """A node's history details with only the edges (``{"edges": {"added": [[type, target,
    weight]], "removed": [[type, target]]}}``) to nodes the caller may see: a link an unbound
    caller made to another agent's node names that node (its id is a slug of its name)."""
    edges = details.get("edges")
    if not ctx.access.restricted or not isinstance(edges, dict):
        return details
    ends = {e[1]: node_memory_id(scope, e[1]) for items in edges.values()
            for e in items if isinstance(e, list) and len(e) > 1 and isinstance(e[1], str)}
    seen = ctx.get_many(sorted(set(ends.values())))
    kept = {kind: [e for e in items if isinstance(e, list) and len(e) > 1
                   and ends.get(e[1]) in seen]
            for kind, items in edges.items()}
    out = {k: v for k, v in details.items() if k != "edges"}
    if any(kept.values()):
        out["edges"] = {kind: items for kind, items in kept.items() if items}
    return out
