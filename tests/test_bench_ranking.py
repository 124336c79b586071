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
from memoryd.retrieval.relevance import FEATURES  # noqa: E402
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
    x = rng.uniform(0, 1, size=(4000, len(FEATURES)))
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


def test_engine_runs_arithmetic() -> None:
    """Metrics, backend agreement and what a recall threshold keeps, on hand-made top 10s
    (bench/recall/engine_sets_report.py)."""
    from bench.recall.engine_sets_report import agreement, at_threshold, question_metrics

    m = question_metrics([5, 3, 9], [3, 7])
    assert (m["hit@1"], m["hit@5"], m["recall@10"], m["mrr"]) == (0.0, 1.0, 0.5, 0.5)
    assert question_metrics([], [1])["hit@10"] == 0.0
    left = {"1:0": [[0, 0.5, 0.3], [1, 0.1, 0.2]], "1:1": [[2, 0.2, 0.1]]}
    right = {"1:0": [[0, 0.5000001, 0.3], [1, 0.1, 0.2]], "1:1": [[3, 0.2, 0.1]]}
    got = agreement(left, right)
    assert got["identical_top10"] == 1 and got["max_score_difference"] == pytest.approx(1e-7)
    meta = {"1:0": ("answerable", "fact", [0]), "1:1": ("unrelated", "unrelated", [])}
    run = {"1:0": [[0, 0.9, 0.3], [1, 0.05, 0.2]], "1:1": [[1, 0.02, 0.1]]}
    r = at_threshold(meta, run, 0.17)
    assert (r["precision"], r["recall"], r["questions keeping an answer"]) == (1.0, 1.0, 1.0)
    assert r["empty: unrelated"] == 1.0 and r["hits kept per query"] == 0.5


def test_a_cue_variant_reads_the_shipped_run_for_questions_it_did_not_ask() -> None:
    from bench.recall.engine_sets_report import per_question

    meta = {"1:0": ("answerable", "fact", [4]), "1:1": ("answerable", "fact", [2]),
            "1:2": ("abstention", "abstention", [])}
    shipped = {"1:0": [[4, 0.9, 0.3]], "1:1": [[1, 0.3, 0.2], [2, 0.2, 0.1]]}
    variant = {"1:1": [[2, 0.2, 0.1], [1, 0.3, 0.2]]}  # the cue fired on 1:1 only
    rows = per_question(meta, variant, shipped)
    assert set(rows) == {"1:0", "1:1"}
    assert rows["1:0"]["hit@1"] == 1.0 and rows["1:1"]["mrr"] == 1.0
