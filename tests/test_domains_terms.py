"""Cluster terms by c-TF-IDF, suggested names, and the reductions' refusals."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from memoryd.domains.reduce import reduce_dimensions
from memoryd.domains.terms import ctfidf, suggest_label, top_terms
from memoryd.errors import InvalidInput

NETWORK = [
    "BGP peering with the transit provider flapped twice",
    "The BGP route reflector serves every edge router",
    "A route map filters BGP announcements to peers",
    "VLAN 30 carries storage traffic between hosts",
]
SOLAR = [
    "The solar panels produced 18 kWh on Sunday",
    "Solar output drops when the tree shades the roof",
    "The home battery stores solar surplus for the evening",
    "The heat pump runs at night on cheap electricity",
]


def test_ctfidf_follows_its_formula() -> None:
    counts = np.array([[3.0, 1.0, 0.0], [0.0, 1.0, 4.0]])
    weights = ctfidf(counts)
    average = counts.sum() / 2  # words per class
    tf = counts / counts.sum(axis=1, keepdims=True)
    idf = np.log1p(average / counts.sum(axis=0))
    assert weights == pytest.approx(tf * idf)
    # a word both classes use weighs less than a word only one uses, at equal frequency
    assert weights[0, 1] < ctfidf(np.array([[3.0, 1.0], [4.0, 0.0]]))[0, 1]


def test_terms_are_the_distinctive_words_of_each_cluster() -> None:
    network, solar = top_terms([NETWORK, SOLAR], n_terms=3)
    assert network[0] == "bgp" and "route" in network
    assert solar[0] == "solar"
    assert not set(network) & set(solar)


def test_stop_words_and_numbers_never_become_terms() -> None:
    words = top_terms([NETWORK, SOLAR], n_terms=50, min_df=1)
    everything = {w for cluster in words for term in cluster for w in term.split()}
    assert not everything & {"the", "with", "on", "when", "for", "every", "to"}
    assert not any(w.isdigit() for w in everything)
    assert "30" not in everything and "18" not in everything


def test_bigrams_are_allowed() -> None:
    texts = ["The route reflector went down", "A route reflector restart", "Route reflector logs"]
    other = ["The solar panels", "Solar panels are clean", "Panels on the roof"]
    first, _ = top_terms([texts, other], n_terms=5)
    assert "route reflector" in first


def test_background_texts_push_common_words_down() -> None:
    clusters = [["deploy the service today", "deploy fixes"], ["bake bread today", "bake cookies"]]
    background = ["today is sunny", "today we rest", "see you today"]
    with_background = top_terms(clusters, background=background, n_terms=2, min_df=1)
    assert "today" not in with_background[0] + with_background[1]
    assert with_background[0][0] == "deploy" and with_background[1][0] == "bake"


def test_a_cluster_of_stop_words_gets_no_terms() -> None:
    found = top_terms([["the and of", "it is what it is"], ["solar panels", "solar power"]])
    assert found == [[], ["solar"]]  # min_df=2: only "solar" is in two texts
    assert top_terms([["the", "and"]]) == [[]]
    assert top_terms([]) == []


def test_suggested_names_are_short_unique_slugs() -> None:
    assert suggest_label(["bgp", "route maps", "bgp peering"]) == "bgp-route-maps"
    assert suggest_label(["solar", "solar panels", "battery"]) == "solar-battery"
    assert suggest_label([]) == "domain"
    assert suggest_label(["C++", "Café latte"]) == "c-caf-latte"
    taken = {"solar-battery"}
    assert suggest_label(["solar", "battery", "inverter"], taken) == "solar-battery-inverter"
    assert suggest_label(["solar", "battery"], taken) == "solar-battery-2"
    assert suggest_label([], {"domain"}) == "domain-2"


@pytest.mark.parametrize("kwargs", [{"n_terms": 0}, {"min_df": 0}, {"n_terms": "5"}])
def test_bad_term_settings_are_refused(kwargs: dict) -> None:
    with pytest.raises(InvalidInput):
        top_terms([NETWORK], **kwargs)


# --------------------------------------------------------------------------- reductions


def test_unknown_reductions_and_dimensions_are_refused() -> None:
    vectors = np.eye(6, 8, dtype=np.float32)
    with pytest.raises(InvalidInput, match="unknown reduction 'tsne'"):
        reduce_dimensions(vectors, method="tsne")
    with pytest.raises(InvalidInput, match="dims"):
        reduce_dimensions(vectors, dims=0)


def test_umap_without_its_package_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "umap", None)  # makes `import umap` fail as if absent
    with pytest.raises(InvalidInput, match="pip install umap-learn"):
        reduce_dimensions(np.eye(20, 8, dtype=np.float32), method="umap", dims=2)


@pytest.mark.slow  # numba compiles UMAP on first use: minutes on a busy machine
def test_umap_reduces_when_installed() -> None:
    pytest.importorskip("umap")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((60, 16)).astype(np.float32)
    assert reduce_dimensions(vectors, method="umap", dims=3).shape == (60, 3)
