"""Knowledge graphs through the engine, on both backends, with real files and the real model:
writes and the core, the graph.json mirror (hand edits merged, invalid files refused), the
budget by the real tokenizer with memory traces, recall, archival, time travel, the change
feed and scoped callers."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoryd import Engine
from memoryd.engine import Access
from memoryd.errors import Forbidden, InvalidInput, MemoryNotFound
from memoryd.graph.jsonfile import GraphFileError, read_graph_file
from memoryd.graph.memories import node_memory_id
from memoryd.graph.tokens import get_counter
from memoryd.store.base import Actor

SHOP = "project:shop"


@pytest.fixture
def kg(backend: str, tmp_path: Path, open_mem: Callable[..., Engine],
       request: pytest.FixtureRequest) -> tuple[Engine, Path]:
    """An engine on each backend (MEMORYD_HOME in tmp) and a project directory ``shop``."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_database")()
    root = tmp_path / "shop"
    root.mkdir()
    return open_mem(url, home=tmp_path / "home"), root


def write_basics(mem: Engine, root: Path) -> None:
    mem.kg.write(str(root), nodes=[
        {"id": "wal-busy", "name": "SQLite busy timeout", "type": "gotcha",
         "body": "Set busy_timeout before WAL writes.", "touches": ["src/db.py"]},
        {"id": "lock-storm", "name": "Lock storms under 8 writers", "body": "Seen in load tests."},
    ], edges=[{"source": "wal-busy", "target": "lock-storm", "type": "caused_by"}])


def file_of(root: Path) -> Path:
    return root / ".knowledge" / "graph.json"


def test_write_then_read_the_core_and_the_file(kg) -> None:
    mem, root = kg
    result = mem.kg.write(str(root), nodes=[{"name": "SQLite busy timeout", "type": "gotcha",
                                             "body": "Set busy_timeout before WAL writes."}])
    assert result.scope == SHOP and result.created == ["sqlite-busy-timeout"]
    mem.kg.write(graph="user", nodes=[{"name": "Small PRs", "type": "preference",
                                       "body": "One concern per pull request."}])
    core = mem.kg.read(str(root))
    assert core.scopes == ["user", SHOP] and core.shown == core.active == 2
    assert "## user\n- small-prs (preference) Small PRs: One concern per pull request." in core.text
    assert "- sqlite-busy-timeout (gotcha) SQLite busy timeout" in core.text
    graph = read_graph_file(file_of(root), scope=SHOP)
    assert graph is not None and [n.id for n in graph.nodes] == ["sqlite-busy-timeout"]
    user = read_graph_file(root.parent / "home" / "knowledge" / "user.json", scope="user")
    assert user is not None and user.nodes[0].id == "small-prs"
    # the node is a memory: hybrid search finds it, with its graph metadata
    hit = mem.search("busy timeout before WAL", limit=1, scope=SHOP)[0]
    assert hit.memory.id == node_memory_id(SHOP, "sqlite-busy-timeout")
    assert hit.memory.metadata["kg"]["kind"] == "gotcha" and hit.memory.summary == (
        "SQLite busy timeout")
    # the same name again updates the node instead of adding a twin
    again = mem.kg.write(str(root), nodes=[{"name": "SQLite busy timeout", "body": "5 s."}])
    assert again.updated == ["sqlite-busy-timeout"] and again.created == []


def test_bad_writes_fail_whole_and_store_nothing(kg) -> None:
    mem, root = kg
    write_basics(mem, root)
    before, text = mem.count(include_superseded=True), file_of(root).read_bytes()
    with pytest.raises(InvalidInput, match="unknown node 'nope'"):
        mem.kg.write(str(root), nodes=[{"name": "A new node"}],
                     edges=[{"source": "a-new-node", "target": "nope"}])
    with pytest.raises(InvalidInput, match="new: give it a name"):
        mem.kg.write(str(root), nodes=[{"id": "fresh", "body": "no name"}])
    with pytest.raises(InvalidInput, match="touches"):
        mem.kg.write(str(root), nodes=[{"name": "Escape", "touches": ["../etc/passwd"]}])
    with pytest.raises(InvalidInput, match="no such directory"):
        mem.kg.read(str(root / "missing"))
    assert mem.count(include_superseded=True) == before
    assert file_of(root).read_bytes() == text


