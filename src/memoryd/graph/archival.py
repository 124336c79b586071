"""Which nodes stay in the always-loaded core, which are archived, which are orphans.

Score (each part in [0, 1]; weights configurable, normalised by their sum)::

    recency      = 0.5 ** (days since created/updated/last used / half_life_days)
    connectivity = min(1, log(1 + degree) / log(1 + degree_cap))
    files        = min(1, file mentions / files_cap)
    usage        = min(1, log(1 + use_count) / log(1 + usage_cap))

Default weights: recency 0.8, connectivity 0.1, files 0.1, usage 0. The first
proposal, 0.5 / 0.3 / 0.2, was measured against them on a simulated project history
(bench/results/kgraph.md): the needed node was in the core 42.5% of the time with the
first proposal and 47.9% with these, better on each of three simulated histories by 4.7-5.8 points;
connectivity earns old nodes points (edges accumulate with age) and so works against
recency. Connectivity saturates at ``degree_cap`` edges: a hub with 200 edges scores no
higher than a node with 6, so hubs cannot crowd the rest out of the core (ranking by
connectivity alone filled 45% of the core with the top 5% of nodes by degree).

Archival never deletes: archived nodes leave the core, keep their edges (shown as memory
traces) and come back with :func:`recall`. Orphans are only *listed*.

    >>> plan = plan_archival(scores, costs, budget=5000)   # keys are (scope, node id)
    >>> plan.archive                                         # lowest-scored first
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models.kg import Graph
from memoryd.models import as_utc

NodeKey = tuple[str, str]  # (scope, node id): ids are unique only within one graph


class ArchivalWeights(BaseModel):
    """How nodes are scored for the core. Weights need not sum to 1 (they are normalised)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recency: float = Field(default=0.8, ge=0.0)
    connectivity: float = Field(default=0.1, ge=0.0)
    files: float = Field(default=0.1, ge=0.0)
    usage: float = Field(default=0.0, ge=0.0)
    half_life_days: float = Field(default=14.0, gt=0.0)
    degree_cap: int | None = Field(
        default=6, ge=1, description="Edges at which connectivity saturates; None = degree/max."
    )
    files_cap: int = Field(default=3, ge=1)
    usage_cap: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _some_weight(self) -> ArchivalWeights:
        if self.recency + self.connectivity + self.files + self.usage <= 0:
            raise ValueError("at least one archival weight must be positive")
        return self


class NodeScore(NamedTuple):
    """A node's score and its parts (each in [0, 1])."""

    key: NodeKey
    score: float
    recency: float
    connectivity: float
    files: float
    usage: float


def _matches(path: str, active: set[str]) -> bool:
    if path in active:
        return True
    return any(a.startswith(path.rstrip("/") + "/") or fnmatch.fnmatchcase(a, path) for a in active)


def _connectivity(degrees: np.ndarray, cap: int | None) -> np.ndarray:
    if cap is None:
        top = degrees.max(initial=0)
        return degrees / top if top else np.zeros_like(degrees)
    return np.minimum(1.0, np.log1p(degrees) / math.log1p(cap))


def _graph_scores(
    graph: Graph, now: float, weights: ArchivalWeights, active: set[str] | None
) -> list[NodeScore]:
    live = [n for n in graph.nodes if not n.archived]
    if not live:
        return []
    outgoing, incoming = graph.edge_index()
    touched = np.array(
        [max(n.created, n.updated or n.created, n.last_used or n.created).timestamp() for n in live]
    )
    recency = 0.5 ** (np.maximum(0.0, now - touched) / (86400.0 * weights.half_life_days))
    degrees = np.array(
        [len(outgoing.get(n.id, ())) + len(incoming.get(n.id, ())) for n in live], dtype=float
    )
    if weights.degree_cap is None:  # normalise by the graph's top degree, archived nodes included
        degrees = np.append(degrees, max(graph.degrees().values()))
    connectivity = _connectivity(degrees, weights.degree_cap)[: len(live)]
    mentions = np.array(
        [
            len(n.touches) if active is None else sum(1 for p in n.touches if _matches(p, active))
            for n in live
        ],
        dtype=float,
    )
    files = np.minimum(1.0, mentions / weights.files_cap)
    usage = np.minimum(
        1.0,
        np.log1p(np.array([n.use_count for n in live], dtype=float))
        / math.log1p(weights.usage_cap),
    )
    total = weights.recency + weights.connectivity + weights.files + weights.usage
    score = np.round(
        (
            weights.recency * recency
            + weights.connectivity * connectivity
            + weights.files * files
            + weights.usage * usage
        )
        / total,
        6,
    )
    keys = [(graph.scope, n.id) for n in live]
    return list(
        map(
            NodeScore,
            keys,
            score.tolist(),
            recency.tolist(),
            connectivity.tolist(),
            files.tolist(),
            usage.tolist(),
        )
    )


