"""Archive until the active core fits its budget: the archival run a write triggers.

Archiving a node adds a memory trace to each active neighbour's block, so the core's
cost after a round is not known before it: each round plans with the current costs
(archival.plan_archival, one 20% slice), applies it, re-measures, and stops when the
active nodes fit.

    >>> user, project = compact([user, project], now=now, budget=5000).graphs
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memoryd.graph.archival import (
    ArchivalWeights,
    NodeKey,
    NodeScore,
    apply_archival,
    plan_archival,
    score_nodes,
)
from memoryd.graph.core import DEFAULT_BUDGET, node_costs
from memoryd.models.kg import Graph
from memoryd.graph.tokens import TokenCounter, get_counter

MAX_ROUNDS = 64


@dataclass
class CompactionResult:
    """The graphs after archival and what was archived (lowest score first)."""

    graphs: list[Graph]
    archived: list[NodeKey] = field(default_factory=list)
    rounds: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


def _neighbours(graphs: Sequence[Graph], keys: set[NodeKey]) -> set[NodeKey]:
    out: set[NodeKey] = set()
    for graph in graphs:
        index = graph.edge_index()
        for scope, node_id in keys:
            if scope == graph.scope:
                out.update((scope, e.target) for e in index.outgoing.get(node_id, ()))
                out.update((scope, e.source) for e in index.incoming.get(node_id, ()))
    return out - keys


def compact(
    graphs: Sequence[Graph],
    *,
    now: datetime,
    budget: int = DEFAULT_BUDGET,
    counter: TokenCounter | None = None,
    weights: ArchivalWeights | None = None,
    fraction: float = 0.2,
    scores: Mapping[NodeKey, NodeScore] | None = None,
) -> CompactionResult:
    """Archive the lowest-scored ``fraction`` of active nodes per round until the sum of
    the active nodes' core costs fits ``budget``. Nothing changes if it already fits.

    Scores are computed once: archiving changes none of them (connectivity counts edges
    to archived neighbours too). Only the blocks of the archived nodes' neighbours are
    re-measured after a round. ``scores`` (default: :func:`score_nodes` with ``weights``)
    may be given, e.g. scored against the files being worked on.
    """
    counter = counter or get_counter()
    current = list(graphs)
    costs = node_costs(current, counter)
    result = CompactionResult(current, tokens_before=sum(costs.values()))
    scores = scores if scores is not None else score_nodes(current, now, weights)
    while sum(costs.values()) > budget and result.rounds < MAX_ROUNDS:
        live = {k: scores[k] for k in costs if k in scores}
        chunk = plan_archival(live, costs, budget, fraction=fraction, max_rounds=1).archive
        if not chunk:
            break
        current = apply_archival(current, chunk, now)
        result.archived.extend(chunk)
        result.rounds += 1
        gone = set(chunk)
        for key in gone:
            costs.pop(key, None)
        touched = [k for k in _neighbours(current, gone) if k in costs]
        costs.update(node_costs(current, counter, keys=touched))
    result.graphs = current
    result.tokens_after = sum(costs.values())
    return result