def test_a_hand_edit_of_graph_json_is_merged(kg) -> None:
    mem, root = kg
    write_basics(mem, root)
    path = file_of(root)
    data = json.loads(path.read_text())
    nodes = {n["id"]: n for n in data["nodes"]}
    nodes["wal-busy"]["body"] = "Set busy_timeout to 30 s before WAL writes."
    nodes["reviewed"] = {"id": "reviewed", "name": "Added in review", "type": "convention",
                         "created": "2026-01-01T00:00:00Z"}
    del nodes["lock-storm"]
    data["nodes"] = list(nodes.values())
    data["edges"] = []
    path.write_text(json.dumps(data, indent=2))
    core = mem.kg.read(str(root))
    assert core.conflicts == [] and core.problems == []
    assert "30 s before WAL writes" in core.text and "- reviewed (convention)" in core.text
    # removed from the file: archived in the store, never deleted; the edge is gone
    stored = mem.get(node_memory_id(SHOP, "lock-storm"))
    assert stored.metadata["kg"]["archived"] is True
    assert "lock-storm" not in core.text.split("\n- ")[0]
    merged = read_graph_file(path, scope=SHOP)
    assert merged is not None and merged.node("lock-storm").archived and merged.edges == []
    assert mem.history(node_memory_id(SHOP, "wal-busy"))[-1].actor == "graph-file"


def test_both_sides_changed_is_a_reported_conflict(kg) -> None:
    mem, root = kg
    write_basics(mem, root)
    path = file_of(root)
    data = json.loads(path.read_text())
    data["nodes"][1]["body"] = "Edited by hand."
    path.write_text(json.dumps(data, indent=2))
    time.sleep(0.01)
    mem.update(node_memory_id(SHOP, "wal-busy"),  # the store changes behind the file's back
               content="SQLite busy timeout\nEdited in the store, later.")
    core = mem.kg.read(str(root))
    [conflict] = core.conflicts
    assert conflict.key == "wal-busy" and conflict.kept == "store"
    assert conflict.file_version["body"] == "Edited by hand."
    assert "Edited in the store, later." in core.text


def test_an_invalid_file_is_refused_and_nothing_changes(kg) -> None:
    mem, root = kg
    write_basics(mem, root)
    path = file_of(root)
    broken = path.read_text().replace('"name": "SQLite busy timeout",', '"name": "SQLite busy"')
    path.write_text(broken)
    line = broken.splitlines().index('      "name": "SQLite busy"') + 2  # the comma is missing
    count, seq = mem.count(include_superseded=True), mem.kg.ping().seq
    core = mem.kg.read(str(root))
    assert len(core.problems) == 1 and "graph.json:" in core.problems[0]
    assert "not valid JSON" in core.problems[0]
    assert f"graph.json:{line}:" in core.problems[0]  # the line (and column) of the error
    assert "- wal-busy" in core.text  # the store's core is still served
    with pytest.raises(GraphFileError) as refused:
        mem.kg.write(str(root), nodes=[{"name": "Would be lost"}])
    assert refused.value.line == line and refused.value.column is not None
    assert path.read_text() == broken
    assert mem.count(include_superseded=True) == count and mem.kg.ping().seq == seq


def test_the_core_fits_the_budget_by_the_real_tokenizer_with_traces(kg) -> None:
    mem, root = kg
    nodes = [{"id": f"n{i:02d}", "name": f"Finding number {i} about the checkout flow",
              "type": "insight", "body": f"Observation {i}: retries double-charge when the "
              f"payment gateway times out after {i * 7} ms; guard with idempotency keys.",
              "touches": [f"src/pay/step{i}.py"]} for i in range(40)]
    edges = [{"source": f"n{i:02d}", "target": f"n{i + 1:02d}", "type": "relates_to"}
             for i in range(39)]
    mem.kg.write(str(root), nodes=nodes, edges=edges)
    report = mem.kg.archive(str(root), dry_run=False, budget=600)
    assert report.archived and report.tokens_after <= 600
    cl100k = get_counter("cl100k")
    for budget in (80, 250, 600, 5000):
        core = mem.kg.read(str(root), budget=budget)
        assert core.counter == "cl100k" and core.tokens == cl100k.count(core.text) <= budget
    core = mem.kg.read(str(root), budget=5000)
    assert core.traces > 0 and "→ [archived] " in core.text
    archived = {a.id for a in report.archived}
    assert not any(f"\n- {i} " in core.text for i in archived)  # archived: not in the core


def test_recall_resurrects_an_archived_node_and_counts_a_use(kg) -> None:
    mem, root = kg
    write_basics(mem, root)
    report = mem.kg.archive(str(root), dry_run=False, budget=40)
    gone = report.archived[0].id
    assert f"- {gone} " not in mem.kg.read(str(root)).text
    back = mem.kg.recall(gone, project=str(root))
    assert back.was_archived and not back.node.archived and back.node.use_count == 1
    assert f"- {gone} " in mem.kg.read(str(root)).text
    assert mem.history(node_memory_id(SHOP, gone))[-1].operation == "kg_recall"
    on_file = read_graph_file(file_of(root), scope=SHOP)
    assert on_file is not None and not on_file.node(gone).archived
    with pytest.raises(MemoryNotFound):
        mem.kg.recall("no-such-node", project=str(root))


