"""Re-clustering proposals on real embeddings: new, split and merge are found with their
evidence, the same situation gives the same keys, nothing is applied, bad input refused."""

from __future__ import annotations

import copy
from collections import Counter

import numpy as np
import pytest
from domain_corpus import Corpus, load

from memoryd.domains.assign import Domain, classify_many
from memoryd.domains.discover import Discovery, discover
from memoryd.domains.proposals import Proposal, ProposalParams, propose
from memoryd.errors import InvalidInput


@pytest.fixture(scope="module")
def corpus(embed) -> Corpus:  # type: ignore[no-untyped-def]
    """The hand-written four-topic corpus with real vectors."""
    return load(embed)


@pytest.fixture(scope="module")
def fresh(corpus: Corpus) -> Discovery:
    """A new clustering of the 160 single-topic memories (four topics)."""
    rows = corpus.single()
    return discover(corpus.vectors[rows], [corpus.texts[i] for i in rows])


def topic_domain(corpus: Corpus, name: str, *topics: str) -> Domain:
    """A domain whose centroid is the mean of the given topics' memories."""
    return Domain(id=name, label=name, centroid=corpus.vectors[corpus.single(*topics)].mean(axis=0))


def snapshot(domains: list[Domain], assignments: list[list[str]], found: Discovery) -> object:
    return (
        [(d.id, d.label, d.centroid.copy(), d.top_terms, d.memory_count) for d in domains],
        copy.deepcopy(assignments),
        found.labels.copy(),
        [(c.label, c.centroid.copy()) for c in found.clusters],
    )


def assert_same(before: object, after: object) -> None:
    (d0, a0, l0, c0), (d1, a1, l1, c1) = before, after  # type: ignore[misc]
    assert [x[:2] + x[3:] for x in d0] == [x[:2] + x[3:] for x in d1]
    assert all((x[2] == y[2]).all() for x, y in zip(d0, d1))
    assert a0 == a1 and (l0 == l1).all()
    assert [x[0] for x in c0] == [x[0] for x in c1] and all(
        (x[1] == y[1]).all() for x, y in zip(c0, c1)
    )


def test_a_topic_no_domain_holds_is_proposed_as_new(corpus: Corpus, fresh: Discovery) -> None:
    known = corpus.single("network", "home", "rust")
    early = discover(corpus.vectors[known], [corpus.texts[i] for i in known], force=True)
    domains = [c.as_domain() for c in early.clusters]
    rows = corpus.single()
    assignments = [c.domains for c in classify_many(corpus.vectors[rows], domains, 0.3)]
    before = snapshot(domains, assignments, fresh)
    found = propose(domains, assignments, fresh)
    after = snapshot(domains, assignments, fresh)
    assert_same(before, after)  # nothing applied: every input as it was
    assert [p.kind for p in found] == ["new"]
    new = found[0]
    cooking = set(corpus.single("cooking"))
    members = {rows[i] for i in np.flatnonzero(fresh.labels == new.clusters[0])}
    assert len(members & cooking) >= 0.9 * len(members)
    assert new.evidence["unclassified_share"] >= 0.5
    assert new.evidence["cluster"]["members"] == len(members)
    assert new.evidence["cluster"]["top_terms"] == list(fresh.clusters[new.clusters[0]].top_terms)
    assert new.evidence["nearest_domain"]["id"] in {d.id for d in domains}
    assert new.domain_ids == ()


def test_a_topic_filed_under_several_domains_is_proposed_as_new(
    corpus: Corpus, fresh: Discovery
) -> None:
    domains = [topic_domain(corpus, t, t) for t in ("network", "home", "rust")]
    truth = corpus.truth(corpus.single())
    # cooking memories spread evenly over the three domains, as if filed by their nearest guess
    assignments = [[t] if t != "cooking" else [domains[i % 3].id] for i, t in enumerate(truth)]
    found = propose(domains, assignments, fresh)
    assert [p.kind for p in found] == ["new"]
    evidence = found[0].evidence
    assert evidence["unclassified_share"] == 0.0
    assert evidence["largest_domain_share"] < 0.5
    assert set(evidence["cluster"]["overlap"]) == {"network", "home", "rust"}
    members = np.array(truth)[fresh.labels == found[0].clusters[0]]
    assert np.mean(members == "cooking") >= 0.9


def test_a_domain_that_absorbed_a_topic_is_proposed_for_a_split(
    corpus: Corpus, fresh: Discovery
) -> None:
    """Domains found before any cooking memory existed; everything assigned since."""
    known = corpus.single("network", "home", "rust")
    early = discover(corpus.vectors[known], [corpus.texts[i] for i in known], force=True)
    domains = [c.as_domain() for c in early.clusters]
    rows = corpus.single()
    assignments = [c.domains for c in classify_many(corpus.vectors[rows], domains, -1.0)]
    found = propose(domains, assignments, fresh)
    assert [p.kind for p in found] == ["split"]
    truth = np.array(corpus.truth(rows))
    part_topics = {
        Counter(truth[fresh.labels == c]).most_common(1)[0][0] for c in found[0].clusters
    }
    assert part_topics == {"home", "cooking"}
    home_id = found[0].domain_ids[0]
    assert np.mean(truth[[a[0] == home_id for a in assignments]] == "home") >= 0.5


