"""Graph nodes, edges and graphs: validation of what callers and files may hold."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from memoryd.models.kg import (
    MAX_BODY_CHARS,
    Graph,
    GraphEdge,
    GraphNode,
    check_touch_path,
    make_node_id,
    slugify,
)

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def node(node_id: str, **kw: object) -> GraphNode:
    return GraphNode(id=node_id, name=kw.pop("name", node_id), created=kw.pop("created", T0), **kw)


def test_node_normalises_paths_tags_and_times() -> None:
    n = node(
        "wal-busy",
        touches=["./src/db.py", "src\\db.py", "docs/"],
        tags=[" sql ", "sql"],
        created=datetime(2026, 3, 1, 12, 0),
        name="  SQLite   busy\ntimeout ",
    )
    assert n.touches == ["src/db.py", "docs"]
    assert n.tags == ["sql"]
    assert n.created.tzinfo is not None and n.created.hour == 12
    assert n.name == "SQLite busy timeout"


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../outside.py",
        "a/../../b",
        "C:\\x\\y.py",
        "~/x",
        "",
        "   ",
        "a\x00b",
        "x" * 300,
    ],
)
def test_bad_touch_paths_are_refused(path: str) -> None:
    with pytest.raises(ValueError):
        check_touch_path(path)
    with pytest.raises(ValidationError):
        node("n", touches=[path])


@pytest.mark.parametrize("bad", ["", "Upper", "-lead", "a b", "x" * 65, "ü"])
def test_bad_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValidationError, match="node id"):
        node(bad)


def test_body_and_name_caps() -> None:
    with pytest.raises(ValidationError):
        node("n", body="x" * (MAX_BODY_CHARS + 1))
    with pytest.raises(ValidationError):
        node("n", name="   ")
    with pytest.raises(ValidationError):
        node("n", type="rumour")
    with pytest.raises(ValidationError):
        node("n", use_count=-1)
    with pytest.raises(ValidationError, match="valid_until"):
        node("n", valid_from=T0, valid_until=T0 - timedelta(days=1))
    with pytest.raises(ValidationError, match="updated"):
        node("n", updated=T0 - timedelta(days=1))


def test_edges_are_typed_and_not_self_loops() -> None:
    with pytest.raises(ValidationError):
        GraphEdge(source="a", target="b", type="likes")
    with pytest.raises(ValidationError, match="itself"):
        GraphEdge(source="a", target="a")
    with pytest.raises(ValidationError):
        GraphEdge(source="a", target="b", weight=1.5)


def test_graph_checks_ids_edges_and_scope() -> None:
    with pytest.raises(ValidationError, match="duplicate node"):
        Graph(nodes=[node("a"), node("a")])
    with pytest.raises(ValidationError, match="unknown node 'c'"):
        Graph(nodes=[node("a")], edges=[GraphEdge(source="a", target="c")])
    with pytest.raises(ValidationError, match="duplicate edge"):
        Graph(
            nodes=[node("a"), node("b")],
            edges=[GraphEdge(source="a", target="b"), GraphEdge(source="a", target="b")],
        )
    with pytest.raises(ValidationError, match="scope"):
        Graph(scope="team:x")


def test_graph_is_canonical_and_answers_lookups() -> None:
    g1 = Graph(
        nodes=[node("b"), node("a")],
        edges=[GraphEdge(source="b", target="a"), GraphEdge(source="a", target="b")],
    )
    g2 = Graph(
        nodes=[node("a"), node("b")],
        edges=[GraphEdge(source="a", target="b"), GraphEdge(source="b", target="a")],
    )
    assert g1 == g2
    assert g1.degrees() == {"a": 2, "b": 2}
    with pytest.raises(KeyError, match="no node 'zz'"):
        g1.node("zz")


def test_as_of_answers_what_was_believed_then() -> None:
    old = node("port-5432", name="DB port 5432", valid_from=T0, valid_until=T0 + timedelta(days=10))
    new = node(
        "port-5433",
        name="DB port 5433",
        created=T0 + timedelta(days=10),
        valid_from=T0 + timedelta(days=10),
    )
    g = Graph(
        nodes=[old, new],
        edges=[
            GraphEdge(
                source="port-5433",
                target="port-5432",
                type="supersedes",
                created=T0 + timedelta(days=10),
            )
        ],
    )
    then = g.as_of(T0 + timedelta(days=5))
    assert [n.id for n in then.nodes] == ["port-5432"] and then.edges == []
    later = g.as_of(T0 + timedelta(days=11))
    assert [n.id for n in later.nodes] == ["port-5433"]
    assert g.as_of(T0 - timedelta(days=1)).nodes == []


def test_ids_from_names_are_short_and_free() -> None:
    assert slugify("SQLite: busy timeout!") == "sqlite-busy-timeout"
    assert slugify("???") == "node"
    taken = {"sqlite-busy-timeout"}
    other = make_node_id("SQLite busy timeout", taken)
    assert other != "sqlite-busy-timeout" and other.startswith("sqlite-busy-timeout-")
    node(other)  # a valid id
