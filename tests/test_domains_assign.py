"""Soft assignment on real embeddings: mixed memories get two domains, single-topic ones
their own, re-thresholding from stored scores, running-mean centroids, refused input."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from domain_corpus import TOPICS, Corpus, load, topic_of_clusters

from memoryd.domains.assign import (
    DEFAULT_THRESHOLD,
    Classification,
    Domain,
    classify,
    classify_many,
    rethreshold,
    score_matrix,
    strength,
    strengths,
    suggest_threshold,
    update_centroids,
)
from memoryd.domains.discover import discover
from memoryd.errors import InvalidInput


@pytest.fixture(scope="module")
def corpus(embed) -> Corpus:  # type: ignore[no-untyped-def]
    """The hand-written four-topic corpus with real vectors."""
    return load(embed)


@dataclass(frozen=True, eq=False)
class Discovered:
    domains: list[Domain]
    topic: dict[str, str]  # domain id -> the topic most of its members are on
    threshold: float  # suggested by discovery


@pytest.fixture(scope="module")
def discovered(corpus: Corpus) -> Discovered:
    """Domains discovered on the single-topic memories, with their topics and threshold."""
    rows = corpus.single()
    found = discover(corpus.vectors[rows], [corpus.texts[i] for i in rows])
    topics = topic_of_clusters(found, np.arange(len(rows)), corpus.truth(rows))
    domains = [c.as_domain() for c in found.clusters]
    assert found.threshold is not None
    return Discovered(domains, {c.label: topics[c.index] for c in found.clusters}, found.threshold)


def test_mixed_memories_get_both_of_their_domains(corpus: Corpus, discovered: Discovered) -> None:
    results = classify_many(corpus.vectors[corpus.mixed], discovered.domains, discovered.threshold)
    both = [
        set(corpus.topics[i]) <= {discovered.topic[d] for d in r.domains}
        for i, r in zip(corpus.mixed, results, strict=True)
    ]
    single = classify_many(
        corpus.vectors[corpus.single()], discovered.domains, discovered.threshold
    )
    single_multi = np.mean([len(r.domains) > 1 for r in single])
    assert np.mean(both) >= 0.6 and all(r.domains for r in results)
    assert single_multi <= 0.1
    assert np.mean(both) >= 5 * single_multi


def _uniform(corpus: Corpus, pull: float = 0.8) -> np.ndarray:
    """Every vector pulled toward its topics' mean vector: a store of very uniform memories,
    where each memory scores high on its domain (bench.domains.assignment does the same)."""
    centroid = {t: corpus.vectors[corpus.single(t)].mean(axis=0) for t in TOPICS}
    pulled = np.array([v + pull * np.mean([centroid[t] for t in topics], axis=0)
                       for v, topics in zip(corpus.vectors, corpus.topics)])
    return pulled / np.linalg.norm(pulled, axis=1, keepdims=True)


def test_on_uniform_memories_mixed_ones_still_get_both_domains(corpus: Corpus) -> None:
    """One-topic memories score high on their domain; a memory on two scores lower on each
    (below a cut under 90% of the best scores), but its strength does not drop."""
    vectors = _uniform(corpus)
    rows = corpus.single()
    found = discover(vectors[rows], [corpus.texts[i] for i in rows])
    topic = topic_of_clusters(found, np.arange(len(rows)), corpus.truth(rows))
    names = {c.label: topic[c.index] for c in found.clusters}
    domains = [c.as_domain() for c in found.clusters]
    assert found.threshold is not None
    best = score_matrix(vectors[corpus.mixed], domains).max(axis=1)
    assert np.mean(best < found.threshold) >= 0.8  # a cut on the best score drops them
    mixed = classify_many(vectors[corpus.mixed], domains, found.threshold)
    both = [set(corpus.topics[i]) <= {names[d] for d in r.domains}
            for i, r in zip(corpus.mixed, mixed)]
    assert np.mean(both) >= 0.8
    single = classify_many(vectors[rows], domains, found.threshold)
    assert np.mean([len(r.domains) == 1 for r in single]) >= 0.9


def test_mixed_memories_score_high_on_both_topics(corpus: Corpus, discovered: Discovered) -> None:
    """On each of its topics a mixed memory outscores most memories on other topics."""
    scores = score_matrix(corpus.vectors, discovered.domains)
    truth = np.array(corpus.truth(corpus.single()))
    single = scores[corpus.single()]
    ranks = []
    for column, domain in enumerate(discovered.domains):
        topic = discovered.topic[domain.id]
        unrelated = single[truth != topic, column]
        ranks += [
            np.mean(unrelated < scores[i, column])
            for i in corpus.mixed
            if topic in corpus.topics[i]
        ]
    assert len(ranks) == 2 * len(corpus.mixed)
    assert min(ranks) >= 0.7
    assert np.mean(ranks) >= 0.9


def test_single_topic_memories_get_their_own_domain_and_rarely_more(
    corpus: Corpus, discovered: Discovered
) -> None:
    rows = corpus.single()
    results = classify_many(corpus.vectors[rows], discovered.domains, discovered.threshold)
    truth = corpus.truth(rows)
    own = [discovered.topic[r.domains[0]] == t for r, t in zip(results, truth) if r.domains]
    assert np.mean(own) >= 0.95
    assert np.mean([not r.domains for r in results]) <= 0.10  # the suggested threshold's bound
    assert np.mean([len(r.domains) > 1 for r in results]) <= 0.10


def test_scores_cover_every_domain_and_domains_are_ordered_best_first(
    corpus: Corpus, discovered: Discovered
) -> None:
    domains = discovered.domains
    result = classify(corpus.vectors[corpus.mixed[0]], domains, threshold=-1.0, relative=0.0)
    assert set(result.scores) == {d.id for d in domains}
    assert result.domains == sorted(result.scores, key=lambda d: -result.scores[d])
    assert all(-1.0 <= s <= 1.0 for s in result.scores.values())
    direct = score_matrix(corpus.vectors[corpus.mixed[:1]], domains)[0]
    assert [result.scores[d.id] for d in domains] == pytest.approx(direct.tolist(), abs=1e-4)


def test_rethresholding_stored_scores_equals_classifying_again(
    corpus: Corpus, discovered: Discovered
) -> None:
    domains = discovered.domains
    stored = classify_many(corpus.vectors, domains, DEFAULT_THRESHOLD)
    for threshold in (0.1, 0.3, 0.45, 0.6):
        again = classify_many(corpus.vectors, domains, threshold)
        assert [rethreshold(s.scores, threshold) for s in stored] == [a.domains for a in again]
        alone = classify_many(corpus.vectors, domains, threshold, relative=0.0)
        assert [rethreshold(s.scores, threshold, 0.0) for s in stored] == [
            a.domains for a in alone]
    lower = sum(len(rethreshold(s.scores, 0.1)) for s in stored)
    higher = sum(len(rethreshold(s.scores, 0.6)) for s in stored)
    assert lower > higher


def test_no_domains_yet_means_no_classification(corpus: Corpus) -> None:
    result = classify(corpus.vectors[0], [])
    assert result == Classification(scores={}, domains=[])


# --------------------------------------------------------------------------- suggested threshold


@pytest.mark.parametrize("share", [0.0, 0.05, 0.1, 0.25, 0.5])
def test_a_suggested_threshold_leaves_at_most_the_allowed_share_unclassified(
    corpus: Corpus, discovered: Discovered, share: float
) -> None:
    scores = score_matrix(corpus.vectors, discovered.domains)
    power = strengths(scores)
    threshold = suggest_threshold(scores, share)
    assert np.mean(power < threshold) <= share
    assert round(threshold * 100) == pytest.approx(threshold * 100, abs=1e-9)  # a multiple of 0.01
    # the next step up would leave more than the allowed share out (it is the highest)
    assert np.mean(power < threshold + 0.01) > share or threshold + 0.01 > power.max()
    unclassified = [not r.domains for r in classify_many(corpus.vectors, discovered.domains,
                                                         threshold)]
    assert np.mean(unclassified) <= share


def test_the_suggested_threshold_follows_the_data() -> None:
    best = np.linspace(0.5, 0.95, 100)[:, None]
    assert suggest_threshold(best, 0.1) == pytest.approx(0.54)
    assert suggest_threshold(best - 0.3, 0.1) == pytest.approx(0.24)
    assert suggest_threshold(np.array([[0.42]]), 0.1) == pytest.approx(0.42)
    # two topics at 0.4 each weigh as one at 0.57: sqrt(0.4² + 0.4²)
    assert suggest_threshold(np.array([[0.4, 0.4, 0.05]]), 0.1) == pytest.approx(0.56)


def test_strength_is_the_projection_on_the_two_best_domains() -> None:
    assert strength([0.6]) == pytest.approx(0.6)
    assert strength([0.3, 0.4, 0.1]) == pytest.approx(0.5)
    assert strength([-0.2, 0.3]) == pytest.approx(0.3)  # a negative score adds nothing
    rows = np.array([[0.3, 0.4, 0.1], [0.6, -0.1, 0.0]])
    assert strengths(rows) == pytest.approx([0.5, 0.6])


def test_a_further_domain_needs_a_share_of_the_best_score() -> None:
    assert rethreshold({"dev": 0.72, "infra": 0.41}, 0.3) == ["dev"]  # 0.41 < 0.7 * 0.72
    assert rethreshold({"dev": 0.52, "infra": 0.41}, 0.3) == ["dev", "infra"]
    assert rethreshold({"dev": 0.72, "infra": 0.41}, 0.3, relative=0.0) == ["dev", "infra"]
    assert rethreshold({"dev": 0.39, "infra": 0.36}, 0.52) == ["dev", "infra"]  # strength 0.53
    assert rethreshold({"dev": 0.39, "infra": 0.05}, 0.52) == []
    with pytest.raises(InvalidInput, match="relative"):
        rethreshold({"dev": 0.5}, 0.3, relative=1.5)


@pytest.mark.parametrize(
    "scores, share, match",
    [
        (np.array([]), 0.1, "non-empty"),
        (np.array([0.3, 0.4]), 0.1, "domains"),
        (np.array([[0.3, np.nan]]), 0.1, "finite"),
        (np.array([[0.3]]), 1.5, "max_unclassified"),
    ],
)
def test_bad_scores_are_refused(scores: np.ndarray, share: float, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        suggest_threshold(scores, share)


# --------------------------------------------------------------------------- running mean


def test_a_new_memory_moves_only_its_best_domain_by_a_running_mean(
    corpus: Corpus, discovered: Discovered
) -> None:
    domains = discovered.domains
    before = [(d.centroid.copy(), d.memory_count) for d in domains]
    vector = corpus.vectors[corpus.mixed[0]]
    result = classify(vector, domains, threshold=-1.0, relative=0.0)
    after = update_centroids(domains, vector, result)
    best = result.domains[0]
    for old, new, (centroid, count) in zip(domains, after, before):
        assert (old.centroid == centroid).all() and old.memory_count == count  # inputs unchanged
        if new.id == best:
            assert new.memory_count == count + 1
            expected = (centroid * count + vector / np.linalg.norm(vector)) / (count + 1)
            assert new.centroid == pytest.approx(expected, abs=1e-6)
        else:
            assert new is old


def test_running_means_reach_the_batch_mean(corpus: Corpus) -> None:
    rows = corpus.single("rust")
    vectors = corpus.vectors[rows]
    domain = Domain(id="rust", label="rust", centroid=vectors[:5].mean(axis=0), memory_count=5)
    domains = [domain]
    for v in vectors[5:]:
        domains = update_centroids(domains, v, Classification({"rust": 0.5}, ["rust"]))
    assert domains[0].memory_count == len(rows)
    assert domains[0].centroid == pytest.approx(vectors.mean(axis=0), abs=1e-5)


def test_an_unclassified_memory_moves_nothing(corpus: Corpus, discovered: Discovered) -> None:
    domains = discovered.domains
    assert update_centroids(domains, corpus.vectors[0], Classification({}, [])) == list(domains)


# --------------------------------------------------------------------------- bad input


def _domain(name: str = "dev", dims: int = 384) -> Domain:
    return Domain(id=name, label=name, centroid=np.ones(dims, dtype=np.float32))


@pytest.mark.parametrize("threshold", [1.5, -2.0, float("nan"), "0.5", True])
def test_bad_thresholds_are_refused(threshold: object) -> None:
    with pytest.raises(InvalidInput, match="threshold"):
        classify(np.ones(384), [_domain()], threshold)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="threshold"):
        rethreshold({"dev": 0.5}, threshold)  # type: ignore[arg-type]


def test_a_vector_of_other_dimensions_is_refused() -> None:
    with pytest.raises(InvalidInput, match="10 dimensions, expected 384"):
        classify(np.ones(10), [_domain()])


def test_centroids_of_different_dimensions_are_refused() -> None:
    with pytest.raises(InvalidInput, match="different dimensions"):
        classify(np.ones(384), [_domain("a"), _domain("b", dims=10)])


def test_duplicate_domain_ids_are_refused() -> None:
    with pytest.raises(InvalidInput, match="'dev' appears more than once"):
        classify(np.ones(384), [_domain(), _domain()])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"id": "", "centroid": np.ones(4)}, "non-empty id"),
        ({"id": "x", "centroid": np.zeros(4)}, "all zeros"),
        ({"id": "x", "centroid": np.array([1.0, np.inf])}, "NaN or infinite"),
        ({"id": "x", "centroid": np.ones((2, 2))}, "1-D"),
        ({"id": "x", "centroid": np.ones(4), "memory_count": -1}, "memory_count"),
    ],
)
def test_bad_domains_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        Domain(label="x", **kwargs)


def test_non_finite_stored_scores_are_refused() -> None:
    with pytest.raises(InvalidInput, match="'dev' is not a finite number"):
        rethreshold({"dev": float("nan")}, 0.3)


def test_a_classification_naming_an_unknown_domain_is_refused() -> None:
    with pytest.raises(InvalidInput, match="'ghost'"):
        update_centroids([_domain()], np.ones(384), Classification({"ghost": 0.9}, ["ghost"]))
