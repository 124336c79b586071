"""BM25 computed by memoryd from candidates' term counts and corpus statistics."""

from __future__ import annotations

import math

import pytest

from memoryd.retrieval.bm25 import Candidate, CorpusStats, bm25_scores, idf, keyword_evidence
from memoryd.retrieval.tokens import query_terms, term_counts

TEXTS = {
    "short": "Deploys go out on Tuesdays after standup",
    "long": "Deploys are discussed at length here, and on Tuesdays we also talk about lunch, "
            "the weather, the build, the coffee machine and many other things nobody remembers",
    "other": "The cat sat on the mat",
}


def corpus() -> tuple[CorpusStats, list[Candidate]]:
    counts = {mid: term_counts(text) for mid, text in TEXTS.items()}
    df: dict[str, int] = {}
    for c in counts.values():
        for term in c:
            df[term] = df.get(term, 0) + 1
    lengths = {mid: sum(c.values()) for mid, c in counts.items()}
    stats = CorpusStats(len(TEXTS), sum(lengths.values()) / len(TEXTS), df)
    return stats, [Candidate(mid, lengths[mid], dict(counts[mid])) for mid in TEXTS]


def test_score_matches_the_formula() -> None:
    stats, cands = corpus()
    terms = query_terms("deploys on tuesdays")
    k1, b = 1.2, 0.75
    [short, _, _] = bm25_scores(terms, cands, stats, k1=k1, b=b)
    expected = 0.0
    for t in terms:
        tf = cands[0].term_frequency[t]
        w = math.log(1 + (3 - stats.document_frequency[t] + 0.5) / (stats.document_frequency[t] + 0.5))
        expected += w * tf * (k1 + 1) / (tf + k1 * (1 - b + b * cands[0].length / stats.average_length))
    assert short == pytest.approx(expected)


def test_length_normalisation_follows_b() -> None:
    stats, cands = corpus()
    terms = query_terms("deploys tuesdays")
    short, long_, other = bm25_scores(terms, cands, stats, k1=5.0, b=1.0)
    assert short > long_ > other == 0.0
    flat = bm25_scores(terms, cands, stats, k1=5.0, b=0.0)
    assert flat[0] == pytest.approx(flat[1])  # b = 0: length does not matter


def test_rare_terms_weigh_more() -> None:
    stats = CorpusStats(100, 10.0, {"rare": 1, "common": 90})
    assert idf("rare", stats) > idf("common", stats) > 0
    assert idf("unseen", stats) > idf("rare", stats)


def test_coverage_and_saturation_are_shares() -> None:
    stats, cands = corpus()
    ev = keyword_evidence(query_terms("deploys on tuesdays after standup, with cats"), cands, stats)
    by_id = {e.memory_id: e for e in ev}
    assert 0.0 < by_id["other"].coverage < by_id["short"].coverage < 1.0
    assert all(0.0 <= e.saturation <= 1.0 for e in ev)
    full = keyword_evidence(query_terms("deploys tuesdays"), cands, stats)
    assert full[0].coverage == pytest.approx(1.0)


def test_no_terms_or_no_candidates() -> None:
    stats, cands = corpus()
    assert bm25_scores([], cands, stats) == [0.0, 0.0, 0.0]
    assert keyword_evidence(["deploi"], [], stats) == []
    assert [e.coverage for e in keyword_evidence([], cands, stats)] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(("k1", "b"), [(-1.0, 0.5), (float("nan"), 0.5), (1.2, 1.5), (1.2, -0.1)])
def test_bad_parameters_are_rejected(k1: float, b: float) -> None:
    stats, cands = corpus()
    with pytest.raises(ValueError, match="BM25"):
        bm25_scores(["deploi"], cands, stats, k1=k1, b=b)
