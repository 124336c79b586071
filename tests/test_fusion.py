"""Reciprocal Rank Fusion and MMR: order, normalisation, tie-breaking, weights."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.retrieval.fusion import reciprocal_rank_fusion
from memoryd.retrieval.mmr import mmr_order
from memoryd.store.base import KeywordHit, VectorHit


def kw(*ids: str) -> list[KeywordHit]:
    return [KeywordHit(i, float(100 - n)) for n, i in enumerate(ids)]


def vec(*ids: str) -> list[VectorHit]:
    return [VectorHit(i, 0.9 - n * 0.1) for n, i in enumerate(ids)]


def order(fused) -> list[str]:
    return [f.memory_id for f in fused]


# --------------------------------------------------------------------------- RRF


def test_empty_lists() -> None:
    assert reciprocal_rank_fusion([], []) == []


def test_scores_follow_the_formula_and_are_normalised() -> None:
    k = 60
    fused = {f.memory_id: f for f in reciprocal_rank_fusion(kw("a", "b", "c"), vec("b", "a", "d"), k=k)}
    best = 2.0  # both lists have weight 1
    raw = {
        "a": 1 / (k + 1) + 1 / (k + 2),
        "b": 1 / (k + 2) + 1 / (k + 1),
        "c": 1 / (k + 3),
        "d": 1 / (k + 3),
    }
    for memory_id, value in raw.items():
        assert fused[memory_id].fused == pytest.approx(value * (k + 1) / best)
    assert fused["a"].keyword_rank == 1 and fused["a"].semantic_rank == 2
    assert fused["c"].semantic_rank is None and fused["c"].semantic_similarity is None
    assert fused["d"].keyword_rank is None and fused["d"].keyword_score is None
    assert fused["d"].semantic_similarity == pytest.approx(0.7)
    assert fused["a"].keyword_score == 100.0


def test_first_in_every_list_scores_one() -> None:
    fused = reciprocal_rank_fusion(kw("x", "y"), vec("x", "z"))
    assert fused[0].memory_id == "x"
    assert fused[0].fused == pytest.approx(1.0)
    assert all(0.0 < f.fused <= 1.0 + 1e-12 for f in fused)
    # a single list: its first item also scores 1
    assert reciprocal_rank_fusion(kw("only"), [])[0].fused == pytest.approx(1.0)
    assert reciprocal_rank_fusion([], vec("only"))[0].fused == pytest.approx(1.0)


@pytest.mark.parametrize("k", [1, 10, 60, 1000])
def test_order_is_by_fused_score(k: int) -> None:
    fused = reciprocal_rank_fusion(kw("a", "b", "c", "d"), vec("c", "e", "a", "f"), k=k)
    scores = [f.fused for f in fused]
    assert scores == sorted(scores, reverse=True)
    # in both lists beats any item in one list at the same or worse rank
    assert order(fused).index("a") < order(fused).index("b")
    assert order(fused).index("c") < order(fused).index("e")
    assert set(order(fused)) == {"a", "b", "c", "d", "e", "f"}


def test_ties_keep_keyword_order_then_vector_order() -> None:
    # a: kw 1 + vec 3; c: kw 3 + vec 1 -> exactly equal sums; a came first in keyword.
    fused = reciprocal_rank_fusion(kw("a", "b", "c"), vec("c", "d", "a"))
    assert order(fused)[:2] == ["a", "c"]
    # b (kw 2) and d (vec 2) tie: the keyword one first
    assert order(fused)[2:] == ["b", "d"]
    # deterministic
    assert order(reciprocal_rank_fusion(kw("a", "b", "c"), vec("c", "d", "a"))) == order(fused)


def test_weights_shift_the_order() -> None:
    keyword, vector = kw("k1", "k2"), vec("v1", "v2")
    assert order(reciprocal_rank_fusion(keyword, vector, keyword_weight=2.0))[0] == "k1"
    assert order(reciprocal_rank_fusion(keyword, vector, vector_weight=2.0))[0] == "v1"
    only_vec = reciprocal_rank_fusion(keyword, vector, keyword_weight=0.0)
    assert order(only_vec)[:2] == ["v1", "v2"]
    assert only_vec[0].fused == pytest.approx(1.0)


def test_found_by_both_lists_beats_found_by_one() -> None:
    fused = reciprocal_rank_fusion(kw("a", "b"), vec("a"))
    assert order(fused) == ["a", "b"]


# --------------------------------------------------------------------------- MMR


def _unit(rows: list[list[float]]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_mmr_lambda_one_is_relevance_order() -> None:
    rel = [0.9, 0.8, 0.7, 0.1]
    vectors = _unit([[1, 0, 0], [1, 0.01, 0], [0, 1, 0], [0, 0, 1]])
    assert mmr_order(rel, vectors, lam=1.0) == [0, 1, 2, 3]


def test_mmr_skips_near_duplicates() -> None:
    rel = [1.0, 0.99, 0.98, 0.5]
    vectors = _unit([[1, 0, 0], [1, 0.001, 0], [1, 0, 0.001], [0, 1, 0]])
    picked = mmr_order(rel, vectors, lam=0.5, limit=2)
    assert picked == [0, 3]
    assert mmr_order(rel, vectors, lam=0.5)[:2] == [0, 3]
    assert sorted(mmr_order(rel, vectors, lam=0.5)) == [0, 1, 2, 3]


def test_mmr_edge_cases() -> None:
    assert mmr_order([], np.zeros((0, 3), np.float32)) == []
    assert mmr_order([0.5], _unit([[1, 0, 0]])) == [0]
    assert mmr_order([0.5, 0.4], _unit([[1, 0, 0], [0, 1, 0]]), limit=0) == []
    # equal relevance, zero vectors ("no vector"): no penalty, stable order
    assert mmr_order([0.3, 0.3, 0.3], np.zeros((3, 4), np.float32)) == [0, 1, 2]
