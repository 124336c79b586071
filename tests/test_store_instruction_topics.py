"""The instruction topic of each memory ("Always X when I ask about Y" -> Y), read when the
memory is written and handed to the ranking with the candidates of both sides, on both
backends (``store`` fixture); kept through updates and row imports, and filled for stores
written before it (SQLite m009, PostgreSQL m012)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from helpers.old_stores import postgres_store_without, sqlite_store_without

from memoryd.models import Memory, SchedulingState, SearchFilters
from memoryd.retrieval.tokens import query_terms
from memoryd.store.base import Actor, Store

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ACTOR = Actor("test")
TEXTS = {
    "dates": "Always format dates as MM/DD/YYYY when I ask about scheduling details.",
    "spoken": "User: Never suggest paid tools whenever I ask for writing aids!",
    "plain": "Our standup meeting is scheduled at 9:30 every weekday.",
    "spain": "I went hiking when I was in Spain.",
}
TOPICS = {"dates": "scheduling details", "spoken": "writing aids", "plain": None, "spain": None}
# Every memory above holds one of these words.
QUERY = query_terms("scheduled scheduling paid hiking")


def make(key: str) -> Memory:
    return Memory(id=key, content=TEXTS[key], created_at=NOW, updated_at=NOW,
                  state=SchedulingState(last_review=NOW))


def topics_of(store: Store, ids: list[str] | None = None) -> dict[str, str | None]:
    """Each memory's topic as the keyword candidates carry it, checked against the counts
    the vector side reads for the same memories."""
    pool = store.keyword_candidates(QUERY, SearchFilters(), now=NOW, limit=20)
    found = {c.memory_id: c.topic for c in pool.candidates}
    counted = {c.memory_id: c.topic for c in store.term_counts(ids or list(found), QUERY)}
    assert counted == {i: found[i] for i in counted}
    return found


def test_candidates_of_both_sides_carry_the_topic(store: Store, embed) -> None:
    memories = [make(k) for k in TEXTS]
    store.insert(memories, embed(list(TEXTS.values())), ACTOR)
    assert topics_of(store) == TOPICS
    assert {c.memory_id: c.topic for c in store.term_counts(["dates", "plain"], [])} == {
        "dates": "scheduling details", "plain": None}


def test_updates_read_the_topic_again(store: Store, embed) -> None:
    memories = [make(k) for k in TEXTS]
    store.insert(memories, embed(list(TEXTS.values())), ACTOR)
    store.update("dates", {"content": "Dates are written MM/DD/YYYY in scheduling."}, ACTOR)
    store.update("plain", {"content": "Always be brief when I ask about scheduling."}, ACTOR)
    store.update("spoken", {"metadata": {"role": "user"}}, ACTOR)  # metadata only
    store.update("spain", {"tags": ["travel"]}, ACTOR)  # text, still no instruction
    assert topics_of(store) == {"dates": None, "plain": "scheduling", "spoken": "writing aids",
                                "spain": None}


def test_imported_rows_carry_their_topic(store: Store, embed, store_factory, backend: str,
                                         shared_embedder) -> None:
    memories = [make(k) for k in TEXTS]
    store.insert(memories, embed(list(TEXTS.values())), ACTOR)
    copy = store_factory(backend, name="copy")
    copy.set_embedding_model(shared_embedder.model_id, shared_embedder.dims)
    copy.transfer.import_rows("memories", store.transfer.export_rows("memories"))
    assert topics_of(copy) == TOPICS


# --------------------------------------------------------------------------- older stores

# Rows written by hand, as an older memoryd left them: not in the keyword index either.
OLD = [{"id": key, "content": TEXTS[key]} for key in TEXTS]


def stored_topics(store: Store) -> dict[str, str | None]:
    return {c.memory_id: c.topic for c in store.term_counts(list(TEXTS), [])}


def test_sqlite_m009_fills_the_topics_of_an_older_store(tmp_path: Path) -> None:
    with sqlite_store_without(tmp_path / "old.db", 9, OLD) as store:
        assert stored_topics(store) == TOPICS


def test_postgres_m012_fills_the_topics_of_an_older_store(pg_database) -> None:
    with postgres_store_without(pg_database(migrated=False), 12, OLD) as store:
        assert stored_topics(store) == TOPICS
