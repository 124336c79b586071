"""Fitting and checking the answer model (:mod:`memoryd.retrieval.answer`): the score a user reads.

Pairs are sampled at a fixed ratio, so that no data set's base rate (how many memories a
store holds, how many of them answer a question) enters the model: for every answerable
question, its answers weigh 1 in all and the other memories of its store weigh
:data:`RATIO` in all, spread evenly (every memory of the store, not only the candidates the
ranking found: the search's top candidates of a large store are harder than a small store's,
a uniform draw is the same on any store). The score is then the probability that a memory
answers a question at even prior odds: its likelihood ratio ``L`` read as ``L / (1 + L)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.recall.fit import logistic_weighted
from bench.recall.pools import Asked
from memoryd.retrieval.answer import ANSWER_READINGS, AnswerModel

RATIO = 1.0


@dataclass
class Pairs:
    """Readings (n, len(ANSWER_READINGS)), labels and weights of sampled pairs."""

    x: np.ndarray
    y: np.ndarray
    w: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence[Pairs]) -> Pairs:
        return cls(np.vstack([p.x for p in parts]), np.concatenate([p.y for p in parts]),
                   np.concatenate([p.w for p in parts]))


def readings_of(a: Asked, documents: int) -> np.ndarray:
    """(cosine, coverage) of every memory of the store (``documents`` memories) for one query:
    coverage is the idf-weighted share of the query's terms held, as
    :func:`memoryd.retrieval.bm25.keyword_evidence` computes it."""
    n = len(a.cosines)
    coverage = np.zeros(n)
    if a.terms and len(a.match.docs):
        idf = np.log1p((documents - np.minimum(a.match.df, documents) + 0.5) / (a.match.df + 0.5))
        if idf.sum() > 0:
            coverage[a.match.docs] = ((a.match.tf > 0) * idf).sum(axis=1) / idf.sum()
    return np.column_stack([a.cosines.astype(np.float64), coverage])


def sample(asked: Sequence[Asked], ratio: float = RATIO) -> Pairs:
    """The fixed-ratio sample of the answerable questions of ``asked``."""
    xs, ys, ws = [], [], []
    for a in asked:
        if a.kind != "answerable" or not a.evidence:
            continue
        x = readings_of(a, len(a.cosines))
        gold = np.zeros(len(x), dtype=bool)
        gold[a.evidence] = True
        if gold.all():
            continue
        xs.append(x)
        ys.append(gold.astype(np.float64))
        ws.append(np.where(gold, 1.0 / gold.sum(), ratio / (~gold).sum()))
    if not xs:
        return Pairs(np.zeros((0, len(ANSWER_READINGS))), np.zeros(0), np.zeros(0))
    return Pairs(np.vstack(xs), np.concatenate(ys), np.concatenate(ws))


def fit_answer(pairs: Pairs) -> AnswerModel:
    """Weighted logistic regression with weights >= 0 over the readings."""
    theta = logistic_weighted(pairs.x, pairs.y, pairs.w)
    return AnswerModel(intercept=float(theta[0]), weights=tuple(float(t) for t in theta[1:]))


def probabilities(model: AnswerModel, x: np.ndarray) -> np.ndarray:
    """P(answers) per row (vectorised :meth:`AnswerModel.probability`)."""
    z = model.intercept + x @ np.asarray(model.weights)
    return 1.0 / (1.0 + np.exp(-z))


def weighted_reliability(prob: np.ndarray, y: np.ndarray, w: np.ndarray, bins: int = 10) -> dict:
    """Reliability table, Brier score and ECE with pair weights (the fixed-ratio sample)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    rows, ece, total = [], 0.0, float(w.sum())
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (prob >= lo) & ((prob < hi) if hi < 1.0 else (prob <= hi))
        mass = float(w[sel].sum())
        if mass == 0:
            rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "weight": 0.0, "predicted": None,
                         "observed": None})
            continue
        pred = float((w[sel] * prob[sel]).sum() / mass)
        obs = float((w[sel] * y[sel]).sum() / mass)
        ece += mass / total * abs(pred - obs)
        rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "weight": round(mass / total, 4),
                     "predicted": round(pred, 4), "observed": round(obs, 4)})
    brier = float((w * (prob - y) ** 2).sum() / total) if total else 0.0
    return {"rows": rows, "brier": round(brier, 4), "ece": round(ece, 4),
            "pairs": int(len(y))}
