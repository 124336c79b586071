"""A generated project history: how often was the node an agent needed in its core?

World (identical for every weighting, from its own random stream): 12 modules of 10
files; 2 sessions a day for ``days`` days; each session works on one module (it stays on
the same module with probability 0.8, else moves, popular modules more often), adds 0-3
nodes about that module's files, linked to 1-3 earlier nodes (half by degree, half in
the module: hubs form), and needs 2 existing nodes, drawn as

- 35% a node touching the module being worked on,
- 20% a node created or used in the last 7 days (continuing recent work),
- 20% a neighbour (by an edge) of a node touching that module (related knowledge,
  what memory traces are for),
- 12.5% a convention or decision anywhere (foundational knowledge),
- 12.5% any node (the long tail).

Which kind of need a weighting serves is the point, so hit rates are reported per kind:
the mix above is an assumption, and other mixes can be read off the table.

At the start of each session the core is rendered (budget 5,000 cl100k tokens); a need is
a *hit* when its node is in the core. Hit or miss, the node is then used (a miss is found
by search or ``kg_recall``), which updates ``use_count``/``last_used`` and resurrects an
archived node. After the session, archival runs when the active nodes exceed the budget.
Sessions of the first 20 days are not counted (the core still holds everything).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bench.kgraph.generate import MODULES, NOW, link_new, make_node, module_files
from memoryd.graph.archival import ArchivalWeights, NodeScore, recall, score_nodes
from memoryd.graph.compact import compact
from memoryd.graph.core import build_core
from memoryd.models.kg import Graph, GraphEdge, GraphNode
from memoryd.graph.tokens import get_counter

SCOPE = "project:sim"
NEED_KINDS = ("module", "recent", "neighbour", "foundational", "any")
NEED_WEIGHTS = (35, 20, 20, 12.5, 12.5)
WARMUP_DAYS = 20


@dataclass(frozen=True)
class Variant:
    """A way of ranking nodes for the core and for archival."""

    name: str
    weights: ArchivalWeights | None = None
    active_files: bool = False  # score file mentions against the module being worked on
    random_order: bool = False  # a floor: rank nodes at random


ORIGINAL = ArchivalWeights(recency=0.5, connectivity=0.3, files=0.2)  # first proposed
VARIANTS = (
    Variant("original design: recency .5 + connectivity .3 (cap 6) + files .2", ORIGINAL),
    Variant(
        "original weights, degree uncapped (degree / max degree)",
        ORIGINAL.model_copy(update={"degree_cap": None}),
    ),
    Variant(
        "original weights + files matched to the module worked on", ORIGINAL, active_files=True
    ),
    Variant(
        "recency .4 + connectivity .2 + files .2 + usage .2",
        ArchivalWeights(recency=0.4, connectivity=0.2, files=0.2, usage=0.2),
    ),
    Variant(
        "recency .4 + connectivity .2 + files .2 + usage .2, files matched",
        ArchivalWeights(recency=0.4, connectivity=0.2, files=0.2, usage=0.2),
        active_files=True,
    ),
    Variant(
        "recency .5 + connectivity .3 (cap 20) + files .2",
        ORIGINAL.model_copy(update={"degree_cap": 20}),
    ),
    Variant(
        "recency .6 + connectivity .2 (cap 6) + files .2",
        ArchivalWeights(recency=0.6, connectivity=0.2, files=0.2),
    ),
    Variant(
        "recency .7 + connectivity .1 (cap 6) + files .2",
        ArchivalWeights(recency=0.7, connectivity=0.1, files=0.2),
    ),
    Variant(
        "recency .8 + connectivity .1 (cap 6) + files .1",
        ArchivalWeights(recency=0.8, connectivity=0.1, files=0.1),
    ),
    Variant(
        "recency .8 + connectivity .1 (cap 6) + files .1, files matched",
        ArchivalWeights(recency=0.8, connectivity=0.1, files=0.1),
        active_files=True,
    ),
    Variant(
        "recency .8 + files .2, files matched",
        ArchivalWeights(recency=0.8, connectivity=0, files=0.2),
        active_files=True,
    ),
    Variant("recency only", ArchivalWeights(recency=1, connectivity=0, files=0)),
    Variant(
        "connectivity only, uncapped",
        ArchivalWeights(recency=0, connectivity=1, files=0, degree_cap=None),
    ),
    Variant("random order (floor)", ORIGINAL, random_order=True),
)


class World:
    """The project's history, replayed identically for each variant."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.files = module_files(self.rng)
        self.popularity = [1 / (i + 1) for i in range(len(MODULES))]
        self.module = MODULES[0]
        self.nodes: dict[str, GraphNode] = {}
        self.edges: list[GraphEdge] = []
        self.degree: dict[str, int] = {}
        self.module_of: dict[str, str] = {}
        self.by_module: dict[str, list[str]] = {}
        self.ids: list[str] = []
        self.neighbours: dict[str, set[str]] = {}

    def next_module(self) -> str:
        if self.rng.random() > 0.8:
            self.module = self.rng.choices(MODULES, self.popularity)[0]
        return self.module

    def add_nodes(self, now: Any) -> None:
        for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
            node_id = f"s{len(self.ids)}"
            self.nodes[node_id] = make_node(self.rng, node_id, self.module, self.files, now)
            self.degree[node_id], self.module_of[node_id] = 0, self.module
            new_edges = link_new(
                self.rng, node_id, self.module_of, self.degree, self.by_module, self.ids
            )
            for edge in new_edges:
                self.neighbours.setdefault(edge.source, set()).add(edge.target)
                self.neighbours.setdefault(edge.target, set()).add(edge.source)
            self.edges += new_edges
            self.ids.append(node_id)
            self.by_module.setdefault(self.module, []).append(node_id)

    def needs(self, rng: random.Random, now: Any) -> list[tuple[str, str]]:
        """Two (kind, node id) needs for this session."""
        out = []
        touching = [i for i in self.by_module.get(self.module, []) if self.nodes[i].touches]
        recent = [i for i in self.ids if now - self.nodes[i].last_touched <= timedelta(days=7)]
        found = [i for i in self.ids if self.nodes[i].type in ("convention", "decision")]
        near: set[str] = set()
        for node_id in touching:
            near.update(self.neighbours.get(node_id, ()))
        pools = {
            "module": touching,
            "recent": recent,
            "neighbour": sorted(near - set(touching)),
            "foundational": found,
            "any": self.ids,
        }
        for _ in range(2):
            kind = rng.choices(NEED_KINDS, NEED_WEIGHTS)[0]
            pool = pools[kind] or self.ids
            out.append((kind, rng.choice(pool)))
        return out

    def graph(self) -> Graph:
        return Graph(scope=SCOPE, nodes=list(self.nodes.values()), edges=self.edges)


