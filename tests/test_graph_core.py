"""The always-loaded core, archival scoring, compaction and orphans, on generated graphs
counted with the real cl100k tokenizer."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from memoryd.graph.archival import (
    ArchivalWeights,
    apply_archival,
    find_orphans,
    plan_archival,
    ranked,
    recall,
    score_nodes,
)
from memoryd.graph.compact import compact
from memoryd.graph.core import build_core, node_costs
from memoryd.models.kg import Graph, GraphEdge, GraphNode
from memoryd.graph.tokens import get_counter

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
WORDS = (
    "cache index writer lock budget sqlite vector token retry deploy schema queue worker "
    "timeout pool config parser render archive trace"
).split()


def make_graph(scope: str, n: int, seed: int = 1, edges_per_node: int = 2) -> Graph:
    rng = random.Random(seed)
    nodes = []
    for i in range(n):
        words = rng.sample(WORDS, 4)
        nodes.append(
            GraphNode(
                id=f"{scope.split(':')[-1][:6]}-{i}",
                name=" ".join(words[:3]).capitalize(),
                type=rng.choice(["insight", "decision", "gotcha", "convention"]),
                body=" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))) + ".",
                touches=[f"src/{rng.choice(WORDS)}.py" for _ in range(rng.randint(0, 3))],
                created=NOW - timedelta(days=rng.uniform(0, 200)),
                use_count=rng.randint(0, 5),
            )
        )
    ids = [x.id for x in nodes]
    edges = {}
    for a in ids:
        for _ in range(edges_per_node):
            b = rng.choice(ids)
            if a != b:
                edges[(a, b)] = GraphEdge(
                    source=a, target=b, type=rng.choice(["relates_to", "depends_on"])
                )
    return Graph(scope=scope, nodes=nodes, edges=list(edges.values()))


@pytest.mark.parametrize("budget", [60, 200, 1000, 5000])
def test_core_never_exceeds_the_budget_by_the_real_tokenizer(budget: int) -> None:
    user, project = make_graph("user", 40, 2), make_graph("project:demo", 400, 3)
    view = build_core([user, project], now=NOW, budget=budget)
    real = get_counter("cl100k").count(view.text)
    assert real == view.tokens <= budget
    assert view.counter == "cl100k"
    assert len(view.included) < view.active == 440
    assert len(view.included) > 0 or budget < 100  # a tiny budget holds only the header
    assert f"{len(view.included)} of 440 active nodes" in view.text
    assert "more active nodes not shown" in view.text


def test_core_shows_everything_when_it_fits_and_puts_best_first() -> None:
    user, project = make_graph("user", 5, 4), make_graph("project:demo", 10, 5)
    view = build_core([user, project], now=NOW, budget=5000)
    assert view.omitted == 0 and "not shown" not in view.text
    lines = view.text.splitlines()
    assert lines[1] == "## user" and "## project:demo" in lines
    scores = score_nodes([user, project], NOW)
    small = build_core([user, project], now=NOW, budget=120)
    best = ranked(scores)[: len(small.included)]
    assert small.included == best


def test_archived_neighbours_appear_as_memory_traces() -> None:
    a = GraphNode(
        id="wal-busy",
        name="SQLite busy timeout",
        type="gotcha",
        body="Set busy_timeout before WAL writes.",
        touches=["src/db.py"],
        created=NOW,
    )
    b = GraphNode(
        id="old-pool",
        name="Connection pool sizing",
        created=NOW - timedelta(days=90),
        archived=True,
    )
    c = GraphNode(id="lock-storm", name="Lock storms", created=NOW, archived=True)
    d = GraphNode(id="retry", name="Retry policy", created=NOW)
    g = Graph(
        scope="project:demo",
        nodes=[a, b, c, d],
        edges=[
            GraphEdge(source="wal-busy", target="old-pool", type="relates_to"),
            GraphEdge(source="lock-storm", target="wal-busy", type="caused_by"),
            GraphEdge(source="wal-busy", target="retry", type="depends_on"),
        ],
    )
    view = build_core([g], now=NOW, budget=500)
    assert view.active == 2 and set(view.included) == {
        ("project:demo", "wal-busy"),
        ("project:demo", "retry"),
    }
    assert "→ [archived] old-pool Connection pool sizing (relates_to)" in view.text
    assert "→ [archived] lock-storm Lock storms (←caused_by)" in view.text
    assert "→ depends_on retry" in view.text
    assert "- old-pool" not in view.text and view.traces == 2


def test_expired_nodes_leave_the_core() -> None:
    live = GraphNode(id="now", name="Current port 5433", created=NOW - timedelta(days=2))
    gone = GraphNode(
        id="then",
        name="Old port 5432",
        created=NOW - timedelta(days=9),
        valid_until=NOW - timedelta(days=1),
    )
    view = build_core([Graph(nodes=[live, gone])], now=NOW)
    assert view.included == [("user", "now")]


def test_core_refuses_bad_arguments() -> None:
    g = make_graph("user", 3)
    with pytest.raises(ValueError, match="at least 16"):
        build_core([g], now=NOW, budget=5)
    with pytest.raises(ValueError, match="own scope"):
        build_core([g, g], now=NOW)
    with pytest.raises(ValueError, match="too small"):
        build_core([g, make_graph("project:" + "x" * 120, 3)], now=NOW, budget=20)


def test_recency_dominates_by_default_and_hubs_are_capped() -> None:
    fresh = GraphNode(id="fresh", name="Fresh", created=NOW - timedelta(hours=1))
    stale = GraphNode(id="stale", name="Stale", created=NOW - timedelta(days=120))
    hub = GraphNode(id="hub", name="Hub", created=NOW - timedelta(days=120))
    leaves = [
        GraphNode(id=f"leaf-{i}", name=f"Leaf {i}", created=NOW - timedelta(days=120))
        for i in range(60)
    ]
    some = GraphNode(id="some", name="Some links", created=NOW - timedelta(days=120))
    edges = [GraphEdge(source="hub", target=f"leaf-{i}") for i in range(60)]
    edges += [GraphEdge(source="some", target=f"leaf-{i}", type="depends_on") for i in range(6)]
    g = Graph(nodes=[fresh, stale, hub, some, *leaves], edges=edges)
    scores = score_nodes([g], NOW)
    assert (
        scores[("user", "fresh")].score
        > scores[("user", "hub")].score
        > scores[("user", "stale")].score
    )
    # With the cap, 6 edges earn as much connectivity as 60.
    assert scores[("user", "hub")].connectivity == scores[("user", "some")].connectivity == 1.0
    uncapped = score_nodes([g], NOW, ArchivalWeights(degree_cap=None))
    assert uncapped[("user", "hub")].connectivity == 1.0
    assert uncapped[("user", "some")].connectivity == pytest.approx(6 / 60)


def test_active_files_and_usage_weights() -> None:
    a = GraphNode(id="a", name="A", touches=["src/db"], created=NOW)
    b = GraphNode(id="b", name="B", touches=["web/app.ts"], created=NOW, use_count=9)
    g = Graph(nodes=[a, b])
    s = score_nodes([g], NOW, active_files=["src/db/pool.py"])
    assert s[("user", "a")].files > 0 and s[("user", "b")].files == 0
    w = ArchivalWeights(recency=0, connectivity=0, files=0, usage=1)
    assert (
        score_nodes([g], NOW, w)[("user", "b")].score
        > score_nodes([g], NOW, w)[("user", "a")].score
    )
    with pytest.raises(ValueError):
        ArchivalWeights(recency=0, connectivity=0, files=0, usage=0)


def test_plan_archives_lowest_fifth_per_round() -> None:
    g = make_graph("project:demo", 100, 7)
    scores = score_nodes([g], NOW)
    costs = node_costs([g])
    total = sum(costs.values())
    assert plan_archival(scores, costs, total).archive == []
    one = plan_archival(scores, costs, total - 1)
    assert one.rounds == 1 and len(one.archive) == 20
    assert set(one.archive) == set(sorted(scores, key=lambda k: (scores[k].score, k))[:20])
    many = plan_archival(scores, costs, total // 10)
    assert many.tokens_after <= total // 10 and many.rounds > 1
    with pytest.raises(ValueError):
        plan_archival(scores, costs, 100, fraction=0)


def test_compact_fits_the_budget_keeps_edges_and_recall_resurrects() -> None:
    user, project = make_graph("user", 30, 8), make_graph("project:demo", 600, 9)
    result = compact([user, project], now=NOW, budget=5000)
    assert result.tokens_before > 5000 >= result.tokens_after
    assert result.archived and result.rounds >= 1
    after_user, after_project = result.graphs
    assert after_project.edges == project.edges  # archival keeps every edge: traces
    view = build_core(result.graphs, now=NOW, budget=5000)
    assert view.omitted == 0 and view.traces > 0 and view.tokens <= 5000
    scope, victim = next(k for k in result.archived if k[0] == "project:demo")
    back = recall(after_project, victim, NOW + timedelta(minutes=1))
    node = back.node(victim)
    assert not node.archived and node.use_count == project.node(victim).use_count + 1
    assert node.last_used == NOW + timedelta(minutes=1)
    assert ("project:demo", victim) in score_nodes([back], NOW)
    again = compact(result.graphs, now=NOW, budget=5000)
    assert again.archived == [] and again.rounds == 0


def test_orphans_are_only_listed_after_the_grace_period() -> None:
    old = GraphNode(id="old", name="Old lonely", created=NOW - timedelta(days=45))
    young = GraphNode(id="young", name="Young lonely", created=NOW - timedelta(days=3))
    used = GraphNode(id="used", name="Used", created=NOW - timedelta(days=90), use_count=1)
    linked = GraphNode(id="linked", name="Linked", created=NOW - timedelta(days=90))
    other = GraphNode(id="other", name="Other", created=NOW - timedelta(days=90))
    g = Graph(
        nodes=[old, young, used, linked, other], edges=[GraphEdge(source="linked", target="other")]
    )
    orphans = find_orphans(g, NOW)
    assert [o.id for o in orphans] == ["old"] and orphans[0].age_days == 45
    assert [o.id for o in find_orphans(g, NOW, grace_days=1)] == ["old", "young"]
    assert len(g.nodes) == 5  # listing changes nothing
    with pytest.raises(ValueError):
        find_orphans(g, NOW, grace_days=-1)


def test_apply_archival_only_marks_the_chosen_nodes() -> None:
    g = make_graph("project:demo", 10, 11)
    (after,) = apply_archival([g], [("project:demo", g.nodes[0].id), ("user", g.nodes[1].id)], NOW)
    assert [n.archived for n in after.nodes] == [True] + [False] * 9
    assert after.nodes[0].updated == g.nodes[0].updated
