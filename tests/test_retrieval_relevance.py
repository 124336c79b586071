"""The ranking (rank fusion in the relevance model) and the answer score over real embeddings
and memoryd's BM25."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memoryd.retrieval.answer import DEFAULT_RECALL_THRESHOLD
from memoryd.retrieval.bm25 import Candidate, CorpusStats
from memoryd.retrieval.relevance import (
    DEFAULT_MODEL,
    CandidateFeatures,
    RelevanceModel,
    ScoredCandidate,
    candidate_features,
    relevance_scores,
    side_ranks,
)
from memoryd.retrieval.tokens import query_terms, term_counts

DEVELOPER_MEMORIES = [
    "The staging database runs PostgreSQL 16 on port 5433",
    "Use ruff for linting; CI fails on any warning",
    "Run ./scripts/test before pushing a branch",
]


def search(query: str, texts: list[str], embed: Callable[[list[str]], np.ndarray]) -> list[ScoredCandidate]:
    """What the search path does with a store's candidates (here: every memory)."""
    counts = [term_counts(t) for t in texts]
    df: dict[str, int] = {}
    for c in counts:
        for term in c:
            df[term] = df.get(term, 0) + 1
    lengths = [sum(c.values()) for c in counts]
    stats = CorpusStats(len(texts), sum(lengths) / len(texts), df)
    terms = query_terms(query)
    cands = [Candidate(str(i), lengths[i], {t: c[t] for t in terms if t in c}) for i, c in enumerate(counts)]
    vectors = embed(texts)
    q = embed([query])[0]
    return relevance_scores(terms, cands, stats, [float(v @ q) for v in vectors])


def test_unrelated_query_scores_below_the_recall_threshold(embed) -> None:
    hits = search("what is the capital of France", DEVELOPER_MEMORIES, embed)
    assert len(hits) == 3
    assert all(h.answer < 0.1 for h in hits), hits


def test_paraphrase_scores_above_the_recall_threshold(embed) -> None:
    texts = ["Deploys go out on Tuesdays after standup", *DEVELOPER_MEMORIES]
    hits = search("when do we ship?", texts, embed)
    assert hits[0].memory_id == "0"
    assert hits[0].answer >= DEFAULT_RECALL_THRESHOLD, hits
    assert all(h.answer < DEFAULT_RECALL_THRESHOLD for h in hits[1:]), hits


def test_an_exact_match_scores_high(embed) -> None:
    hits = search("which port does the staging database use", DEVELOPER_MEMORIES, embed)
    assert hits[0].memory_id == "0" and hits[0].answer >= 0.8, hits


def test_a_memory_holding_every_rare_query_word_ranks_first(embed) -> None:
    texts = ["Melanie painted a sunrise over the lake last summer",
             "We talked about art and how painting helps to relax",
             "Caroline went to a support group meeting",
             *DEVELOPER_MEMORIES]
    hits = search("When did Melanie paint a sunrise?", texts, embed)
    assert hits[0].memory_id == "0"
    assert hits[0].probability > hits[1].probability


def test_scores_are_probabilities_sorted_best_first(embed) -> None:
    hits = search("which port does the staging database use", DEVELOPER_MEMORIES, embed)
    assert [h.memory_id for h in hits][0] == "0"
    probs = [h.probability for h in hits]
    assert probs == sorted(probs, reverse=True) and all(0.0 < p < 1.0 for p in probs)
    assert all(0.0 < h.answer < 1.0 for h in hits)


def test_features_are_relative_to_the_query_best() -> None:
    feats = candidate_features([0.5, None, 0.2], [1.0, 0.5, 0.0], [0.9, 0.4, 0.0], [4.0, 2.0, 0.0])
    assert [f.cosine_gap for f in feats] == pytest.approx([0.0, -0.5, -0.3])
    assert [f.keyword_lead for f in feats] == pytest.approx([0.9, 0.5 * 0.4, 0.0])
    assert candidate_features([], [], [], []) == []


def test_side_ranks_share_a_rank_between_equal_values() -> None:
    assert side_ranks([0.9, None, 0.5, 0.9, 0.1]) == [1, None, 3, 1, 4]
    assert side_ranks([0.9, 0.5, 0.1], limit=2) == [1, 2, None]
    assert side_ranks([]) == []


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="one value per candidate"):
        candidate_features([0.1], [0.1, 0.2], [0.1], [0.1])
    with pytest.raises(ValueError, match="weights"):
        RelevanceModel(intercept=0.0, weights=(1.0, 2.0))
    stats = CorpusStats(1, 3.0, {})
    with pytest.raises(ValueError, match="one value per candidate"):
        relevance_scores(["x"], [Candidate("a", 3, {})], stats, [])


def test_more_evidence_never_lowers_the_probability() -> None:
    base = CandidateFeatures(0.3, -0.1, 0.3, 0.3, 0.3, 0.3, 0.3)
    p = DEFAULT_MODEL.probability(base)
    for name in base.__dict__:
        higher = CandidateFeatures(**{**base.__dict__, name: getattr(base, name) + 0.3})
        assert DEFAULT_MODEL.probability(higher) >= p, name
    for name in ("keyword_rr", "vector_rr"):
        higher = CandidateFeatures(**{**base.__dict__, name: getattr(base, name) + 0.3})
        assert DEFAULT_MODEL.probability(higher) > p, name
