"""Deterministic generated knowledge graphs for the kgraph bench.

A project has modules (``src/<module>/<file>.py``); nodes are compact knowledge items
(name 3-7 words, body 8-45 words drawn from a programming vocabulary, 0-3 touched files
of one module, 0-2 tags), created over the past year; use counts are Zipf-like. Edges
grow by preferential attachment (each new node links to 1-3 earlier nodes, chosen
half by degree, half uniformly within its module), so hubs form as in real graphs.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from memoryd.models.kg import Graph, GraphEdge, GraphNode

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
KINDS = ("insight", "decision", "convention", "pattern", "gotcha", "component", "command", "fact")
KIND_WEIGHTS = (25, 15, 12, 10, 15, 10, 5, 8)
EDGE_TYPES = (
    "relates_to",
    "depends_on",
    "part_of",
    "caused_by",
    "supersedes",
    "implements",
    "uses",
)
EDGE_WEIGHTS = (40, 20, 15, 8, 4, 8, 5)
VOCAB = """cache index writer lock budget sqlite vector token retry deploy schema queue worker
timeout pool config parser render archive trace migration fixture request response
handler route middleware session cookie auth key scope tenant embedding model batch
stream buffer socket thread process signal watcher file path glob commit branch review
test coverage flaky benchmark latency throughput memory heap profile span metric log
alert dashboard backup restore replica shard partition hash checksum ledger history
sequence cursor page limit offset filter sort rank fuse score decay recency importance
tier hot warm cold graph edge node hub trace recall search keyword semantic hybrid
always never must should prefer avoid because when after before unless instead""".split()
MODULES = (
    "store",
    "api",
    "cli",
    "embed",
    "retrieval",
    "cognition",
    "graph",
    "tasks",
    "mcp",
    "dashboard",
    "bench",
    "docs",
)


def module_files(rng: random.Random, files_per_module: int = 10) -> dict[str, list[str]]:
    """``{module: [src/<module>/<file>.py, ...]}``."""
    out: dict[str, list[str]] = {}
    for module in MODULES:
        names = rng.sample(VOCAB[:120], files_per_module)
        out[module] = [f"src/{module}/{n}.py" for n in names]
    return out


def make_node(
    rng: random.Random, node_id: str, module: str, files: dict[str, list[str]], created: datetime
) -> GraphNode:
    """One generated node about ``module``."""
    name = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(3, 7))).capitalize()
    body = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(8, 45))) + "."
    touches = rng.sample(files[module], rng.choice((0, 1, 1, 2, 3)))
    tags = rng.sample((module, "perf", "bug", "api", "ops", "style"), rng.choice((0, 1, 1, 2)))
    return GraphNode(
        id=node_id,
        name=name,
        type=rng.choices(KINDS, KIND_WEIGHTS)[0],
        body=body,
        touches=touches,
        tags=tags,
        created=created,
    )


def link_new(
    rng: random.Random,
    node: str,
    module_of: dict[str, str],
    degree: dict[str, int],
    by_module: dict[str, list[str]],
    ids: list[str],
) -> list[GraphEdge]:
    """1-3 edges from ``node`` to earlier nodes: half preferential by degree, half in-module."""
    edges: dict[str, GraphEdge] = {}
    for _ in range(rng.randint(1, 3)):
        if not ids:
            break
        if rng.random() < 0.5:
            pool = rng.sample(ids, min(20, len(ids)))
            target = max(pool, key=lambda i: degree[i] + rng.random())
        else:
            same = by_module.get(module_of[node]) or ids
            target = rng.choice(same)
        if target != node and target not in edges:
            edges[target] = GraphEdge(
                source=node,
                target=target,
                type=rng.choices(EDGE_TYPES, EDGE_WEIGHTS)[0],
                weight=round(rng.uniform(0.3, 1.0), 2),
            )
    for target in edges:
        degree[node] += 1
        degree[target] += 1
    return list(edges.values())


def generate_graph(
    n: int,
    *,
    seed: int = 7,
    scope: str = "project:bench",
    days: int = 365,
    archived_share: float = 0.0,
) -> Graph:
    """A project graph of ``n`` nodes (ids ``k<i>``); ``archived_share`` of the oldest archived."""
    rng = random.Random(seed)
    files = module_files(rng)
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    degree: dict[str, int] = {}
    module_of: dict[str, str] = {}
    by_module: dict[str, list[str]] = {}
    ids: list[str] = []
    for i in range(n):
        node_id = f"k{i}"
        module = rng.choice(MODULES)
        created = NOW - timedelta(days=days * (1 - i / max(1, n)) + rng.uniform(0, 1))
        node = make_node(rng, node_id, module, files, created)
        uses = int(rng.paretovariate(1.2)) - 1
        if uses:
            node = node.model_copy(
                update={
                    "use_count": uses,
                    "last_used": NOW - timedelta(days=rng.uniform(0, (NOW - created).days + 1)),
                }
            )
        degree[node_id], module_of[node_id] = 0, module
        edges += link_new(rng, node_id, module_of, degree, by_module, ids)
        nodes.append(node)
        ids.append(node_id)
        by_module.setdefault(module, []).append(node_id)
    cut = int(n * archived_share)
    nodes = [
        nd.model_copy(update={"archived": True}) if i < cut else nd for i, nd in enumerate(nodes)
    ]
    return Graph(scope=scope, nodes=nodes, edges=edges)


def generate_user_graph(n: int = 40, *, seed: int = 3) -> Graph:
    """A small user graph (preferences and cross-project insights), no file touches."""
    rng = random.Random(seed)
    nodes = []
    for i in range(n):
        created = NOW - timedelta(days=rng.uniform(0, 365))
        nodes.append(
            GraphNode(
                id=f"u{i}",
                name=" ".join(rng.choice(VOCAB) for _ in range(rng.randint(3, 6))).capitalize(),
                type=rng.choice(("preference", "insight", "convention")),
                body=" ".join(rng.choice(VOCAB) for _ in range(rng.randint(6, 25))) + ".",
                created=created,
            )
        )
    edges = {}
    for i in range(1, n):
        j = rng.randrange(i)
        edges[(i, j)] = GraphEdge(source=f"u{i}", target=f"u{j}")
    return Graph(scope="user", nodes=nodes, edges=list(edges.values()))
