"""Domain discovery on real embeddings: the accumulation threshold, clusters on clearly
separated topics, sampling, top terms and names, and refused input."""

from __future__ import annotations

import numpy as np
import pytest
from domain_corpus import TOPICS, Corpus, load, topic_of_clusters
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from memoryd.domains.discover import DiscoveryParams, discover
from memoryd.domains.reduce import reduce_dimensions
from memoryd.errors import InvalidInput


@pytest.fixture(scope="module")
def corpus(embed) -> Corpus:  # type: ignore[no-untyped-def]
    """The hand-written four-topic corpus with real vectors."""
    return load(embed)


# --------------------------------------------------------------------------- accumulate


def test_below_the_threshold_nothing_is_classified(corpus: Corpus) -> None:
    rows = corpus.single()[:149]
    found = discover(corpus.vectors[rows], [corpus.texts[i] for i in rows])
    assert found.clusters == []
    assert found.skipped is not None and "150" in found.skipped
    assert found.memories == 149 and found.sampled == 0
    assert (found.labels == -1).all() and len(found.labels) == 149


def test_at_the_threshold_discovery_runs(corpus: Corpus) -> None:
    rows = corpus.single()[:150]
    found = discover(corpus.vectors[rows], [corpus.texts[i] for i in rows])
    assert found.skipped is None
    assert len(found.clusters) >= 3


def test_on_demand_discovery_runs_below_the_threshold(corpus: Corpus) -> None:
    rows = corpus.single("network", "cooking")
    texts = [corpus.texts[i] for i in rows]
    assert discover(corpus.vectors[rows], texts).skipped
    found = discover(corpus.vectors[rows], texts, force=True)
    assert found.skipped is None
    topics = set(topic_of_clusters(found, np.arange(len(rows)), corpus.truth(rows)).values())
    assert topics == {"network", "cooking"}


def test_too_few_memories_for_one_cluster_even_when_forced(corpus: Corpus) -> None:
    found = discover(corpus.vectors[:5], corpus.texts[:5], force=True)
    assert found.clusters == [] and "fewer than one cluster" in (found.skipped or "")


# --------------------------------------------------------------------------- clusters


def test_clearly_separated_topics_become_one_cluster_each(corpus: Corpus) -> None:
    rows = corpus.single()
    truth = corpus.truth(rows)
    found = discover(corpus.vectors[rows], [corpus.texts[i] for i in rows])
    assert len(found.clusters) == 4
    topics = topic_of_clusters(found, np.arange(len(rows)), truth)
    assert sorted(topics.values()) == sorted(TOPICS)
    # members of a cluster are (almost) all of its topic; few memories are left out
    labelled = found.labels >= 0
    right = [
        topics[label] == t for label, t in zip(found.labels[labelled], np.array(truth)[labelled])
    ]
    assert np.mean(right) >= 0.95
    assert found.unclustered_share <= 0.25
    assert normalized_mutual_info_score(truth, found.labels) >= 0.6
    assert adjusted_rand_score(truth, found.labels) >= 0.5


def test_clusters_carry_centroids_counts_terms_and_unique_labels(corpus: Corpus) -> None:
    rows = corpus.single()
    found = discover(corpus.vectors[rows], [corpus.texts[i] for i in rows])
    topics = topic_of_clusters(found, np.arange(len(rows)), corpus.truth(rows))
    expected_terms = {
        "network": {"bgp", "vlan", "route", "routers", "port"},
        "home": {"solar", "kwh", "battery", "heat", "heating", "pump", "kw"},
        "rust": {"cargo", "crate", "trait", "struct", "crates", "tokio"},
        "cooking": {"minutes", "butter", "flour", "oil", "dough", "bread"},
    }
    for cluster in found.clusters:
        topic = topics[cluster.index]
        assert cluster.centroid.shape == (384,)
        topic_mean = corpus.vectors[corpus.single(topic)].mean(axis=0)
        cosine = (
            topic_mean
            @ cluster.centroid
            / np.linalg.norm(topic_mean)
            / np.linalg.norm(cluster.centroid)
        )
        assert cosine > 0.9
        assert cluster.member_count == int(np.sum(found.labels == cluster.index))
        assert 10 <= cluster.sample_members <= 40
        assert len(cluster.top_terms) == 10
        assert expected_terms[topic] & set(cluster.top_terms[:5]), (topic, cluster.top_terms)
        assert cluster.label and cluster.label == cluster.label.lower() and " " not in cluster.label
    assert len({c.label for c in found.clusters}) == len(found.clusters)
    assert [c.index for c in found.clusters] == list(range(len(found.clusters)))


