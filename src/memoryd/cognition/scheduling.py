"""FSRS-6 scheduling plus Bjork dual strength, on ONE forgetting curve.

Every decay in memoryd goes through :func:`retention`, the FSRS-6 power curve

    R(t, S) = (1 + FACTOR * t / S) ** (-w20),   FACTOR = 0.9 ** (-1 / w20) - 1

with ``t`` in *fractional* days and the weights read from ``fsrs.Scheduler().parameters``
(never hard-coded). ``S`` is the stability: the number of days after which R = 0.9.

A memory's :class:`~memoryd.models.SchedulingState` carries two pairs of strengths:

* the FSRS pair (``stability``, ``difficulty``), changed only by *reviews*: creation,
  :func:`promote` ("this helped / is correct": a Good review) and :func:`demote`
  ("wrong / stale": an Again review, a lapse). The curve retention is
  ``R(now - last_review, stability)``.
* the Bjork pair: ``storage_strength`` (0..10, how well learned; only grows through use and
  confirmation) and ``retrieval_strength`` (0..1, how accessible right now). Retrieval strength
  decays on the same curve from the last time it was written (``max(last_review,
  last_accessed)``), with a stability stretched by storage strength: well-learned memories lose
  accessibility more slowly (Bjork's "new theory of disuse").

Being returned by a search (:func:`on_retrieved`) is the testing effect, but a *small* one:
it never touches FSRS stability or ``last_review``, it counts at most once per memory per
session, and its gains shrink as storage strength grows and as the memory was accessed more
recently. Vestige's #155 (88% of a store pinned at retention >= 0.95 because every retrieval
was a full strengthening) is therefore impossible by construction; explicit feedback
(promote/demote) carries most of the weight. ``tests/test_cognition_scheduling.py`` simulates
it.

All functions are pure: they take ``now`` (never read the clock) and return new states
(``model_copy(update=...)``). What a state means at a moment, its memory state (active,
dormant, ...) and its storage tier, is :mod:`memoryd.cognition.states`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from fsrs import Card, Rating, Scheduler, State

from memoryd.models import SchedulingState, as_utc

__all__ = [
    "DEFAULT_PARAMS",
    "Rating",
    "SchedulingParams",
    "curve_retention",
    "demote",
    "fsrs_weights",
    "idle_days",
    "initial_rating",
    "initial_state",
    "on_retrieved",
    "promote",
    "retention",
    "retention_score",
    "retrieval_strength_now",
    "review",
    "weighted_strength",
]

STABILITY_MIN = 0.1
"""Smallest stability in days (2.4 h); FSRS itself allows 0.001, which would make R vanish."""
STABILITY_MAX = 36500.0
"""Largest stability in days (100 years), FSRS's own maximum interval."""
_SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class SchedulingParams:
    """Tunables of scheduling and dual strength. Defaults are what the simulation supports.

    Creation:
        easy_importance: importance at or above which a new memory starts with FSRS's *Easy*
            initial stability (w3 = 8.3 days) instead of *Good* (w2 = 2.3 days). 0.7: the
            top of the importance scale (explicit "remember", decisions, preferences).
        hard_importance: importance below which a new memory starts as *Hard* (w1 = 1.3 days).
            0.3: chit-chat and low-signal observations fade faster.
        initial_storage_strength: storage strength of a new memory; 1.0 = the model default,
            so a new memory is "encoded once" and earns the rest by use and confirmation.

    Retrieval (the testing effect, deliberately small):
        retrieval_storage_gain: largest storage-strength gain of one retrieval (0.3, 3% of the
            0..10 scale). Multiplied by ``(1 - storage/10)`` (diminishing returns) and by the
            spacing factor below.
        retrieval_spacing_floor: the spacing factor is ``floor + (1 - floor) * (1 - r)``
            where ``r`` is the current retrieval strength: a memory that is already highly
            accessible (just accessed) gains little (0.2 of the maximum), one that had faded
            gains the most (the spacing effect).
        retrieval_gain: share of the gap to 1 that a retrieval closes in retrieval strength
            (0.5): accessible again, but not reset to 1 the way a confirmation is.
        anonymous_session_minutes: without a session id, retrievals closer together than this
            count as one session (30 min, a typical agent turn burst).

    Explicit feedback (carries most of the weight):
        promote_rating: the FSRS rating of a promote ("this helped" / "this is correct").
            Good: a sound recall. Easy would multiply the stability gain by w16 = 1.87 and is
            left to callers that have a stronger signal.
        promote_storage_gain: storage-strength gain of a promote, times ``(1 - storage/10)``
            (1.0, i.e. ~3x a retrieval at its best).
        demote_retrieval_factor: retrieval strength is multiplied by this on demote (0.3).
        demote_storage_factor: storage strength is multiplied by this on demote (0.7). Vestige
            *adds* 0.3 on a lapse (a failed recall is a desirable difficulty); here demote
            means "wrong or stale", a judgement against the memory, so it loses strength.

    Blends:
        retention_weights: (curve, retrieval, storage/10) weights of :func:`retention_score`,
            the number ranking uses. (0.6, 0.3, 0.1): the FSRS curve, driven by explicit
            reviews, dominates; recent use adds up to 0.3 and long-term use 0.1. A fresh
            memory scores ~0.91; reaching 0.95 needs a recent review AND high storage
            strength, i.e. repeated confirmation, never retrieval alone.
        accessibility_weights / state thresholds: Vestige's memory states
            (:func:`memoryd.cognition.states.memory_state`),
            0.5*retention + 0.3*retrieval + 0.2*storage/10; active >= 0.7, dormant >= 0.4,
            silent >= 0.1, else unavailable.
        storage_decay_stretch: retrieval strength decays with stability
            ``S * (1 + stretch * storage/10)``; 1.0 = a fully learned memory keeps its
            accessibility twice as long.

    Tiers (see :func:`memoryd.cognition.states.tier_for`):
        hot_score / hot_days: hot if retention_score >= 0.7 or touched within 14 days.
        warm_score / warm_days: warm if retention_score >= 0.45 or touched within 90 days;
            otherwise cold. With the FSRS-6 tail, an untouched normal memory (S = 2.3 d)
            is warm after two weeks and cold after roughly 8 months; a promoted one far later.

    fsrs_parameters: the 21 FSRS-6 weights; None = the fsrs package defaults.
    """

    easy_importance: float = 0.7
    hard_importance: float = 0.3
    initial_storage_strength: float = 1.0

    retrieval_storage_gain: float = 0.3
    retrieval_spacing_floor: float = 0.2
    retrieval_gain: float = 0.5
    anonymous_session_minutes: float = 30.0

    promote_rating: Rating = Rating.Good
    promote_storage_gain: float = 1.0
    demote_retrieval_factor: float = 0.3
    demote_storage_factor: float = 0.7

    retention_weights: tuple[float, float, float] = (0.6, 0.3, 0.1)
    accessibility_weights: tuple[float, float, float] = (0.5, 0.3, 0.2)
    active_threshold: float = 0.7
    dormant_threshold: float = 0.4
    silent_threshold: float = 0.1
    storage_decay_stretch: float = 1.0

    hot_score: float = 0.7
    hot_days: float = 14.0
    warm_score: float = 0.45
    warm_days: float = 90.0

    fsrs_parameters: tuple[float, ...] | None = None


