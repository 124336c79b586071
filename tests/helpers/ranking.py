"""Comparing two rankings "ties aside": memories with equal scores may trade places."""

from __future__ import annotations

import math
from collections.abc import Sequence

Ranked = Sequence[tuple[str, float]]  # (memory id, score), best first


def tie_group(ranked: Ranked, position: int, *, rel: float = 1e-9) -> set[str]:
    """Ids whose score equals (within ``rel``) the score at ``position``."""
    score = ranked[position][1]
    return {mid for mid, s in ranked if math.isclose(s, score, rel_tol=rel, abs_tol=1e-12)}


def assert_same_top(got: Ranked, want: Ranked, n: int, *, rel: float = 1e-9) -> None:
    """``got``'s first ``n`` equal ``want``'s, position by position, except that a memory may
    stand where another of the same score stands in ``want`` (ties aside)."""
    got, want = list(got)[:n], list(want)
    assert len(got) == min(n, len(want)), (len(got), len(want))
    for i, (mid, score) in enumerate(got):
        assert math.isclose(score, want[i][1], rel_tol=rel, abs_tol=1e-12), (i, score, want[i])
        assert mid in tie_group(want, i, rel=rel), (i, mid, want[i])
    assert len({mid for mid, _ in got}) == len(got)
