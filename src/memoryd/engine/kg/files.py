"""The reviewable mirror of each graph: ``<project>/.knowledge/graph.json`` and
``$MEMORYD_HOME/knowledge/user.json``.

The store holds the graph; the file is its face for people and for git. Every graph write
runs under the file's lock: hand edits (or a ``git pull``) are merged into the store first
(three-way, against the base the store keeps for that file, :mod:`memoryd.graph.merge`),
then the write, then the file is rewritten atomically from the store. A read notices a
changed file by its signature (size, modification time, inode) and merges it the same
way. A file that cannot be read at all (not JSON, not a memoryd graph, another graph's) is
refused with its line and column and nothing changes: a write fails, a read reports it. In a
readable file a bad node or edge is reported (path, line, column) and *held*: the rest of the
file is merged, the held item stays in the file as it was (the store's version of a node it
stands for is kept) and is reported again by every read until it is fixed. A node without
``created`` was created at the merge.

A missing file is written from the store (deleting the file never deletes knowledge).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from memoryd.engine.context import Access, EngineContext
from memoryd.engine.kg.load import GraphCache, Loaded, load
from memoryd.engine.kg.store_writes import WritePlan, apply, plan_archived, plan_edges, plan_nodes
from memoryd.graph.jsonfile import (
    GraphFileError,
    ReadGraph,
    dumps_graph,
    edge_line,
    graph_file_lock,
    node_block,
    read_file_text,
    read_graph_file,
    read_graph_text,
    write_graph_text,
)
from memoryd.graph.memories import node_memory_id
from memoryd.graph.merge import (
    Conflict,
    MergeResult,
    SyncBase,
    edge_fingerprint,
    merge_graphs,
    node_fingerprint,
)
from memoryd.models import GraphFileState
from memoryd.models.knowledge import MergeConflict
from memoryd.store.base import Actor

T = TypeVar("T")
FILE_ACTOR = "graph-file"


@dataclass
class SyncOutcome:
    """What syncing one file did."""

    conflicts: list[MergeConflict] = field(default_factory=list)
    merged: int = 0  # changes the file brought into the store
    written: bool = False
    problems: list[str] = field(default_factory=list)  # held items of the file, located
    held: ReadGraph | None = None  # the file as read, when it has held items


def signature(path: Path) -> str | None:
    """Size, modification time and inode of the file (None if there is none)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return f"{st.st_size}-{st.st_mtime_ns}-{st.st_ino}"


def _whole(ctx: EngineContext) -> EngineContext:
    """The file mirrors the whole graph, whoever triggers the sync (the caller was checked
    against the scope before): writes the file brings in are the file's."""
    return ctx.acting(Actor(FILE_ACTOR, ctx.actor.agent_id, ctx.actor.key_label), Access())


def _fresh(ctx: EngineContext, scope: str, path: Path, loaded: Loaded,
           state: GraphFileState | None) -> bool:
    return (state is not None and signature(path) == state.signature
            and state.seq == loaded.scope_seq)


def sync(ctx: EngineContext, scope: str, path: Path, cache: GraphCache) -> SyncOutcome:
    """Merge a changed file into the store and bring a stale file up to date (a read)."""
    whole = _whole(ctx)
    loaded = load(whole, scope, cache)
    state = cache.files.get(str(path))
    if _fresh(ctx, scope, path, loaded, state):
        return SyncOutcome(problems=held_problems(state))
    if state is None and signature(path) is None and not loaded.graph.nodes:
        return SyncOutcome()  # nothing to mirror yet
    with graph_file_lock(path):
        state = whole.store.graph_files.graph_file(str(path))
        if _fresh(whole, scope, path, load(whole, scope, cache), state):
            cache.files[str(path)] = state
            return SyncOutcome(problems=held_problems(state))
        outcome = _merge_file(whole, scope, path, cache, viewer=ctx)
        outcome.written, outcome.problems = _write_file(whole, scope, path, cache, outcome.held)
    return outcome


def held_problems(state: GraphFileState | None) -> list[str]:
    """The held items of the file as the last sync found them (reported until fixed)."""
    return list(state.base.get("problems") or []) if state is not None else []


def write_through(ctx: EngineContext, scope: str, path: Path | None, cache: GraphCache,
                  change: Callable[[], T]) -> tuple[T, SyncOutcome]:
    """Run ``change`` (a store write) with the graph's file held: hand edits merged first,
    the file rewritten from the store after. Without a file, just ``change``."""
    if path is None:
        return change(), SyncOutcome()
    whole = _whole(ctx)
    with graph_file_lock(path):
        outcome = _merge_file(whole, scope, path, cache, viewer=ctx)
        result = change()
        outcome.written, outcome.problems = _write_file(whole, scope, path, cache, outcome.held)
    return result, outcome


