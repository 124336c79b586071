"""The assignment threshold on BEAM: the one discovery suggests, and a sweep around it.

Rule (memoryd.domains.assign.suggest_threshold): the highest threshold, in steps of 0.01,
that leaves at most 10% of the memories without a domain; higher thresholds give fewer
extra domains, so this is the most selective threshold meeting the coverage bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.domains.data import Pairs
from bench.domains.metrics import threshold_row
from memoryd.domains.assign import Domain, score_matrix

SWEEP = [round(float(x), 3) for x in np.arange(0.15, 0.551, 0.025)]


def sweep(
    domains: list[Domain],
    vectors: np.ndarray,
    truth: np.ndarray,
    pairs: Pairs,
    thresholds: list[float],
) -> list[dict[str, Any]]:
    """One :func:`threshold_row` per threshold."""
    scores = score_matrix(vectors, domains)
    pair_scores = (
        score_matrix(pairs.mixed_vectors, domains),
        score_matrix(pairs.same_vectors, domains),
    )
    return [threshold_row(scores, truth, pairs, pair_scores, t) for t in thresholds]


def best_domains(domains: list[Domain], vectors: np.ndarray) -> np.ndarray:
    """Each memory's most similar domain (no threshold)."""
    return score_matrix(vectors, domains).argmax(axis=1)


def needed_for(rows: list[dict[str, Any]], mixed_both: float) -> dict[str, Any] | None:
    """The highest swept threshold at which ``mixed_both`` of the mixed texts get both domains."""
    ok = [r for r in rows if r["mixed_both"] >= mixed_both]
    return max(ok, key=lambda r: r["threshold"]) if ok else None
