"""Cognitive re-ranking that never costs recall: retention, recency and importance break
ties of calibrated relevance, and associations only fill free slots.

A hit's relevance is a calibrated probability (:mod:`memoryd.retrieval.relevance`), so the
cognitive signals do not compete with it in a weighted sum: they blend into a bonus in
[0, 1] (``retention`` is :func:`scheduling.retention_score`, the FSRS-6 curve blended with
dual strength; ``recency`` halves every ``half_life_days`` since the memory was last
updated; ``importance`` is the memory's own). By default the bonus only orders hits that
tie on relevance and cosine (copies of a memory: the fresher, better kept one first); with
``rank_close_margin`` > 0 it may also move a hit past hits whose relevance is within that
margin of its own (:func:`order_within_margin`), and never lets a fresh but unrelated memory
outrank a relevant one. Measured through Engine.search on three kinds of data in
bench/results/recall_engine.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memoryd.cognition.scheduling import retention_score
from memoryd.models import Memory, SearchHit, as_utc


@dataclass(frozen=True)
class RankingWeights:
    """How much each signal counts in the near-tie bonus (only their ratios matter)."""

    retention: float = 0.05
    recency: float = 0.05
    importance: float = 0.05
    half_life_days: float = 30.0


def recency(updated_at: datetime, now: datetime, half_life_days: float) -> float:
    """1.0 now, 0.5 after one half-life, decaying exponentially (future times count as now)."""
    age_days = max(0.0, (as_utc(now) - as_utc(updated_at)).total_seconds() / 86400.0)
    return 0.5 ** (age_days / half_life_days)


# --------------------------------------------------------------------------- never costs recall
#
# With a calibrated relevance (memoryd.retrieval.relevance: P(relevant) in [0, 1]), the
# cognitive signals no longer compete with relevance in one weighted sum. They only break
# near-ties: each hit's order key is ``logit(relevance) + margin * bonus`` with ``bonus`` in
# [0, 1]. Closeness is measured in log-odds because calibrated probabilities of the same
# quality differ in scale (0.02 vs 0.03 is as close a call as 0.40 vs 0.50): a hit whose
# odds of being relevant exceed another's by more than a factor ``exp(margin)`` always
# stays above it, and the reported score stays the calibrated relevance.

#: How close (in log-odds) two calibrated relevances must be for the cognitive signals to
#: reorder them. 0: they only break ties that remain after the cosine (copies of a memory).
#: With rank fusion (memoryd.retrieval.relevance) relevances tie often (the 3rd of one side
#: and the 3rd of the other), and letting the bonus (on the bench stores: recency) break such
#: ties instead of the cosine cost hit@1 and MRR on all three data sets; every margin tried
#: (0.1, 0.25, 0.5, 1) lost hit@5 or hit@10 on at least one (bench/results/recall_engine.md,
#: "near-tie margin"). ``rank_close_margin`` turns the reorder on.
DEFAULT_CLOSE_MARGIN = 0.0
_EPS = 1e-9


def logit(p: float) -> float:
    """log(p / (1 - p)), with p clipped away from 0 and 1."""
    q = min(1.0 - _EPS, max(_EPS, p))
    return math.log(q / (1.0 - q))


def cognitive_bonus(memory: Memory, now: datetime, weights: RankingWeights,
                    retention: float | None = None) -> float:
    """Retention, recency and importance of one memory blended into [0, 1] by ``weights``
    (``retention``: the memory's :func:`retention_score` at ``now``, when already known)."""
    total = weights.retention + weights.recency + weights.importance
    if total <= 0:
        return 0.0
    if retention is None:
        retention = retention_score(memory.state, now)
    value = (
        weights.retention * retention
        + weights.recency * recency(memory.updated_at, now, weights.half_life_days)
        + weights.importance * memory.importance
    ) / total
    return min(1.0, max(0.0, value))


def order_within_margin(relevance: Sequence[float], bonus: Sequence[float],
                        margin: float = DEFAULT_CLOSE_MARGIN,
                        lift: Sequence[float] | None = None,
                        ties: Sequence[float] | None = None) -> list[int]:
    """Indices by ``logit(relevance) + margin * bonus + lift``, best first; equal keys by
    ``ties`` (e.g. the cosine, higher first), then by the bonus, then in input order.

    ``relevance`` holds calibrated probabilities. A hit whose log-odds exceed another's by
    more than ``margin`` plus the largest ``lift`` is never placed below it, whatever the
    bonuses (each is clamped to [0, 1]). ``lift`` (log-odds, each >= 0) carries what the
    query itself asks for, e.g. the time it names (:mod:`memoryd.retrieval.when`).

        >>> order_within_margin([0.80, 0.78, 0.30], [0.0, 1.0, 1.0], margin=0.25)
        [1, 0, 2]
    """
    lift = [0.0] * len(relevance) if lift is None else list(lift)
    if not len(relevance) == len(bonus) == len(lift):
        raise ValueError("relevance, bonus and lift need one value per hit")
    if not margin >= 0 or any(not x >= 0 for x in lift):
        raise ValueError(f"margin and lift must be >= 0, got {margin!r} and {lift!r}")
    if ties is not None and len(ties) != len(relevance):
        raise ValueError("ties need one value per hit")
    keys = [logit(r) + margin * min(1.0, max(0.0, b)) + x
            for r, b, x in zip(relevance, bonus, lift)]
    second = [0.0] * len(keys) if ties is None else list(ties)
    return sorted(range(len(keys)), key=lambda i: (-keys[i], -second[i], -bonus[i]))


def rescore_calibrated(hits: list[SearchHit], now: datetime, weights: RankingWeights,
                       margin: float = DEFAULT_CLOSE_MARGIN,
                       lift: Sequence[float] | None = None) -> list[SearchHit]:
    """Reorder hits ranked by a calibrated relevance (their ``fused_score``): cognition breaks
    near-ties only.

    Each hit keeps its scores and gets ``retention`` filled in. Hits of equal relevance are
    ordered by their cosine, and the bonus breaks what is still tied. A hit moves
    in proportion to how much fresher, better kept or more important it really is: the
    bonuses are not rescaled across the hits, so memories written minutes apart (whose
    bonuses differ by almost nothing) keep their relevance order. (Rescaling them to [0, 1]
    gives such differences the whole margin: at margin 0.1 it costs 2 of 355 BEAM questions
    at hit@5 on BEAM with the earlier ranking, while the unscaled bonus cost none.)
    """
    retention = [retention_score(h.memory.state, now) for h in hits]
    bonus = [cognitive_bonus(h.memory, now, weights, r) for h, r in zip(hits, retention)]
    order = order_within_margin([h.fused_score for h in hits], bonus, margin, lift,
                                [h.semantic_similarity or 0.0 for h in hits])
    return [hits[i].model_copy(update={"retention": retention[i]}) for i in order]


def spread(values: Sequence[float]) -> list[float]:
    """Values rescaled to [0, 1] by the smallest and largest (all 0 when they are equal)."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [0.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def place_associations(direct: list[SearchHit], associated: list[SearchHit],
                       limit: int) -> list[SearchHit]:
    """Direct hits first (their order kept), associated memories only in the slots left.

    Spreading activation may surface related memories, but never pushes a memory the
    query itself found out of the first ``limit``.
    """
    seen = {h.memory.id for h in direct}
    extra = [h for h in associated if h.memory.id not in seen]
    return direct[:limit] + extra[: max(0, limit - len(direct))]
