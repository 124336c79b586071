"""graph.json: stable layout, atomic locked writes by real concurrent processes, clear
errors for broken files (which are never changed), and the merge with the store's graph."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memoryd.graph.jsonfile import (
    GraphFileBusy,
    GraphFileError,
    dumps_graph,
    project_graph_path,
    read_graph_file,
    update_graph_file,
    user_graph_path,
    write_graph_file,
)
from memoryd.graph.merge import SyncBase, merge_graphs
from memoryd.models.kg import Graph, GraphEdge, GraphNode

HELPERS = Path(__file__).resolve().parent / "helpers"
T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def sample(scope: str = "project:demo") -> Graph:
    return Graph(
        scope=scope,
        nodes=[
            GraphNode(
                id="wal-busy",
                name="SQLite busy timeout",
                type="gotcha",
                body="Set busy_timeout before WAL writes.",
                touches=["src/db.py"],
                tags=["sqlite"],
                created=T0,
                use_count=4,
                last_used=T0 + timedelta(days=2),
            ),
            GraphNode(id="lock-storm", name="Lock storms under 8 writers", created=T0),
            GraphNode(
                id="small-prs",
                name="Small pull requests",
                type="preference",
                created=T0,
                updated=T0 + timedelta(days=1),
            ),
        ],
        edges=[GraphEdge(source="wal-busy", target="lock-storm", type="caused_by", weight=0.8)],
    )


def test_layout_is_stable_readable_and_round_trips(tmp_path: Path) -> None:
    g = sample()
    text = dumps_graph(g)
    assert text == dumps_graph(Graph.model_validate(g.model_dump()))  # same content, same bytes
    data = json.loads(text)
    assert list(data) == ["format", "version", "scope", "nodes", "edges"]
    assert [n["id"] for n in data["nodes"]] == ["lock-storm", "small-prs", "wal-busy"]
    assert list(data["nodes"][2])[:3] == ["id", "name", "type"]
    assert "use_count" not in text and "last_used" not in text  # runtime state stays in the store
    # One edge per line; one node per indented block.
    assert (
        '    {"source": "wal-busy", "type": "caused_by", "target": "lock-storm", "weight": 0.8}'
        in text
    )
    assert text.count('\n    {\n      "id"') == 3
    path = project_graph_path(tmp_path)
    write_graph_file(path, g)
    back = read_graph_file(path, scope="project:demo")
    assert back is not None and back.node("small-prs") == g.node("small-prs")
    assert back.node("wal-busy").use_count == 0
    assert (path.parent / ".gitignore").read_text().count("*.lock") == 1
    with_usage = dumps_graph(g, include_usage=True)
    assert '"use_count": 4' in with_usage
    assert user_graph_path(tmp_path) == tmp_path / "knowledge" / "user.json"


def test_one_changed_node_is_one_changed_block() -> None:
    g = sample()
    before = dumps_graph(g).splitlines()
    node = g.node("lock-storm").model_copy(
        update={"body": "Seen at 8+ writers.", "updated": T0 + timedelta(days=3)}
    )
    after = dumps_graph(
        Graph(
            scope=g.scope,
            nodes=[node, *[n for n in g.nodes if n.id != "lock-storm"]],
            edges=g.edges,
        )
    ).splitlines()
    import difflib

    changed = [
        line
        for line in difflib.unified_diff(before, after, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    # The body line is added, and "created" gains a comma before the new "updated" line.
    assert sorted(changed) == sorted(
        [
            '+      "body": "Seen at 8+ writers.",',
            '-      "created": "2026-03-01T00:00:00Z"',
            '+      "created": "2026-03-01T00:00:00Z",',
            '+      "updated": "2026-03-04T00:00:00Z"',
        ]
    )


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        (
            '{\n  "format": "memoryd-knowledge-graph",\n  "nodes": [\n    {"id": "a",}\n  ]\n}',
            4,
            16,
            "not valid JSON",
        ),
        ("", 1, 1, "not valid JSON"),
        ('{"nodes": []}', 1, 1, "not a memoryd graph file"),
        ("[1, 2]", 1, 1, "not a memoryd graph file"),
    ],
)
def test_invalid_json_is_refused_with_line_and_column(
    tmp_path: Path, text: str, line: int, column: int, message: str
) -> None:
    path = tmp_path / "graph.json"
    path.write_text(text)
    with pytest.raises(GraphFileError, match=message) as info:
        read_graph_file(path)
    assert (info.value.line, info.value.column) == (line, column)
    assert f"{path}:{line}:{column}: " in str(info.value)


def test_invalid_content_names_the_node_and_its_line(tmp_path: Path) -> None:
    path = project_graph_path(tmp_path)
    write_graph_file(path, sample())
    text = path.read_text().replace('"src/db.py"', '"../../etc/passwd"')
    path.write_text(text)
    with pytest.raises(GraphFileError, match=r"node 'wal-busy'\.touches: .*must not leave") as info:
        read_graph_file(path)
    bad = text.splitlines().index('      "touches": [')  # at the field's value
    assert (info.value.line, info.value.column) == (bad + 1, 18)
    assert f"graph.json:{bad + 1}:18: node 'wal-busy'.touches" in str(info.value)
    path.write_text(
        text.replace('"../../etc/passwd"', '"src/db.py"').replace('"caused_by"', '"blames"')
    )
    with pytest.raises(GraphFileError, match=r"edge 1 \(wal-busy -> lock-storm\)"):
        read_graph_file(path)
    path.write_text(text.replace('"version": 1', '"version": 9'))
    with pytest.raises(GraphFileError, match="version 9 is not supported"):
        read_graph_file(path)
    path.write_bytes(b'{"format": "memoryd-knowledge-graph",\n "scope": "\xff"}')
    with pytest.raises(GraphFileError, match="not UTF-8") as info:
        read_graph_file(path)
    assert (info.value.line, info.value.column) == (2, 12)


def test_a_foreign_project_file_is_refused(tmp_path: Path) -> None:
    path = project_graph_path(tmp_path)
    write_graph_file(path, sample("project:other"))
    with pytest.raises(GraphFileError, match="holds graph 'project:other', not 'project:demo'"):
        read_graph_file(path, scope="project:demo")


def test_an_invalid_file_is_never_overwritten(tmp_path: Path) -> None:
    path = project_graph_path(tmp_path)
    path.parent.mkdir(parents=True)
    broken = (
        b'{"format": "memoryd-knowledge-graph", "version": 1, "scope": "project:demo", "nodes": [\n'
    )
    path.write_bytes(broken)
    with pytest.raises(GraphFileError, match=r":2:1: not valid JSON"):
        update_graph_file(path, lambda g: g, scope="project:demo")
    assert path.read_bytes() == broken
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []


def test_a_held_lock_times_out_with_a_clear_error(tmp_path: Path) -> None:
    path = project_graph_path(tmp_path)
    write_graph_file(path, sample())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from filelock import FileLock; "
                f"lock = FileLock({str(path) + '.lock'!r}); lock.acquire(); "
                "print('held', flush=True); time.sleep(30)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(GraphFileBusy, match="lock held by another process"):
            write_graph_file(path, Graph(scope="project:demo"), timeout=0.3)
    finally:
        holder.kill()
        holder.wait()
    assert read_graph_file(path) == Graph.model_validate(
        {
            **sample().model_dump(),
            "nodes": [
                n.model_copy(update={"use_count": 0, "last_used": None}) for n in sample().nodes
            ],
        }
    )


def test_three_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = project_graph_path(tmp_path)
    go = tmp_path / "go"
    per_writer = 25
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                str(HELPERS / "graph_writer.py"),
                str(path),
                str(w),
                str(per_writer),
                str(go),
            ]
        )
        for w in range(3)
    ]
    seen_valid = 0
    time.sleep(0.5)
    go.touch()
    while any(p.poll() is None for p in writers):
        graph = read_graph_file(path, scope="project:race")  # readers never see half a file
        seen_valid += graph is not None
    assert [p.wait(timeout=120) for p in writers] == [0, 0, 0]
    graph = read_graph_file(path, scope="project:race")
    assert graph is not None
    assert sorted(n.id for n in graph.nodes) == sorted(
        f"w{w}-{i}" for w in range(3) for i in range(per_writer)
    )
    assert len(graph.edges) == 3 * (per_writer - 1)
    assert seen_valid > 0
    assert not list(path.parent.glob("*.tmp"))


def _edited(g: Graph, node_id: str, **update: object) -> Graph:
    nodes = [n.model_copy(update=update) if n.id == node_id else n for n in g.nodes]
    return Graph(scope=g.scope, nodes=nodes, edges=g.edges)


def test_a_hand_edit_of_the_file_is_merged_into_the_store(tmp_path: Path) -> None:
    store = sample()
    path = project_graph_path(tmp_path)
    write_graph_file(path, store)
    base = SyncBase.from_graph(read_graph_file(path))  # type: ignore[arg-type]
    text = path.read_text()
    text = text.replace('"Lock storms under 8 writers"', '"Lock storms under 8+ writers"')
    text = text.replace(
        '  "edges": [',
        """  "edges": [
    {"source": "small-prs", "type": "relates_to", "target": "lock-storm"},""",
    )
    text = text.replace(
        """    {
      "id": "small-prs",""",
        """    {
      "id": "retry-policy",
      "name": "Retry with jitter",
      "type": "convention",
      "created": "2026-03-05T00:00:00Z"
    },
    {
      "id": "small-prs",""",
    )
    path.write_text(text)
    edited = read_graph_file(path, scope="project:demo")
    now = T0 + timedelta(days=10)
    result = merge_graphs(edited, store, base, now=now)
    kinds = sorted((c.kind, str(c.key)) for c in result.to_store)
    assert kinds == [
        ("upsert_edge", "('small-prs', 'relates_to', 'lock-storm')"),
        ("upsert_node", "lock-storm"),
        ("upsert_node", "retry-policy"),
    ]
    merged = result.graph.node("lock-storm")
    assert merged.name == "Lock storms under 8+ writers" and merged.updated == now  # stamped
    assert result.graph.node("wal-busy").use_count == 4  # the store's usage is kept
    assert result.conflicts == [] and result.file_changed
    again = merge_graphs(result.graph, result.graph, result.base, now=now)
    assert again.to_store == [] and not again.file_changed and again.conflicts == []


def test_both_sides_changed_is_a_reported_conflict_newer_wins(tmp_path: Path) -> None:
    store = sample()
    base = SyncBase.from_graph(store)
    file = _edited(store, "lock-storm", body="file says A", updated=T0 + timedelta(days=5))
    store2 = _edited(store, "lock-storm", body="store says B", updated=T0 + timedelta(days=6))
    result = merge_graphs(file, store2, base, now=T0 + timedelta(days=7))
    assert len(result.conflicts) == 1
    conflict = result.conflicts[0]
    assert conflict.kept == "store" and conflict.key == "lock-storm"
    assert conflict.file_version.body == "file says A"  # type: ignore[union-attr]
    assert result.graph.node("lock-storm").body == "store says B" and result.file_changed
    newer_file = _edited(store, "lock-storm", body="file says C", updated=T0 + timedelta(days=8))
    result = merge_graphs(newer_file, store2, base, now=T0 + timedelta(days=9))
    assert result.conflicts[0].kept == "file"
    assert [c.kind for c in result.to_store] == ["upsert_node"]


def test_removals_archive_in_the_store_and_drop_from_the_file() -> None:
    store = sample()
    base = SyncBase.from_graph(store)
    file = Graph(
        scope=store.scope, nodes=[n for n in store.nodes if n.id != "small-prs"], edges=store.edges
    )
    result = merge_graphs(file, store, base, now=T0 + timedelta(days=3))
    assert [(c.kind, c.key) for c in result.to_store] == [("archive_node", "small-prs")]
    assert result.graph.node("small-prs").archived  # never deleted: archived, still in the file
    purged = Graph(scope=store.scope, nodes=[n for n in store.nodes if n.id != "lock-storm"])
    result = merge_graphs(store, purged, base, now=T0 + timedelta(days=3))
    assert "lock-storm" not in result.graph.node_map() and result.graph.edges == []
    assert result.to_store == [] and result.file_changed
    edited_file = _edited(store, "lock-storm", body="still needed")
    result = merge_graphs(edited_file, purged, base, now=T0 + timedelta(days=3))
    assert result.conflicts[0].reason == "removed from the store, edited in the file"
    assert result.graph.node("lock-storm").body == "still needed"


def test_first_sync_without_a_base_reports_differences() -> None:
    store = sample()
    file = _edited(store, "wal-busy", body="different", updated=T0 + timedelta(days=9))
    result = merge_graphs(file, store, None, now=T0 + timedelta(days=10))
    assert [c.key for c in result.conflicts] == ["wal-busy"] and result.conflicts[0].kept == "file"
    assert merge_graphs(None, store, None, now=T0).file_changed
    with pytest.raises(ValueError, match="cannot merge"):
        merge_graphs(sample("project:x"), store, None, now=T0)
    assert SyncBase.from_json(json.loads(json.dumps(result.base.to_json()))) == result.base


def test_sync_base_refuses_a_malformed_edge_key() -> None:
    with pytest.raises(ValueError, match="not 'source type target'"):
        SyncBase.from_json({"nodes": {}, "edges": {"a b": "x"}})
