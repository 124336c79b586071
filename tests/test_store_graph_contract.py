"""The store contract's knowledge-graph parts, on every backend: the graph-file sync state,
the change sequence number, the ``graph`` and ``as_of`` filters, and the graph-files table
in the logical rows (migration, backup)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoryd.errors import StoreError
from memoryd.models import GraphFileState, Memory, SchedulingState, SearchFilters
from memoryd.store.base import Actor, Store

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ACTOR = Actor("test")


def make(content: str, *, created_at: datetime = NOW, **fields: Any) -> Memory:
    return Memory(
        id=fields.pop("id", None) or str(uuid.uuid4()),
        content=content,
        created_at=created_at,
        updated_at=created_at,
        embedding_model="sentence-transformers/all-MiniLM-L6-v2",
        state=SchedulingState(last_review=created_at),
        **fields,
    )


def node(content: str, slug: str, scope: str = "project:shop", **fields: Any) -> Memory:
    kg = {"slug": slug, "kind": "gotcha", "touches": [], "archived": False}
    return make(content, scope=scope, metadata={"kg": kg}, **fields)


def test_graph_file_state_round_trips_and_replaces(store: Store) -> None:
    assert store.graph_files.graph_file("/p/.knowledge/graph.json") is None
    assert store.graph_files.graph_files("project:p") == []
    base = {"nodes": {"a": "f1"}, "edges": {"a relates_to b": "f2"}}
    first = GraphFileState(path="/p/.knowledge/graph.json", scope="project:p", base=base,
                           signature="10-123-7", seq=4, updated_at=NOW)
    store.graph_files.save_graph_file(first)
    assert store.graph_files.graph_file(first.path) == first
    later = GraphFileState(path="/clone/.knowledge/graph.json", scope="project:p",
                           updated_at=NOW + timedelta(minutes=1))
    store.graph_files.save_graph_file(later)
    assert [s.path for s in store.graph_files.graph_files("project:p")] == [later.path, first.path]
    changed = first.model_copy(update={"base": {}, "signature": None, "seq": 9,
                                       "updated_at": NOW + timedelta(minutes=2)})
    store.graph_files.save_graph_file(changed)
    assert store.graph_files.graph_file(first.path) == changed
    assert [s.path for s in store.graph_files.graph_files("project:p")] == [first.path, later.path]
    assert store.graph_files.graph_files("project:other") == []


def test_last_seq_follows_every_recorded_change(store: Store, embed) -> None:
    assert store.last_seq() == 0
    a, b = make("first memory"), make("second memory")
    store.insert([a, b], embed([a.content, b.content]), ACTOR)
    assert store.last_seq() == store.stats().last_seq == max(m.seq for m in store.get_many(
        [a.id, b.id]).values())
    before = store.last_seq()
    store.update(a.id, {}, ACTOR, operation="kg_link", details={"edges": {"added": []}})
    assert store.last_seq() == before + 1
    assert store.history(a.id)[-1].operation == "kg_link"
    store.delete(b.id, ACTOR)
    assert store.last_seq() == before + 2


def test_graph_filter_separates_nodes_from_other_memories(store: Store, embed) -> None:
    plain = make("SQLite busy timeout notes from a chat", scope="project:shop")
    gotcha = node("SQLite busy timeout\nSet busy_timeout before WAL writes.", "busy")
    other = node("SQLite busy timeout in another project", "busy", scope="project:web")
    rows = [plain, gotcha, other]
    store.insert(rows, embed([m.content for m in rows]), ACTOR)
    only = SearchFilters(graph=True, scope="project:shop")
    none = SearchFilters(graph=False, scope="project:shop")
    assert [m.id for m in store.list(only, now=NOW)] == [gotcha.id]
    assert [m.id for m in store.list(none, now=NOW)] == [plain.id]
    assert store.count(SearchFilters(graph=True), now=NOW) == 2
    assert {h.memory_id for h in store.keyword_search("busy timeout", only, now=NOW,
                                                       limit=10)} == {gotcha.id}
    vector = embed([gotcha.content])[0]
    assert {h.memory_id for h in store.vector_search(vector, none, now=NOW, limit=10)} == {
        plain.id}
    assert store.matching_ids([plain.id, gotcha.id, other.id], only, now=NOW) == {gotcha.id}


def test_as_of_returns_what_was_valid_then(store: Store, embed) -> None:
    t1, t2, t3 = NOW - timedelta(days=30), NOW - timedelta(days=10), NOW - timedelta(days=1)
    old = make("The staging database listens on port 5432", created_at=t1)
    new = make("The staging database now listens on port 5433", created_at=t2)
    future = make("Staging moves to port 6000 next quarter", created_at=t3,
                  valid_from=NOW + timedelta(days=60))
    store.insert([old, new, future], embed([old.content, new.content, future.content]), ACTOR)
    store.update(old.id, {"valid_until": t2, "superseded_by": new.id}, ACTOR,
                 operation="supersede")

    def ids(**filters: Any) -> set[str]:
        return {m.id for m in store.list(SearchFilters(**filters), now=NOW)}

    assert ids() == {new.id, future.id}  # superseded and expired ones left out by default
    assert ids(as_of=t1 + timedelta(days=1)) == {old.id}  # superseded later: included then
    assert ids(as_of=t2) == {new.id}  # valid_until is exclusive
    assert ids(as_of=NOW) == {new.id}  # the future fact is not valid yet
    assert ids(as_of=NOW + timedelta(days=90)) == {new.id, future.id}
    assert ids(as_of=t1 - timedelta(days=1)) == set()  # nothing recorded yet
    port = SearchFilters(as_of=t1 + timedelta(days=5))
    hits = store.keyword_search("staging database port", port, now=NOW, limit=5)
    assert [h.memory_id for h in hits] == [old.id]
    assert store.count(port, now=NOW) == 1


def test_graph_files_travel_with_the_logical_rows(store: Store, store_factory, backend) -> None:
    state = GraphFileState(path="/p/.knowledge/graph.json", scope="project:p",
                           base={"nodes": {"a": "x"}, "edges": {}}, signature="s", seq=3,
                           updated_at=NOW)
    store.graph_files.save_graph_file(state)
    rows = store.transfer.export_rows("graph_files")
    assert len(rows) == 1 and rows[0]["base"] == state.base and rows[0]["seq"] == 3
    other = store_factory("sqlite" if backend == "postgresql" else "postgresql", name="copy")
    assert other.transfer.import_rows("graph_files", rows) == 1
    assert other.transfer.import_rows("graph_files", rows) == 0  # an existing key is skipped
    assert other.graph_files.graph_file(state.path) == state


def test_sqlite_uses_the_partial_index_of_graph_nodes(tmp_path) -> None:
    from memoryd.store.filters import where
    from memoryd.store.sqlite import SQLiteStore
    from memoryd.store.sqlite.codec import DIALECT

    store = SQLiteStore(tmp_path / "m.db")
    try:
        clause, params = where(SearchFilters(scope="project:x", graph=True), NOW, DIALECT)
        plan = store.db.connection().execute(
            f"EXPLAIN QUERY PLAN SELECT m.id FROM memories m WHERE {clause}", params).fetchall()
        assert any("idx_memories_graph" in str(row) for row in plan), plan
    finally:
        store.close()


def test_edges_from_returns_the_edges_of_matching_sources(store: Store, embed) -> None:
    from memoryd.models import Edge

    a, b = node("first node", "a"), node("second node", "b")
    c = node("other project node", "c", scope="project:web")
    plain = make("a plain memory", scope="project:shop")
    rows = [a, b, c, plain]
    store.insert(rows, embed([m.content for m in rows]), ACTOR)
    edges = [Edge(source_id=a.id, target_id=b.id, edge_type="depends_on", weight=0.7,
                  created_at=NOW),
             Edge(source_id=b.id, target_id=a.id, edge_type="relates_to", created_at=NOW,
                  valid_until=NOW - timedelta(days=1)),
             Edge(source_id=plain.id, target_id=a.id, edge_type="mentions", created_at=NOW),
             Edge(source_id=c.id, target_id=a.id, edge_type="uses", created_at=NOW)]
    store.upsert_edges(edges)
    shop = SearchFilters(scope="project:shop", graph=True, include_superseded=True)
    found = {(e.source_id, e.edge_type, e.target_id): e for e in store.edges_from(shop, now=NOW)}
    assert set(found) == {(a.id, "depends_on", b.id), (b.id, "relates_to", a.id)}
    assert found[(a.id, "depends_on", b.id)].weight == 0.7
    assert found[(b.id, "relates_to", a.id)].valid_until == NOW - timedelta(days=1)
    assert store.edges_from(SearchFilters(scope="project:none"), now=NOW) == []


def test_edges_around_many_memories_come_once_each_in_the_order_written(store: Store) -> None:
    from memoryd.models import Edge

    rows = [make(f"memory number {i}") for i in range(1200)]
    store.insert(rows, None, ACTOR)
    # Each edge joins memories far apart in the list (a statement of its own on SQLite).
    edges = [Edge(source_id=rows[i].id, target_id=rows[-1 - i].id, edge_type="related",
                  created_at=NOW) for i in range(12)]
    for edge in edges:
        store.upsert_edges([edge])
    store.upsert_edges([edges[0].model_copy(update={"weight": 0.9})])  # replaced in place
    found = store.edges_of([m.id for m in rows])
    assert [(e.source_id, e.target_id) for e in found] == [(e.source_id, e.target_id)
                                                           for e in edges]
    assert found[0].weight == 0.9
    with pytest.raises(StoreError, match="names a memory that does not exist"):
        store.upsert_edges([Edge(source_id=rows[0].id, target_id="nowhere", created_at=NOW)])
    assert len(store.edges_of([rows[0].id])) == 1
