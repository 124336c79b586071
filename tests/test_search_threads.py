"""The two sides of a search run at once, and many searches run at once.

A search scores its keyword candidates on the caller's thread while a worker embeds the
query (memoryd.engine.memory.candidates.gather). On both backends: the embedding really runs
on a worker meanwhile, and searches from many threads at once (more than there are workers)
each return exactly what the same search returns alone.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Iterator

import pytest

from memoryd.engine import Engine

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
FACTS = [
    "Deploys go out on Tuesdays after standup",
    "The staging database is refreshed from production every Sunday night",
    "Alice owns the billing service and reviews its pull requests",
    "We chose PostgreSQL with pgvector for the shared team memory",
    "The user prefers TypeScript over JavaScript for frontend work",
    "Green tea in the afternoon, coffee only before noon",
    "The nightly backup failed twice last week with a full disk",
    "Rate limits are enforced with a token bucket per API key",
    "The mobile app release train leaves every second Thursday",
    "Bob is on call for the payments team this month",
    "Flaky integration tests are quarantined, not deleted",
    "The design review for the search page is on Friday",
]
QUERIES = ["when do we ship?", "who reviews billing changes", "database for the team memory",
           "what does the user drink", "backup problems", "how are API keys throttled",
           "mobile release schedule", "who is on call", "TypeScript", "search page review"]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def engine(request, shared_embedder, tmp_path_factory) -> Iterator[Engine]:
    import memoryd
    from conftest import clean_memoryd_env

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('threads') / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_server").create_database()
    patch = clean_memoryd_env()
    try:
        mem = memoryd.open(url, embedder=shared_embedder, clock=lambda: T0)
    finally:
        patch.undo()
    mem.add_many([{"content": text} for text in FACTS])
    yield mem
    mem.close()


def ranking(mem: Engine, query: str) -> list[tuple[str, float]]:
    return [(h.memory.id, round(h.score, 9))
            for h in mem.search(query, 5, record_access=False)]


def test_the_query_is_embedded_on_a_worker_while_the_keyword_side_runs(
    engine: Engine, monkeypatch
) -> None:
    seen: dict[str, str] = {}
    keyword_started = threading.Event()
    store, embedder = engine.store, engine.embedder
    keyword_candidates, embed_query = store.keyword_candidates, embedder.embed_query

    def keyword_spy(*args, **kwargs):
        seen["keyword"] = threading.current_thread().name
        keyword_started.set()
        return keyword_candidates(*args, **kwargs)

    def embed_spy(query, **kwargs):
        seen["embed"] = threading.current_thread().name
        # Run sequentially, the keyword side would not start before this returns.
        seen["overlapped"] = str(keyword_started.wait(30))
        return embed_query(query, **kwargs)

    monkeypatch.setattr(store, "keyword_candidates", keyword_spy)
    monkeypatch.setattr(embedder, "embed_query", embed_spy)
    hits = engine.search("which day do deploys go out?", 3, record_access=False)
    assert hits[0].memory.content.startswith("Deploys")
    assert seen["keyword"] == threading.current_thread().name
    assert seen["embed"].startswith("memoryd-query-vector")
    assert seen["overlapped"] == "True"


def test_with_the_vector_given_the_sides_overlap_only_where_a_server_runs_them(
    engine: Engine, monkeypatch
) -> None:
    """PostgreSQL runs both sides' statements in its own processes, so with the query vector
    in hand the vector side starts on a worker at once; SQLite runs it after the keyword side
    on the caller's thread. Either way the ranking is the same."""
    seen: list[str] = []
    vector_search = engine.store.vector_search

    def spy(*args, **kwargs):
        seen.append(threading.current_thread().name)
        return vector_search(*args, **kwargs)

    query = "which day do deploys go out?"
    vector = engine.embedder.embed_query(query)
    alone = ranking(engine, query)
    monkeypatch.setattr(engine.store, "vector_search", spy)
    given = [(h.memory.id, round(h.score, 9))
             for h in engine.search(query, 5, query_vector=vector, record_access=False)]
    assert given == alone
    if engine.store.backend == "postgresql":
        assert seen[0].startswith("memoryd-vector-side")
    else:
        assert set(seen) == {threading.current_thread().name}


def test_concurrent_searches_rank_as_alone(engine: Engine) -> None:
    alone = {q: ranking(engine, q) for q in QUERIES}
    assert all(alone.values())
    # 8 threads against worker pools of max(2, cores): searches queue for workers.
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda q: (q, ranking(engine, q)), QUERIES * 4))
    for query, got in together:
        assert got == alone[query], query


def test_keyword_and_vector_modes_still_run_one_side(engine: Engine, monkeypatch) -> None:
    nearest_calls: list[str] = []
    vector_search = engine.store.vector_search

    def counted(*args, **kwargs):
        nearest_calls.append(threading.current_thread().name)
        return vector_search(*args, **kwargs)

    monkeypatch.setattr(engine.store, "vector_search", counted)
    keyword = engine.search("token bucket", 3, mode="keyword", record_access=False)
    assert nearest_calls == []  # keyword mode starts no vector side
    vector = engine.search("how are API keys throttled", 3, mode="vector", record_access=False)
    assert keyword[0].memory.content.startswith("Rate limits")
    assert vector[0].memory.content.startswith("Rate limits")
    assert keyword[0].semantic_similarity is not None  # the score still reads both sides
    assert vector[0].keyword_rank is None


def test_only_the_one_search_running_may_embed_its_query_on_more_than_one_core(
    engine: Engine, monkeypatch
) -> None:
    """A search alone in the process tells the embedder so (``alone``: it may take both cores);
    one that overlaps another does not, so concurrent searches keep a core each."""
    told: dict[str, bool] = {}
    first_started, second_started = threading.Event(), threading.Event()
    embed_query = engine.embedder.embed_query

    def spy(query, *, alone=False):
        told[query] = alone
        if query == "first":
            first_started.set()
            assert second_started.wait(30)  # still running when the second search starts
        else:
            second_started.set()
        return embed_query(query, alone=alone)

    monkeypatch.setattr(engine.embedder, "embed_query", spy)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(engine.search, "first", 3, record_access=False)
        assert first_started.wait(30)
        engine.search("second", 3, record_access=False)
        first.result(30)
    assert told == {"first": True, "second": False}
    engine.search("third", 3, record_access=False)  # alone again
    assert told["third"] is True