def test_a_domain_spanning_two_topics_is_proposed_for_a_split(
    corpus: Corpus, fresh: Discovery
) -> None:
    domains = [
        topic_domain(corpus, "tech", "network", "rust"),
        topic_domain(corpus, "home", "home"),
        topic_domain(corpus, "cooking", "cooking"),
    ]
    truth = corpus.truth(corpus.single())
    assignments = [["tech"] if t in ("network", "rust") else [t] for t in truth]
    found = propose(domains, assignments, fresh)
    assert [p.kind for p in found] == ["split"]
    split = found[0]
    assert split.domain_ids == ("tech",) and len(split.clusters) == 2
    assert split.evidence["domain"]["members"] == 80
    for part in split.evidence["parts"]:
        members = np.array(truth)[fresh.labels == part["cluster"]]
        assert part["overlap"]["tech"] == int(np.isin(members, ["network", "rust"]).sum())
        assert part["overlap"]["tech"] >= 0.25 * 80
    part_topics = {
        np.unique(np.array(truth)[fresh.labels == c], return_counts=True)[0][0]
        for c in split.clusters
    }
    assert len(part_topics) == 2
    assert "split 'tech' into" in split.summary


def test_two_domains_on_one_topic_are_proposed_for_a_merge(
    corpus: Corpus, fresh: Discovery
) -> None:
    network = corpus.single("network")
    halves = (network[:20], network[20:])
    domains = [
        Domain(id=f"net-{k}", label=f"net-{k}", centroid=corpus.vectors[h].mean(axis=0))
        for k, h in zip("ab", halves)
    ]
    domains += [topic_domain(corpus, t, t) for t in ("home", "rust", "cooking")]
    truth = corpus.truth(corpus.single())
    assignments = [
        ["net-a"] if i in halves[0] else ["net-b"] if i in halves[1] else [t]
        for i, t in zip(corpus.single(), truth)
    ]
    found = propose(domains, assignments, fresh)
    assert [p.kind for p in found] == ["merge"]
    merge = found[0]
    assert merge.domain_ids == ("net-a", "net-b")
    assert 0.5 < merge.evidence["centroid_similarity"] <= 1.0
    assert [d["members"] for d in merge.evidence["domains"]] == [20, 20]
    overlap = merge.evidence["cluster"]["overlap"]
    assert overlap["net-a"] >= 10 and overlap["net-b"] >= 10


def test_with_no_domains_every_cluster_is_new(fresh: Discovery) -> None:
    found = propose([], [[] for _ in range(fresh.memories)], fresh)
    assert [p.kind for p in found] == ["new"] * len(fresh.clusters)
    assert all(p.evidence["nearest_domain"] is None for p in found)


def test_matching_domains_give_no_proposals_and_keys_are_stable(
    corpus: Corpus, fresh: Discovery
) -> None:
    domains = [c.as_domain() for c in fresh.clusters]
    rows = corpus.single()
    assignments = [c.domains for c in classify_many(corpus.vectors[rows], domains)]
    assert propose(domains, assignments, fresh) == []
    tech = [topic_domain(corpus, "tech", "network", "rust")]
    truth = corpus.truth(rows)
    tech_assignments = [["tech"] if t in ("network", "rust") else [] for t in truth]
    first = propose(tech, tech_assignments, fresh)
    assert [p.key for p in first] == [p.key for p in propose(tech, tech_assignments, fresh)]
    assert len({p.key for p in first}) == len(first)


def test_proposals_are_frozen(fresh: Discovery) -> None:
    proposal = propose([], [[] for _ in range(fresh.memories)], fresh)[0]
    assert isinstance(proposal, Proposal)
    with pytest.raises(AttributeError):
        proposal.kind = "merge"  # type: ignore[misc]


# --------------------------------------------------------------------------- bad input


def test_assignments_must_cover_every_memory(fresh: Discovery) -> None:
    with pytest.raises(InvalidInput, match="assignments has 3 entries"):
        propose([], [[], [], []], fresh)


def test_unknown_domain_ids_in_assignments_are_refused(fresh: Discovery) -> None:
    assignments: list[list[str]] = [[] for _ in range(fresh.memories)]
    assignments[7] = ["ghost"]
    with pytest.raises(InvalidInput, match=r"assignments\[7\] names unknown domain 'ghost'"):
        propose([], assignments, fresh)


def test_a_string_instead_of_a_list_is_refused(corpus: Corpus, fresh: Discovery) -> None:
    assignments: list[object] = [[] for _ in range(fresh.memories)]
    assignments[0] = "home"
    with pytest.raises(InvalidInput, match="not a string"):
        propose([topic_domain(corpus, "home", "home")], assignments, fresh)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["split_share", "purity", "merge_share", "new_share"])
def test_bad_shares_are_refused(field: str) -> None:
    with pytest.raises(InvalidInput, match=field):
        ProposalParams(**{field: 1.5})
