"""Smart ingest through the engine, with the real model: every gate decision,
history, supersession chains, batches and bad input."""

from __future__ import annotations

import pytest

from memoryd.errors import InvalidInput, SecretDetected


def test_create_reinforce_update_supersede(mem):
    first = mem.ingest("The user lives in Paris and works as a data engineer")
    assert first.decision == "create"
    again = mem.ingest("The user lives in Paris and works as a data engineer")
    assert again.decision == "reinforce" and again.memory_id == first.memory_id
    assert mem.store.count() == 1
    assert mem.get(first.memory_id).state.reps == 1

    detail = mem.ingest("The user lives in Paris and works as a data engineer at Spotify")
    assert detail.decision == "update" and detail.memory_id == first.memory_id
    assert "Spotify" in mem.get(first.memory_id).content
    updated = [h for h in mem.history(first.memory_id) if h.operation == "update"]
    assert updated[0].details["previous_content"].endswith("data engineer")

    moved = mem.ingest("The user moved to Berlin and works as a data engineer")
    assert moved.decision == "supersede"
    assert moved.superseded_id == first.memory_id
    old = mem.get(first.memory_id)
    assert old.superseded_by == moved.memory_id and old.valid_until is not None
    hits = mem.search("where does the user live", 5, record_access=False)
    assert first.memory_id not in [h.memory.id for h in hits]
    history = mem.search("where does the user live", 5, include_superseded=True,
                         record_access=False)
    assert first.memory_id in [h.memory.id for h in history]
    assert [v.id for v in mem.versions(moved.memory_id)] == [moved.memory_id, first.memory_id]

    # Purging the newer memory erases its content from every history, the old one's included.
    mem.purge(moved.memory_id)
    everything = mem.store.changes_since(0, limit=10_000)
    assert not any("Berlin" in str(h.details) for h in everything)
    assert mem.verify_ledger().ok


def test_numbers_and_negations_supersede(mem):
    port = mem.ingest("The staging database listens on port 5432")
    changed = mem.ingest("The staging database listens on port 5433")
    assert changed.decision == "supersede" and changed.superseded_id == port.memory_id
    likes = mem.ingest("Carol drinks coffee every morning")
    nope = mem.ingest("Carol does not drink coffee every morning")
    assert nope.decision == "supersede" and nope.superseded_id == likes.memory_id


def test_unrelated_content_is_created_and_linked_when_close(mem):
    a = mem.ingest("Our CI runs on GitHub Actions with Ubuntu runners")
    b = mem.ingest("Bananas are rich in potassium")
    assert a.decision == b.decision == "create"
    assert mem.store.count() == 2


def test_merge_folds_near_duplicates(mem):
    one = mem.add("Weekly sync is on Mondays at 10:00 in room Alpha")
    two = mem.add("Weekly sync is on Mondays at 10:00 in room Alpha.")
    result = mem.ingest("The weekly sync is on Mondays at 10:00 in room Alpha")
    assert result.decision == "merge"
    survivors = [m for m in (mem.get(one.id), mem.get(two.id)) if m.superseded_by is None]
    assert len(survivors) == 1 and result.memory_id == survivors[0].id
    assert result.merged_ids and result.merged_ids[0] in {one.id, two.id}


def test_force_create_and_importance(mem):
    mem.ingest("Deploys happen on Tuesdays")
    forced = mem.ingest("Deploys happen on Tuesdays", force_create=True)
    assert forced.decision == "create" and mem.store.count() == 2
    scored = mem.ingest("Remember that I always want answers in British English")
    assert scored.memory.importance > 0.6
    given = mem.ingest("A line about the canteen menu", importance=0.2)
    assert given.memory.importance == 0.2


def test_batch_is_ordered_validated_and_capped(mem):
    results = mem.ingest_many([
        {"content": "Project Falcon uses Rust", "tags": ["falcon"]},
        {"content": "Project Falcon uses Rust", "tags": ["falcon"]},
    ])
    assert [r.decision for r in results] == ["create", "reinforce"]
    with pytest.raises(InvalidInput):
        mem.ingest_many([{"content": "fine"}, {"content": "   "}])
    with pytest.raises(InvalidInput, match="at most 50"):
        mem.ingest_many([{"content": f"item {i}"} for i in range(51)])
    with pytest.raises(InvalidInput):
        mem.ingest_many([])
    assert mem.store.count() == 1


def test_ingest_scans_for_secrets(mem):
    with pytest.raises(SecretDetected, match="aws"):
        mem.ingest("backup credentials AKIAIOSFODNN7EXAMPLE for the bucket")
    assert mem.store.count() == 0
    stored = mem.ingest("backup credentials AKIAIOSFODNN7EXAMPLE for the bucket",
                        allow_secrets=True)
    assert stored.decision == "create"
