"""FSRS-6 + dual strength: the curve, reviews against the fsrs package, and saturation."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fsrs import Card, Rating, Scheduler, State

from memoryd.cognition.scheduling import (
    DEFAULT_PARAMS,
    curve_retention,
    demote,
    initial_rating,
    initial_state,
    on_retrieved,
    promote,
    retention,
    retention_score,
    retrieval_strength_now,
    review,
)
from memoryd.cognition.states import memory_state, tier_for
from memoryd.models import SchedulingState

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
W = Scheduler().parameters


def days(n: float) -> datetime:
    return T0 + timedelta(days=n)


# --- the curve -------------------------------------------------------------------------------


@pytest.mark.parametrize("stability", [0.1, 0.5, 2.3065, 30.0, 365.0, 36500.0])
def test_retention_is_ninety_percent_at_t_equal_s(stability: float) -> None:
    assert retention(stability, stability) == pytest.approx(0.9, abs=1e-12)
    assert retention(stability, 0.0) == 1.0


def test_retention_uses_fsrs_weights_and_fsrs_formula() -> None:
    w20 = W[20]
    factor = 0.9 ** (-1 / w20) - 1
    for s, t in [(2.3, 7.25), (10.0, 0.5), (0.7, 100.0)]:
        assert retention(s, t) == pytest.approx((1 + factor * t / s) ** (-w20), rel=1e-12)
    # On whole days it agrees with the package's own retrievability.
    card = Card(card_id=1, state=State.Review, stability=5.0, difficulty=5.0, due=T0, last_review=T0)
    for d in (1, 3, 40):
        assert retention(5.0, d) == pytest.approx(Scheduler().get_card_retrievability(card, days(d)))


def test_retention_counts_fractional_days_where_fsrs_counts_whole_days() -> None:
    card = Card(card_id=1, state=State.Review, stability=1.0, difficulty=5.0, due=T0, last_review=T0)
    at_23h = T0 + timedelta(hours=23)
    assert Scheduler().get_card_retrievability(card, at_23h) == 1.0  # the package's floor
    assert retention(1.0, 23 / 24) < 0.91
    assert retention(1.0, 1.5) < retention(1.0, 1.0)


def test_retention_is_monotone_and_clamps_stability() -> None:
    values = [retention(3.0, t) for t in np.linspace(0, 3650, 200)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert retention(0.0001, 2.0) == retention(0.1, 2.0)
    assert retention(1e9, 2.0) == retention(36500.0, 2.0)
    assert retention(3.0, -5.0) == 1.0


# --- creation and reviews against the fsrs package --------------------------------------------


@pytest.mark.parametrize(
    ("importance", "rating"), [(0.1, Rating.Hard), (0.5, Rating.Good), (0.9, Rating.Easy)]
)
def test_initial_state_takes_fsrs_initial_stability_for_importance(
    importance: float, rating: Rating
) -> None:
    state = initial_state(importance, T0)
    assert initial_rating(importance) == rating
    assert state.stability == pytest.approx(W[rating - 1])
    expected_d = Scheduler()._initial_difficulty(rating=rating, clamp=True)
    assert state.difficulty == pytest.approx(expected_d)
    assert state.last_review == T0 and state.reps == 0 and state.lapses == 0
    assert curve_retention(state, T0) == 1.0


def _fsrs_review(state: SchedulingState, rating: Rating, when: datetime) -> Card:
    card = Card(
        card_id=1,
        state=State.Review,
        stability=state.stability,
        difficulty=state.difficulty,
        due=state.last_review,
        last_review=state.last_review,
    )
    out, _ = Scheduler(enable_fuzzing=False).review_card(card, rating, when)
    return out


@pytest.mark.parametrize("rating", [Rating.Again, Rating.Hard, Rating.Good, Rating.Easy])
@pytest.mark.parametrize("elapsed", [0.25, 1.0, 4.0, 30.0])
def test_review_matches_fsrs_on_whole_days_and_same_day(rating: Rating, elapsed: float) -> None:
    state = initial_state(0.5, T0)
    ours = review(state, rating, days(elapsed))
    theirs = _fsrs_review(state, rating, days(elapsed))
    assert ours.stability == pytest.approx(max(theirs.stability, 0.1), rel=1e-9)
    assert ours.difficulty == pytest.approx(theirs.difficulty, rel=1e-9)
    assert ours.reps == 1 and ours.lapses == (1 if rating == Rating.Again else 0)
    assert ours.last_review == days(elapsed)


def test_review_uses_fractional_elapsed_days() -> None:
    state = initial_state(0.5, T0)
    at_3 = review(state, Rating.Good, days(3)).stability
    at_3_9 = review(state, Rating.Good, days(3.9)).stability
    at_4 = review(state, Rating.Good, days(4)).stability
    # fsrs alone would floor 3.9 days to 3 and return exactly at_3.
    assert _fsrs_review(state, Rating.Good, days(3.9)).stability == pytest.approx(at_3)
    assert at_3 < at_3_9 < at_4


def test_functions_do_not_mutate_their_input() -> None:
    state = initial_state(0.5, T0)
    before = state.model_dump()
    review(state, Rating.Good, days(2))
    promote(state, days(2))
    demote(state, days(2))
    on_retrieved(state, days(2), "s", False)
    assert state.model_dump() == before


def test_naive_datetimes_are_utc() -> None:
    naive = initial_state(0.5, T0.replace(tzinfo=None))
    assert naive.last_review == T0
    assert retention_score(naive, days(3).replace(tzinfo=None)) == retention_score(naive, days(3))


# --- retrieval: small, once per session, diminishing ------------------------------------------


def test_retrieval_counts_once_per_session() -> None:
    state = initial_state(0.5, T0)
    first = on_retrieved(state, days(5), "s1", already_strengthened_in_session=False)
    again = on_retrieved(first, days(5.01), "s1", already_strengthened_in_session=True)
    assert first.storage_strength > state.storage_strength
    assert again.access_count == 2
    assert again.storage_strength == first.storage_strength
    assert again.retrieval_strength == first.retrieval_strength
    assert again.last_accessed == first.last_accessed


def test_anonymous_retrievals_in_a_burst_count_once() -> None:
    state = initial_state(0.5, T0)
    first = on_retrieved(state, days(5), None, False)
    burst = on_retrieved(first, days(5) + timedelta(minutes=10), None, False)
    later = on_retrieved(first, days(5) + timedelta(hours=3), None, False)
    assert burst.storage_strength == first.storage_strength and burst.access_count == 2
    assert later.storage_strength > first.storage_strength


def test_retrieval_never_moves_the_fsrs_curve() -> None:
    state = initial_state(0.5, T0)
    for i in range(50):
        state = on_retrieved(state, days(1 + i), f"s{i}", False)
    assert state.stability == pytest.approx(W[2])
    assert state.last_review == T0 and state.reps == 0


def test_retrieval_gains_diminish_with_storage_and_with_recency() -> None:
    state = initial_state(0.5, T0)
    gains = []
    for i in range(40):
        nxt = on_retrieved(state, days(7 * (i + 1)), f"s{i}", False)
        gains.append(nxt.storage_strength - state.storage_strength)
        state = nxt
    assert all(g > 0 for g in gains)
    assert gains[-1] < 0.75 * gains[1]
    assert all(b < a for a, b in itertools.pairwise(gains[3:]))
    assert gains[0] <= DEFAULT_PARAMS.retrieval_storage_gain
    # Spacing: the same memory gains less when retrieved an hour after the last access.
    base = on_retrieved(initial_state(0.5, T0), days(30), "a", False)
    soon = on_retrieved(base, days(30) + timedelta(hours=1), "b", False)
    late = on_retrieved(base, days(90), "b", False)
    gain_soon = soon.storage_strength - base.storage_strength
    gain_late = late.storage_strength - base.storage_strength
    assert 0 < gain_soon < gain_late


def test_storage_strength_stays_below_ten_after_thousands_of_retrievals() -> None:
    state = initial_state(0.5, T0)
    for i in range(5000):
        state = on_retrieved(state, T0 + timedelta(hours=i + 1), f"s{i}", False)
    assert 0 < state.storage_strength < 10.0
    assert state.retrieval_strength <= 1.0
    assert retention_score(state, T0 + timedelta(hours=5001)) < 0.95


# --- explicit feedback carries the weight -----------------------------------------------------


@pytest.mark.parametrize("age", [1.0, 7.0, 30.0, 180.0])
def test_promote_moves_retention_much_more_than_a_retrieval(age: float) -> None:
    state = initial_state(0.5, T0)
    now = days(age)
    base = retention_score(state, now)
    retrieved = on_retrieved(state, now, "s", False)
    promoted = promote(state, now)
    d_retrieved = retention_score(retrieved, now) - base
    d_promoted = retention_score(promoted, now) - base
    assert d_retrieved > 0
    assert d_promoted > 3 * d_retrieved
    # And it lasts: a month later the promoted memory is far ahead.
    later = now + timedelta(days=30)
    gap_promoted = retention_score(promoted, later) - retention_score(state, later)
    gap_retrieved = retention_score(retrieved, later) - retention_score(state, later)
    assert gap_promoted > 5 * gap_retrieved
    assert promoted.stability > 2 * state.stability


def test_demote_is_a_lapse_that_never_raises_retention() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        state = initial_state(float(rng.uniform()), T0)
        t = 0.0
        for _ in range(int(rng.integers(0, 6))):
            t += float(rng.exponential(10))
            state = promote(state, days(t)) if rng.random() < 0.5 else on_retrieved(
                state, days(t), None, False
            )
        now = days(t + float(rng.exponential(10)))
        demoted = demote(state, now)
        assert demoted.lapses == state.lapses + 1
        assert demoted.stability < state.stability
        assert demoted.storage_strength < state.storage_strength
        assert retrieval_strength_now(demoted, now) < retrieval_strength_now(state, now)
        assert retention_score(demoted, now) < retention_score(state, now)
        for later in (1, 30, 365):
            assert retention_score(demoted, now + timedelta(days=later)) < retention_score(
                state, now + timedelta(days=later)
            )


def test_promote_after_demote_recovers() -> None:
    state = demote(initial_state(0.5, T0), days(10))
    recovered = promote(state, days(20))
    assert recovered.stability > state.stability
    assert retention_score(recovered, days(20)) > retention_score(state, days(20)) + 0.2


# --- states and tiers -------------------------------------------------------------------------


def test_memory_states_follow_accessibility() -> None:
    fresh = initial_state(0.5, T0)
    assert memory_state(fresh, T0) == "active"
    assert memory_state(fresh, days(60)) == "dormant"
    assert memory_state(fresh, days(3 * 365)) == "silent"
    long_gone = SchedulingState(
        stability=0.1, retrieval_strength=0.0, storage_strength=0.0, last_review=T0
    )
    assert memory_state(long_gone, days(100 * 365)) == "unavailable"


def test_tiers_cool_with_disuse_and_stay_hot_with_use() -> None:
    fresh = initial_state(0.5, T0)
    assert tier_for(fresh, days(1)) == "hot"
    assert tier_for(fresh, days(60)) == "warm"
    assert tier_for(fresh, days(365)) == "cold"
    used = on_retrieved(fresh, days(360), "s", False)
    assert tier_for(used, days(365)) == "hot"
    confirmed = fresh
    for i in range(4):
        confirmed = promote(confirmed, days(10 * (i + 1)))
    assert tier_for(confirmed, days(365)) in ("hot", "warm")
    assert retention_score(confirmed, days(365)) > retention_score(fresh, days(365))


# --- the saturation simulation (Vestige #155) --------------------------------------------------

N_MEMORIES = 5000
N_SEARCHES = 1000
TOP_K = 10
SATURATION = 0.95


def _simulate(policy: str, seed: int = 7) -> tuple[list[SchedulingState], np.ndarray, list[float]]:
    """Create 5,000 memories over 30 days, then run 1,000 searches over the next 90 days.

    Each search returns 10 distinct memories drawn from a Zipf(1) popularity law (a few
    memories come back in hundreds of searches, half the store never does). Sessions: a
    search continues the current session with probability 0.8, otherwise starts a new
    one; 10% of searches carry no session id. ``policy``: "memoryd" applies
    :func:`on_retrieved` with a per-session record; "strengthen_every_hit" treats every hit
    as a full confirmation (:func:`promote`), which is what pinned Vestige's store.
    Returns final states, per-memory hit counts and the store-wide saturated share after
    every 100 searches.
    """
    rng = np.random.default_rng(seed)
    created = np.sort(rng.uniform(0, 30, N_MEMORIES))
    importance = rng.choice([0.2, 0.5, 0.8], p=[0.15, 0.7, 0.15], size=N_MEMORIES)
    states = [initial_state(float(importance[i]), days(float(created[i]))) for i in range(N_MEMORIES)]
    weights = 1.0 / np.arange(1, N_MEMORIES + 1)
    popularity = np.empty(N_MEMORIES)
    popularity[rng.permutation(N_MEMORIES)] = weights / weights.sum()
    hits = np.zeros(N_MEMORIES, dtype=int)
    strengthened: set[tuple[int, str]] = set()
    session = 0
    shares: list[float] = []
    for q in range(N_SEARCHES):
        now = days(30 + 90 * (q + 1) / N_SEARCHES)
        if rng.random() < 0.2:
            session += 1
        sid = None if rng.random() < 0.1 else f"s{session}"
        for i in rng.choice(N_MEMORIES, TOP_K, replace=False, p=popularity):
            i = int(i)
            hits[i] += 1
            if policy == "memoryd":
                already = sid is not None and (i, sid) in strengthened
                states[i] = on_retrieved(states[i], now, sid, already)
                if sid is not None:
                    strengthened.add((i, sid))
            else:
                states[i] = promote(states[i], now)
        if (q + 1) % 100 == 0:
            scores = [retention_score(s, now) for s in states]
            shares.append(float(np.mean(np.array(scores) >= SATURATION)))
    return states, hits, shares


def test_retrieval_alone_cannot_saturate_the_store() -> None:
    """5,000 memories, 1,000 random searches x 10 hits, random sessions, 90 simulated days.

    Bound: at every checkpoint at most 1% of the store has retention_score >= 0.95, and at
    the end at most 2% of the 500 most-retrieved memories are at >= 0.95 on either the
    ranking score or the raw FSRS curve. Why these numbers: in memoryd, 0.95 is reserved for
    memories that were *confirmed* recently and repeatedly (a fresh memory scores 0.91);
    retrieval alone never moves the FSRS curve and its strength gains shrink towards an
    asymptote, so a retrieval-only workload should put (almost) nothing there. The 1-2%
    slack only tolerates parameter retuning. The same workload with Vestige's policy
    (strengthen every hit as a confirmation) pins the large majority of the
    most-retrieved memories at curve retention >= 0.95 (Vestige #155 saw 88%): asserted
    below so the bound is shown to have teeth.
    """
    end = days(120)
    states, hits, shares = _simulate("memoryd")
    assert sum(s.access_count for s in states) == N_SEARCHES * TOP_K == hits.sum()
    assert max(shares) <= 0.01
    top = np.argsort(-hits)[:500]
    top_scores = np.array([retention_score(states[i], end) for i in top])
    top_curve = np.array([curve_retention(states[i], end) for i in top])
    assert np.mean(top_scores >= SATURATION) <= 0.02
    assert np.mean(top_curve >= SATURATION) <= 0.02
    assert max(s.storage_strength for s in states) < 10.0
    # Retrieval still carries a ranking signal: heavily used memories outrank unused ones.
    unused = [retention_score(states[i], end) for i in np.flatnonzero(hits == 0)]
    assert np.mean(top_scores) > np.mean(unused)

    naive_states, naive_hits, naive_shares = _simulate("strengthen_every_hit")
    naive_top = np.argsort(-naive_hits)[:500]
    naive_curve = np.array([curve_retention(naive_states[i], end) for i in naive_top])
    assert np.mean(naive_curve >= SATURATION) >= 0.8
    assert naive_shares[-1] > 2 * max(shares) + 0.01
