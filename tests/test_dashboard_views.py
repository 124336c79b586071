"""The operations the dashboard reads, on a real store with the real model: the change feed,
the timeline, the overview with this process's latencies, a memory's retention curve, the
memory graph and the knowledge graphs (time travel, hand edits of the file, archiving a node
by hand), linking memories, and who a key is. A key bound to an agent sees only its own in
every one of them. Each test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memoryd.engine import Engine
from memoryd.errors import Forbidden, InvalidInput, MemoryNotFound
from memoryd.operations import Caller, invoke


@pytest.fixture(params=["sqlite", "postgresql"])
def mem(request: pytest.FixtureRequest, open_mem, store_url: str) -> Engine:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return open_mem(store_url)
    return open_mem(request.getfixturevalue("pg_database")())


def _as(mem: Engine, label: str, **binding: object) -> Caller:
    return Caller.from_key(mem.admin.create_key(label, **binding).key)


def _today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


# --- the change feed ---------------------------------------------------------------------------
def test_the_feed_lists_every_change_in_order_and_pages(mem: Engine) -> None:
    start = mem.views.last_change()
    first = mem.add("The staging database listens on port 5432")
    mem.update(first.id, tags=["db"])
    second = mem.add("Backups run nightly at 02:00")
    mem.delete(second.id)
    feed = invoke(mem, "changes", {"since": start}, Caller.local())
    assert [(c.operation, c.memory_id) for c in feed.changes] == [
        ("create", first.id), ("update", first.id), ("create", second.id), ("delete", second.id)]
    assert feed.changes[0].memory is not None and feed.changes[0].memory.tags == ["db"]
    assert feed.changes[-1].removed and feed.changes[-1].memory is None
    assert feed.head == feed.next == mem.views.last_change() and not feed.more
    page = invoke(mem, "changes", {"since": start, "limit": 2}, Caller.local())
    assert len(page.changes) == 2 and page.more
    rest = invoke(mem, "changes", {"since": page.next}, Caller.local())
    assert [c.seq for c in page.changes + rest.changes] == [c.seq for c in feed.changes]


def test_a_bound_key_sees_only_its_own_changes_and_no_removals(mem: Engine) -> None:
    start = mem.views.last_change()
    bot = _as(mem, "bot", agent_id="bot-1")
    own = invoke(mem, "memory_create", {"content": "Bot one prefers tabs"}, bot)
    other = mem.labelled("bot-2").add("Bot two prefers spaces")
    invoke(mem, "memory_delete", {"id": own.id}, bot)
    feed = invoke(mem, "changes", {"since": start}, bot)
    assert [c.operation for c in feed.changes] == []  # its one memory is gone: not told
    again = invoke(mem, "memory_create", {"content": "Bot one uses fish"}, bot)
    feed = invoke(mem, "changes", {"since": start}, bot)
    assert {c.memory_id for c in feed.changes} == {again.id}
    assert other.id not in json.dumps(feed.model_dump(mode="json"))
    unbound = invoke(mem, "changes", {"since": start}, Caller.local())
    assert {other.id, own.id, again.id} <= {c.memory_id for c in unbound.changes}


def test_bad_feed_arguments_are_refused(mem: Engine) -> None:
    with pytest.raises(InvalidInput, match="since"):
        invoke(mem, "changes", {"since": -1}, Caller.local())
    with pytest.raises(InvalidInput, match="limit"):
        invoke(mem, "changes", {"limit": 0}, Caller.local())


# --- the timeline ------------------------------------------------------------------------------
def test_the_timeline_counts_each_kind_per_day_and_lists_the_day(mem: Engine) -> None:
    kept = mem.add("Deploys go out on Tuesdays")
    mem.ingest("Deploys go out on Tuesdays and Thursdays now, no longer Tuesdays only")
    mem.promote(kept.id)
    gone = mem.add("The old VPN endpoint is vpn1.example.com")
    mem.delete(gone.id)
    out = invoke(mem, "timeline", {"days": 3, "tz": "UTC", "day": _today()}, Caller.local())
    today = out.days[0]
    assert today.day == _today() and len(out.days) == 3
    assert today.learned >= 3 and today.corrected >= 1 and today.forgotten == 1
    assert today.strengthened >= 1
    kinds = {(e.kind, e.memory_id) for e in out.entries}
    assert ("forgotten", gone.id) in kinds and ("learned", kept.id) in kinds
    forgotten = next(e for e in out.entries if e.kind == "forgotten")
    assert not forgotten.exists and "vpn1" in (forgotten.snippet or "")
    assert [e.seq for e in out.entries] == sorted((e.seq for e in out.entries), reverse=True)
    with pytest.raises(InvalidInput, match="time zone"):
        invoke(mem, "timeline", {"tz": "Mars/Olympus"}, Caller.local())


def test_the_timeline_of_a_bound_key_counts_only_its_memories(mem: Engine) -> None:
    mem.add("Someone else's fact one")
    mem.add("Someone else's fact two")
    bot = _as(mem, "bot", agent_id="bot-1")
    invoke(mem, "memory_create", {"content": "Bot one's fact"}, bot)
    out = invoke(mem, "timeline", {"days": 1, "day": _today()}, bot)
    assert out.days[0].learned == 1 and len(out.entries) == 1


# --- the overview ------------------------------------------------------------------------------
def test_the_overview_counts_and_draws_the_callers_memories(mem: Engine) -> None:
    for text in ("Lunch is at noon", "The printer is on floor 2", "Standup is at 9:30"):
        mem.add(text, node_type="fact")
    mem.add("Prefer short meetings", node_type="preference")
    mem.admin.consolidate()
    invoke(mem, "search", {"query": "printer floor"}, Caller.local())
    out = invoke(mem, "overview", {}, Caller.local())
    assert out.memories == out.sampled == 4
    assert out.by_node_type == {"fact": 3, "preference": 1}
    assert sum(out.retention_histogram) == 4 and sum(out.by_state.values()) == 4
    assert out.growth[-1].day == _today() and out.growth[-1].count == 4 and len(out.growth) == 30
    assert out.consolidations and out.consolidations[0]["examined"] >= 4
    search = next(s for s in out.latencies if s.operation == "search")
    assert search.count >= 1 and 0 < search.p50_ms <= search.p95_ms <= search.p99_ms <= search.max_ms
    bot = _as(mem, "bot", agent_id="bot-1")
    invoke(mem, "memory_create", {"content": "Bot note", "node_type": "event"}, bot)
    mine = invoke(mem, "overview", {}, bot)
    assert mine.memories == 1 and mine.by_node_type == {"event": 1} and mine.consolidations == []


# --- the retention curve -----------------------------------------------------------------------
def test_the_retention_curve_falls_from_the_last_review_and_marks_reviews(mem: Engine) -> None:
    memory = mem.add("The release checklist lives in docs/release.md")
    mem.promote(memory.id)
    curve = invoke(mem, "memory_retention", {"id": memory.id, "days_ahead": 60, "points": 20},
                   Caller.local())
    values = [p.retention for p in curve.points]
    assert values[0] == pytest.approx(1.0, abs=1e-3) and values == sorted(values, reverse=True)
    assert values[-1] < 0.9  # well past one stability
    assert curve.points[-1].at >= curve.now + timedelta(days=59)
    assert [r.operation for r in curve.reviews] == ["create", "promote"]
    bot = _as(mem, "bot", agent_id="bot-1")
    with pytest.raises(MemoryNotFound):
        invoke(mem, "memory_retention", {"id": memory.id}, bot)


# --- the memory graph --------------------------------------------------------------------------
def test_the_memory_graph_travels_back_to_a_superseded_memory(mem: Engine) -> None:
    old = mem.add("The staging database listens on port 5432")
    time.sleep(1.1)
    middle = mem.context.clock()
    time.sleep(0.1)
    new = mem.ingest("The staging database now listens on port 5433")
    assert new.decision == "supersede"
    now = invoke(mem, "memory_graph", {}, Caller.local())
    assert {n.id for n in now.nodes} == {new.memory_id}
    past = invoke(mem, "memory_graph", {"as_of": middle.isoformat()}, Caller.local())
    assert {n.id for n in past.nodes} == {old.id}
    both = invoke(mem, "memory_graph", {"include_superseded": True}, Caller.local())
    assert {(e.source, e.type, e.target) for e in both.edges} == {
        (new.memory_id, "supersedes", old.id)}
    assert next(n for n in both.nodes if n.id == old.id).superseded


def test_linking_memories_draws_an_edge_and_stays_in_the_view(mem: Engine) -> None:
    a = mem.add("Lock storms happen under eight writers")
    b = mem.add("SQLite needs a busy timeout before WAL writes")
    invoke(mem, "memory_link", {"id": a.id, "target": b.id, "type": "caused_by", "weight": 0.8},
           Caller.local())
    graph = invoke(mem, "memory_graph", {"limit": 10}, Caller.local())
    assert [(e.source, e.type, e.target, e.weight) for e in graph.edges] == [
        (a.id, "caused_by", b.id, 0.8)]
    bot = _as(mem, "bot", agent_id="bot-1")
    mine = invoke(mem, "memory_create", {"content": "Bot's memory"}, bot)
    with pytest.raises(MemoryNotFound):
        invoke(mem, "memory_link", {"id": mine.id, "target": a.id}, bot)
    assert invoke(mem, "memory_graph", {}, bot).nodes[0].id == mine.id
    with pytest.raises(InvalidInput):
        invoke(mem, "memory_graph", {"limit": 5001}, Caller.local())


# --- the knowledge graphs ----------------------------------------------------------------------
def _project(tmp_path: Path) -> str:
    root = tmp_path / "shop"
    root.mkdir()
    return str(root)


def test_a_knowledge_graph_whole_now_and_as_of(mem: Engine, tmp_path: Path) -> None:
    project = _project(tmp_path)
    mem.kg.write(project, nodes=[{"id": "old-cache", "name": "Cache in Redis"}])
    time.sleep(1.1)
    middle = mem.context.clock()
    time.sleep(0.1)
    stale_at = mem.context.clock().isoformat()
    mem.kg.write(project, nodes=[{"id": "old-cache", "valid_until": stale_at},
                                 {"id": "new-cache", "name": "Cache in memcached"}],
                 edges=[{"source": "new-cache", "target": "old-cache", "type": "supersedes"}])
    now = invoke(mem, "kg_graph", {"project": project}, Caller.local())
    assert now.scope == "project:shop" and now.file.endswith(".knowledge/graph.json")
    assert [n.id for n in now.nodes] == ["new-cache"] and now.edges == []
    assert now.first is not None and now.first <= middle
    past = invoke(mem, "kg_graph", {"project": project, "as_of": middle.isoformat()},
                  Caller.local())
    assert [n.id for n in past.nodes] == ["old-cache"] and past.as_of == middle
    listed = invoke(mem, "kg_graphs", {}, Caller.local()).graphs
    assert {(g.scope, g.root) for g in listed} >= {("project:shop", project), ("user", None)}
    # An edge between two active nodes is drawn.
    mem.kg.write(project, nodes=[{"id": "db", "name": "Postgres"}],
                 edges=[{"source": "new-cache", "target": "db", "type": "uses"}])
    drawn = invoke(mem, "kg_graph", {"project": project}, Caller.local())
    assert [(e.source, e.target, e.type) for e in drawn.edges] == [("new-cache", "db", "uses")]


def test_hand_edits_of_the_file_show_up_and_archiving_writes_the_file(mem: Engine,
                                                                      tmp_path: Path) -> None:
    project = _project(tmp_path)
    mem.kg.write(project, nodes=[{"id": "wal", "name": "WAL needs busy_timeout"}])
    path = Path(project) / ".knowledge" / "graph.json"
    data = json.loads(path.read_text())
    data["nodes"].append({"id": "by-hand", "name": "Written in the file", "type": "fact",
                          "created": "2026-01-02T00:00:00Z", "updated": "2026-01-02T00:00:00Z"})
    path.write_text(json.dumps(data, indent=2))
    view = invoke(mem, "kg_graph", {"project": project}, Caller.local())
    assert {n.id for n in view.nodes} == {"wal", "by-hand"}
    archived = invoke(mem, "kg_node_archive", {"id": "wal", "project": project}, Caller.local())
    assert archived.node.archived and not archived.was_archived
    on_disk = {n["id"]: n for n in json.loads(path.read_text())["nodes"]}
    assert on_disk["wal"].get("archived") is True
    view = invoke(mem, "kg_graph", {"project": project}, Caller.local())
    assert next(n for n in view.nodes if n.id == "wal").archived
    invoke(mem, "kg_recall", {"id": "wal", "project": project}, Caller.local())
    assert not json.loads(path.read_text())["nodes"][-1].get("archived")


def test_graph_views_keep_a_bound_key_inside_its_view(mem: Engine, tmp_path: Path) -> None:
    mem.kg.write(graph="user", nodes=[{"id": "foreign", "name": "Someone else's node"}])
    bot = _as(mem, "bot", agent_id="bot-1")
    # a key bound to an agent adds nodes by name; their ids are chosen for it
    invoke(mem, "kg_write", {"graph": "user", "nodes": [{"name": "Bot's node"}]}, bot)
    view = invoke(mem, "kg_graph", {"graph": "user"}, bot)
    assert [n.name for n in view.nodes] == ["Bot's node"]
    assert invoke(mem, "kg_graphs", {}, bot).graphs[0].nodes == 1
    with pytest.raises(Exception):
        invoke(mem, "kg_node_archive", {"id": "foreign", "graph": "user"}, bot)
    scoped = _as(mem, "alpha", memory_scope="project:alpha")
    with pytest.raises(Forbidden):
        invoke(mem, "kg_graph", {"graph": "user"}, scoped)


def test_whoami_tells_a_key_what_it_is(mem: Engine) -> None:
    bot = _as(mem, "bot", agent_id="bot-1", scopes=["read"])
    who = invoke(mem, "whoami", {}, bot)
    assert (who.key_label, who.scopes, who.agent_id, who.bound) == ("bot", ["read"], "bot-1", True)
    assert invoke(mem, "whoami", {}, Caller.local()).bound is False
