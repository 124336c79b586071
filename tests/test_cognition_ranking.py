"""The cognitive layer only breaks near-ties of calibrated relevance; associations never
push a direct hit out of the first ``limit``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.cognition.ranking import (
    RankingWeights,
    logit,
    cognitive_bonus,
    order_within_margin,
    place_associations,
    rescore_calibrated,
)
from memoryd.models import Memory, SearchHit

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(unit, unit), min_size=1, max_size=40), st.sampled_from([0.0, 0.1, 0.25, 1.0]))
def test_clearly_more_relevant_hit_is_never_moved_below(pairs, margin) -> None:
    relevance = [r for r, _ in pairs]
    bonus = [b for _, b in pairs]
    order = order_within_margin(relevance, bonus, margin)
    assert sorted(order) == list(range(len(pairs)))
    position = {i: p for p, i in enumerate(order)}
    for a in range(len(pairs)):
        for b in range(len(pairs)):
            if logit(relevance[a]) - logit(relevance[b]) > margin + 1e-9:
                assert position[a] < position[b]


def test_close_hits_are_reordered_by_the_bonus() -> None:
    assert order_within_margin([0.80, 0.78, 0.30], [0.0, 1.0, 1.0], margin=0.25) == [1, 0, 2]
    assert order_within_margin([0.80, 0.70, 0.30], [0.0, 1.0, 1.0], margin=0.25) == [0, 1, 2]
    assert order_within_margin([0.021, 0.02], [0.0, 1.0], margin=0.25) == [1, 0]  # close odds
    assert order_within_margin([0.5, 0.5], [0.0, 0.0]) == [0, 1]  # ties keep input order


def test_ties_go_to_the_cosine_then_to_the_bonus() -> None:
    # The default margin (0) reorders nothing of different relevance, whatever the bonus.
    assert order_within_margin([0.31, 0.30], [0.0, 1.0]) == [0, 1]
    # Equal relevance (with rank fusion: the 3rd of one side and the 3rd of the other): the
    # cosine decides, not the bonus; equal cosine too (a copy): the bonus decides.
    assert order_within_margin([0.3, 0.3], [1.0, 0.0], ties=[0.4, 0.6]) == [1, 0]
    assert order_within_margin([0.3, 0.3], [0.0, 1.0], ties=[0.5, 0.5]) == [1, 0]
    assert order_within_margin([0.3, 0.3], [0.0, 1.0]) == [1, 0]
    with pytest.raises(ValueError, match="ties"):
        order_within_margin([0.3, 0.3], [0.0, 1.0], ties=[0.5])


def test_equal_relevance_is_ordered_by_cosine_before_recency() -> None:
    older = hit("older", 0.3, age_days=100).model_copy(update={"semantic_similarity": 0.62})
    newer = hit("newer", 0.3, age_days=1).model_copy(update={"semantic_similarity": 0.48})
    ranked = rescore_calibrated([newer, older], NOW, RankingWeights())
    assert [h.memory.id for h in ranked] == ["older", "newer"]
    twin = hit("twin", 0.3, age_days=1).model_copy(update={"semantic_similarity": 0.62})
    ranked = rescore_calibrated([older, twin], NOW, RankingWeights())
    assert [h.memory.id for h in ranked] == ["twin", "older"]  # a copy: the fresher first


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="one value per hit"):
        order_within_margin([0.5], [0.1, 0.2])
    with pytest.raises(ValueError, match="margin"):
        order_within_margin([0.5], [0.1], margin=-0.1)


def memory(mid: str, age_days: float, importance: float = 0.5) -> Memory:
    when = NOW - timedelta(days=age_days)
    return Memory(id=mid, content=mid, created_at=when, updated_at=when, importance=importance)


def hit(mid: str, score: float, age_days: float, association: bool = False) -> SearchHit:
    return SearchHit(memory=memory(mid, age_days), score=score, fused_score=score, association=association)


def test_current_fact_overtakes_a_stale_one_of_close_relevance() -> None:
    weights = RankingWeights()
    stale, current = hit("old", 0.605, age_days=200), hit("new", 0.60, age_days=1)
    ranked = rescore_calibrated([stale, current], NOW, weights, margin=0.1)
    assert [h.memory.id for h in ranked] == ["new", "old"]
    assert [h.score for h in ranked] == [0.60, 0.605]  # the score stays the relevance
    assert all(h.retention is not None for h in ranked)
    # The move is in proportion to the real difference: a wider gap in relevance holds.
    wider = rescore_calibrated([hit("old", 0.62, 200), hit("new", 0.60, 1)], NOW, weights,
                               margin=0.1)
    assert [h.memory.id for h in wider] == ["old", "new"]


def test_memories_written_minutes_apart_keep_their_relevance_order() -> None:
    earlier, later = hit("earlier", 0.3001, age_days=1.0), hit("later", 0.3, age_days=0.999)
    ranked = rescore_calibrated([earlier, later], NOW, RankingWeights(), margin=0.1)
    assert [h.memory.id for h in ranked] == ["earlier", "later"]


def test_fresh_but_unrelated_memory_does_not_overtake() -> None:
    ranked = rescore_calibrated([hit("relevant", 0.7, 400), hit("fresh", 0.2, 0)], NOW,
                                RankingWeights(), margin=0.1)
    assert [h.memory.id for h in ranked] == ["relevant", "fresh"]


def test_bonus_is_a_share() -> None:
    weights = RankingWeights()
    assert 0.0 <= cognitive_bonus(memory("a", 10_000, 0.0), NOW, weights) < cognitive_bonus(
        memory("b", 0, 1.0), NOW, weights) <= 1.0
    assert cognitive_bonus(memory("a", 0), NOW, RankingWeights(0.0, 0.0, 0.0)) == 0.0


def test_associations_only_fill_free_slots() -> None:
    direct = [hit(f"d{i}", 0.5 - i / 100, 1) for i in range(3)]
    linked = [hit("a1", 0.9, 1, association=True), hit("d0", 0.9, 1, association=True)]
    assert [h.memory.id for h in place_associations(direct, linked, 3)] == ["d0", "d1", "d2"]
    assert [h.memory.id for h in place_associations(direct, linked, 5)] == ["d0", "d1", "d2", "a1"]
    assert place_associations([], linked, 0) == []


def test_spread_rescales_to_unit() -> None:
    from memoryd.cognition.ranking import spread

    assert spread([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert spread([0.3, 0.3]) == [0.0, 0.0]
    assert spread([]) == []
