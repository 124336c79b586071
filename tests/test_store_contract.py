"""The Store contract, exercised directly on every backend (``store`` fixture).

Vectors are real: made by the shared all-MiniLM-L6-v2 model. Each backend must keep
memories, vectors, the keyword index and the history consistent, with every write
one transaction.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memoryd.errors import InvalidInput, MemoryNotFound, StoreError
from memoryd.models import Memory, SchedulingState, SearchFilters
from memoryd.store.base import Actor, Store

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ALL = SearchFilters()

CORPUS = [
    ("The user prefers TypeScript over JavaScript for frontend work", {"tags": ["lang", "frontend"], "node_type": "preference"}),
    ("Deployments run every Friday afternoon through the CI pipeline", {"tags": ["ops"], "node_type": "fact"}),
    ("We decided to use PostgreSQL as the production database", {"tags": ["db", "decision"], "node_type": "decision"}),
    ("Alice is the maintainer of the billing service", {"tags": ["people"], "node_type": "person"}),
    ("The office coffee machine is broken again", {"tags": [], "node_type": "observation"}),
]


def make(content: str, *, created_at: datetime | None = None, **fields: Any) -> Memory:
    created = created_at or NOW
    return Memory(
        id=fields.pop("id", None) or str(uuid.uuid4()),
        content=content,
        created_at=created,
        updated_at=created,
        embedding_model="sentence-transformers/all-MiniLM-L6-v2",
        state=SchedulingState(last_review=created),
        **fields,
    )


@pytest.fixture
def filled(store: Store, embed) -> tuple[Store, list[Memory]]:
    memories = [make(text, **dict(fields)) for text, fields in CORPUS]
    stored = store.insert(memories, embed([m.content for m in memories]), Actor("test", "agent-1"))
    return store, stored


# --------------------------------------------------------------------------- basics


def test_new_store_is_empty_and_healthy(store: Store, shared_embedder) -> None:
    assert store.count() == 0
    assert store.get("nope") is None
    assert store.get_many(["a", "b"]) == {}
    assert list(store.iter_memories()) == []
    assert store.changes_since(0) == []
    health = store.health()
    assert health["ok"] is True and health["memories"] == 0
    assert store.embedding_model == shared_embedder.model_id
    assert store.embedding_dims == shared_embedder.dims
    stats = store.stats()
    assert (stats.memories, stats.vectors, stats.last_seq) == (0, 0, 0)
    assert stats.backend == store.backend


def test_insert_then_read_back_every_field(store: Store, embed) -> None:
    created = datetime(2021, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    memory = make(
        "Ünïcödé content with emoji 🎉 and quotes \" ' and a NUL-free newline\nsecond line",
        created_at=created,
        summary="a summary",
        node_type="decision",
        category="cat",
        subcategory="sub",
        tags=["b", "a"],
        source="unit-test",
        agent_id="agent-7",
        session_id="sess-1",
        scope="project:memoryd",
        importance=0.9,
        severity="high",
        valid_from=created,
        valid_until=created + timedelta(days=3650),
        metadata={"nested": {"x": [1, 2, 3]}, "flag": True, "text": "ü"},
    )
    [stored] = store.insert([memory], embed([memory.content]), Actor("test"))
    assert stored.seq > 0
    got = store.get(memory.id)
    assert got is not None
    for field in (
        "id", "content", "summary", "node_type", "category", "subcategory", "tags", "source",
        "agent_id", "session_id", "scope", "importance", "severity", "created_at", "valid_from",
        "valid_until", "metadata",
    ):
        assert getattr(got, field) == getattr(memory, field), field
    assert got.created_at == created  # microseconds and UTC kept
    assert got.created_at.tzinfo is not None
    assert got.seq == stored.seq
    assert store.get_many([memory.id, "missing"]) == {memory.id: got}
    vec = store.vectors([memory.id])[memory.id]
    assert vec.shape == (384,) and vec.dtype == np.float32
    np.testing.assert_allclose(vec, embed([memory.content])[0], rtol=1e-6)


def test_seq_increases_with_every_write(filled) -> None:
    store, memories = filled
    seqs = [m.seq for m in memories]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    updated = store.update(memories[0].id, {"importance": 0.1}, Actor("test"))
    assert updated.seq > max(seqs)
    store.delete(memories[1].id, Actor("test"))
    changes = store.changes_since(0)
    assert [c.seq for c in changes] == sorted(c.seq for c in changes)
    assert len({c.seq for c in changes}) == len(changes) == len(memories) + 2
    assert [c.operation for c in changes[-2:]] == ["update", "delete"]
    assert store.changes_since(changes[-2].seq) == changes[-1:]
    assert store.changes_since(0, limit=2) == changes[:2]
    assert store.stats().last_seq == changes[-1].seq


def test_history_records_who_what_when(filled) -> None:
    store, memories = filled
    before = datetime.now(UTC) - timedelta(seconds=5)
    store.update(memories[0].id, {"content": "changed text"}, Actor("editor", "agent-2"))
    history = store.history(memories[0].id)
    assert [h.operation for h in history] == ["create", "update"]
    create, update = history
    assert (create.actor, create.agent_id) == ("test", "agent-1")
    assert (update.actor, update.agent_id) == ("editor", "agent-2")
    assert create.seq < update.seq
    assert create.memory_id == update.memory_id == memories[0].id
    after = datetime.now(UTC) + timedelta(seconds=5)
    assert before <= create.at <= update.at <= after
    assert create.details.get("content") == memories[0].content
    # what changed: the old value is kept in the update's details
    assert update.details["changed"]["content"] == memories[0].content
    assert store.history("never-existed") == []


# --------------------------------------------------------------------------- transactions


def test_duplicate_id_fails_whole_insert(filled, embed) -> None:
    store, memories = filled
    before = (store.count(), store.stats().vectors, store.stats().last_seq)
    fresh = make("a brand new memory that must not be half-written")
    dup = make("duplicate of an existing id", id=memories[0].id)
    with pytest.raises(StoreError, match="already exists"):
        store.insert([fresh, dup], embed([fresh.content, dup.content]), Actor("test"))
    assert store.get(fresh.id) is None
    assert store.get(memories[0].id).content == memories[0].content
    assert (store.count(), store.stats().vectors, store.stats().last_seq) == before
    assert store.history(fresh.id) == []
    assert store.keyword_search("half-written", ALL, now=NOW, limit=5) == []


def test_insert_needs_one_vector_per_memory(store: Store, embed) -> None:
    a, b = make("first"), make("second")
    with pytest.raises(StoreError):
        store.insert([a, b], embed(["first"]), Actor())
    assert store.count() == 0


def test_transaction_groups_writes_all_or_nothing(filled, embed) -> None:
    store, memories = filled
    before = store.count()
    extra = make("Zanzibar expedition notes written inside a failed transaction")
    with pytest.raises(RuntimeError), store.transaction():
        store.insert([extra], embed([extra.content]), Actor("test"))
        store.delete(memories[0].id, Actor("test"))
        raise RuntimeError("boom")
    assert store.count() == before
    assert store.get(extra.id) is None
    assert store.get(memories[0].id) is not None
    assert store.keyword_search("Zanzibar", ALL, now=NOW, limit=5) == []
    # the vector cache did not run ahead of the table
    hits = store.vector_search(embed([extra.content])[0], ALL, now=NOW, limit=10)
    assert extra.id not in {h.memory_id for h in hits}
    assert memories[0].id in {h.memory_id for h in store.vector_search(
        embed([memories[0].content])[0], ALL, now=NOW, limit=1)}
    # and a committed transaction keeps both writes
    with store.transaction():
        store.insert([extra], embed([extra.content]), Actor("test"))
        store.delete(memories[0].id, Actor("test"))
    assert store.get(extra.id) is not None and store.get(memories[0].id) is None


# --------------------------------------------------------------------------- update


def test_update_changes_fields_fts_and_vector(filled, embed) -> None:
    store, memories = filled
    target = memories[4]
    new_text = "The espresso grinder in the kitchen was replaced by a volcano-shaped kettle"
    updated = store.update(
        target.id,
        {"content": new_text, "tags": ["kitchen"], "importance": 0.8,
         "updated_at": NOW + timedelta(hours=1)},
        Actor("test"),
        vector=embed([new_text])[0],
    )
    assert updated.content == new_text and updated.tags == ["kitchen"]
    assert updated.importance == 0.8 and updated.created_at == target.created_at
    assert store.get(target.id) == updated
    assert [h.memory_id for h in store.keyword_search("volcano kettle", ALL, now=NOW, limit=5)] == [target.id]
    assert target.id not in {h.memory_id for h in store.keyword_search("broken coffee", ALL, now=NOW, limit=5)}
    top = store.vector_search(embed(["kettle shaped like a volcano"])[0], ALL, now=NOW, limit=1)
    assert top[0].memory_id == target.id
    assert store.list(SearchFilters(tags=["kitchen"]), now=NOW) == [updated]
    assert store.list(SearchFilters(tags=["lang"]), now=NOW)[0].id == memories[0].id


def test_update_rejects_unknown_fields_and_missing_ids(filled) -> None:
    store, memories = filled
    last_seq = store.stats().last_seq
    with pytest.raises(StoreError):
        store.update(memories[0].id, {"id": "new-id"}, Actor())
    with pytest.raises(StoreError):
        store.update(memories[0].id, {"created_at": NOW}, Actor())
    with pytest.raises(MemoryNotFound):
        store.update("missing", {"importance": 0.2}, Actor())
    assert store.stats().last_seq == last_seq
    assert store.get(memories[0].id) == memories[0]


def test_update_states_with_and_without_history(filled) -> None:
    store, memories = filled
    state = SchedulingState(stability=7.5, difficulty=3.0, reps=2, access_count=4,
                            last_review=NOW, last_accessed=NOW)
    last_seq = store.stats().last_seq
    store.update_states({memories[0].id: state})
    assert store.get(memories[0].id).state == state
    assert store.stats().last_seq == last_seq  # no history for plain bookkeeping
    store.update_states({memories[1].id: state}, record="review", actor=Actor("sched"))
    assert store.history(memories[1].id)[-1].operation == "review"
    assert store.history(memories[1].id)[-1].actor == "sched"


def test_states_read_only_the_scheduling_columns_and_agree_with_the_memories(filled) -> None:
    store, memories = filled
    state = SchedulingState(stability=7.5, difficulty=3.0, reps=2, access_count=4,
                            last_review=NOW, last_accessed=NOW)
    store.update_states({memories[0].id: state})
    ids = [m.id for m in memories]
    states = store.states([*ids, "missing", ids[0]])
    assert list(states) == ids  # in the order asked, once each, missing ids left out
    assert states == {i: m.state for i, m in store.get_many(ids).items()}
    assert states[memories[0].id] == state
    assert states[memories[0].id].last_review.tzinfo is not None
    assert store.states([]) == {}
    with pytest.raises(InvalidInput):
        store.states(["bad\x00id"])


# --------------------------------------------------------------------------- delete


@pytest.mark.parametrize("purge", [False, True])
def test_delete_removes_memory_vector_and_fts_keeps_tombstone(filled, embed, purge: bool) -> None:
    store, memories = filled
    victim = memories[2]
    assert victim.id in {h.memory_id for h in store.keyword_search("PostgreSQL", ALL, now=NOW, limit=5)}
    store.delete(victim.id, Actor("cleaner", "agent-9"), purge=purge)
    assert store.get(victim.id) is None
    assert store.vectors([victim.id]) == {}
    assert store.keyword_search("PostgreSQL", ALL, now=NOW, limit=5) == []
    hits = store.vector_search(embed([victim.content])[0], ALL, now=NOW, limit=10)
    assert victim.id not in {h.memory_id for h in hits}
    assert len(hits) == len(memories) - 1
    assert store.count() == len(memories) - 1
    assert store.stats().vectors == len(memories) - 1
    history = store.history(victim.id)
    assert history[0].operation == "create"
    tomb = history[-1]
    assert tomb.operation == ("purge" if purge else "delete")
    assert (tomb.actor, tomb.agent_id) == ("cleaner", "agent-9")
    text = repr([h.details for h in history])
    if purge:
        assert victim.content not in text
    else:
        assert tomb.details.get("content") == victim.content
    with pytest.raises(MemoryNotFound):
        store.delete(victim.id, Actor())


# --------------------------------------------------------------------------- search


def test_keyword_search_ranks_and_never_raises(filled) -> None:
    store, memories = filled
    hits = store.keyword_search("TypeScript frontend", ALL, now=NOW, limit=5)
    assert hits[0].memory_id == memories[0].id
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    for query in ['"', "NEAR(", "a OR", "*", "^x", "title:foo", "(((", "AND NOT OR", "'; DROP TABLE memories; --"]:
        store.keyword_search(query, ALL, now=NOW, limit=5)
    assert store.count() == len(memories)
    assert store.keyword_search("!!! ???", ALL, now=NOW, limit=5) == []
    # tags are searchable keywords too
    assert memories[3].id in {h.memory_id for h in store.keyword_search("people", ALL, now=NOW, limit=5)}


def test_vector_search_nearest_is_itself(filled, embed) -> None:
    store, memories = filled
    for memory in memories:
        hits = store.vector_search(embed([memory.content])[0], ALL, now=NOW, limit=3)
        assert hits[0].memory_id == memory.id
        assert hits[0].similarity == pytest.approx(1.0, abs=1e-4)
        assert all(-1.0 <= h.similarity <= 1.0 + 1e-5 for h in hits)
        assert [h.similarity for h in hits] == sorted((h.similarity for h in hits), reverse=True)
    hits = store.vector_search(embed(["which database do we use in production"])[0], ALL, now=NOW, limit=5)
    assert hits[0].memory_id == memories[2].id


def test_filters_apply_to_list_count_and_both_searches(filled, embed) -> None:
    store, memories = filled
    f = SearchFilters(node_types=["decision", "person"])
    want = {memories[2].id, memories[3].id}
    assert {m.id for m in store.list(f, now=NOW)} == want
    assert store.count(f, now=NOW) == 2
    assert {h.memory_id for h in store.vector_search(embed(["anything"])[0], f, now=NOW, limit=10)} == want
    kw = store.keyword_search("the", f, now=NOW, limit=10)
    assert {h.memory_id for h in kw} <= want
    tags_all = SearchFilters(tags=["db", "decision"], tags_mode="all")
    assert [m.id for m in store.list(tags_all, now=NOW)] == [memories[2].id]
    tags_any = SearchFilters(tags=["db", "ops"], tags_mode="any")
    assert {m.id for m in store.list(tags_any, now=NOW)} == {memories[1].id, memories[2].id}
    assert store.list(SearchFilters(tags=["db", "ops"], tags_mode="all"), now=NOW) == []


def test_list_orders_and_pages(store: Store, embed) -> None:
    memories = [make(f"memory number {i}", created_at=NOW - timedelta(days=i)) for i in range(7)]
    store.insert(memories, embed([m.content for m in memories]), Actor())
    newest_first = [m.id for m in store.list(ALL, now=NOW, limit=100)]
    assert newest_first == [m.id for m in memories]
    oldest_first = [m.id for m in store.list(ALL, now=NOW, limit=100, order="created_asc")]
    assert oldest_first == newest_first[::-1]
    pages = [m.id for off in range(0, 7, 3) for m in store.list(ALL, now=NOW, limit=3, offset=off)]
    assert pages == newest_first
    assert [m.id for m in store.iter_memories(batch_size=2)] == [m.id for m in memories]


def test_replace_vectors_and_model_bookkeeping(filled, embed) -> None:
    store, memories = filled
    swapped = {memories[0].id: embed([memories[1].content])[0]}
    store.replace_vectors(swapped, "other-model")
    np.testing.assert_allclose(store.vectors([memories[0].id])[memories[0].id], swapped[memories[0].id], rtol=1e-6)
    assert store.get(memories[0].id).embedding_model == "other-model"
    assert store.history(memories[0].id)[-1].operation == "reembed"
    hits = store.vector_search(embed([memories[1].content])[0], ALL, now=NOW, limit=2)
    assert {h.memory_id for h in hits} == {memories[0].id, memories[1].id}
    store.set_embedding_model("other-model", 384)
    assert (store.embedding_model, store.embedding_dims) == ("other-model", 384)


def test_stats_counts(filled) -> None:
    store, memories = filled
    stats = store.stats()
    assert stats.memories == stats.vectors == len(memories)
    assert stats.by_node_type == {"preference": 1, "fact": 1, "decision": 1, "person": 1, "observation": 1}
    assert stats.by_tier == {"hot": len(memories)}
    assert stats.last_seq == max(m.seq for m in memories)


def test_backup_and_restore_at_store_level(filled, store_factory, backend, embed, tmp_path) -> None:
    store, memories = filled
    target = tmp_path / "backup.db"
    store.transfer.backup(target)
    with pytest.raises(StoreError):
        store.transfer.backup(target)  # never overwrites
    store.delete(memories[0].id, Actor())
    extra = make("written after the backup")
    store.insert([extra], embed([extra.content]), Actor())
    high = store.stats().last_seq
    store.transfer.restore(target)
    assert {m.id for m in store.iter_memories()} == {m.id for m in memories}
    # The restore is recorded, and the change sequence keeps rising across it.
    assert store.changes_since(0, limit=10_000)[-1].operation == "restore"
    [after] = store.insert([make("written after the restore")], None, Actor())
    assert after.seq > high
    hits = store.vector_search(embed([memories[0].content])[0], ALL, now=NOW, limit=1)
    assert hits[0].memory_id == memories[0].id
    assert store.get(extra.id) is None
    assert extra.id not in {h.memory_id for h in store.keyword_search("written after", ALL, now=NOW, limit=5)}