def test_archive_is_a_dry_run_by_default_and_lists_orphans_first(kg) -> None:
    mem, root = kg
    old = (datetime.now(UTC) - timedelta(days=45)).isoformat()
    text = json.dumps({"format": "memoryd-knowledge-graph", "version": 1, "scope": SHOP,
                       "nodes": [{"id": "lonely", "name": "Nobody links here", "created": old},
                                 {"id": "hub", "name": "Linked", "created": old},
                                 {"id": "leaf", "name": "Linked too", "created": old}],
                       "edges": [{"source": "leaf", "type": "part_of", "target": "hub"}]})
    mem.kg.import_text(text, project=str(root))
    dry = mem.kg.archive(str(root), budget=5000)
    assert dry.dry_run and [o.id for o in dry.orphans] == ["lonely"] and dry.archived == []
    assert mem.get(node_memory_id(SHOP, "lonely"))
    done = mem.kg.archive(str(root), dry_run=False, remove_orphans=True)
    assert [r.id for r in done.removed] == ["lonely"]
    with pytest.raises(MemoryNotFound):
        mem.get(node_memory_id(SHOP, "lonely"))
    feed = mem.kg.sync(0, project=str(root))
    assert [(c.operation, c.id) for c in feed.changes if c.node is None] == [
        ("kg_remove", "lonely")]


def test_as_of_reads_the_graph_as_it_was(kg) -> None:
    mem, root = kg
    mem.kg.write(str(root), nodes=[{"id": "db-port", "name": "Staging database port",
                                    "type": "fact", "body": "Staging listens on 5432."}])
    time.sleep(0.05)
    then = datetime.now(UTC)
    time.sleep(0.05)
    mem.kg.write(str(root), nodes=[{"id": "db-port", "body": "Staging listens on 5433."}])
    mem.kg.archive(str(root), dry_run=False, budget=16)  # everything leaves the core
    assert "db-port" not in mem.kg.read(str(root), include_user=False).text.split("\n", 1)[1]
    past = mem.kg.read(str(root), as_of=then, include_user=False)
    assert "Staging listens on 5432." in past.text and "5433" not in past.text
    assert past.as_of == then
    before = mem.kg.read(str(root), as_of=then - timedelta(days=1), include_user=False)
    assert before.active == 0


def test_search_as_of_returns_the_fact_that_was_true_then(kg) -> None:
    mem, _ = kg
    old = mem.add("The staging database listens on port 5432", node_type="fact")
    time.sleep(0.05)
    then = datetime.now(UTC)
    time.sleep(0.05)
    new = mem.add("The staging database now listens on port 5433", node_type="fact")
    mem.update(old.id, valid_until=datetime.now(UTC), superseded_by=new.id)
    assert [h.memory.id for h in mem.search("staging database port", limit=1)] == [new.id]
    past = mem.search("staging database port", limit=5, as_of=then)
    assert [h.memory.id for h in past] == [old.id]
    assert [h.memory.id for h in mem.search("staging database port", limit=5,
                                            as_of=datetime.now(UTC))] == [new.id]


def test_kg_sync_lists_changes_since_a_sequence_number(kg) -> None:
    mem, root = kg
    mem.add("a plain memory that is not a node")
    start = mem.kg.ping().seq
    write_basics(mem, root)
    feed = mem.kg.sync(start, project=str(root))
    assert {(c.operation, c.id) for c in feed.changes} >= {("create", "wal-busy"),
                                                            ("create", "lock-storm"),
                                                            ("kg_link", "wal-busy")}
    assert not feed.more and feed.next == mem.kg.ping().seq
    assert mem.kg.sync(feed.next, project=str(root)).changes == []
    mem.kg.link("lock-storm", "wal-busy", "relates_to", project=str(root))
    [change] = mem.kg.sync(feed.next, project=str(root)).changes
    assert change.operation == "kg_link" and change.details["edges"]["added"][0][1] == "wal-busy"


