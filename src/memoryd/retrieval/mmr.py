"""Maximal Marginal Relevance: trade a little relevance for less repetition."""

from __future__ import annotations

import numpy as np


def mmr_order(
    relevance: list[float], vectors: np.ndarray, *, lam: float = 0.7, limit: int | None = None
) -> list[int]:
    """Indices of the candidates in MMR order.

    Each step picks ``argmax lam * rel(i) - (1 - lam) * max_j sim(i, j)`` over the
    candidates not yet picked, with ``j`` ranging over those already picked.
    Relevance is min-max scaled to [0, 1] so it is comparable with cosine similarity.
    Rows of ``vectors`` must be unit length (zero rows mean "no vector": no penalty).
    """
    n = len(relevance)
    limit = n if limit is None else min(limit, n)
    if n == 0 or limit == 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    span = rel.max() - rel.min()
    rel = (rel - rel.min()) / span if span > 0 else np.ones(n)
    sims = np.asarray(vectors, dtype=np.float32) @ np.asarray(vectors, dtype=np.float32).T
    chosen: list[int] = []
    max_sim = np.full(n, -np.inf)
    remaining = np.ones(n, dtype=bool)
    for _ in range(limit):
        penalty = np.where(np.isfinite(max_sim), max_sim, 0.0)
        score = lam * rel - (1.0 - lam) * penalty
        score[~remaining] = -np.inf
        pick = int(np.argmax(score))
        chosen.append(pick)
        remaining[pick] = False
        max_sim = np.maximum(max_sim, sims[pick])
    return chosen