DEFAULT_PARAMS = SchedulingParams()
STORAGE_MAX = 10.0


@lru_cache(maxsize=8)
def _scheduler(parameters: tuple[float, ...] | None) -> Scheduler:
    """An FSRS scheduler without fuzzing (deterministic), cached per weight vector."""
    if parameters is None:
        return Scheduler(enable_fuzzing=False)
    return Scheduler(parameters=parameters, enable_fuzzing=False)


def fsrs_weights(params: SchedulingParams = DEFAULT_PARAMS) -> tuple[float, ...]:
    """The 21 FSRS-6 weights in use (from ``fsrs.Scheduler().parameters`` by default)."""
    return tuple(_scheduler(params.fsrs_parameters).parameters)


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _clamp_stability(value: float) -> float:
    return _clamp(value, STABILITY_MIN, STABILITY_MAX)


def retention(
    stability_days: float,
    elapsed_days: float,
    params: SchedulingParams = DEFAULT_PARAMS,
) -> float:
    """FSRS-6 retrievability after ``elapsed_days`` (fractional) at ``stability_days``.

    ``R = (1 + FACTOR * t / S) ** (-w20)`` with ``FACTOR = 0.9 ** (-1 / w20) - 1``, so that
    R = 0.9 exactly when t = S. S is clamped to [0.1, 36500]; negative t counts as 0.
    """
    w20 = fsrs_weights(params)[20]
    factor = 0.9 ** (-1.0 / w20) - 1.0
    s = _clamp_stability(stability_days)
    t = max(0.0, elapsed_days)
    return (1.0 + factor * t / s) ** (-w20)


