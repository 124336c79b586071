"""One ranking on both backends: the same memories in SQLite and in PostgreSQL give the same
top 10 (ties aside), for the keyword side alone and for Engine.search end to end.

The corpus is fixed: the stored sentences of tests/data/ingest_pairs.jsonl (our own text),
with fixed ids, times and tags; the queries are the incoming sentences of some pairs
(paraphrases, corrections, neighbours on the same topic) plus a few short questions.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Iterator

import pytest
from helpers.ranking import assert_same_top

from memoryd.engine import Engine
from memoryd.models import SearchFilters

PAIRS = [json.loads(line) for line in
         (Path(__file__).parent / "data" / "ingest_pairs.jsonl").read_text().splitlines() if line]
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
QUERIES = [p["new"] for p in PAIRS[::9]] + [
    "when do we ship?", "which port does the database use", "who leads the payments team",
    "what is the capital of France", "editor preferences",
    "When is my meeting at the library?", "Which libraries does the project use?",
]
# Conditional standing instructions: scored with the query's cosine to their topic as well.
INSTRUCTIONS = [
    "Always format dates as MM/DD/YYYY when I ask about scheduling details.",
    "Always include version numbers when I ask about software dependencies.",
]


def corpus() -> list[dict]:
    texts = list(dict.fromkeys([*(p["old"] for p in PAIRS), *INSTRUCTIONS]))
    return [{"id": f"m{i:03d}", "content": text, "created_at": T0 + timedelta(hours=i),
             "tags": [f"t{i % 4}"], "importance": 0.3 + (i % 5) / 10}
            for i, text in enumerate(texts)]


@pytest.fixture(scope="module")
def engines(shared_embedder, pg_server, tmp_path_factory) -> Iterator[dict[str, Engine]]:
    import memoryd
    from conftest import clean_memoryd_env

    patch = clean_memoryd_env()
    made: dict[str, Engine] = {}
    pg_url = pg_server.create_database()
    try:
        urls = {"sqlite": f"sqlite:///{tmp_path_factory.mktemp('rank') / 'm.db'}",
                "postgresql": pg_url}
        for backend, url in urls.items():
            mem = memoryd.open(url, embedder=shared_embedder, clock=lambda: T0 + timedelta(days=30))
            mem.add_many(corpus())
            made[backend] = mem
    finally:
        patch.undo()
    yield made
    for mem in made.values():
        mem.close()
    pg_server.drop_database(pg_url)


def test_the_fixed_corpus_is_the_same_in_both(engines: dict[str, Engine]) -> None:
    counts = {b: m.store.count() for b, m in engines.items()}
    assert counts["sqlite"] == counts["postgresql"] == len(corpus()) > 100


@pytest.mark.parametrize("query", QUERIES)
def test_keyword_side_ranks_the_same(engines: dict[str, Engine], query: str) -> None:
    now = T0 + timedelta(days=30)
    full = engines["sqlite"].store.keyword_search(query, SearchFilters(), now=now, limit=500)
    top = engines["postgresql"].store.keyword_search(query, SearchFilters(), now=now, limit=10)
    assert_same_top([(h.memory_id, h.score) for h in top], [(h.memory_id, h.score) for h in full], 10)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("mode", ["hybrid", "keyword", "vector"])
def test_search_gives_the_same_top_10(engines: dict[str, Engine], query: str, mode: str) -> None:
    def ranked(backend: str, limit: int) -> list[tuple[str, float]]:
        hits = engines[backend].search(query, limit, mode=mode, record_access=False)
        return [(h.memory.id, h.score if mode == "hybrid" else h.fused_score) for h in hits]

    # Cosines differ between NumPy and pgvector in the last float32 bits: scores agree to
    # 1e-5, and memories whose scores agree that closely count as tied.
    assert_same_top(ranked("postgresql", 10), ranked("sqlite", 40), 10, rel=1e-5)
