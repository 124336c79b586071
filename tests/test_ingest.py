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

    # The memory now holds "at Spotify" too: a correction that leaves it out would hide it,
    # so the move is said with everything the memory holds.
    moved = mem.ingest("The user moved to Berlin and works as a data engineer at Spotify")
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
    mem.admin.purge(moved.memory_id)
    everything = mem.store.changes_since(0, limit=10_000)
    assert not any("Berlin" in str(h.details) for h in everything)
    assert mem.admin.verify_ledger().ok


def test_numbers_and_negations_supersede(mem):
    port = mem.ingest("The staging database listens on port 5432")
    changed = mem.ingest("The staging database listens on port 5433")
    assert changed.decision == "supersede" and changed.superseded_id == port.memory_id
    likes = mem.ingest("Carol drinks coffee every morning")
    nope = mem.ingest("Carol does not drink coffee every morning")
    assert nope.decision == "supersede" and nope.superseded_id == likes.memory_id


def test_a_changed_port_worded_differently_is_not_lost(mem):
    """"DB runs on 5432" then "database listens on 5433": the new port is kept and recalled,
    the old one stays in history."""
    old = mem.ingest("The staging DB runs on port 5432")
    new = mem.ingest("The staging database listens on port 5433")
    assert new.decision == "supersede" and new.superseded_id == old.memory_id
    assert "5433" in mem.get(new.memory_id).content
    block = mem.recall("Which port does the staging database listen on?").block.text
    assert "5433" in block and "5432" not in block
    hits = mem.search("staging database port", 5, record_access=False)
    assert [h.memory.id for h in hits] == [new.memory_id]
    assert [v.id for v in mem.versions(new.memory_id)] == [new.memory_id, old.memory_id]


@pytest.mark.parametrize(("old", "new"), [
    ("The build server has 16 GB of RAM", "The build server has 32 GB of RAM"),  # number
    ("The billing service is owned by Alice", "The billing service is owned by Bob"),  # name
    ("The contract renews on March 1", "The contract renews on March 15"),  # date
    ("The upload limit is 10 MB", "The upload limit is 10 GB"),  # unit
    ("The nightly job sends a report", "The nightly job does not send a report"),  # negation
    ("All endpoints require authentication", "Most endpoints require authentication"),  # quantity
])
def test_a_changed_value_is_never_reinforced(mem, old, new):
    first = mem.ingest(old)
    second = mem.ingest(new)
    assert second.decision not in ("reinforce", "merge", "update")
    assert second.memory_id != first.memory_id
    assert new in mem.get(second.memory_id).content


def test_two_messages_on_one_topic_stay_two_memories(mem):
    """Chat turns about one subject state different things: each keeps its own memory."""
    turns = [
        "I'm setting up CI for the payments service: the unit tests run in GitHub Actions and "
        "take about six minutes, and I'd like them under three.",
        "For the payments service CI I also want integration tests against a real Postgres, "
        "but they need Docker on the runner and we only have the hosted runners.",
        "The payments service CI failed last night because the Postgres container did not "
        "start in time; the health check waits 30 seconds.",
    ]
    results = [mem.ingest(t) for t in turns]
    assert [r.decision for r in results] == ["create"] * 3
    assert len({r.memory_id for r in results}) == 3 and mem.store.count() == 3
    assert [mem.get(r.memory_id).content for r in results] == turns
    emi = mem.ingest("Emi: I went hiking near Sintra on Saturday")
    elise = mem.ingest("Elise: I went hiking near Sintra on Sunday")
    assert (emi.decision, elise.decision) == ("create", "create")


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
