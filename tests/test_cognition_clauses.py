"""Reading clauses for the contradiction detector: stems, typed values and their slots,
clause splitting, names and negation scope. (The rules themselves are tested through
``detect`` in test_cognition_gating.py.)"""

from __future__ import annotations

import doctest

import pytest

from memoryd.cognition import clauses, equivalents, novelty, slots, states, words
from memoryd.cognition.clauses import read_clause, split_clauses
from memoryd.cognition.slots import VALUE_STEMS, values_and_slots
from memoryd.cognition.words import stem


@pytest.mark.parametrize("module", [words, slots, clauses, states, equivalents, novelty])
def test_docstring_examples_hold(module: object) -> None:
    failed, tried = doctest.testmod(module)  # type: ignore[arg-type]
    assert tried > 0 and failed == 0


@pytest.mark.parametrize(("word", "expected"), [
    ("Moved", "mov"), ("moving", "mov"), ("running", "run"), ("companies", "company"),
    ("user's", "user"), ("user’s", "user"), ("deployments", "deploy"), ("calls", "call"),
    ("is", "is"), ("quickly", "quick"), ("-", ""),
])
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize(("text", "kind", "value"), [
    ("colour #A1B2C3", "hex", "#a1b2c3"),
    ("at 3:30 pm", "time", "15:30"),
    ("at 7am", "time", "07:00"),
    ("at 11 P.M.", "time", "23:00"),
    ("at 14:05", "time", "14:05"),
    ("on 2024-03-05", "date", "3-5"),
    ("on March 5th, 2024", "date", "3-5"),
    ("on the 5th of March", "date", "3-5"),
    ("on Mondays", "weekday", "monday"),
    ("in April 2024", "month", "4"),
    ("is 12.5%", "percent", "12.5"),
    ("is 10 percent", "percent", "10"),
    ("costs $1,200", "money", "1200"),
    ("costs $1.2k", "money", "1200"),
    ("costs $5 million", "money", "5e+06"),
    ("costs 40 euros", "money", "40"),
    ("runs v2.3.1", "version", "2.3.1"),
    ("has 1,000 rows", "number", "1000"),
    ("has 14k rows", "number", "14000"),
    ("has twelve rows", "number", "12"),
    ("runs nightly", "frequency", "daily"),
    ("runs every week", "frequency", "weekly"),
    ("is grey", "colour", "grey"),
])
def test_values_are_normalised(text: str, kind: str, value: str) -> None:
    values, _ = values_and_slots(text)
    assert values.get(kind) == {value}


def test_a_value_is_read_as_one_kind_only() -> None:
    # Each kind's matches are blanked out before the next kind is read.
    values, _ = values_and_slots("Version v2.3 costs $40 and ships #fff on 2024-03-05")
    assert values == {"hex": {"#fff"}, "date": {"3-5"}, "money": {"40"}, "version": {"2.3"}}


def test_a_value_slot_is_the_content_words_around_it() -> None:
    _, old = values_and_slots("We deploy at 3 pm")
    _, new = values_and_slots("We deploy at 4 pm")
    assert old[("time", "15:00")] & new[("time", "16:00")] == {"deploy"}
    # Four words on either side, stop words left out: "at" counts, "bravo" and "juliet" do not.
    _, far = values_and_slots(
        "alpha bravo charlie delta echo at 7 pm foxtrot golf hotel india juliet")
    assert far[("time", "19:00")] == {
        "charli", "delta", "echo", "foxtrot", "golf", "hotel", "india"}
    # Value words are no slot, except months and weekdays.
    _, counted = values_and_slots("twelve red seats at 3 pm")
    assert counted[("time", "15:00")] == {"seat"}
    _, dated = values_and_slots("on Mondays in March at 3 pm")
    assert dated[("time", "15:00")] == {"monday", "march"}


def test_value_stems_are_the_stems_of_value_words() -> None:
    # A dropped word with one of these stems is a value change, not a plain dropped word.
    assert {"monday", "march", "week", "grey", "twelv"} <= VALUE_STEMS
    assert stem("Mondays") in VALUE_STEMS and stem("deploy") not in VALUE_STEMS


def test_text_without_values() -> None:
    assert values_and_slots("") == ({}, {})
    assert values_and_slots("The user likes tea") == ({}, {})


def test_split_clauses() -> None:
    text = ("Payouts are weekly; fees are low.\n"
            "[Updated 2024-05-01] We use Stripe whereas they use Adyen")
    assert split_clauses(text) == [
        "Payouts are weekly", "fees are low.", "We use Stripe", "they use Adyen"]
    assert split_clauses("") == []
    assert split_clauses("... ?!") == []


def test_names_and_their_slots() -> None:
    clause = read_clause("The server is located in Frankfurt", "", 6)
    assert clause.names == {"frankfurt"}
    assert clause.name_slots == {"frankfurt": {"locat"}}
    # Units and short acronyms are no names; longer all-caps words and product names are.
    assert read_clause("We store logs in S3 and the API uses JSON", "", 6).names == {"json"}
    assert read_clause("The iPhone app uses Kotlin", "", 6).names == {"kotlin"}


def test_a_sentence_initial_capital_is_a_name_only_when_the_other_text_says_so() -> None:
    assert read_clause("Stripe handles payments", "We moved away from Stripe", 6).names == {
        "stripe"}
    assert read_clause("Stripe handles payments", "stripe", 6).names == set()


def test_negation_scope() -> None:
    clause = read_clause("We do not run the nightly backup job on the old staging cluster", "", 6)
    assert clause.has_negation
    assert clause.negated == {"run", "night", "backup", "job"}
    assert clause.predicates == ["run"]
    narrow = read_clause("We do not run the nightly backup job on the old staging cluster", "", 2)
    assert narrow.negated == {"run"}
    assert read_clause("We do not deploy, we test", "", 6).negated == {"deploy"}


def test_hedges_and_double_negatives_are_no_negation() -> None:
    hedge = read_clause("I am not sure the team uses Docker", "", 6)
    assert not hedge.has_negation and hedge.negated == set()
    double = read_clause("Carol never leaves without her umbrella", "", 6)
    # "never" and "without" cancel each other: she always takes it, nothing is negated.
    assert double.negated == set() and not double.has_negation
    rephrased = read_clause("You can't run the integration tests locally without Docker", "", 6)
    assert rephrased.negated == set() and not rephrased.has_negation
