"""The ranking bench's own arithmetic (bench/recall): fitting, reliability, neighbour vectors,
and its vectorised BM25 against memoryd's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.recall.candidates import TermIndex, bm25, match  # noqa: E402
from bench.recall.corpus import mixed  # noqa: E402
from bench.recall.fit import fit, reliability  # noqa: E402
from bench.recall.pipeline import Pool  # noqa: E402
from memoryd.retrieval.bm25 import Candidate, CorpusStats, bm25_scores  # noqa: E402
from memoryd.retrieval.tokens import Tokenizer  # noqa: E402


def test_reliability_bins_and_brier() -> None:
    prob = np.array([0.05, 0.05, 0.95, 0.95])
    labels = np.array([0.0, 0.0, 1.0, 0.0])
    r = reliability(prob, labels, bins=2)
    assert r["brier"] == pytest.approx((0.05**2 * 2 + 0.05**2 + 0.95**2) / 4, abs=1e-5)
    assert [row["n"] for row in r["rows"]] == [2, 2]
    assert r["rows"][1]["observed"] == 0.5 and r["positives"] == 1


def test_fit_learns_non_negative_weights() -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, size=(4000, 5))
    logit = -4 + 6 * x[:, 0] + 2 * x[:, 2]  # only cosine and coverage matter
    y = (rng.uniform(0, 1, 4000) < 1 / (1 + np.exp(-logit))).astype(np.int8)
    model = fit([Pool(np.arange(4000), x, y)])
    assert all(w >= 0 for w in model.weights)
    assert model.weights[0] == pytest.approx(6, abs=1.0) and model.weights[2] == pytest.approx(2, abs=0.7)
    assert model.weights[1] < 0.7 and model.weights[3] < 0.7


def test_mixed_vectors_stay_in_the_session() -> None:
    plain = np.eye(3, dtype=np.float32)
    same = object()
    nb = [(None, same), (same, None), (None, None)]  # 0-1 one session, 2 alone
    out = mixed(plain, nb, 0.5, 0.5)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    assert out[0, 1] > 0 and out[1, 0] > 0 and out[2, 2] == pytest.approx(1.0)


def test_vectorised_bm25_equals_memoryd_bm25() -> None:
    texts = ["Deploys go out on Tuesdays after standup", "The cat sat on the mat with another cat",
             "Standup is at nine; deploys wait for the review", "Nothing to see here"]
    tok = Tokenizer()
    index = TermIndex.build(texts, tok)
    terms = tok.query_terms("when do deploys and standup happen, cat?")
    m = match(index, terms)
    fast = bm25(index, m, 5.0, 1.0)
    stats = CorpusStats(len(texts), index.average, {t: int(d) for t, d in zip(m.terms, m.df)})
    cands = [Candidate(str(d), int(index.lengths[d]), dict(index.terms[d])) for d in m.docs]
    assert fast == pytest.approx(bm25_scores(terms, cands, stats, k1=5.0, b=1.0))


def test_engine_section_arithmetic() -> None:
    """Backend agreement and what a recall threshold keeps, on hand-made rankings."""
    from bench.recall.candidates import Query
    from bench.recall.engine_bench import key
    from bench.recall.engine_eval import agreement, at_threshold

    left = {"q1": [("a", 0.5), ("b", 0.1)], "q2": [("c", 0.2)]}
    right = {"q1": [("a", 0.5000001), ("b", 0.1)], "q2": [("d", 0.2)]}
    got = agreement(left, right)
    assert (got["identical_top10"], got["same_top10_ties_aside"]) == (1, 1)
    assert got["max_score_difference"] == pytest.approx(1e-7)

    def query(kind: str, evidence: list[int]) -> Query:
        return Query(conv=1, kind=kind, ability="x", text=kind, evidence=evidence, groups={},
                     cosines={})

    answerable, unrelated = query("answerable", [0]), query("unrelated", [])
    pos = {1: {"m0": 0, "m1": 1}}
    ranked = {key(answerable): [("m0", 0.02), ("m1", 0.001)], key(unrelated): [("m1", 0.002)]}
    labels = {key(answerable): {0}, key(unrelated): set()}
    r = at_threshold([answerable, unrelated], ranked, pos, labels, 0.003)
    assert (r["hit_precision"], r["hit_recall"], r["answerable_keep_evidence"]) == (1.0, 1.0, 1.0)
    assert r["empty_block"]["unrelated"] == 1.0 and r["mean_hits_kept"] == 0.5


def test_a_memory_written_through_smart_ingest_stands_for_the_messages_it_took_in() -> None:
    from types import SimpleNamespace

    from bench.recall.engine_eval import messages_held

    corpus = SimpleNamespace(ids=["m0", "m1", "m2"])
    pos = {1: {"m0": 0, "m1": 1, "m2": 2}}
    held = messages_held({1: corpus}, pos, {"m1": "m0"})  # m1 was reinforced into m0
    assert held[1]["m0"] == [0, 1] and held[1]["m2"] == [2]
    assert messages_held({1: corpus}, pos, {})[1] == {"m0": [0], "m1": [1], "m2": [2]}
