"""Spreading activation over the memory graph.

Activation starts at the seeds (the top search hits, each with its score) and flows
along edges: a neighbour receives ``activation * edge.weight * decay`` per hop, for at
most ``hops`` hops, and only while the value stays at or above ``threshold``. Each
memory is activated once, at the first (shortest) hop that reaches it, so cycles
cannot feed back; when several paths reach a memory at the same hop, the strongest wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from memoryd.models import Edge


@dataclass(frozen=True)
class ActivationParams:
    """Vestige's constants: 0.7 decay per hop, stop below 0.1; we default to 2 hops."""

    decay: float = 0.7
    hops: int = 2
    threshold: float = 0.1


@dataclass(frozen=True)
class Activated:
    """A memory reached by activation: its value, hop count and the edge that reached it."""

    memory_id: str
    activation: float
    hops: int
    via: str
    edge_type: str


def spread(
    seeds: dict[str, float],
    edges_of: Callable[[list[str]], list[Edge]],
    params: ActivationParams = ActivationParams(),
) -> dict[str, Activated]:
    """Memories reached from ``seeds`` (not including the seeds themselves)."""
    reached: dict[str, Activated] = {}
    visited = set(seeds)
    frontier = dict(seeds)
    for hop in range(1, params.hops + 1):
        if not frontier:
            break
        best: dict[str, Activated] = {}
        for edge in edges_of(list(frontier)):
            for source, target in ((edge.source_id, edge.target_id), (edge.target_id, edge.source_id)):
                if source not in frontier or target in visited:
                    continue
                value = frontier[source] * edge.weight * params.decay
                if value < params.threshold:
                    continue
                if target not in best or best[target].activation < value:
                    best[target] = Activated(target, value, hop, source, edge.edge_type)
        reached.update(best)
        visited.update(best)
        frontier = {memory_id: a.activation for memory_id, a in best.items()}
    return reached
