"""Importance from content signals: ordering between kinds of content, bounds, novelty."""

from __future__ import annotations

import random
import statistics
import string
from dataclasses import FrozenInstanceError

import pytest
from fsrs import Rating

from memoryd.cognition.importance import ImportanceWeights, importance_score
from memoryd.cognition.scheduling import initial_rating

TRIVIAL = ["ok thanks", "hi", "Sounds good!", "thx", "lol", "got it, thanks", "k", "hmm"]
PLAIN = [
    "The staging server runs Ubuntu.",
    "The office kitchen has a new coffee machine.",
    "The quarterly report is stored in the shared drive.",
    "The weather in Lisbon was sunny this afternoon.",
    "The frontend repository uses pnpm workspaces.",
    "Our standup happens in the main meeting room.",
]
EXPLICIT = [
    "I prefer short answers without bullet points.",
    "My name is Dana and my pronouns are she/her.",
    "Remember that I am allergic to shellfish.",
    "I always want code examples in TypeScript.",
    "Call me Sam, not Samuel.",
    "From now on, please answer in German.",
]
DECISIONS = [
    "We decided to use PostgreSQL instead of MySQL for the billing service.",
    "Let's go with weekly releases on Thursdays.",
    "The team agreed to drop support for Python 3.8.",
    "We chose Terraform over Pulumi for the new infrastructure.",
]
ERRORS = [
    "The deploy failed with a segfault in libssl.",
    "Traceback: KeyError raised in parse_config() during startup.",
    "The nightly ETL crashed because the disk was full.",
    "Bug: the login page returns a 500 error when the email has a plus sign.",
]


def scores(texts: list[str], novelty: float | None = 1.0) -> list[float]:
    return [importance_score(t, novelty).score for t in texts]


def test_kinds_of_content_are_ordered() -> None:
    trivial, plain = scores(TRIVIAL), scores(PLAIN)
    explicit, decisions, errors = scores(EXPLICIT), scores(DECISIONS), scores(ERRORS)
    assert max(trivial) < min(plain)
    for strong in (explicit, decisions, errors):
        assert min(strong) > max(plain)
        assert statistics.mean(strong) > statistics.mean(plain) + 0.15


def test_scores_land_in_the_scheduling_bands() -> None:
    """Chit-chat starts as Hard, plain facts as Good, explicit statements as Easy."""
    assert all(initial_rating(s) == Rating.Hard for s in scores(TRIVIAL))
    assert all(initial_rating(s) == Rating.Good for s in scores(PLAIN))
    assert all(initial_rating(s) == Rating.Easy for s in scores(EXPLICIT))


def test_plain_fact_is_near_the_default_importance() -> None:
    assert 0.4 <= statistics.mean(scores(PLAIN)) <= 0.55


def test_novelty_raises_importance_monotonically() -> None:
    for text in PLAIN + EXPLICIT + ERRORS:
        values = [importance_score(text, n).score for n in (0.0, 0.25, 0.5, 0.75, 1.0)]
        assert values == sorted(values)
        assert values[-1] > values[0]


def test_unknown_novelty_is_left_out_of_the_formula() -> None:
    result = importance_score("The staging server runs Ubuntu.")
    assert "novelty" not in result.signals
    assert importance_score("The staging server runs Ubuntu.", 0.0).score == pytest.approx(
        result.score
    )
    with pytest.raises(ValueError):
        importance_score("x y z", float("nan"))
    assert importance_score("a b c d", 5.0).signals["novelty"] == 1.0
    assert importance_score("a b c d", -2.0).signals["novelty"] == 0.0


def test_each_signal_adds_with_diminishing_returns() -> None:
    base = importance_score("The build uses the cache.", 1.0).score
    one = importance_score("The build always uses the cache.", 1.0).score
    two = importance_score("Remember: the build must always use the cache.", 1.0).score
    assert base < one < two
    assert two - one < one - base + 1e-9


def test_negated_emphasis_does_not_count() -> None:
    result = importance_score("This note is not important at all.", 1.0)
    assert result.signals["emphasis"] == 0.0
    assert importance_score("This note is important.", 1.0).signals["emphasis"] > 0


def test_signals_and_reasons_name_what_fired() -> None:
    result = importance_score("Remember that we decided to ship v2.1 after the outage.", 1.0)
    assert result.signals["emphasis"] > 0
    assert result.signals["explicit"] == 1.0
    assert result.signals["decision"] == 1.0
    assert result.signals["error"] > 0
    assert result.signals["specificity"] > 0
    assert any(r.startswith("decision:") for r in result.reasons)
    assert any(r.startswith("error:outage") for r in result.reasons)


def test_score_is_always_within_bounds() -> None:
    rng = random.Random(5)
    texts = ["", "   ", "!!!", "x" * 100_000, " ".join(["always never must critical"] * 200)]
    for _ in range(200):
        n = rng.randint(0, 60)
        texts.append("".join(rng.choice(string.printable) for _ in range(n)))
    for text in texts:
        for novelty in (None, 0.0, 1.0):
            assert 0.0 <= importance_score(text, novelty).score <= 1.0


def test_weights_are_frozen_and_change_the_result() -> None:
    weights = ImportanceWeights()
    with pytest.raises(FrozenInstanceError):
        weights.base = 0.9  # type: ignore[misc]
    silent = ImportanceWeights(base=0.0, emphasis=0.0, explicit=0.0, error=0.0, decision=0.0,
                               specificity=0.0, novelty=0.0)
    assert importance_score("I always prefer tabs; we decided it.", 1.0, silent).score == 0.0
    loud = ImportanceWeights(explicit=1.0)
    assert importance_score("I prefer tabs for indentation.", 1.0, loud).score == 1.0
