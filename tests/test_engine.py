"""The Engine through memoryd.open: writes, validation, history, model mismatch, lifecycle."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone

import pytest
from helpers.consistency import check_consistency, table_counts
from helpers.embedders import FailingEmbedder, HashEmbedder

import memoryd
from memoryd.errors import (
    ContentTooLarge,
    EmbeddingError,
    EmptyContent,
    InvalidInput,
    MemoryNotFound,
    ModelMismatch,
    StoreError,
)
from memoryd.store.base import Actor


def keyword_ids(mem, query: str) -> list[str]:
    return [h.memory.id for h in mem.search(query, mode="keyword", associations=False)]


# --------------------------------------------------------------------------- add / get


def test_add_and_get(mem) -> None:
    memory = mem.add(
        "User prefers TypeScript", node_type="preference", tags=["lang", "lang", " ts "],
        metadata={"k": [1, "two"]}, importance=0.8, scope="project:web", agent_id="agent-1",
        session_id="sess-1", category="coding",
    )
    assert memory.id and memory.content == "User prefers TypeScript"
    assert memory.tags == ["lang", "ts"]  # cleaned and de-duplicated
    assert memory.embedding_model == mem.embedder.model_id
    assert memory.created_at == memory.updated_at
    assert mem.get(memory.id) == memory
    with pytest.raises(MemoryNotFound) as info:
        mem.get("no-such-id")
    assert isinstance(info.value, LookupError)
    assert mem.stats()["memories"] == 1 and mem.stats()["vectors"] == 1


def test_created_at_given_by_caller_is_kept(store_url, open_mem) -> None:
    fixed_now = datetime(2030, 1, 1, tzinfo=UTC)
    mem = open_mem(store_url, clock=lambda: fixed_now)
    past = datetime(2019, 7, 14, 9, 30, 15, 123457, tzinfo=timezone(timedelta(hours=2)))
    a = mem.add("An old conversation about kites", created_at=past)
    assert a.created_at == past and a.created_at.utcoffset() == timedelta(0)
    assert a.updated_at == past
    naive = mem.add("A naive timestamp is UTC", created_at=datetime(2020, 2, 29, 23, 59, 59, 999999))
    assert naive.created_at == datetime(2020, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)
    iso = mem.add("An ISO string also works", created_at="2021-05-06T07:08:09.010203Z")
    assert iso.created_at == datetime(2021, 5, 6, 7, 8, 9, 10203, tzinfo=UTC)
    now = mem.add("No timestamp: the clock's now")
    assert now.created_at == fixed_now
    mem.close()
    again = open_mem(store_url)
    assert again.get(a.id).created_at == past
    assert again.get(naive.id).created_at == naive.created_at
    assert [m.id for m in again.list(order="created_asc")] == [a.id, naive.id, iso.id, now.id]


def test_context_manager_closes(store_url, shared_embedder) -> None:
    with memoryd.open(store_url, embedder=shared_embedder) as mem:
        assert isinstance(mem, memoryd.Engine)
        mem.add("inside the with block")
    assert mem.store.db.open_connections == 0
    with memoryd.open(store_url, embedder=shared_embedder) as again:
        assert again.store.count() == 1


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("content", ["", " ", "\n\t  \r\n", "\u3000"])
def test_empty_content_is_refused(mem, content: str) -> None:
    with pytest.raises(EmptyContent):
        mem.add(content)
    assert mem.store.count() == 0 and mem.stats()["last_seq"] == 0


@pytest.mark.parametrize("content", [None, 42, ["list"], {"text": "x"}])
def test_non_string_content_is_refused(mem, content) -> None:
    with pytest.raises(InvalidInput):
        mem.add(content)
    assert mem.store.count() == 0


def test_content_limit_default_64_kib(mem) -> None:
    assert mem.settings.max_content_bytes == 64 * 1024
    exactly = "é" * (32 * 1024)  # 65536 bytes in UTF-8, 32768 characters
    assert mem.add(exactly).content == exactly
    too_big = "é" * (32 * 1024) + "x"  # one byte over, far fewer characters than bytes
    with pytest.raises(ContentTooLarge) as info:
        mem.add(too_big)
    message = str(info.value)
    assert "65537" in message and "65536" in message and "MEMORYD_MAX_CONTENT_BYTES" in message
    with pytest.raises(ContentTooLarge):
        mem.add("a" * (1024 * 1024))
    assert mem.store.count() == 1


def test_content_limit_is_configurable(store_url, open_mem, monkeypatch) -> None:
    mem = open_mem(store_url, max_content_bytes=100)
    mem.add("x" * 100)
    with pytest.raises(ContentTooLarge, match="limit is 100 bytes"):
        mem.add("x" * 101)
    mem.close()
    monkeypatch.setenv("MEMORYD_MAX_CONTENT_BYTES", "50")
    env_mem = open_mem(store_url)
    assert env_mem.settings.max_content_bytes == 50
    with pytest.raises(ContentTooLarge, match="limit is 50 bytes"):
        env_mem.add("y" * 51)
    # updates are checked too
    first = env_mem.list()[0]
    with pytest.raises(ContentTooLarge):
        env_mem.update(first.id, content="z" * 51)
    assert env_mem.get(first.id).content == "x" * 100


@pytest.mark.parametrize(
    "fields",
    [
        {"node_type": "bogus"},
        {"importance": 1.5},
        {"importance": -0.1},
        {"scope": "team"},
        {"tags": [""]},
        {"tags": ["x" * 65]},
        {"severity": "apocalyptic"},
        {"unknown_field": 1},
        {"metadata": "not a dict"},
        {"created_at": "not a date"},
    ],
)
def test_invalid_fields_are_refused(mem, fields) -> None:
    with pytest.raises(InvalidInput) as info:
        mem.add("valid content", **fields)
    assert next(iter(fields)) in str(info.value)
    assert mem.store.count() == 0


def test_one_bad_item_fails_add_many_with_nothing_written(mem) -> None:
    items = [{"content": f"good item {i}"} for i in range(5)] + [{"content": "   "}]
    with pytest.raises(EmptyContent):
        mem.add_many(items)
    assert mem.store.count() == 0
    with pytest.raises(InvalidInput):
        mem.add_many([{"content": "fine"}, {"content": "bad", "node_type": "nope"}])
    assert mem.store.count() == 0


def test_duplicate_ids_fail_the_batch_atomically(mem) -> None:
    mem.add("original", id="fixed-id")
    with pytest.raises(StoreError):
        mem.add_many([{"content": "new one", "id": "other-id"}, {"content": "clash", "id": "fixed-id"}])
    assert mem.get("fixed-id").content == "original"
    with pytest.raises(MemoryNotFound):
        mem.get("other-id")
    with pytest.raises(StoreError):
        mem.add_many([{"content": "a", "id": "twice"}, {"content": "b", "id": "twice"}])
    assert mem.store.count() == 1


def test_embedding_failure_writes_no_partial_batch(store_url, open_mem, shared_embedder, store_path) -> None:
    failing = FailingEmbedder(shared_embedder, fail_on_call=2)
    mem = open_mem(store_url, embedder=failing)
    items = [{"content": f"batch item number {i}"} for i in range(6)]
    with pytest.raises(EmbeddingError):
        mem.add_many(items, batch_size=3)
    # each batch is one transaction: the first batch is whole, the second absent
    assert mem.store.count() == 3
    check_consistency(store_path)


def test_a_query_embedding_failure_surfaces_from_search(store_url, open_mem,
                                                        shared_embedder) -> None:
    """The query is embedded on a worker thread; its failure is the search's error, and the
    next search works."""
    failing = FailingEmbedder(shared_embedder, fail_on_call=2)
    mem = open_mem(store_url, embedder=failing)
    mem.add("Deploys go out on Tuesdays after standup")
    with pytest.raises(EmbeddingError, match="model crashed"):
        mem.search("when do we ship?", 3, record_access=False)
    hits = mem.search("when do we ship?", 3, record_access=False)
    assert hits[0].memory.content.startswith("Deploys")


def test_lone_surrogate_content_is_invalid_input(mem) -> None:
    with pytest.raises(InvalidInput):
        mem.add("broken \ud800 text")


# --------------------------------------------------------------------------- update / delete / history


def test_update_reembeds_and_reindexes(mem) -> None:
    memory = mem.add("The team meets on Mondays in room 101")
    updated = mem.acting_as(Actor("editor", "agent-x")).update(
        memory.id, content="The team now meets on Thursdays over video call", tags=["meetings"])
    assert updated.content.startswith("The team now meets")
    assert updated.created_at == memory.created_at and updated.updated_at >= memory.updated_at
    assert keyword_ids(mem, "Thursdays") == [memory.id]
    assert keyword_ids(mem, "Mondays") == []
    top = mem.search("video conference schedule", mode="vector", limit=1)[0]
    assert top.memory.id == memory.id and top.semantic_similarity > 0.2
    with pytest.raises(EmptyContent):
        mem.update(memory.id, content="  ")
    with pytest.raises(InvalidInput):
        mem.update(memory.id)
    with pytest.raises(InvalidInput):
        mem.update(memory.id, colour="red")
    with pytest.raises(MemoryNotFound):
        mem.update("missing", importance=0.3)
    current = mem.get(memory.id)  # (searches above may have touched its scheduling state)
    assert (current.content, current.tags, current.seq) == (updated.content, updated.tags, updated.seq)


def test_delete_removes_vector_and_fts_and_keeps_tombstone(mem, store_path) -> None:
    keep = mem.add("Bananas are rich in potassium")
    gone = mem.add("The staging server lives at rack 42 in Frankfurt")
    assert keyword_ids(mem, "Frankfurt") == [gone.id]
    mem.acting_as(Actor("cli", "agent-d")).delete(gone.id)
    assert keyword_ids(mem, "Frankfurt") == []
    assert gone.id not in {h.memory.id for h in mem.search("staging server location", mode="vector")}
    assert mem.store.vectors([gone.id]) == {}
    with pytest.raises(MemoryNotFound):
        mem.get(gone.id)
    with pytest.raises(MemoryNotFound):
        mem.delete(gone.id)
    counts = check_consistency(store_path)
    assert counts["memories"] == counts["vectors"] == counts["fts_docs"] == 1
    history = mem.history(gone.id)
    assert [h.operation for h in history] == ["create", "delete"]
    assert history[-1].actor == "cli" and history[-1].agent_id == "agent-d"
    assert history[-1].details["content"] == gone.content
    assert mem.get(keep.id).content == keep.content


def test_history_records_every_mutation(mem) -> None:
    start = datetime.now(UTC) - timedelta(seconds=5)
    a = mem.acting_as(Actor("alice", "agent-1")).add("first version")
    mem.acting_as(Actor("bob", "agent-2")).update(a.id, content="second version")
    mem.acting_as(Actor("carol")).update(a.id, importance=0.9)
    b = mem.add("another memory")
    mem.acting_as(Actor("dave", "agent-4")).delete(a.id)
    history = mem.history(a.id)
    assert [(h.operation, h.actor, h.agent_id) for h in history] == [
        ("create", "alice", "agent-1"),
        ("update", "bob", "agent-2"),
        ("update", "carol", None),
        ("delete", "dave", "agent-4"),
    ]
    seqs = [h.seq for h in history]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    assert mem.history(b.id)[0].seq == seqs[2] + 1  # one global, increasing sequence
    assert all(start <= h.at <= datetime.now(UTC) + timedelta(seconds=5) for h in history)
    assert [h.at for h in history] == sorted(h.at for h in history)
    assert history[1].details["changed"]["content"] == "first version"
    assert history[2].details["changed"]["importance"] == 0.5
    with pytest.raises(MemoryNotFound):
        mem.history("never-existed")
    assert mem.stats()["last_seq"] == seqs[-1]


# --------------------------------------------------------------------------- model mismatch


def test_model_mismatch_is_refused(store_url, open_mem, shared_embedder, store_path) -> None:
    real = open_mem(store_url)
    real.add("a memory embedded by MiniLM")
    real.close()
    with pytest.raises(ModelMismatch) as info:
        memoryd.open(store_url, embedder=HashEmbedder())
    message = str(info.value)
    assert shared_embedder.model_id in message and "test/hash-embedder" in message
    assert "memoryd reembed" in message
    assert info.value.store_model == shared_embedder.model_id
    # the refused open wrote nothing and left the store usable
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT value FROM meta WHERE key='embedding_model'").fetchone()[0] == shared_embedder.model_id
    conn.close()
    again = open_mem(store_url)
    assert again.search("MiniLM", mode="keyword")
    again.close()
    # opening anyway is explicit; re-embedding switches the store to the new model
    forced = open_mem(store_url, embedder=HashEmbedder(), allow_model_mismatch=True)
    assert forced.admin.reembed() == 1
    assert forced.store.embedding_model == "test/hash-embedder"
    forced.close()
    open_mem(store_url, embedder=HashEmbedder()).close()
    with pytest.raises(ModelMismatch):
        memoryd.open(store_url, embedder=shared_embedder)


def test_empty_store_adopts_the_configured_model(store_url, open_mem, shared_embedder) -> None:
    open_mem(store_url).close()  # records MiniLM, no vectors yet
    other = open_mem(store_url, embedder=HashEmbedder())
    assert other.store.embedding_model == "test/hash-embedder"


def test_stats_and_lazy_model(store_url) -> None:
    # A default engine (its own LocalEmbedder) does not load the model for non-embedding work.
    with memoryd.open(store_url) as mem:
        stats = mem.stats()
        assert stats["embedder"]["loaded"] is False
        assert stats["memories"] == 0 and stats["backend"] == "sqlite"
        mem.list()
        assert mem.embedder.loaded is False


def test_store_file_stays_consistent_through_a_mixed_workload(mem, store_path) -> None:
    made = mem.add_many([{"content": f"workload memory {i} about topic {i % 3}"} for i in range(20)])
    for m in made[:5]:
        mem.update(m.id, content=m.content + " (edited)")
    for m in made[5:10]:
        mem.delete(m.id)
    counts = check_consistency(store_path)
    assert counts["memories"] == 15
    assert table_counts(store_path)["history"] == 20 + 5 + 5
