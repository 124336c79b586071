"""The always-loaded core: a user graph and a project graph as compact text within a budget.

What a model reads (one line per node, its outgoing edges on the next line)::

    # knowledge core: 3 of 3 active nodes (user, project:demo)
    ## user
    - small-prs (preference) Small pull requests: one concern per PR #review
    ## project:demo
    - wal-busy (gotcha) SQLite busy timeout: set busy_timeout before WAL writes [src/db.py]
      → caused_by lock-storm; → [archived] old-pool Connection pool sizing (relates_to)
    - lock-storm (insight) Lock storms under 8 writers: ...

Nodes go in best first (archival scores), so what does not fit is the least important;
``→ [archived] <id> <name>`` lines are memory traces: something related exists and
``kg_recall(id)`` brings it back. The text never exceeds ``budget`` tokens by ``counter``
(the real cl100k tokenizer by default): blocks are packed by their own counts, then the
whole text is counted and the last block dropped until it fits.

    >>> view = build_core([user_graph, project_graph], now=now, budget=5000)
    >>> view.tokens <= 5000
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memoryd.graph.archival import ArchivalWeights, NodeKey, NodeScore, ranked, score_nodes
from memoryd.models.kg import Graph, GraphEdge, GraphNode
from memoryd.graph.tokens import TokenCounter, get_counter
from memoryd.models import as_utc

DEFAULT_BUDGET = 5000
MAX_EDGES_SHOWN = 8
_MISSES_BEFORE_STOP = 64  # blocks in a row that did not fit: the budget is full


@dataclass
class CoreView:
    """The rendered core and what went into it."""

    text: str
    tokens: int
    budget: int
    counter: str
    included: list[NodeKey] = field(default_factory=list)
    active: int = 0
    traces: int = 0

    @property
    def omitted(self) -> int:
        """Active nodes that did not fit the budget."""
        return self.active - len(self.included)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_node(node: GraphNode) -> str:
    """The node's line: ``- id (type) name: body [touches] #tags``."""
    line = f"- {node.id} ({node.type}) {_one_line(node.name)}"
    if node.body:
        line += f": {_one_line(node.body)}"
    if node.touches:
        line += f" [{', '.join(node.touches)}]"
    if node.tags:
        line += " " + " ".join(f"#{t}" for t in node.tags)
    return line


def render_edges(
    node: GraphNode,
    outgoing: Sequence[GraphEdge],
    incoming: Sequence[GraphEdge],
    nodes: Mapping[str, GraphNode],
) -> str:
    """The node's edge line (empty if it has none to show).

    Edges to active nodes: ``→ type target``. Edges to or from archived nodes are
    memory traces: ``→ [archived] id name (type)``, ``(←type)`` when the edge points in.
    """
    parts: list[str] = []
    traces: list[str] = []
    for edge in outgoing:
        target = nodes[edge.target]
        if target.archived:
            traces.append(f"→ [archived] {target.id} {_one_line(target.name)} ({edge.type})")
        else:
            parts.append(f"{edge.type} {target.id}")
    for edge in incoming:
        source = nodes[edge.source]
        if source.archived:
            traces.append(f"→ [archived] {source.id} {_one_line(source.name)} (←{edge.type})")
    shown = ([("→ " + ", ".join(parts))] if parts else []) + traces
    extra = len(shown) - MAX_EDGES_SHOWN
    if extra > 0:
        shown = shown[:MAX_EDGES_SHOWN] + [f"(+{extra} more)"]
    return ("  " + "; ".join(shown)) if shown else ""


def _edge_order(edge: GraphEdge) -> tuple[float, str, str, str]:
    return (-edge.weight, edge.type, edge.target, edge.source)


@dataclass
class _Block:
    key: NodeKey
    text: str
    tokens: int
    traces: int


class _Renderer:
    """Renders node blocks on demand (adjacency built once per graph)."""

    def __init__(self, graphs: Iterable[Graph]) -> None:
        self._graphs = {g.scope: (g.node_map(), *g.edge_index()) for g in graphs}

    def block(self, key: NodeKey) -> str:
        """The node's line and, if it has edges to show, its edge line."""
        nodes, outgoing, incoming = self._graphs[key[0]]
        node = nodes[key[1]]
        edges = render_edges(
            node,
            sorted(outgoing.get(node.id, ()), key=_edge_order),
            sorted(incoming.get(node.id, ()), key=_edge_order),
            nodes,
        )
        return render_node(node) + "\n" + (edges + "\n" if edges else "")


