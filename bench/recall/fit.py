"""Fitting and checking the relevance model: logistic regression, CV halves, calibration.

The model is fitted on labelled (query, candidate) pairs (weights kept >= 0): BEAM evidence messages are
positives; every other candidate of the pool, and every candidate of an abstention,
foreign or unrelated query, is a negative.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bench.recall.pipeline import Pool
from memoryd.retrieval.relevance import FEATURES, RelevanceModel

#: Conversations in each cross-validation half (odd / even numbers).
HALVES = {"odd": frozenset(range(1, 21, 2)), "even": frozenset(range(2, 21, 2))}


def fit(pools: Sequence[Pool], columns: Sequence[int] | None = None, l2: float = 1e-5,
        sample_weights: Sequence[float] | None = None) -> RelevanceModel:
    """Logistic regression with every weight >= 0 (more evidence never lowers relevance).

    Minimises the mean log loss plus ``l2`` times the squared weights (L-BFGS-B with
    bounds); features outside ``columns`` get weight 0. ``sample_weights`` (one per pool)
    weigh each pool's pairs.
    """
    cols = list(range(len(FEATURES))) if columns is None else list(columns)
    x = np.vstack([p.x for p in pools])[:, cols]
    y = np.concatenate([p.labels for p in pools]).astype(np.float64)
    if sample_weights is not None:
        w = np.concatenate([np.full(len(p.labels), s) for p, s in zip(pools, sample_weights)])
        theta = logistic_weighted(x, y, w, l2)
    else:
        theta = logistic(x, y, l2)
    weights = [0.0] * len(FEATURES)
    for j, col in enumerate(cols):
        weights[col] = float(theta[j + 1])
    return RelevanceModel(intercept=float(theta[0]), weights=tuple(weights))


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-5) -> np.ndarray:
    """(intercept, weights...) of a logistic regression with weights >= 0 over the columns
    of ``x``: mean log loss plus ``l2`` times the squared weights, L-BFGS-B with bounds."""
    from scipy.optimize import minimize

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] + x @ theta[1:]
        p = 1.0 / (1.0 + np.exp(-z))
        value = np.mean(np.logaddexp(0.0, z) - y * z) + l2 * float(theta[1:] @ theta[1:])
        grad_z = (p - y) / len(y)
        grad = np.concatenate([[grad_z.sum()], x.T @ grad_z + 2 * l2 * theta[1:]])
        return float(value), grad

    start = np.zeros(x.shape[1] + 1)
    bounds = [(None, None)] + [(0.0, None)] * x.shape[1]
    result = minimize(loss, start, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 2000})
    return result.x


def reliability(prob: np.ndarray, labels: np.ndarray, bins: int = 10) -> dict:
    """Reliability table (equal-width bins), Brier score and expected calibration error."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    rows = []
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (prob >= lo) & ((prob < hi) if hi < 1.0 else (prob <= hi))
        n = int(sel.sum())
        if n == 0:
            rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": 0, "predicted": None, "observed": None})
            continue
        pred, obs = float(prob[sel].mean()), float(labels[sel].mean())
        ece += n / len(prob) * abs(pred - obs)
        rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": n, "predicted": round(pred, 4),
                     "observed": round(obs, 4)})
    brier = float(np.mean((prob - labels) ** 2)) if len(prob) else 0.0
    return {"rows": rows, "brier": round(brier, 5), "ece": round(ece, 4), "pairs": int(len(prob)),
            "positives": int(labels.sum())}


def model_dict(model: RelevanceModel) -> dict:
    """The model as plain numbers (for the JSON and the printed constants)."""
    return {"intercept": round(model.intercept, 4),
            "weights": {f: round(w, 4) for f, w in zip(FEATURES, model.weights)}}


def fit_listwise(pools: Sequence[Pool], columns: Sequence[int] | None = None, l2: float = 1e-4
                 ) -> RelevanceModel:
    """Weights (>= 0) that rank each query's evidence first (softmax over its pool), then a
    Platt scale and intercept fitted on every pair so the output is a probability again.

    The result has the same form as :func:`fit` (a logistic model over the features):
    ``sigmoid(c + a * (w · x))``.
    """
    from scipy.optimize import minimize

    cols = list(range(len(FEATURES))) if columns is None else list(columns)
    ranked = [(p.x[:, cols], p.labels.astype(bool)) for p in pools if p.labels.any() and len(p.labels) > 1]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = 0.0, np.zeros_like(w)
        for x, pos in ranked:
            s = x @ w
            m = s.max()
            e = np.exp(s - m)
            soft = e / e.sum()
            value -= float(np.mean(s[pos]) - (m + np.log(e.sum())))
            grad -= x[pos].mean(axis=0) - soft @ x
        value /= len(ranked)
        grad /= len(ranked)
        return value + l2 * float(w @ w), grad + 2 * l2 * w

    result = minimize(loss, np.ones(len(cols)), jac=True, method="L-BFGS-B",
                      bounds=[(0.0, None)] * len(cols), options={"maxiter": 500})
    w = result.x
    score = [Pool(p.docs, (p.x[:, cols] @ w)[:, None], p.labels) for p in pools]
    platt = _platt(score)
    weights = [0.0] * len(FEATURES)
    for j, col in enumerate(cols):
        weights[col] = float(platt[1] * w[j])
    return RelevanceModel(intercept=float(platt[0]), weights=tuple(weights))


def _platt(pools: Sequence[Pool]) -> tuple[float, float]:
    from scipy.optimize import minimize

    s = np.concatenate([p.x[:, 0] for p in pools])
    y = np.concatenate([p.labels for p in pools]).astype(np.float64)

    def loss(t: np.ndarray) -> tuple[float, np.ndarray]:
        z = t[0] + t[1] * s
        p = 1.0 / (1.0 + np.exp(-z))
        g = (p - y) / len(y)
        return float(np.mean(np.logaddexp(0.0, z) - y * z)), np.array([g.sum(), g @ s])

    r = minimize(loss, np.array([0.0, 1.0]), jac=True, method="L-BFGS-B", bounds=[(None, None), (0.0, None)])
    return float(r.x[0]), float(r.x[1])


def logistic_weighted(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1e-6
                      ) -> np.ndarray:
    """(intercept, weights...) of a logistic regression with weights >= 0 and per-row
    weights ``w``: weighted mean log loss plus ``l2`` times the squared weights."""
    from scipy.optimize import minimize

    share = w / w.sum()

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] + x @ theta[1:]
        p = 1.0 / (1.0 + np.exp(-z))
        value = float(share @ (np.logaddexp(0.0, z) - y * z)) + l2 * float(theta[1:] @ theta[1:])
        grad_z = share * (p - y)
        return value, np.concatenate([[grad_z.sum()], x.T @ grad_z + 2 * l2 * theta[1:]])

    bounds = [(None, None)] + [(0.0, None)] * x.shape[1]
    result = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B",
                      bounds=bounds, options={"maxiter": 2000})
    return result.x
