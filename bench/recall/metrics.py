"""Retrieval metrics: hit@k, recall@k, first-evidence rank, knowledge-update order, aggregation."""

from __future__ import annotations

import math
import statistics
from typing import Iterable, Mapping, Sequence

KS = (1, 5, 10)
METRICS = ("hit@1", "hit@5", "hit@10", "recall@5", "recall@10")


def hit_at(ranked: Sequence[object], evidence: Iterable[object], k: int) -> float:
    """1.0 if any evidence id is among the first ``k`` results, else 0.0."""
    gold = set(evidence)
    return 1.0 if any(r in gold for r in ranked[:k]) else 0.0


def recall_at(ranked: Sequence[object], evidence: Iterable[object], k: int) -> float:
    """Share of (distinct) evidence ids among the first ``k`` results."""
    gold = set(evidence)
    if not gold:
        raise ValueError("recall needs at least one evidence id")
    return len(gold & set(ranked[:k])) / len(gold)


def first_rank(ranked: Sequence[object], evidence: Iterable[object]) -> int | None:
    """1-based rank of the first evidence id in ``ranked`` (None if absent)."""
    gold = set(evidence)
    for i, r in enumerate(ranked, start=1):
        if r in gold:
            return i
    return None


def question_metrics(ranked: Sequence[object], evidence: Sequence[object]) -> dict[str, float]:
    """Every metric of one question."""
    return {
        "hit@1": hit_at(ranked, evidence, 1),
        "hit@5": hit_at(ranked, evidence, 5),
        "hit@10": hit_at(ranked, evidence, 10),
        "recall@5": recall_at(ranked, evidence, 5),
        "recall@10": recall_at(ranked, evidence, 10),
    }


def mean_metrics(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Mean of each metric over questions (micro average); empty input gives NaN-free zeros."""
    if not rows:
        return {m: 0.0 for m in METRICS}
    return {m: sum(r[m] for r in rows) / len(rows) for m in METRICS}


def aggregate(per_question: Sequence[Mapping[str, object]]) -> dict[str, dict[str, float]]:
    """``{"overall": {...}, <ability>: {...}}`` from rows with ``ability`` and ``metrics``."""
    by_ability: dict[str, list[Mapping[str, float]]] = {}
    for row in per_question:
        by_ability.setdefault(str(row["ability"]), []).append(row["metrics"])  # type: ignore[arg-type]
    out = {"overall": mean_metrics([r["metrics"] for r in per_question])}  # type: ignore[misc]
    for ability in sorted(by_ability):
        out[ability] = mean_metrics(by_ability[ability])
    return out


def update_order(ranked: Sequence[object], original: Iterable[object], updated: Iterable[object]) -> str:
    """Where a knowledge update ranks against the original fact in ``ranked``.

    ``updated_first`` (updated present and above the original, or original absent),
    ``original_first``, or ``neither`` (no evidence of either kind in the list).
    Ids in both groups are ignored on the original side.
    """
    up = set(updated)
    orig = set(original) - up
    r_up = first_rank(ranked, up)
    r_orig = first_rank(ranked, orig)
    if r_up is None and r_orig is None:
        return "neither"
    if r_orig is None or (r_up is not None and r_up < r_orig):
        return "updated_first"
    return "original_first"


def median_rank(ranks: Sequence[int | None]) -> float | None:
    """Median first-evidence rank, missing ranks counted as worse than any rank (inf).

    None when more than half are missing (the median is then 'not found').
    """
    if not ranks:
        return None
    values = [math.inf if r is None else float(r) for r in ranks]
    med = statistics.median(values)
    return None if math.isinf(med) else med


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign-test p-value for ``wins`` vs ``losses`` (ties dropped)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(0, k + 1)) / 2**n
    return min(1.0, 2 * tail)