def node_blocks(graphs: Iterable[Graph], keys: Iterable[NodeKey]) -> dict[NodeKey, str]:
    """The core text of each node in ``keys``: its line, and its edge line if any."""
    renderer = _Renderer(graphs)
    return {key: renderer.block(key) for key in keys}


def node_costs(
    graphs: Sequence[Graph],
    counter: TokenCounter | None = None,
    keys: Iterable[NodeKey] | None = None,
) -> dict[NodeKey, int]:
    """Tokens each active node (or each of ``keys``) costs in the core: what archival plans with."""
    counter = counter or get_counter()
    if keys is None:
        keys = [(g.scope, n.id) for g in graphs for n in g.nodes if not n.archived]
    blocks = node_blocks(graphs, keys)
    order = list(blocks)
    return dict(zip(order, counter.count_many([blocks[k] for k in order]), strict=True))


def _title(included: int, active: int, scopes: Sequence[str]) -> str:
    return f"# knowledge core: {included} of {active} active nodes ({', '.join(scopes)})\n"


def _assemble(blocks: Sequence[_Block], scopes: Sequence[str], active: int) -> str:
    parts = [_title(len(blocks), active, scopes)]
    for scope in scopes:
        mine = [b.text for b in blocks if b.key[0] == scope]
        if mine:
            parts.append(f"## {scope}\n")
            parts.extend(mine)
    if len(blocks) < active:
        parts.append(
            f"({active - len(blocks)} more active nodes not shown: kg_search finds them)\n"
        )
    return "".join(parts)


def build_core(
    graphs: Sequence[Graph],
    *,
    now: datetime,
    budget: int = DEFAULT_BUDGET,
    counter: TokenCounter | None = None,
    scores: Mapping[NodeKey, NodeScore] | None = None,
    weights: ArchivalWeights | None = None,
) -> CoreView:
    """Render the active nodes of ``graphs`` (user first, then the project) within ``budget``.

    Active = not archived and not expired (``valid_until`` in the past). ``scores``
    (default: :func:`score_nodes` with ``weights``) decide which nodes come first.
    """
    if budget < 16:
        raise ValueError("budget must be at least 16 tokens")
    now = as_utc(now)
    counter = counter or get_counter()
    scopes = [g.scope for g in graphs]
    if len(set(scopes)) != len(scopes):
        raise ValueError(f"each graph must have its own scope, got {scopes}")
    current = {
        (g.scope, n.id)
        for g in graphs
        for n in g.nodes
        if not n.archived and (n.valid_until is None or now < n.valid_until)
    }
    scores = scores if scores is not None else score_nodes(graphs, now, weights)
    order = [k for k in ranked(scores) if k in current]
    order += sorted(current - set(order))
    renderer = _Renderer(graphs)
    reserve = counter.count(
        _assemble([], scopes, len(current)) + "".join(f"## {s}\n" for s in scopes)
    )
    blocks = _pack(order, renderer, counter, budget - reserve)
    text = _assemble(blocks, scopes, len(current))
    tokens = counter.count(text)
    while tokens > budget and blocks:
        blocks.pop()
        text = _assemble(blocks, scopes, len(current))
        tokens = counter.count(text)
    if tokens > budget:
        raise ValueError(f"budget {budget} is too small for the core's header ({tokens} tokens)")
    return CoreView(
        text=text,
        tokens=tokens,
        budget=budget,
        counter=counter.name,
        included=[b.key for b in blocks],
        active=len(current),
        traces=sum(b.traces for b in blocks),
    )


def _pack(
    order: Sequence[NodeKey], renderer: _Renderer, counter: TokenCounter, room: int
) -> list[_Block]:
    """Greedy, best first: take each block that still fits; stop once many in a row did not.

    The blocks keep that order, so dropping from the end drops the least important one.
    """
    blocks: list[_Block] = []
    used, misses, step = 0, 0, 32
    for start in range(0, len(order), step):
        chunk = order[start : start + step]
        texts = [renderer.block(k) for k in chunk]
        for key, text, tokens in zip(chunk, texts, counter.count_many(texts), strict=True):
            if used + tokens <= room:
                blocks.append(_Block(key, text, tokens, text.count("→ [archived]")))
                used += tokens
                misses = 0
            else:
                misses += 1
            if misses >= _MISSES_BEFORE_STOP or room - used < 4:
                return blocks
    return blocks
