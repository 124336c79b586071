"""The cognitive layer through the engine: feedback, testing effect, tiers, graph,
consolidation, forgetting, intentions, codebase memory and secret scanning.

Real SQLite stores and the real model; time is injected through a clock, never slept on.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memoryd.errors import IntentionNotFound, InvalidInput, MemoryNotFound, SecretDetected


class Clock:
    """A settable clock handed to the engine."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc))


@pytest.fixture
def cmem(open_mem, store_url, clock):
    return open_mem(store_url, clock=clock)


def test_promote_strengthens_and_demote_weakens(cmem, clock):
    memory = cmem.add("The staging database runs PostgreSQL 16 on port 5433")
    clock.advance(days=3)
    before = cmem.views.memory_state(memory.id)
    promoted = cmem.promote(memory.id, reason="confirmed by the user")
    after = cmem.views.memory_state(memory.id)
    assert promoted.state.reps == 1
    assert after.stability_days > before.stability_days
    assert after.retention > before.retention
    assert after.storage_strength > before.storage_strength

    clock.advance(days=1)
    cmem.demote(memory.id, reason="port changed")
    demoted = cmem.views.memory_state(memory.id)
    assert demoted.lapses == 1
    assert demoted.retention < after.retention
    ops = [h.operation for h in cmem.history(memory.id)]
    assert ops == ["create", "promote", "demote"]
    assert cmem.history(memory.id)[1].details["reason"] == "confirmed by the user"


def test_retrieval_strengthens_once_per_session(cmem, clock):
    memory = cmem.add("Alice maintains the billing service written in Go")
    clock.advance(days=5)
    start = cmem.get(memory.id).state.storage_strength
    cmem.search("who maintains billing", 3, session_key="s1")
    cmem.settle()  # access recording is written in the background
    once = cmem.get(memory.id).state
    cmem.search("billing service in Go", 3, session_key="s1")
    cmem.settle()
    twice = cmem.get(memory.id).state
    assert once.storage_strength > start
    assert twice.storage_strength == once.storage_strength  # same session: no second gain
    assert twice.access_count == once.access_count + 1
    cmem.search("billing service", 3, session_key="s2")
    cmem.settle()
    assert cmem.get(memory.id).state.storage_strength > twice.storage_strength
    # A retrieval moves strength much less than explicit feedback.
    gain_search = once.storage_strength - start
    before_promote = cmem.get(memory.id).state.storage_strength
    cmem.promote(memory.id)
    assert cmem.get(memory.id).state.storage_strength - before_promote > 2 * gain_search


def test_search_without_recording_leaves_state_alone(cmem):
    memory = cmem.add("Bob prefers tabs over spaces")
    cmem.search("tabs or spaces", 3, record_access=False)
    cmem.settle()
    assert cmem.get(memory.id).state.access_count == 0


def test_cold_memories_stay_reachable_through_tier_escalation(cmem, clock):
    old = cmem.add("The 2019 outage was caused by an expired TLS certificate on the load balancer")
    clock.advance(days=400)
    report = cmem.admin.consolidate()
    assert old.id in report.archived
    assert cmem.get(old.id).tier == "cold"
    for i in range(5):
        cmem.add(f"Team lunch number {i} is on Friday at the Italian place")
    hits = cmem.search("why did the load balancer outage happen", 3)
    assert hits[0].memory.id == old.id
    # Asking only for hot memories does not escalate.
    hot_only = cmem.search("load balancer outage TLS", 3, tiers=["hot"])
    assert old.id not in [h.memory.id for h in hot_only]


def test_cognitive_ranking_prefers_the_stronger_of_two_equal_matches(cmem, clock):
    from memoryd.cognition.ranking import RankingWeights, rescore_calibrated
    from memoryd.models import SearchHit

    a = cmem.add("Deploy window: Tuesdays after 14:00 UTC", importance=0.5)
    b = cmem.add("Deploy window: Tuesdays after 14:00 UTC", importance=0.5)
    clock.advance(days=30)
    cmem.promote(b.id)
    # Equal relevance: only retention (b was confirmed) can separate them.
    hits = [SearchHit(memory=cmem.get(m.id), score=0.4, fused_score=0.4, semantic_similarity=0.8)
            for m in (a, b)]
    ranked = rescore_calibrated(hits, clock(), RankingWeights())
    assert [h.memory.id for h in ranked] == [b.id, a.id]
    assert ranked[0].retention > ranked[1].retention
    assert [h.score for h in ranked] == [0.4, 0.4]  # the score stays the relevance
    # Through search too: the same text, so the same relevance; every hit carries retention.
    found = cmem.search("deploy window", 2, associations=False, record_access=False)
    assert [h.memory.id for h in found] == [b.id, a.id]
    assert found[0].score == found[1].score
    assert all(h.retention is not None for h in found)