def score_nodes(
    graphs: Iterable[Graph],
    now: datetime,
    weights: ArchivalWeights | None = None,
    *,
    active_files: Iterable[str] | None = None,
) -> dict[NodeKey, NodeScore]:
    """Score every non-archived node of ``graphs`` (keys: (scope, id)).

    ``active_files``, when given, are the files being worked on now: only touches that
    match one of them (same path, a directory containing it, or a glob matching it)
    count as file mentions. Edges to archived neighbours still count for connectivity.
    """
    weights = weights or ArchivalWeights()
    stamp = as_utc(now).timestamp()
    active = set(active_files) if active_files is not None else None
    out: dict[NodeKey, NodeScore] = {}
    for graph in graphs:
        out.update((s.key, s) for s in _graph_scores(graph, stamp, weights, active))
    return out


def ranked(scores: Mapping[NodeKey, NodeScore]) -> list[NodeKey]:
    """Keys best first (ties: scope, then id, so the order is stable)."""
    return [k for _, k in sorted((-s.score, k) for k, s in scores.items())]


@dataclass
class ArchivalPlan:
    """What to archive so the active core fits its budget (nothing is changed yet)."""

    archive: list[NodeKey] = field(default_factory=list)
    rounds: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    budget: int = 0


def plan_archival(
    scores: Mapping[NodeKey, NodeScore],
    costs: Mapping[NodeKey, int],
    budget: int,
    *,
    fraction: float = 0.2,
    max_rounds: int | None = None,
) -> ArchivalPlan:
    """Archive the lowest ``fraction`` of active nodes, round after round, until the rest fit.

    ``costs`` are each node's tokens in the core (core.node_costs). Nothing happens while
    the active nodes fit ``budget``; once over, whole 20% slices go, which leaves headroom
    so archival does not run again on the next write. ``max_rounds`` stops early (the
    caller re-measures between rounds: archiving adds traces to the neighbours' blocks).
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError("fraction must be in (0, 1]")
    if budget <= 0:
        raise ValueError("budget must be positive")
    order = sorted(scores, key=lambda k: (scores[k].score, k))  # worst first
    remaining = sum(costs.get(k, 0) for k in order)
    plan = ArchivalPlan(tokens_before=remaining, budget=budget)
    start = 0
    while remaining > budget and start < len(order):
        if max_rounds is not None and plan.rounds >= max_rounds:
            break
        left = len(order) - start
        take = max(1, math.ceil(left * fraction))
        chunk = order[start : start + take]
        plan.archive.extend(chunk)
        remaining -= sum(costs.get(k, 0) for k in chunk)
        start += take
        plan.rounds += 1
    plan.tokens_after = remaining
    return plan


def apply_archival(
    graphs: Iterable[Graph], archive: Iterable[NodeKey], now: datetime
) -> list[Graph]:
    """Copies of ``graphs`` with the given nodes marked archived (``updated`` left alone:
    archiving is a state change, not an edit). Edges are kept: they become memory traces."""
    chosen = set(archive)
    out = []
    for graph in graphs:
        nodes = [
            n.model_copy(update={"archived": True}) if (graph.scope, n.id) in chosen else n
            for n in graph.nodes
        ]
        out.append(graph.model_copy(update={"nodes": nodes}))
    return out


def recall(graph: Graph, node_id: str, now: datetime) -> Graph:
    """A copy of ``graph`` with ``node_id`` active again and counted as used (kg_recall)."""
    now = as_utc(now)
    node = graph.node(node_id)
    used = node.model_copy(
        update={
            "archived": False,
            "use_count": node.use_count + 1,
            "last_used": max(now, node.last_used) if node.last_used else now,
        }
    )
    nodes = [used if n.id == node_id else n for n in graph.nodes]
    return graph.model_copy(update={"nodes": nodes})


@dataclass(frozen=True)
class Orphan:
    """A node that nothing links to, never used, older than the grace period."""

    scope: str
    id: str
    name: str
    age_days: float
    archived: bool


def find_orphans(graph: Graph, now: datetime, *, grace_days: float = 30.0) -> list[Orphan]:
    """Orphan candidates, oldest first: no edges in or out, ``use_count == 0``, not used,
    created and last changed more than ``grace_days`` ago. A dry-run list: removing them is
    the caller's explicit decision, never a side effect of a write."""
    if grace_days < 0:
        raise ValueError("grace_days must not be negative")
    now = as_utc(now)
    cutoff = now - timedelta(days=grace_days)
    degrees = graph.degrees()
    found = [
        Orphan(
            graph.scope,
            n.id,
            n.name,
            round((now - n.created).total_seconds() / 86400.0, 2),
            n.archived,
        )
        for n in graph.nodes
        if degrees[n.id] == 0
        and n.use_count == 0
        and n.last_used is None
        and n.last_touched < cutoff
    ]
    return sorted(found, key=lambda o: (-o.age_days, o.id))