def _merge_file(ctx: EngineContext, scope: str, path: Path, cache: GraphCache, *,
                viewer: EngineContext) -> SyncOutcome:
    """Merge the file into the store (under its lock); GraphFileError leaves both as they were.
    The conflicts reported are those ``viewer`` (who triggered the sync) may be told of."""
    state = ctx.store.graph_files.graph_file(str(path))
    loaded = load(ctx, scope, cache)
    if _fresh(ctx, scope, path, loaded, state) or signature(path) is None:
        return SyncOutcome()
    text = read_file_text(path)
    if text is None:  # removed meanwhile: it is written from the store
        return SyncOutcome()
    read = read_graph_text(text, source=str(path), scope=scope, now=ctx.clock())
    base = SyncBase.from_json(state.base) if state is not None and state.base else None
    result = merge_graphs(read.merge_input(loaded.graph), loaded.graph, base, now=ctx.clock())
    plan = WritePlan(scope)
    _plan_merge(ctx, plan, result)
    apply(ctx, plan)
    conflicts = [to_conflict(scope, c) for c in shown(viewer, scope, result.conflicts)]
    return SyncOutcome(conflicts=conflicts, merged=len(result.to_store),
                       held=read if read.problems else None)


def shown(viewer: EngineContext, scope: str, conflicts: list[Conflict]) -> list[Conflict]:
    """The conflicts ``viewer`` may be told of: those of nodes it may see (of an edge, both
    ends). The file mirrors every agent's nodes; a conflict carries both versions of one."""
    if not viewer.access.restricted or not conflicts:
        return conflicts
    ends = [[c.key] if isinstance(c.key, str) else [c.key[0], c.key[2]] for c in conflicts]
    ids = {s: node_memory_id(scope, s) for names in ends for s in names}
    visible = viewer.get_many(sorted(set(ids.values())))
    return [c for c, names in zip(conflicts, ends) if all(ids[s] in visible for s in names)]


def _plan_merge(ctx: EngineContext, plan: WritePlan, result: MergeResult) -> None:
    upserts = [c.node for c in result.to_store if c.kind == "upsert_node" and c.node]
    archive = [c.node for c in result.to_store if c.kind == "archive_node" and c.node]
    add = [c.edge for c in result.to_store if c.kind == "upsert_edge" and c.edge]
    remove = [c.key for c in result.to_store if c.kind == "remove_edge"]
    if upserts:
        plan_nodes(ctx, plan, upserts, operation="kg_merge")
    if archive:
        plan_archived(ctx, plan, archive, True, operation="kg_archive")
    if add or remove:
        plan_edges(ctx, plan, add=add, remove=remove)  # type: ignore[arg-type]


def to_conflict(scope: str, c: Conflict) -> MergeConflict:
    """A merge conflict as the operations report it."""
    key = c.key if isinstance(c.key, str) else " ".join(c.key)
    return MergeConflict(
        scope=scope, key=key, kept=c.kept, reason=c.reason,
        file_version=c.file_version.model_dump(mode="json") if c.file_version else None,
        store_version=c.store_version.model_dump(mode="json") if c.store_version else None,
    )


def _write_file(ctx: EngineContext, scope: str, path: Path, cache: GraphCache,
                held: ReadGraph | None = None) -> tuple[bool, list[str]]:
    """Write the store's graph to the file (if its text changed), with the file's held items
    (``held``, else those the last sync left in it), and remember the sync; returns whether
    the file was written and the held items' problems, located in the file as written."""
    loaded = load(ctx, scope, cache)
    graph, memo = loaded.graph, cache.memo(scope)
    try:
        current = path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        current = None
    held = held or _still_held(ctx, path, scope, current, cache)
    text = dumps_graph(graph, node_text=lambda n: memo.get(n, node_block, node_fingerprint)[0],
                       edge_text=lambda e: memo.get(e, edge_line, edge_fingerprint)[0], held=held)
    base = SyncBase({n.id: memo.get(n, node_block, node_fingerprint)[1] for n in graph.nodes},
                    {e.key: memo.get(e, edge_line, edge_fingerprint)[1] for e in graph.edges})
    memo.keep([*graph.nodes, *graph.edges])
    written = current != text
    if written:
        write_graph_text(path, text, locked=True)
    problems = [] if held is None else [str(p) for p in read_graph_text(
        text, source=str(path), scope=scope, now=ctx.clock()).problems]
    state = GraphFileState(path=str(path), scope=scope,
                           base={**base.to_json(), **({"problems": problems} if problems else {})},
                           signature=signature(path), seq=loaded.scope_seq,
                           updated_at=ctx.clock())
    ctx.store.graph_files.save_graph_file(state)
    cache.files[str(path)] = state
    return written, problems


def _still_held(ctx: EngineContext, path: Path, scope: str, current: str | None,
                cache: GraphCache) -> ReadGraph | None:
    """The held items of a file the last sync left some in (and that was not edited since)."""
    state = cache.files.get(str(path)) or ctx.store.graph_files.graph_file(str(path))
    if current is None or not held_problems(state):
        return None
    try:
        read = read_graph_text(current, source=str(path), scope=scope, now=ctx.clock())
    except GraphFileError:
        return None
    return read if read.problems else None


def check_file(path: Path, scope: str) -> None:
    """Raise GraphFileError (line, column) if the file exists and cannot be merged."""
    read_graph_file(path, scope=scope)