def test_spreading_activation_adds_linked_memories_to_free_slots(open_mem, store_url, clock):
    mem = open_mem(store_url, clock=clock, activation_seeds=1)
    cause = mem.add("The nightly ETL job failed because the S3 bucket policy changed")
    effect = mem.add("Quarterly revenue dashboard showed zeros on Monday morning")
    for i in range(4):
        mem.add(f"Reminder {i}: water the office plants")
    mem.link(cause.id, effect.id, "caused_by", 0.9)
    query = "ETL job failure S3 bucket policy"
    # Keyword mode: the effect shares no word with the query, so only activation adds it.
    hits = mem.search(query, 5, mode="keyword", record_access=False)
    assert hits[0].memory.id == cause.id
    added = [h for h in hits if h.memory.id == effect.id]
    assert added and added[0].association
    assert added[0].score < hits[0].score
    assert effect.id not in [h.memory.id for h in mem.search(
        query, 5, mode="keyword", associations=False, record_access=False)]
    # Hybrid mode: every memory is a direct candidate of this small store, so associations
    # change nothing: they never push out, reorder or re-score a direct hit.
    both = mem.search(query, 6, record_access=False)
    plain = mem.search(query, 6, associations=False, record_access=False)
    assert [(h.memory.id, h.score) for h in both] == [(h.memory.id, h.score) for h in plain]
    # Once min_score cuts the unrelated direct hits, the linked memory returns as an
    # association of the relevant one.
    cut = mem.search(query, 6, min_score=mem.settings.recall_threshold, record_access=False)
    assert cut[0].memory.id == cause.id and not cut[0].association
    assert [h.association for h in cut if h.memory.id == effect.id] == [True]
    assert all(h.score >= mem.settings.recall_threshold for h in cut)


def test_link_validation_and_explore(cmem):
    a = cmem.add("Service A calls service B over gRPC")
    b = cmem.add("Service B stores sessions in Redis")
    c = cmem.add("Redis runs with 4 GB of memory")
    cmem.link(a.id, b.id, "related", 0.8)
    cmem.link(b.id, c.id, "part_of", 0.6)
    hood = cmem.explore(a.id, depth=2)
    assert hood.center.id == a.id
    depths = {n.memory.id: n.depth for n in hood.neighbours}
    assert depths == {b.id: 1, c.id: 2}
    assert len(cmem.explore(a.id, depth=1).neighbours) == 1
    with pytest.raises(InvalidInput):
        cmem.link(a.id, a.id)
    with pytest.raises(InvalidInput):
        cmem.link(a.id, b.id, "friend_of")
    with pytest.raises(MemoryNotFound):
        cmem.link(a.id, "missing")
    with pytest.raises(InvalidInput):
        cmem.explore(a.id, depth=7)


def test_session_memories_are_linked_in_order(cmem):
    first, second = cmem.add_many([
        {"content": "We started migrating the auth service", "session_id": "s9"},
        {"content": "The auth migration needs a new JWT signing key", "session_id": "s9"},
    ])
    third = cmem.add("Rotation of the signing key is scheduled", session_id="s9")
    edges = cmem.store.edges_of([second.id])
    follows = {(e.source_id, e.target_id) for e in edges if e.edge_type == "follows"}
    assert (second.id, first.id) in follows
    assert (third.id, second.id) in follows


def test_consolidation_dry_run_writes_nothing_and_merges_duplicates(cmem, clock):
    a = cmem.add("The VPN gateway address is vpn.example.org")
    b = cmem.add("The VPN gateway address is vpn.example.org")  # plain add keeps duplicates
    dry = cmem.admin.consolidate(dry_run=True)
    assert dry.merged == [[a.id, b.id]]
    assert cmem.get(b.id).superseded_by is None
    assert cmem.store.bookkeeping.list_reports("consolidation") == []
    real = cmem.admin.consolidate()
    assert real.merged == [[a.id, b.id]]
    assert cmem.get(b.id).superseded_by == a.id
    assert cmem.get(a.id).state.reps == 1
    assert [h.memory.id for h in cmem.search("VPN gateway address", 5)] == [a.id]
    assert cmem.store.bookkeeping.list_reports("consolidation")[0]["merged"] == [[a.id, b.id]]


