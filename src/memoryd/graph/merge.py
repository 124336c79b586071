"""Merging a graph file (edited by hand or by ``git pull``) with the store's graph.

Three-way, by content fingerprints against the state of the last sync (the *base*):

- changed on one side only: that side wins (a hand edit that kept the old ``updated``
  is stamped with the merge time, so it stays the newer version);
- changed on both sides, or different with no base: the newer ``updated`` wins and the
  case is reported as a :class:`Conflict` carrying both versions, so nothing is dropped;
- new on one side: added to the other;
- gone from the file but unchanged in the store: archived in the store (memoryd never
  deletes on sync); gone from the store but unchanged in the file: dropped from the file;
  gone on one side but edited on the other: kept, and reported as a conflict.

Use counts and last-used times are not part of a node's content: the store's are kept.

    >>> result = merge_graphs(file_graph, store_graph, base, now=now)
    >>> result.to_store      # changes the store must apply
    >>> result.graph         # what both sides hold afterwards (write it to the file)
    >>> result.base          # keep it for the next merge
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memoryd.models.kg import Graph, GraphEdge, GraphNode
from memoryd.models import as_utc

EdgeKey = tuple[str, str, str]
_NOT_CONTENT = {"use_count", "last_used", "updated"}


def node_fingerprint(node: GraphNode) -> str:
    """A hash of the node's content (everything but usage and the ``updated`` stamp)."""
    data = node.model_dump(mode="json", exclude=_NOT_CONTENT)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:24]