def _scores(
    variant: Variant, graph: Graph, now: Any, files: list[str] | None, rng: random.Random
) -> dict[tuple[str, str], NodeScore]:
    scores = score_nodes([graph], now, variant.weights, active_files=files)
    if variant.random_order:
        scores = {k: s._replace(score=rng.random()) for k, s in scores.items()}
    return scores


def run_variant(variant: Variant, *, seed: int, days: int, budget: int) -> dict[str, Any]:
    """Replay the history with one weighting; hit rates and archival figures."""
    world, need_rng, order_rng = World(seed), random.Random(seed + 1), random.Random(seed + 2)
    counter = get_counter("cl100k")
    hits = {k: [0, 0] for k in NEED_KINDS}
    hub_share, compact_ms, core_ms = [], [], []
    start = NOW - timedelta(days=days)
    for session in range(days * 2):
        now = start + timedelta(hours=12 * session + 1)
        world.next_module()
        graph = world.graph()
        files = world.files[world.module] if variant.active_files else None
        t0 = time.perf_counter()
        view = build_core(
            [graph],
            now=now,
            budget=budget,
            counter=counter,
            scores=_scores(variant, graph, now, files, order_rng),
        )
        core_ms.append(1000 * (time.perf_counter() - t0))
        included = {k[1] for k in view.included}
        counted = session >= 2 * WARMUP_DAYS and len(world.ids) >= 10
        for kind, node_id in world.needs(need_rng, now) if len(world.ids) >= 10 else []:
            if counted:
                hits[kind][0] += node_id in included
                hits[kind][1] += 1
            graph = recall(graph, node_id, now)  # used: found in the core, by search or by recall
            world.nodes[node_id] = graph.node(node_id)
        if counted and included:
            top = sorted(world.degree, key=world.degree.get, reverse=True)[
                : max(1, len(world.ids) // 20)
            ]
            hub_share.append(len(included & set(top)) / len(included))
        world.add_nodes(now + timedelta(hours=2))
        t0 = time.perf_counter()
        after = world.graph()
        later = now + timedelta(hours=3)
        result = compact(
            [after],
            now=later,
            budget=budget,
            counter=counter,
            scores=_scores(variant, after, later, files, order_rng),
        )
        compact_ms.append(1000 * (time.perf_counter() - t0))
        if result.archived:
            world.nodes.update({n.id: n for n in result.graphs[0].nodes if n.archived})
    total_hits = sum(h for h, _ in hits.values())
    total = sum(n for _, n in hits.values())
    return {
        "variant": variant.name,
        "seed": seed,
        "needs": total,
        "hit_rate": round(total_hits / total, 4) if total else None,
        "by_kind": {k: round(h / n, 4) if n else None for k, (h, n) in hits.items()},
        "nodes_at_end": len(world.ids),
        "archived_at_end": sum(n.archived for n in world.nodes.values()),
        "hub_share_of_core": round(statistics.fmean(hub_share), 4) if hub_share else None,
        "core_ms_median": round(statistics.median(core_ms), 2),
        "compact_ms_median": round(statistics.median(compact_ms), 2),
    }


def run(
    log: Callable[[str], None], *, seeds: tuple[int, ...], days: int, budget: int
) -> dict[str, Any]:
    """Every variant on every seed; per-variant means and ranges."""
    rows = []
    for variant in VARIANTS:
        for seed in seeds:
            t0 = time.perf_counter()
            row = run_variant(variant, seed=seed, days=days, budget=budget)
            rows.append(row)
            log(
                f"simulate: {variant.name} seed {seed}: hit rate {row['hit_rate']} "
                f"({time.perf_counter() - t0:.0f} s)"
            )
    summary = []
    for variant in VARIANTS:
        mine = [r for r in rows if r["variant"] == variant.name]
        rates = [r["hit_rate"] for r in mine]
        summary.append(
            {
                "variant": variant.name,
                "hit_rate_mean": round(statistics.fmean(rates), 4),
                "hit_rate_min": min(rates),
                "hit_rate_max": max(rates),
                "by_kind": {
                    k: round(statistics.fmean(r["by_kind"][k] for r in mine), 4) for k in NEED_KINDS
                },
                "hub_share_of_core": round(
                    statistics.fmean(r["hub_share_of_core"] for r in mine), 4
                ),
                "nodes_at_end": round(statistics.fmean(r["nodes_at_end"] for r in mine)),
                "archived_at_end": round(statistics.fmean(r["archived_at_end"] for r in mine)),
            }
        )
    return {
        "seeds": list(seeds),
        "days": days,
        "budget": budget,
        "need_mix": dict(zip(NEED_KINDS, NEED_WEIGHTS, strict=True)),
        "warmup_days": WARMUP_DAYS,
        "runs": rows,
        "summary": summary,
    }
