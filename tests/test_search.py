"""Engine.search end to end with the real model: hit fields, filters, timeframes,
min_score, MMR, invalid filters, and vectors written by another engine on the same file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import memoryd

from memoryd.errors import InvalidFilter, InvalidInput
from memoryd.models import SearchFilters

NOW = datetime.now(UTC)  # reset when the corpus is built (see below)
AGES = {
    "30m": timedelta(minutes=30),
    "5h": timedelta(hours=5),
    "3d": timedelta(days=3),
    "20d": timedelta(days=20),
    "60d": timedelta(days=60),
    "200d": timedelta(days=200),
}

CORPUS = [
    # key, content, fields
    ("ts", "The user prefers TypeScript over JavaScript for frontend code",
     dict(node_type="preference", tags=["lang", "frontend"], agent_id="agent-a", session_id="s1",
          scope="project:web", age="30m", metadata={"source": "chat", "n": 1})),
    ("pg", "We decided to use PostgreSQL for the production database",
     dict(node_type="decision", tags=["db", "backend"], agent_id="agent-a", session_id="s2",
          scope="project:api", age="5h")),
    ("deploy", "Deployments to production happen on Tuesday mornings",
     dict(node_type="fact", tags=["ops", "backend"], agent_id="agent-b", session_id="s2",
          scope="user", age="3d")),
    ("alice", "Alice maintains the billing service and reviews its pull requests",
     dict(node_type="person", tags=["people"], agent_id="agent-b", session_id="s3",
          scope="user", age="20d")),
    ("err", "The nightly backup job failed with a disk full error",
     dict(node_type="error", tags=["ops"], agent_id="agent-c", session_id="s4",
          scope="project:api", age="60d")),
    ("tea", "The user drinks green tea every afternoon",
     dict(node_type="preference", tags=["personal"], agent_id="agent-c", session_id="s5",
          scope="user", age="200d")),
]


@pytest.fixture(scope="module")
def corpus(module_mem_factory):
    global NOW
    NOW = datetime.now(UTC)  # ages are relative to when the corpus is stored
    mem = module_mem_factory("search")
    items = []
    for key, content, fields in CORPUS:
        fields = dict(fields)
        age = AGES[fields.pop("age")]
        items.append({"id": key, "content": content, "created_at": NOW - age, **fields})
    mem.add_many(items)
    return mem


def ids(hits) -> set[str]:
    return {h.memory.id for h in hits}


def search_ids(mem, query: str = "production work preferences", **kwargs) -> set[str]:
    kwargs.setdefault("limit", 50)
    return ids(mem.search(query, **kwargs))


# --------------------------------------------------------------------------- hits


def test_hits_expose_memory_score_and_provenance(corpus) -> None:
    hits = corpus.search("TypeScript frontend preference", limit=3)
    top = hits[0]
    assert top.memory.id == "ts"
    assert top.memory.content.startswith("The user prefers TypeScript")
    assert top.memory.metadata == {"source": "chat", "n": 1}
    assert 0.0 < top.score <= 1.0
    assert top.keyword_rank == 1
    assert top.semantic_similarity is not None and top.semantic_similarity > 0.4
    assert top.memory.created_at == NOW - AGES["30m"]  # the caller's created_at is kept
    assert top.keyword_score is not None and top.keyword_score > 0  # memoryd's BM25
    plain = corpus.search("TypeScript frontend preference", limit=6, cognitive=False,
                          associations=False, record_access=False)
    # Ranked by the ranking probability (fused_score); score is how likely it answers.
    assert [h.fused_score for h in plain] == sorted((h.fused_score for h in plain), reverse=True)
    assert all(0.0 < h.score < 1.0 and 0.0 < h.fused_score < 1.0 for h in plain)


def test_modes(corpus) -> None:
    keyword = corpus.search("PostgreSQL", mode="keyword", associations=False)
    assert [h.memory.id for h in keyword] == ["pg"]
    with_assoc = corpus.search("PostgreSQL", mode="keyword")
    assert [h.memory.id for h in with_assoc if not h.association] == ["pg"]
    # Every hit carries both sides' evidence: its score is the same relevance in any mode.
    assert keyword[0].keyword_rank == 1 and keyword[0].semantic_similarity > 0.4
    assert keyword[0].fused_score == keyword[0].keyword_score  # keyword mode ranks by BM25
    assert 0.0 < keyword[0].score < 1.0
    vector = corpus.search("which relational database do we run", mode="vector", limit=2,
                           associations=False)
    assert vector[0].memory.id == "pg"
    assert all(h.keyword_rank is None for h in vector)
    assert vector[0].semantic_similarity > vector[1].semantic_similarity
    # a query that only the vector side can understand still finds the memory
    hybrid = corpus.search("hot beverage habits", limit=1, cognitive=False, associations=False)
    assert hybrid[0].memory.id == "tea" and hybrid[0].keyword_rank is None


def test_default_ranking_keeps_the_only_relevant_memory_first(corpus) -> None:
    hits = corpus.search("hot beverage habits", limit=3, record_access=False)
    assert hits[0].memory.id == "tea"


def test_relevance_fusion_puts_the_match_of_both_sides_first(corpus) -> None:
    hits = corpus.search("billing service maintainer", limit=6, cognitive=False, associations=False)
    assert hits[0].memory.id == "alice"
    assert hits[0].keyword_rank == 1 and hits[0].semantic_rank == 1
    assert [h.fused_score for h in hits] == sorted((h.fused_score for h in hits), reverse=True)
    assert hits[0].score >= 0.8  # it answers: both sides agree
    assert hits[0].score > 4 * hits[1].score  # the rest share no word and little meaning


def test_rrf_stays_available_as_a_fusion_mode(store_url, open_mem) -> None:
    mem = open_mem(store_url, fusion="rrf", rrf_k=60, vector_weight=1.0)
    mem.add_many([{"id": key, "content": content} for key, content, _ in CORPUS])
    hits = mem.search("billing service maintainer", limit=6, cognitive=False, associations=False)
    assert hits[0].memory.id == "alice"
    assert hits[0].fused_score == pytest.approx(1.0)  # first in both lists
    assert [h.fused_score for h in hits] == sorted((h.fused_score for h in hits), reverse=True)
    assert all(0.0 < h.score < 1.0 for h in hits)  # the score is still the relevance


# --------------------------------------------------------------------------- filters


@pytest.mark.parametrize(
    "timeframe, expected",
    [
        ("1h", {"ts"}),
        ("24h", {"ts", "pg"}),
        ("7d", {"ts", "pg", "deploy"}),
        ("30d", {"ts", "pg", "deploy", "alice"}),
        ("90d", {"ts", "pg", "deploy", "alice", "err"}),
        ("all", {"ts", "pg", "deploy", "alice", "err", "tea"}),
    ],
)
def test_timeframes(corpus, timeframe: str, expected: set[str]) -> None:
    assert search_ids(corpus, timeframe=timeframe) == expected
    assert search_ids(corpus, timeframe=timeframe, mode="keyword", query="the user and production") <= expected
    assert {m.id for m in corpus.list(timeframe=timeframe, limit=100)} == expected


def test_since_until(corpus) -> None:
    window = dict(since=NOW - timedelta(days=30), until=NOW - timedelta(days=1))
    assert search_ids(corpus, **window) == {"deploy", "alice"}
    assert {m.id for m in corpus.list(**window)} == {"deploy", "alice"}
    # naive datetimes are UTC; a timeframe narrows an explicit since
    assert search_ids(corpus, since=(NOW - timedelta(days=4)).replace(tzinfo=None)) == {"ts", "pg", "deploy"}
    assert search_ids(corpus, since=NOW - timedelta(days=100), timeframe="24h") == {"ts", "pg"}
    assert search_ids(corpus, until=NOW - timedelta(days=100)) == {"tea"}
    # the SearchFilters object works the same as keyword arguments
    assert search_ids(corpus, filters=SearchFilters(**window)) == {"deploy", "alice"}
    assert search_ids(corpus, filters={"since": window["since"], "until": window["until"]}) == {"deploy", "alice"}


def test_tags_any_and_all(corpus) -> None:
    assert search_ids(corpus, tags=["ops"]) == {"deploy", "err"}
    assert search_ids(corpus, tags=["ops", "db"]) == {"deploy", "err", "pg"}
    assert search_ids(corpus, tags=["ops", "backend"], tags_mode="all") == {"deploy"}
    assert search_ids(corpus, tags=["ops", "people"], tags_mode="all") == set()
    assert search_ids(corpus, tags=["nonexistent"]) == set()
    assert {m.id for m in corpus.list(tags=["backend"], tags_mode="all")} == {"pg", "deploy"}


def test_node_types_scope_agent_session(corpus) -> None:
    assert search_ids(corpus, node_types=["preference"]) == {"ts", "tea"}
    assert search_ids(corpus, node_types=["preference", "error"]) == {"ts", "tea", "err"}
    assert search_ids(corpus, scope="project:api") == {"pg", "err"}
    assert search_ids(corpus, scope="user") == {"deploy", "alice", "tea"}
    assert search_ids(corpus, agent_id="agent-b") == {"deploy", "alice"}
    assert search_ids(corpus, session_id="s2") == {"pg", "deploy"}
    assert search_ids(corpus, session_id="s2", agent_id="agent-a") == {"pg"}
    assert search_ids(corpus, agent_id="nobody") == set()
    # every mode honours filters (keyword and vector sides alike)
    for mode in ("keyword", "vector", "hybrid"):
        assert search_ids(corpus, "production", mode=mode, scope="project:api") <= {"pg", "err"}
    combined = corpus.list(node_types=["preference"], scope="user", limit=10)
    assert [m.id for m in combined] == ["tea"]


def test_min_score(corpus) -> None:
    everything = corpus.search("production database", limit=10)
    assert len(everything) > 2
    cut = everything[1].score
    kept = corpus.search("production database", limit=10, min_score=cut)
    assert kept and all(h.score >= cut for h in kept)
    assert len(kept) < len(everything)
    assert len(corpus.search("production database", limit=10, min_score=0.0)) == len(everything)
    for bad in (1.01, -0.1, "high", True):
        with pytest.raises(InvalidInput, match="min_score"):
            corpus.search("production database", min_score=bad)


@pytest.mark.parametrize(
    "bad",
    [
        {"timeframe": "2d"},
        {"timeframe": "yesterday"},
        {"node_types": ["bogus"]},
        {"node_types": "fact"},
        {"tags_mode": "some"},
        {"scope": "team"},
        {"scope": "project:"},
        {"tiers": ["lukewarm"]},
        {"since": "not a date"},
        {"since": datetime(2025, 2, 1, tzinfo=UTC), "until": datetime(2025, 1, 1, tzinfo=UTC)},
        {"colour": "red"},
        {"include_superseded": "maybe"},
    ],
)
def test_unknown_filter_values_are_rejected(corpus, bad: dict) -> None:
    with pytest.raises(InvalidFilter) as info:
        corpus.search("anything", **bad)
    assert isinstance(info.value, InvalidInput) and isinstance(info.value, ValueError)
    with pytest.raises(InvalidFilter):
        corpus.search("anything", filters=bad)
    with pytest.raises(InvalidFilter):
        corpus.list(**bad)
    name = next(iter(bad))
    assert name in str(info.value) or "filter" in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [dict(query=""), dict(query="   \n\t"), dict(query="x", limit=0), dict(query="x", limit=1001),
     dict(query="x", mode="fuzzy")],
)
def test_invalid_search_arguments(corpus, kwargs) -> None:
    with pytest.raises(InvalidInput):
        corpus.search(**kwargs)


def test_invalid_list_arguments(corpus) -> None:
    with pytest.raises(InvalidInput):
        corpus.list(limit=0)
    with pytest.raises(InvalidInput):
        corpus.list(offset=-1)


# --------------------------------------------------------------------------- MMR


def test_mmr_diversifies_near_duplicates(store_url, shared_embedder) -> None:
    with memoryd.open(store_url, embedder=shared_embedder) as mem:
        mem.add_many(
            [
                {"id": "dup1", "content": "Use poetry to manage the Python package dependencies"},
                {"id": "dup2", "content": "Use poetry for managing the Python package dependencies"},
                {"id": "pip", "content": "Pin dependency versions in a requirements.txt file for pip"},
                {"id": "twine", "content": "Publish the Python library to PyPI with twine"},
                {"id": "far1", "content": "The cat sleeps on the warm windowsill"},
                {"id": "far2", "content": "Paris is the capital of France"},
            ]
        )
        query = "how are python package dependencies managed"
        plain = mem.search(query, limit=2, mode="vector", cognitive=False, associations=False)
        assert {h.memory.id for h in plain} == {"dup1", "dup2"}
        diverse = mem.search(query, limit=2, mode="vector", mmr=True, mmr_lambda=0.6,
                             cognitive=False, associations=False)
        assert diverse[0].memory.id == plain[0].memory.id
        assert diverse[1].memory.id == "pip"  # the near-duplicate gave way to the next idea
        # lambda 1 is pure relevance
        same = mem.search(query, limit=2, mode="vector", mmr=True, mmr_lambda=1.0,
                          cognitive=False, associations=False)
        assert [h.memory.id for h in same] == [h.memory.id for h in plain]


# --------------------------------------------------------------------------- two engines


def test_vectors_written_by_another_engine_become_searchable(store_url, open_mem) -> None:
    reader = open_mem(store_url)
    writer = open_mem(store_url)
    reader.add("Seed memory about gardening roses")
    assert reader.search("roses", mode="vector", limit=1)[0].memory.content.startswith("Seed")
    new = writer.add("The Eiffel Tower is in Paris and was finished in 1889")
    hits = reader.search("famous landmark in Paris", mode="vector", limit=1)
    assert hits[0].memory.id == new.id
    writer.update(new.id, content="The Colosseum in Rome hosted gladiator fights")
    hits = reader.search("gladiators in ancient Rome", mode="vector", limit=1)
    assert hits[0].memory.id == new.id
    assert reader.search("Colosseum", mode="keyword")[0].memory.id == new.id
    writer.delete(new.id)
    assert new.id not in ids(reader.search("gladiators in ancient Rome", mode="vector", limit=5))
    assert reader.search("Colosseum", mode="keyword") == []
    # the reader can keep writing, and the writer sees it
    mine = reader.add("Quarterly taxes are due in April")
    assert writer.search("tax deadline", mode="vector", limit=1)[0].memory.id == mine.id


def test_search_on_an_empty_store(mem) -> None:
    for mode in ("hybrid", "keyword", "vector"):
        assert mem.search("anything at all", mode=mode) == []
    assert mem.list() == []


def test_associations_take_only_the_slots_after_the_relevant_hits(mem) -> None:
    """A memory linked to the best hit may take the place of a direct hit below the recall
    threshold, never of one at or above it, and comes after every such hit."""
    pg = mem.add("We decided to use PostgreSQL for the production database")
    for text in ["The user drinks green tea every afternoon",
                 "Alice maintains the billing service and reviews its pull requests",
                 "The nightly backup job failed with a disk full error",
                 "The office plants are watered on Fridays",
                 "The team lunch is on the second Thursday of the month",
                 "Bikes are parked in the courtyard"]:
        mem.add(text)
    linked = mem.add("Our designer sketches icons on paper first")  # far from the query
    mem.link(pg.id, linked.id, "related", 1.0)
    query, threshold = "PostgreSQL production database", mem.settings.recall_threshold
    plain = mem.search(query, 4, associations=False, record_access=False)
    assert linked.id not in {h.memory.id for h in plain}
    hits = mem.search(query, 4, record_access=False)
    relevant = [h.memory.id for h in plain if h.score >= threshold]
    assert relevant and [h.memory.id for h in hits[: len(relevant)]] == relevant
    assert [h.memory.id for h in hits if h.association] == [linked.id]
    assert len(hits) == 4


def test_a_search_while_the_model_loads_answers_from_keywords(store_url, shared_embedder,
                                                              monkeypatch) -> None:
    """With keyword_while_model_loads (memoryd mcp) and no time to wait, a search before the
    model is loaded answers from the keyword index at once (the model loads meanwhile)."""
    with memoryd.open(store_url, embedder=shared_embedder) as warm:
        warm.add("Deploys go out on Tuesdays after standup")
        warm.add("The user drinks green tea every afternoon")
    monkeypatch.setenv("MEMORYD_KEYWORD_WHILE_MODEL_LOADS", "true")
    monkeypatch.setenv("MEMORYD_MODEL_WAIT_SECONDS", "0")  # do not wait for the model at all
    with memoryd.open(store_url) as cold:
        assert not cold.model_ready
        hits = cold.search("when are deploys on tuesdays", 5, mode="hybrid")
        assert hits[0].memory.content.startswith("Deploys go out")
        assert hits[0].keyword_rank == 1 and hits[0].semantic_similarity is None
        assert 0.0 < hits[0].score < 1.0


def test_a_search_while_the_model_loads_waits_for_it_a_bounded_time(store_url, shared_embedder,
                                                                     monkeypatch) -> None:
    """Given time (model_wait_seconds), the first search waits for the loading model and
    answers by meaning: a paraphrase sharing no word is found."""
    with memoryd.open(store_url, embedder=shared_embedder) as warm:
        warm.add("Deploys go out on Tuesdays after standup")
        warm.add("The user drinks green tea every afternoon")
    monkeypatch.setenv("MEMORYD_KEYWORD_WHILE_MODEL_LOADS", "true")
    monkeypatch.setenv("MEMORYD_MODEL_WAIT_SECONDS", "30")  # generous on a busy machine
    with memoryd.open(store_url) as cold:
        assert not cold.embedder.loaded
        hits = cold.search("when do we ship?", 5)
        assert cold.model_ready and hits[0].memory.content.startswith("Deploys go out")
        assert hits[0].semantic_similarity is not None and hits[0].keyword_rank is None


def test_memories_deleted_after_ranking_are_stood_in_for(store_url, open_mem,
                                                         monkeypatch) -> None:
    """Search reads only the first ``limit`` ranked memories; when some are gone by then
    (deleted by another writer between ranking and reading), the next ones take their
    places and the search still returns ``limit`` hits."""
    from memoryd.engine.memory import search as search_mod

    mem = open_mem(store_url)
    mem.add_many([{"content": f"Deploy note {i}: production deploys need review"}
                  for i in range(8)])
    want = [h.memory.id for h in mem.search("production deploys", 8, record_access=False)]
    real = search_mod.ordered

    def ranked_then_two_deleted(*args, **kwargs):  # type: ignore[no-untyped-def]
        ranked = real(*args, **kwargs)
        for s, _ in ranked[:2]:
            mem.store.delete(s.memory_id, mem.context.actor, purge=True)
        return ranked

    monkeypatch.setattr(search_mod, "ordered", ranked_then_two_deleted)
    got = [h.memory.id for h in mem.search("production deploys", 3, record_access=False)]
    assert got == want[2:5]