def test_a_key_bound_to_one_project_sees_only_that_graph(kg, tmp_path: Path) -> None:
    mem, root = kg
    other = tmp_path / "web"
    other.mkdir()
    write_basics(mem, root)
    mem.kg.write(str(other), nodes=[{"id": "secret-web", "name": "Web-only knowledge"}])
    mem.kg.write(graph="user", nodes=[{"name": "User-level preference"}])
    bound = mem.acting_as(Actor("key:shop"), Access(scope=SHOP))
    core = bound.kg.read()
    assert core.scopes == [SHOP] and "wal-busy" in core.text and "User-level" not in core.text
    with pytest.raises(Forbidden):
        bound.kg.read(str(other))
    with pytest.raises(Forbidden):
        bound.kg.write("web", nodes=[{"name": "Injected"}])
    with pytest.raises(Forbidden):
        bound.kg.write(graph="user", nodes=[{"name": "Injected"}])
    with pytest.raises(MemoryNotFound):
        bound.kg.recall(node_memory_id("project:web", "secret-web"))
    assert [h.id for h in bound.kg.search("web-only knowledge")] != ["secret-web"]
    assert all(h.scope == SHOP for h in bound.kg.search("knowledge"))
    assert {c.scope for c in bound.kg.sync(0).changes} == {SHOP}


def test_a_bound_key_names_a_project_root_only_under_the_allowed_roots(kg, open_mem,
                                                                      tmp_path: Path) -> None:
    """The file mirrors every agent's nodes of the project and is written where the root says,
    so a key bound to a scope or agent names a root only under MEMORYD_KG_ALLOWED_ROOTS: a
    directory elsewhere, a missing one and the project's own root are refused alike (the
    refusal tells nothing of what exists), and no file is written."""
    mem, root = kg
    write_basics(mem, root)
    elsewhere = tmp_path / "elsewhere" / "shop"
    elsewhere.mkdir(parents=True)
    for access in (Access(scope=SHOP), Access(agent_id="bot-1")):
        bound = mem.acting_as(Actor("key:bound"), access)
        for path in (elsewhere, tmp_path / "missing" / "shop", root):
            with pytest.raises(Forbidden, match="MEMORYD_KG_ALLOWED_ROOTS"):
                bound.kg.read(str(path))
            with pytest.raises(Forbidden, match="MEMORYD_KG_ALLOWED_ROOTS"):
                bound.kg.write(str(path), nodes=[{"name": "Bound note"}])
    assert not (elsewhere / ".knowledge").exists()
    by_name = mem.acting_as(Actor("key:shop"), Access(scope=SHOP))
    assert "wal-busy" in by_name.kg.read().text and "wal-busy" in by_name.kg.read("shop").text
    allowed = open_mem(mem.store.url, home=tmp_path / "home", kg_allowed_roots=[str(root)])
    bound = allowed.acting_as(Actor("key:shop"), Access(scope=SHOP))
    assert "wal-busy" in bound.kg.read(str(root)).text
    (root / "escape").symlink_to(elsewhere)  # under the root as written, elsewhere resolved
    with pytest.raises(Forbidden, match="MEMORYD_KG_ALLOWED_ROOTS"):
        bound.kg.read(str(root / "escape"))
    assert not (elsewhere / ".knowledge").exists()


def test_a_second_engine_sees_changes_and_removed_edges_end(kg, open_mem, tmp_path) -> None:
    mem, root = kg
    write_basics(mem, root)
    other = open_mem(mem.store.url, home=tmp_path / "home")
    assert "→ caused_by lock-storm" in other.kg.read(str(root)).text  # other's cache is filled
    before = datetime.now(UTC)
    time.sleep(0.05)
    mem.kg.link("wal-busy", "lock-storm", "caused_by", project=str(root), remove=True)
    mem.kg.write(str(root), nodes=[{"id": "lock-storm", "body": "Eight writers, not four."}])
    seen = other.kg.read(str(root)).text  # refreshed from the history, not reloaded
    assert "→ caused_by lock-storm" not in seen and "Eight writers, not four." in seen
    past = other.kg.read(str(root), as_of=before).text
    assert "→ caused_by lock-storm" in past and "Seen in load tests." in past
    on_file = read_graph_file(file_of(root), scope=SHOP)
    assert on_file is not None and on_file.edges == []


def test_a_graph_file_names_its_project(kg, tmp_path: Path) -> None:
    mem, _ = kg
    clash = tmp_path / "other" / "shop"  # same directory name, another repository
    (clash / ".knowledge").mkdir(parents=True)
    (clash / ".knowledge" / "graph.json").write_text(json.dumps({
        "format": "memoryd-knowledge-graph", "version": 1, "scope": "project:shop-mobile",
        "nodes": [], "edges": []}))
    written = mem.kg.write(str(clash), nodes=[{"name": "Mobile-only fact"}])
    assert written.scope == "project:shop-mobile"
    assert mem.kg.read(str(clash)).scopes == ["user", "project:shop-mobile"]
