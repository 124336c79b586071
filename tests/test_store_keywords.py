"""The keyword index of the store contract, on every backend (``store`` fixture): the term
tables follow every write, candidates are ranked by memoryd's BM25 exactly as the pure
module ranks them, and both backends agree.

Expected values are recomputed here from the live memories with the pure modules
(memoryd.retrieval.tokens and .bm25), so each test checks the SQL against the definition.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from helpers.keyword_index import assert_index_matches, counts_of, expected_stats
from helpers.ranking import assert_same_top

from memoryd.models import Memory, SchedulingState, SearchFilters
from memoryd.retrieval.bm25 import Candidate, bm25_scores
from memoryd.retrieval.tokens import query_terms
from memoryd.store.base import Actor, Store
from memoryd.store.terms import FIRST_PASS

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ALL = SearchFilters()
ACTOR = Actor("test")


def make(content: str, **fields: Any) -> Memory:
    return Memory(id=fields.pop("id", None) or str(uuid.uuid4()), content=content, created_at=NOW,
                  updated_at=NOW, state=SchedulingState(last_review=NOW), **fields)


def exhaustive(store: Store, query: str, filters: SearchFilters = ALL,
               **bm: float) -> list[tuple[str, float]]:
    """Every allowed memory holding a query term with its score, by the pure BM25."""
    terms = query_terms(query)
    allowed = store.list(filters, now=NOW, limit=10_000)
    stats = expected_stats(list(store.iter_memories()), terms)
    cands = [Candidate(m.id, sum(counts_of(m).values()), {t: counts_of(m)[t] for t in terms
                                                          if counts_of(m)[t]})
             for m in allowed if any(counts_of(m)[t] for t in terms)]
    scores = bm25_scores(terms, cands, stats, **bm)
    return sorted(((c.memory_id, s) for c, s in zip(cands, scores)), key=lambda p: (-p[1], p[0]))


def ranked(hits: list[Any]) -> list[tuple[str, float]]:
    return [(h.memory_id, h.score) for h in hits]


# --------------------------------------------------------------------------- maintenance


def test_index_follows_every_write(store: Store, embed) -> None:
    texts = ["Deploys go out on Tuesdays after standup", "The cat sat on the mat",
             "Painting the fence on Tuesday", "Café crème in Zürich costs too much"]
    memories = [make(t, tags=["ops"] if i == 0 else [], summary="weekly chores" if i == 2 else None)
                for i, t in enumerate(texts)]
    store.insert(memories, embed(texts), ACTOR)
    assert_index_matches(store)
    store.update(memories[1].id, {"content": "The dog sleeps on Tuesdays"}, ACTOR)
    assert_index_matches(store)
    store.update(memories[2].id, {"summary": None, "tags": ["garden", "paint"]}, ACTOR)
    assert_index_matches(store)
    store.update(memories[3].id, {"importance": 0.9}, ACTOR)  # no text: index unchanged
    assert_index_matches(store)
    store.delete(memories[0].id, ACTOR)
    assert_index_matches(store)
    store.delete(memories[3].id, ACTOR, purge=True)
    assert_index_matches(store)
    assert store.keyword_search("zurich creme", ALL, now=NOW, limit=5) == []
    for m in list(store.iter_memories()):
        store.delete(m.id, ACTOR)
    assert store.term_counts([], ["tuesdai"]) == []
    empty = store.corpus_stats(["tuesdai"])
    assert (empty.documents, empty.average_length) == (0, 0.0)
    assert dict(empty.document_frequency) == {}


def test_a_failed_write_leaves_the_index_as_it_was(store: Store, embed) -> None:
    first = make("Alpha bravo charlie")
    store.insert([first], embed([first.content]), ACTOR)
    clash = [make("Delta echo foxtrot"), make("Golf hotel", id=first.id)]
    with pytest.raises(Exception):
        store.insert(clash, embed([m.content for m in clash]), ACTOR)
    assert_index_matches(store)
    assert store.keyword_search("delta echo", ALL, now=NOW, limit=5) == []


def test_import_rows_indexes_what_it_inserts(store: Store, store_factory, embed) -> None:
    source = store_factory("sqlite", name="source")
    source.set_embedding_model(store.embedding_model, store.embedding_dims)
    texts = ["Backups run nightly at two", "The API rate limit is 600 requests per minute"]
    source.insert([make(t, tags=["ops"]) for t in texts], embed(texts), ACTOR)
    rows = source.transfer.export_rows("memories")
    assert store.transfer.import_rows("memories", rows) == 2
    assert store.transfer.import_rows("memories", rows) == 0  # already there: nothing indexed twice
    store.transfer.finish_import()
    assert_index_matches(store)
    with pytest.raises(ValueError, match="derived"):
        store.transfer.import_rows("term_stats", [{"term": "x", "df": 1}])


# --------------------------------------------------------------------------- ranking

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon phi chi psi omega").split()


def bulk(n: int, seed: int = 3) -> list[Memory]:
    """``n`` memories of 3-12 words drawn with skewed frequencies (a few words are common)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    weights /= weights.sum()
    out = []
    for i in range(n):
        words = rng.choice(WORDS, size=int(rng.integers(3, 13)), p=weights)
        out.append(make(" ".join(words), tags=["even" if i % 2 == 0 else "odd"],
                        scope="project:x" if i % 10 == 0 else "user"))
    return out