def test_discovery_suggests_a_threshold_that_classifies_nine_in_ten(corpus: Corpus) -> None:
    rows = corpus.single()
    found = discover(corpus.vectors[rows], [corpus.texts[i] for i in rows])
    assert found.threshold is not None and 0.0 < found.threshold < 1.0
    assert found.unclustered_share <= 0.10
    looser = discover(
        corpus.vectors[rows], [corpus.texts[i] for i in rows], DiscoveryParams(max_unclassified=0.3)
    )
    assert looser.threshold is not None and looser.threshold > found.threshold
    assert found.unclustered_share < looser.unclustered_share <= 0.3


def test_a_given_member_threshold_is_used_as_is(corpus: Corpus) -> None:
    rows = corpus.single()
    texts = [corpus.texts[i] for i in rows]
    strict = discover(corpus.vectors[rows], texts, DiscoveryParams(member_threshold=0.6))
    assert strict.threshold == 0.6
    assert strict.unclustered_share > 0.5
    assert sum(c.member_count for c in strict.clusters) == int(np.sum(strict.labels >= 0))


def test_discovery_is_deterministic(corpus: Corpus) -> None:
    rows = corpus.single()
    texts = [corpus.texts[i] for i in rows]
    first = discover(corpus.vectors[rows], texts)
    again = discover(corpus.vectors[rows], texts)
    assert (first.labels == again.labels).all()
    assert [c.label for c in first.clusters] == [c.label for c in again.clusters]


def test_a_sample_finds_the_topics_and_every_memory_gets_a_label(corpus: Corpus) -> None:
    rows = corpus.single()
    truth = corpus.truth(rows)
    params = DiscoveryParams(sample_size=100, min_cluster_size=8)
    found = discover(corpus.vectors[rows], [corpus.texts[i] for i in rows], params)
    assert found.sampled == 100 and found.memories == 160 and len(found.labels) == 160
    assert sum(c.sample_members for c in found.clusters) <= 100
    assert sum(c.member_count for c in found.clusters) == int(np.sum(found.labels >= 0))
    assert sorted(topic_of_clusters(found, np.arange(160), truth).values()) == sorted(TOPICS)
    assert normalized_mutual_info_score(truth, found.labels) >= 0.6


def test_discovery_leaves_its_input_unchanged(corpus: Corpus) -> None:
    rows = corpus.single()
    vectors = corpus.vectors[rows].copy()
    texts = [corpus.texts[i] for i in rows]
    discover(vectors, texts)
    assert (vectors == corpus.vectors[rows]).all()
    assert texts == [corpus.texts[i] for i in rows]


# --------------------------------------------------------------------------- reduction


def test_pca_reduces_to_the_asked_dimensions(corpus: Corpus) -> None:
    assert reduce_dimensions(corpus.vectors, method="pca", dims=10).shape == (len(corpus.texts), 10)
    assert reduce_dimensions(corpus.vectors[:4], method="pca", dims=10).shape == (4, 3)
    assert reduce_dimensions(corpus.vectors, method="none") is corpus.vectors


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "vectors, match",
    [
        (np.ones(384, dtype=np.float32), "2-D"),
        (np.full((160, 384), np.nan, dtype=np.float32), "NaN"),
        (np.zeros((160, 384), dtype=np.float32), "all zeros"),
        ([["a"] * 384] * 160, "numbers"),
    ],
)
def test_bad_vectors_are_refused(vectors: object, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        discover(vectors, ["text"] * 160)  # type: ignore[arg-type]


def test_texts_must_match_the_vectors(corpus: Corpus) -> None:
    with pytest.raises(InvalidInput, match="texts has 3 entries"):
        discover(corpus.vectors, corpus.texts[:3])


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("min_cluster_size", 1, "min_cluster_size"),
        ("min_cluster_share", 1.5, "min_cluster_share"),
        ("reduction", "tsne", "unknown reduction"),
        ("selection", "best", "selection"),
        ("member_threshold", 2.0, "member_threshold"),
        ("max_unclassified", -0.1, "max_unclassified"),
        ("threads", 0, "threads"),
        ("sample_size", 5, "sample_size"),
        ("dims", 0, "dims"),
        ("min_memories", -1, "min_memories"),
    ],
)
def test_bad_parameters_are_refused(field: str, value: object, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        DiscoveryParams(**{field: value})  # type: ignore[arg-type]