def test_gc_is_dry_by_default_and_purge_scrubs_history(cmem, clock):
    weak = cmem.add("A throwaway remark about the weather", importance=0.1)
    cmem.demote(weak.id)
    cmem.demote(weak.id)
    clock.advance(days=3650)
    listed = cmem.admin.gc(min_retention=0.5)
    assert weak.id in listed.candidates and listed.deleted == 0
    assert cmem.get(weak.id)
    done = cmem.admin.gc(min_retention=0.5, dry_run=False)
    assert done.deleted == len(done.candidates)
    with pytest.raises(MemoryNotFound):
        cmem.get(weak.id)

    secret_ish = cmem.add("The intern's personal phone number is on the whiteboard")
    cmem.admin.purge(secret_ish.id)
    history = cmem.history(secret_ish.id)
    assert history[-1].operation == "purge"
    assert "content_sha256" in history[-1].details
    assert all("whiteboard" not in str(h.details) for h in history)
    assert cmem.search("intern phone number whiteboard", 5, mode="keyword") == []


def test_time_intentions_fire_when_due_and_snooze(cmem, clock):
    due = cmem.tasks.set_intention("Rotate the API keys", {"type": "time", "in_minutes": 30},
                                   priority="high")
    assert cmem.tasks.check_intentions() == []
    clock.advance(minutes=31)
    assert [i.id for i in cmem.tasks.check_intentions()] == [due.id]
    cmem.tasks.update_intention(due.id, "snooze", snooze_minutes=10)
    assert cmem.tasks.check_intentions() == []
    clock.advance(minutes=11)
    assert [i.id for i in cmem.tasks.check_intentions()] == [due.id]
    cmem.tasks.update_intention(due.id, "complete")
    assert cmem.tasks.check_intentions() == []
    assert cmem.tasks.list_intentions("completed")[0].id == due.id


def test_context_and_event_intentions_match_globs_and_keys(cmem):
    py = cmem.tasks.set_intention("Add type hints", {"type": "context", "codebase": "memoryd",
                                                     "file_pattern": "src/**/*.py"})
    topic = cmem.tasks.set_intention("Mention the migration", {"type": "context",
                                                               "topic": "postgres migration"})
    event = cmem.tasks.set_intention("Run the smoke tests", {"type": "event", "event": "deploy"})
    assert [i.id for i in cmem.tasks.check_intentions({"codebase": "memoryd",
                                                       "files": ["src/memoryd/engine.py"]})] == [py.id]
    assert cmem.tasks.check_intentions({"codebase": "memoryd", "files": ["README.md"]}) == []
    assert cmem.tasks.check_intentions({"codebase": "other", "files": ["src/a.py"]}) == []
    # '*' does not cross directories; '**' does.
    check = cmem.tasks.check_intentions
    assert [i.id for i in check({"codebase": "memoryd", "files": ["src/x.py"]})] == [py.id]
    assert [i.id for i in check({"text": "the Postgres migration plan"})] == [topic.id]
    assert [i.id for i in cmem.tasks.check_intentions({"event": "deploy"})] == [event.id]
    cmem.tasks.update_intention(event.id, "cancel")
    assert cmem.tasks.check_intentions({"event": "deploy"}) == []
    with pytest.raises(InvalidInput):
        cmem.tasks.set_intention("x", {"type": "time"})
    with pytest.raises(InvalidInput):
        cmem.tasks.set_intention("x", {"type": "context"})
    with pytest.raises(InvalidInput):
        cmem.tasks.check_intentions({"colour": "blue"})
    with pytest.raises(IntentionNotFound):  # an unknown id is a 404, as a memory's is
        cmem.tasks.update_intention("nope", "complete")