@pytest.fixture
def bulk_store(store: Store) -> Store:
    # Ranking mechanics only: no vectors needed. The "project:low" memories hold "alpha" in a
    # long text, so they rank below the FIRST_PASS best matches of a query for "alpha".
    low = [make("alpha " + " ".join(f"filler{j}" for j in range(30 + i)), scope="project:low")
           for i in range(25)]
    store.insert(bulk(FIRST_PASS + 60) + low, None, ACTOR)
    return store


@pytest.mark.parametrize("query", ["alpha", "omega psi", "kappa beta alpha", "rho rho tau",
                                   "Omega, CHI and the phi", "nothing matches this"])
def test_candidates_are_every_match_ranked_by_bm25(bulk_store: Store, query: str) -> None:
    want = exhaustive(bulk_store, query)
    every = bulk_store.keyword_search(query, ALL, now=NOW, limit=len(want) + 5)
    assert {h.memory_id for h in every} == {mid for mid, _ in want}
    assert_same_top(ranked(every), want, len(want))
    assert_same_top(ranked(bulk_store.keyword_search(query, ALL, now=NOW, limit=10)), want, 10)


def test_settable_k1_and_b_change_the_ranking_as_the_formula_says(bulk_store: Store) -> None:
    for k1, b in ((1.2, 0.75), (0.5, 0.0), (8.0, 1.0)):
        want = exhaustive(bulk_store, "beta gamma omega", k1=k1, b=b)
        got = bulk_store.keyword_search("beta gamma omega", ALL, now=NOW, limit=15, k1=k1, b=b)
        assert_same_top(ranked(got), want, 15)


def test_filters_apply_before_the_limit(bulk_store: Store) -> None:
    for scope in ("project:x", "project:low"):  # low: none of them in the first pass
        narrow = SearchFilters(scope=scope)
        want = exhaustive(bulk_store, "alpha", narrow)
        assert len(want) > 10
        got = bulk_store.keyword_search("alpha", narrow, now=NOW, limit=10)
        assert_same_top(ranked(got), want, 10)
    tagged = SearchFilters(tags=["odd"])
    assert_same_top(ranked(bulk_store.keyword_search("gamma", tagged, now=NOW, limit=10)),
                    exhaustive(bulk_store, "gamma", tagged), 10)


def test_candidates_carry_their_counts_and_the_statistics(bulk_store: Store) -> None:
    terms = query_terms("alpha omega")
    pool = bulk_store.keyword_candidates(terms, ALL, now=NOW, limit=20)
    live = {m.id: m for m in bulk_store.iter_memories()}
    assert pool.stats == expected_stats(list(live.values()), terms)
    assert len(pool.candidates) == 20
    for cand in pool.candidates:
        counts = counts_of(live[cand.memory_id])
        assert cand.length == sum(counts.values())
        assert dict(cand.term_frequency) == {t: counts[t] for t in terms if counts[t]}
    assert bulk_store.keyword_candidates([], ALL, now=NOW, limit=5).candidates == []
    assert bulk_store.keyword_candidates(terms, ALL, now=NOW, limit=0).candidates == []


def test_term_counts_and_cosines_of_given_memories(store: Store, embed) -> None:
    texts = ["Deploys go out on Tuesdays after standup", "Lunch is at noon"]
    memories = [make(t) for t in texts]
    store.insert(memories, embed(texts), ACTOR)
    ids = [memories[1].id, "missing", memories[0].id]
    counted = store.term_counts(ids, query_terms("when do deploys go out?"))
    assert [c.memory_id for c in counted] == [memories[1].id, memories[0].id]
    assert counted[0].term_frequency == {}
    assert counted[1].term_frequency == {"deploi": 1, "go": 1}
    no_terms = store.term_counts(ids, [])
    assert [(c.memory_id, c.term_frequency) for c in no_terms] == [
        (memories[1].id, {}), (memories[0].id, {})]
    assert [c.length for c in no_terms] == [c.length for c in counted]
    stats = store.corpus_stats(["deploi", "deploi", "absent", ""])
    assert (stats.documents, dict(stats.document_frequency)) == (2, {"deploi": 1})
    query = embed(["when do we ship?"])[0]
    cos = store.cosines(ids, query)
    assert set(cos) == {memories[0].id, memories[1].id}
    want = embed(texts) @ query / np.linalg.norm(query)
    assert cos[memories[0].id] == pytest.approx(float(want[0]), abs=1e-5)
    assert cos[memories[1].id] == pytest.approx(float(want[1]), abs=1e-5)
    assert store.cosines(ids, np.ones(8, dtype=np.float32)) == {}  # another model's dimension
    assert store.cosines(ids, np.zeros_like(query)) == {}
    store.delete(memories[0].id, ACTOR, purge=True)
    assert set(store.cosines(ids, query)) == {memories[1].id}
