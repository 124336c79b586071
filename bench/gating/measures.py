"""Precision, recall and the confusion table of gate decisions, and the fit of its
thresholds on part of the labelled pairs."""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, replace
from typing import Any

from bench.gating.pairs import gate
from memoryd.cognition import gating

DECISIONS = ("reinforce", "update", "supersede", "merge", "create")
# The grid of the fit (GatingParams fields); every combination is tried.
GRID = {
    "reinforce": (0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90),
    "update": (0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90),
    "supersede": (0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75),
    "changed_value": (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75),
    "swap_similarity": (0.80, 0.85, 0.90, 1.01),
    "max_added_words": (0, 1),
}
MIN_REINFORCE_PRECISION = 0.98


def measure(items: list[dict[str, Any]], predicted: list[str]) -> dict[str, Any]:
    """Per decision precision / recall / F1, the confusion table, accuracy, macro-F1 over the
    expected decisions, and the pairs whose new text changes a value yet were folded in."""
    expected = [i["expected"] for i in items]
    confusion = {e: {p: 0 for p in DECISIONS} for e in DECISIONS if e in expected}
    for e, p in zip(expected, predicted):
        confusion[e][p] += 1
    per: dict[str, dict[str, float]] = {}
    for d in DECISIONS:
        tp = sum(e == d and p == d for e, p in zip(expected, predicted))
        n_pred, n_true = predicted.count(d), expected.count(d)
        precision = tp / n_pred if n_pred else math.nan
        recall = tp / n_true if n_true else math.nan
        f1 = 2 * tp / (n_pred + n_true) if n_true else math.nan
        per[d] = {"precision": precision, "recall": recall, "f1": f1, "support": n_true,
                  "predicted": n_pred}
    f1s = [v["f1"] for v in per.values() if v["support"]]
    folded = [i["id"] for i, p in zip(items, predicted)
              if i.get("change") and p in ("reinforce", "merge")]
    return {"n": len(items),
            "accuracy": sum(e == p for e, p in zip(expected, predicted)) / len(items),
            "macro_f1": sum(f1s) / len(f1s), "per_decision": per, "confusion": confusion,
            "changed_folded": folded}


def run(items: list[dict[str, Any]], params: gating.GatingParams) -> dict[str, Any]:
    """The gate on every pair, measured."""
    return measure(items, [gate(i, params).decision for i in items])


def _score(items: list[dict[str, Any]], params: gating.GatingParams) -> float:
    """macro-F1, or -1 when reinforce precision falls below the floor or a changed value
    is folded in (hard limits, not trade-offs)."""
    m = run(items, params)
    precision = m["per_decision"]["reinforce"]["precision"]
    if m["changed_folded"] or (not math.isnan(precision) and precision < MIN_REINFORCE_PRECISION):
        return -1.0
    return m["macro_f1"]


def fit(items: list[dict[str, Any]]) -> tuple[gating.GatingParams, float, list[dict[str, Any]]]:
    """Grid search of the thresholds on ``items``: the best macro-F1 within the hard limits,
    smoothed over neighbouring grid points so that a plateau wins over a spike."""
    names = list(GRID)
    scores: dict[tuple[int, ...], float] = {}
    for index in itertools.product(*(range(len(GRID[n])) for n in names)):
        values = {n: GRID[n][k] for n, k in zip(names, index)}
        scores[index] = _score(items, replace(gating.GatingParams(), **values))
    smoothed = {}
    for index, value in scores.items():
        near = [scores[n] for axis in range(len(names)) for step in (-1, 1)
                if (n := tuple(k + step if a == axis else k
                               for a, k in enumerate(index))) in scores]
        smoothed[index] = 0.5 * value + 0.5 * (sum(near) / len(near) if near else value)
    best = max(smoothed, key=lambda k: (smoothed[k], scores[k]))
    params = replace(gating.GatingParams(), **{n: GRID[n][k] for n, k in zip(names, best)})
    top = sorted(scores.items(), key=lambda kv: -kv[1])[:5]
    top_list = [{**{n: GRID[n][k] for n, k in zip(names, index)}, "macro_f1": round(v, 4)}
                for index, v in top]
    return params, scores[best], top_list


def params_dict(params: gating.GatingParams) -> dict[str, Any]:
    return asdict(params)