def _days_between(earlier: datetime | None, now: datetime) -> float:
    """Fractional days from ``earlier`` to ``now`` (0 when unknown or in the future)."""
    if earlier is None:
        return 0.0
    return max(0.0, (as_utc(now) - as_utc(earlier)).total_seconds() / _SECONDS_PER_DAY)


def _strength_anchor(state: SchedulingState) -> datetime | None:
    """When retrieval strength was last written: the later of last review and last access."""
    stamps = [t for t in (state.last_review, state.last_accessed) if t is not None]
    return max(as_utc(t) for t in stamps) if stamps else None


def idle_days(state: SchedulingState, now: datetime) -> float:
    """Fractional days since the memory was last touched (reviewed or accessed); 0 when it
    never was."""
    anchor = _strength_anchor(state)
    return _days_between(anchor, now) if anchor is not None else 0.0


def curve_retention(
    state: SchedulingState, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> float:
    """FSRS retention of ``state`` at ``now``: the curve since its last review.

    A state that was never reviewed (``last_review`` None) counts as reviewed just now (1.0);
    the engine sets ``last_review`` at creation through :func:`initial_state`.
    """
    return retention(state.stability, _days_between(state.last_review, now), params)


def retrieval_strength_now(
    state: SchedulingState, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> float:
    """Current retrieval strength: the stored value decayed on the same FSRS curve.

    Decays from the time it was last written (the later of ``last_review`` and
    ``last_accessed``) with stability ``S * (1 + storage_decay_stretch * storage/10)``.
    """
    stretch = 1.0 + params.storage_decay_stretch * state.storage_strength / STORAGE_MAX
    elapsed = _days_between(_strength_anchor(state), now)
    value = state.retrieval_strength * retention(state.stability * stretch, elapsed, params)
    return _clamp(value, 0.0, 1.0)


def weighted_strength(
    state: SchedulingState,
    now: datetime,
    weights: tuple[float, float, float],
    params: SchedulingParams = DEFAULT_PARAMS,
) -> float:
    """``w0*curve + w1*retrieval_now + w2*storage/10``, clamped to [0, 1].

    The blend behind :func:`retention_score` and
    :func:`memoryd.cognition.states.accessibility`.
    """
    w_curve, w_retrieval, w_storage = weights
    value = (
        w_curve * curve_retention(state, now, params)
        + w_retrieval * retrieval_strength_now(state, now, params)
        + w_storage * _clamp(state.storage_strength, 0.0, STORAGE_MAX) / STORAGE_MAX
    )
    return _clamp(value, 0.0, 1.0)


def retention_score(
    state: SchedulingState, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> float:
    """The retention ranking uses: ``0.6*curve + 0.3*retrieval_now + 0.1*storage/10``.

    Weights are ``params.retention_weights``; the result is in [0, 1]. See
    :class:`SchedulingParams` for why the curve dominates.
    """
    return weighted_strength(state, now, params.retention_weights, params)


def initial_rating(importance: float, params: SchedulingParams = DEFAULT_PARAMS) -> Rating:
    """The FSRS rating whose initial stability a new memory gets.

    Easy for importance >= 0.7, Hard below 0.3, Good otherwise (never Again: a memory being
    written was not forgotten).
    """
    if importance >= params.easy_importance:
        return Rating.Easy
    if importance < params.hard_importance:
        return Rating.Hard
    return Rating.Good


def initial_state(
    importance: float, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> SchedulingState:
    """Scheduling state of a memory created at ``now`` with the given importance.

    Stability and difficulty are FSRS's initial values for :func:`initial_rating`
    (computed by ``fsrs.Scheduler.review_card`` on a new card): Good -> S = w2 = 2.31 d,
    D = 2.12; Easy -> S = w3 = 8.30 d; Hard -> S = w1 = 1.29 d. ``last_review`` = ``now``
    (encoding is the first exposure); ``reps`` = 0 (no review since).
    """
    now = as_utc(now)
    rating = initial_rating(importance, params)
    card = Card(card_id=0, state=State.Learning, step=0, due=now)
    reviewed, _ = _scheduler(params.fsrs_parameters).review_card(card, rating, now)
    assert reviewed.stability is not None and reviewed.difficulty is not None
    return SchedulingState(
        stability=_clamp_stability(reviewed.stability),
        difficulty=reviewed.difficulty,
        reps=0,
        lapses=0,
        last_review=now,
        storage_strength=params.initial_storage_strength,
        retrieval_strength=1.0,
        access_count=0,
        last_accessed=None,
    )


def _fsrs_step(
    state: SchedulingState, rating: Rating, now: datetime, params: SchedulingParams
) -> tuple[float, float]:
    """FSRS-6 (stability, difficulty) after a review with ``rating`` at ``now``."""
    scheduler = _scheduler(params.fsrs_parameters)
    if state.last_review is None:
        card = Card(card_id=0, state=State.Learning, step=0, due=now)
        reviewed, _ = scheduler.review_card(card, rating, now)
        assert reviewed.stability is not None and reviewed.difficulty is not None
        return _clamp_stability(reviewed.stability), reviewed.difficulty
    last = min(as_utc(state.last_review), now)  # clock skew: never review "before" it
    card = Card(
        card_id=0,
        state=State.Review,
        step=None,
        stability=_clamp_stability(state.stability),
        difficulty=state.difficulty,
        due=last,
        last_review=last,
    )
    reviewed, _ = scheduler.review_card(card, rating, now)
    assert reviewed.stability is not None and reviewed.difficulty is not None
    stability, difficulty = reviewed.stability, reviewed.difficulty
    elapsed = _days_between(last, now)
    if elapsed >= 1.0:
        # The scheduler's own FSRS-6 stability formula, fed R on fractional days (private API;
        # fsrs is pinned < 7 and the review tests compare against review_card on whole days).
        stability = scheduler._next_stability(
            difficulty=state.difficulty,
            stability=_clamp_stability(state.stability),
            retrievability=retention(state.stability, elapsed, params),
            rating=rating,
        )
    return _clamp_stability(stability), difficulty


def review(
    state: SchedulingState,
    rating: Rating,
    now: datetime,
    params: SchedulingParams = DEFAULT_PARAMS,
) -> SchedulingState:
    """One FSRS-6 review of the memory at ``now``: new stability, difficulty, reps, lapses.

    The memory is an FSRS card in the Review state. ``fsrs.Scheduler.review_card`` computes
    the new difficulty and, for reviews less than a day after the last one, FSRS-6's
    short-term stability. For reviews a day or more later it would compute retrievability on
    whole days (``timedelta.days``: R = 1.0 at 23 h, 1 d 23 h counted as 1 d), so there the
    stability is recomputed with the scheduler's own FSRS-6 stability function
    (``Scheduler._next_stability``, the only private call; fsrs is pinned < 7) fed the
    retrievability from :func:`retention` on fractional days. ``last_review`` moves to
    ``now`` (the memory was re-exposed, so the curve restarts); retrieval strength is carried
    over at its decayed value so that moving its anchor changes nothing. A state never
    reviewed is treated as a new card.
    """
    now = as_utc(now)
    stability, difficulty = _fsrs_step(state, rating, now, params)
    return state.model_copy(
        update={
            "stability": stability,
            "difficulty": difficulty,
            "reps": state.reps + 1,
            "lapses": state.lapses + (1 if rating == Rating.Again else 0),
            "last_review": now,
            "retrieval_strength": retrieval_strength_now(state, now, params),
        }
    )


def on_retrieved(
    state: SchedulingState,
    now: datetime,
    session_id: str | None,
    already_strengthened_in_session: bool,
    params: SchedulingParams = DEFAULT_PARAMS,
) -> SchedulingState:
    """Record that a search returned this memory: the (small) testing effect.

    * Always: ``access_count`` + 1.
    * At most once per memory per session (``already_strengthened_in_session`` is the
      caller's record for ``session_id``; without a session id, retrievals within
      ``anonymous_session_minutes`` of the last access count as the same session): nothing
      else changes, not even ``last_accessed``, so repeated hits in a burst cannot refresh
      the decay either.
    * Otherwise, with ``r`` the current retrieval strength and ``s`` the storage strength:
      storage += ``retrieval_storage_gain * (1 - s/10) * (floor + (1-floor) * (1 - r))``
      (diminishing with storage, and with recent access); retrieval strength
      ``r + retrieval_gain * (1 - r)``; ``last_accessed = now``.

    FSRS stability and ``last_review`` are never touched: only reviews move the curve.
    """
    now = as_utc(now)
    counted = state.model_copy(update={"access_count": state.access_count + 1})
    if already_strengthened_in_session:
        return counted
    if session_id is None and state.last_accessed is not None:
        gap = now - as_utc(state.last_accessed)
        if timedelta(0) <= gap < timedelta(minutes=params.anonymous_session_minutes):
            return counted
    r = retrieval_strength_now(state, now, params)
    s = _clamp(state.storage_strength, 0.0, STORAGE_MAX)
    spacing = params.retrieval_spacing_floor + (1.0 - params.retrieval_spacing_floor) * (1.0 - r)
    storage = s + params.retrieval_storage_gain * (1.0 - s / STORAGE_MAX) * spacing
    return counted.model_copy(
        update={
            "storage_strength": _clamp(storage, 0.0, STORAGE_MAX),
            "retrieval_strength": _clamp(r + params.retrieval_gain * (1.0 - r), 0.0, 1.0),
            "last_accessed": now,
        }
    )


def promote(
    state: SchedulingState, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> SchedulingState:
    """"This helped / this is correct": an FSRS ``promote_rating`` (Good) review, storage
    strength + ``promote_storage_gain * (1 - s/10)``, retrieval strength back to 1."""
    reviewed = review(state, params.promote_rating, now, params)
    s = _clamp(state.storage_strength, 0.0, STORAGE_MAX)
    storage = s + params.promote_storage_gain * (1.0 - s / STORAGE_MAX)
    return reviewed.model_copy(
        update={"storage_strength": _clamp(storage, 0.0, STORAGE_MAX), "retrieval_strength": 1.0}
    )


def demote(
    state: SchedulingState, now: datetime, params: SchedulingParams = DEFAULT_PARAMS
) -> SchedulingState:
    """"Wrong or stale": a lapse that lowers every strength at once.

    Stability and difficulty take FSRS-6's values for an Again review at ``now`` (stability
    cut to the post-lapse stability, difficulty up; reps and lapses + 1). Unlike
    :func:`review` with Again, ``last_review`` does NOT move: FSRS assumes a failed card is
    re-learned on the spot (R back to 1), but a memory judged wrong was not re-learned, so
    its curve keeps its age and drops at once under the smaller stability. The stored
    retrieval strength is multiplied by ``demote_retrieval_factor`` (0.3; its anchor stays
    too) and storage strength by ``demote_storage_factor`` (0.7). The retention score after
    a demote is therefore never higher than before it.
    """
    now = as_utc(now)
    stability, difficulty = _fsrs_step(state, Rating.Again, now, params)
    return state.model_copy(
        update={
            "stability": stability,
            "difficulty": difficulty,
            "reps": state.reps + 1,
            "lapses": state.lapses + 1,
            "retrieval_strength": _clamp(
                state.retrieval_strength * params.demote_retrieval_factor, 0.0, 1.0
            ),
            "storage_strength": _clamp(
                state.storage_strength * params.demote_storage_factor, 0.0, STORAGE_MAX
            ),
        }
    )