def test_an_intention_trigger_that_could_never_fire_is_refused(cmem):
    # A blank event, codebase, file pattern or topic (or a topic without a word) matched
    # nothing, ever: the intention was stored and silently never came to mind.
    for trigger in ({"type": "event", "event": "   "},
                    {"type": "context", "codebase": "  "},
                    {"type": "context", "file_pattern": "\t"},
                    {"type": "context", "topic": " "},
                    {"type": "context", "topic": "?!"},
                    {"type": "context", "codebase": "memoryd", "topic": "  "}):
        with pytest.raises(InvalidInput, match="trigger"):
            cmem.tasks.set_intention("Never due", trigger)
    assert cmem.tasks.list_intentions() == []
    # Surrounding spaces are not part of the key: ' deploy ' fires on the event 'deploy'.
    event = cmem.tasks.set_intention("Run the smoke tests", {"type": "event", "event": " deploy "})
    repo = cmem.tasks.set_intention("Update the changelog", {"type": "context",
                                                        "codebase": "memoryd "})
    assert event.trigger.event == "deploy" and repo.trigger.codebase == "memoryd"
    assert [i.id for i in cmem.tasks.check_intentions({"event": "deploy"})] == [event.id]
    assert [i.id for i in cmem.tasks.check_intentions({"codebase": " memoryd"})] == [repo.id]


def test_a_codebase_pattern_or_decision_without_text_is_refused(cmem):
    # A pattern with a blank description was stored as 'Name: ' (the name was checked, the
    # description was not); a blank rationale left a 'Rationale: ' line.
    for description in ("", "   ", "\n\t"):
        with pytest.raises(InvalidInput, match="description"):
            cmem.codebase.remember_pattern("Repository pattern", description, [], "memoryd")
    assert cmem.store.count() == 0
    decided = cmem.codebase.remember_decision("Use FTS5 for keywords", "   ", [" "], [], "memoryd")
    assert decided.content == "Use FTS5 for keywords"
    assert decided.metadata["rationale"] is None


def test_codebase_context_returns_what_touches_the_files(cmem):
    p = cmem.codebase.remember_pattern("Repository pattern", "Stores hide SQL behind a contract",
                                       ["src/memoryd/store/"], "memoryd")
    d = cmem.codebase.remember_decision("Use FTS5 for keywords", "Ships with SQLite",
                                        ["Whoosh", "Tantivy"], ["src/memoryd/store/fts.py"], "memoryd")
    other = cmem.codebase.remember_pattern("CLI thinness", "Commands make one engine call",
                                           ["src/memoryd/cli/*.py"], "memoryd")
    cmem.codebase.remember_pattern("Unrelated", "Another codebase", ["src/"], "other")
    ctx = cmem.codebase.context("memoryd", ["src/memoryd/store/fts.py"])
    assert [m.id for m in ctx.patterns] == [p.id]
    assert [m.id for m in ctx.decisions] == [d.id]
    assert "Alternatives considered: Whoosh; Tantivy" in ctx.decisions[0].content
    cli = cmem.codebase.context("memoryd", ["src/memoryd/cli/data.py"])
    assert [m.id for m in cli.patterns] == [other.id]
    assert len(cmem.codebase.context("memoryd").patterns) == 2
    with pytest.raises(InvalidInput):
        cmem.codebase.context("bad name!")


def test_secrets_are_refused_redacted_or_allowed(open_mem, store_url, tmp_path):
    mem = open_mem(store_url)
    text = "deploy token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with pytest.raises(SecretDetected, match="github"):
        mem.add(text)
    assert mem.store.count() == 0
    kept = mem.add(text, allow_secrets=True)
    assert "ghp_" in kept.content
    redacting = open_mem(f"sqlite:///{tmp_path}/r.db", secrets_mode="redact")
    redacted = redacting.add(text)
    assert "ghp_" not in redacted.content and "[REDACTED:" in redacted.content


def test_consolidation_takes_the_maintenance_lock(cmem):
    from memoryd.errors import MaintenanceBusy

    cmem.add("Something to consolidate")
    with cmem.store.maintenance_lock("consolidate") as mine:
        assert mine
        with cmem.store.maintenance_lock("consolidate") as again:
            assert not again  # a second holder is refused at once, not made to wait
        with pytest.raises(MaintenanceBusy):
            cmem.admin.consolidate()
        assert cmem.admin.consolidate(dry_run=True).examined == 1  # a dry run writes nothing
    assert cmem.admin.consolidate().examined == 1