def edge_fingerprint(edge: GraphEdge) -> str:
    """A hash of the edge's weight and validity."""
    data = edge.model_dump(mode="json", exclude={"created"})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class SyncBase:
    """Fingerprints of every node and edge at the last sync."""

    nodes: dict[str, str] = field(default_factory=dict)
    edges: dict[EdgeKey, str] = field(default_factory=dict)

    @classmethod
    def from_graph(cls, graph: Graph) -> SyncBase:
        """The base after a sync that left both sides holding ``graph``."""
        return cls(
            {n.id: node_fingerprint(n) for n in graph.nodes},
            {e.key: edge_fingerprint(e) for e in graph.edges},
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (edge keys joined with spaces: ids contain none)."""
        return {
            "nodes": dict(sorted(self.nodes.items())),
            "edges": {" ".join(k): v for k, v in sorted(self.edges.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SyncBase:
        """Read back :meth:`to_json`; ``ValueError`` for a malformed edge key."""
        nodes = {str(k): str(v) for k, v in dict(data.get("nodes") or {}).items()}
        edges: dict[EdgeKey, str] = {}
        for key, value in dict(data.get("edges") or {}).items():
            parts = str(key).split(" ")
            if len(parts) != 3:
                raise ValueError(f"sync base edge key {key!r} is not 'source type target'")
            edges[(parts[0], parts[1], parts[2])] = str(value)
        return cls(nodes, edges)


ChangeKind = Literal["upsert_node", "archive_node", "upsert_edge", "remove_edge"]


@dataclass(frozen=True)
class Change:
    """One change the store must apply."""

    kind: ChangeKind
    key: str | EdgeKey
    node: GraphNode | None = None
    edge: GraphEdge | None = None
    reason: str = ""


@dataclass(frozen=True)
class Conflict:
    """Both sides changed the same node or edge; ``kept`` says which version won."""

    key: str | EdgeKey
    kept: Literal["file", "store"]
    reason: str
    file_version: GraphNode | GraphEdge | None
    store_version: GraphNode | GraphEdge | None


@dataclass
class MergeResult:
    """The merged graph, what the store must change, whether the file must be rewritten."""

    graph: Graph
    base: SyncBase
    to_store: list[Change] = field(default_factory=list)
    file_changed: bool = False
    conflicts: list[Conflict] = field(default_factory=list)


def _with_usage(winner: GraphNode, store: GraphNode | None) -> GraphNode:
    if store is None:
        return winner
    return winner.model_copy(update={"use_count": store.use_count, "last_used": store.last_used})


def _stamped(node: GraphNode, other: GraphNode | None, now: datetime) -> GraphNode:
    """A hand edit keeps its old ``updated``; stamp it so it is the newer version."""
    if other is not None and node.changed <= other.changed:
        return node.model_copy(update={"updated": max(now, other.changed)})
    return node


def _merge_node(
    f: GraphNode | None, s: GraphNode | None, base: str | None, now: datetime, result: MergeResult
) -> GraphNode | None:
    fp_f = node_fingerprint(f) if f else None
    fp_s = node_fingerprint(s) if s else None
    if f and s:
        if fp_f == fp_s:
            return s
        return _merge_both(f, s, base, fp_f != base, fp_s != base, now, result)
    if f:
        return _merge_file_only(f, base, fp_f != base, result)
    assert s is not None
    return _merge_store_only(s, base, fp_s != base, result)


def _merge_both(f: GraphNode, s: GraphNode, base: str | None, f_changed: bool, s_changed: bool,
                now: datetime, result: MergeResult) -> GraphNode:
    """A node in the file and in the store, with different content."""
    if f_changed and not s_changed:
        node = _with_usage(_stamped(f, s, now), s)
        result.to_store.append(Change("upsert_node", f.id, node=node, reason="edited in the file"))
        result.file_changed |= node.updated != f.updated
        return node
    if s_changed and not f_changed:
        result.file_changed = True
        return s
    file_wins = f.changed > s.changed
    why = "changed in the file and in the store" if base else "differs and was never synced"
    result.conflicts.append(Conflict(f.id, "file" if file_wins else "store", why, f, s))
    if file_wins:
        node = _with_usage(f, s)
        result.to_store.append(Change("upsert_node", f.id, node=node, reason="newer in the file"))
        return node
    result.file_changed = True
    return s


def _merge_file_only(f: GraphNode, base: str | None, f_changed: bool,
                     result: MergeResult) -> GraphNode | None:
    """A node only in the file: new there, edited after the store dropped it, or deleted."""
    if base is None:
        result.to_store.append(Change("upsert_node", f.id, node=f, reason="new in the file"))
        return f
    if f_changed:
        result.conflicts.append(
            Conflict(f.id, "file", "removed from the store, edited in the file", f, None))
        result.to_store.append(Change("upsert_node", f.id, node=f, reason="edited in the file"))
        return f
    result.file_changed = True
    return None


def _merge_store_only(s: GraphNode, base: str | None, s_changed: bool,
                      result: MergeResult) -> GraphNode:
    """A node only in the store: new there, or removed from the file (archived, not deleted)."""
    result.file_changed = True
    if base is None:
        return s
    if s_changed:
        result.conflicts.append(
            Conflict(s.id, "store", "removed from the file, changed in the store", None, s))
        return s
    archived = s.model_copy(update={"archived": True})
    if not s.archived:
        result.to_store.append(
            Change("archive_node", s.id, node=archived, reason="removed from the file"))
    return archived


def _merge_edge(
    f: GraphEdge | None, s: GraphEdge | None, base: str | None, result: MergeResult
) -> GraphEdge | None:
    fp_f = edge_fingerprint(f) if f else None
    fp_s = edge_fingerprint(s) if s else None
    key = (f or s).key  # type: ignore[union-attr]
    if fp_f == fp_s:
        return s
    f_changed, s_changed = fp_f != base, fp_s != base
    if f_changed and not s_changed:
        if f is None:
            result.to_store.append(Change("remove_edge", key, reason="removed from the file"))
        else:
            result.to_store.append(Change("upsert_edge", key, edge=f, reason="changed in the file"))
        return f
    if s_changed and not f_changed:
        result.file_changed = True
        return s
    # Both changed: an edge that still exists beats a removal; else the file's version
    # (edges carry no timestamp of their own, and the file is what a person reviewed).
    kept = f if f is not None else s
    result.conflicts.append(
        Conflict(
            key,
            "file" if kept is f else "store",
            "edge changed on both sides" if base else "edge differs and was never synced",
            f,
            s,
        )
    )
    if kept is f:
        result.to_store.append(Change("upsert_edge", key, edge=f, reason="kept the file's edge"))
    else:
        result.file_changed = True
    return kept


def merge_graphs(
    file: Graph | None, store: Graph, base: SyncBase | None, *, now: datetime
) -> MergeResult:
    """Merge the file's graph (``None``: no file yet) with the store's, against ``base``
    (``None``: never synced). Both graphs must have the same scope."""
    now = as_utc(now)
    file = file or Graph(scope=store.scope)
    if file.scope != store.scope:
        raise ValueError(f"cannot merge graph {file.scope!r} into {store.scope!r}")
    base = base or SyncBase()
    result = MergeResult(graph=store, base=base)
    fn, sn = file.node_map(), store.node_map()
    nodes = []
    for node_id in sorted(fn.keys() | sn.keys()):
        merged = _merge_node(fn.get(node_id), sn.get(node_id), base.nodes.get(node_id), now, result)
        if merged is not None:
            nodes.append(merged)
    ids = {n.id for n in nodes}
    fe, se = {e.key: e for e in file.edges}, {e.key: e for e in store.edges}
    edges = []
    for key in sorted(fe.keys() | se.keys()):
        merged_edge = _merge_edge(fe.get(key), se.get(key), base.edges.get(key), result)
        if merged_edge is None:
            continue
        if merged_edge.source in ids and merged_edge.target in ids:
            edges.append(merged_edge)
        else:
            result.file_changed = True
    result.graph = Graph(scope=store.scope, nodes=nodes, edges=edges)
    result.base = SyncBase.from_graph(result.graph)
    return result
