"""decide() on constructed candidates: what the gate does with a changed value, a different
fact on the same topic, a restatement, an elaboration, copies, speakers and questions."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from memoryd.cognition.clauses import split_clauses
from memoryd.cognition.contradiction import Contradiction
from memoryd.cognition.gating import Candidate, GatingParams, decide

# --------------------------------------------------------------------------- decide()

PARAMS = GatingParams()


def test_no_candidates_creates() -> None:
    gate = decide("Anything at all", [], PARAMS)
    assert (gate.decision, gate.target_ids, gate.similarity) == ("create", [], None)


def test_a_changed_value_supersedes_even_at_very_high_similarity() -> None:
    old = Candidate("m1", "The staging database listens on port 5432.", 0.98)
    gate = decide("The staging database listens on port 5433.", [old], PARAMS)
    assert gate.decision == "supersede" and gate.target_ids == ["m1"]
    assert "changed value" in gate.reason and "5433" in gate.reason and gate.similarity == 0.98


def test_the_port_example_supersedes_although_worded_differently() -> None:
    """"DB runs" / "database listens": the frame is kept, one value changes."""
    old = Candidate("m1", "The staging DB runs on port 5432", 0.91)
    gate = decide("The staging database listens on port 5433", [old], PARAMS)
    assert gate.decision == "supersede" and gate.target_ids == ["m1"]


CHANGED_VALUES = [
    # (kind, old, new): written for these tests, none of them in the labelled pairs
    ("number", "The build server has 16 cores.", "The build server has 32 cores."),
    ("name", "The billing service is owned by Alice.", "The billing service is owned by Bob."),
    ("date", "The contract renews on March 1.", "The contract renews on March 15."),
    ("unit", "The cache TTL is 5 minutes.", "The cache TTL is 5 hours."),
    ("negation", "The nightly job sends a report.", "The nightly job does not send a report."),
    ("quantity", "All endpoints require auth.", "Most endpoints require auth."),
    ("quantity", "The user always wants tests.", "The user rarely wants tests."),
    ("identifier", "The deploy target is us-east-1.", "The deploy target is eu-west-1."),
    ("percent", "The error budget is 0.1%.", "The error budget is 0.5%."),
    ("money", "The seat price is $12.", "The seat price is $15."),
    ("time", "The backup runs at 02:00.", "The backup runs at 03:30."),
    ("version", "The API uses Django 4.2.", "The API uses Django 5.0."),
    ("weekday", "Releases go out on Tuesdays.", "Releases go out on Thursdays."),
    ("antonym", "Signups are open.", "Signups are closed."),
    ("order", "Sam prefers tabs over spaces.", "Sam prefers spaces over tabs."),
]


@pytest.mark.parametrize(("kind", "old", "new"), CHANGED_VALUES)
def test_a_changed_value_is_never_reinforced_nor_merged(kind: str, old: str, new: str) -> None:
    for similarity in (0.99, 0.9, 0.7):
        alone = decide(new, [Candidate("a", old, similarity)], PARAMS)
        copies = decide(new, [Candidate("a", old, similarity),
                              Candidate("b", old.rstrip(".") + ", as noted.", similarity - 0.01)],
                        PARAMS)
        assert alone.decision == copies.decision == "supersede", (kind, similarity)
        assert alone.target_ids == ["a"]


@pytest.mark.parametrize(("old", "new"), [
    # the subject changes, not the value: another memory
    ("The staging DB runs on port 5432.", "The production DB runs on port 5433."),
    ("Sam prefers tabs over spaces.", "Bob prefers tabs over spaces."),
    ("The project budget for Q3 is $250k.", "The project budget for Q4 is $300k."),
    ("The release freeze starts on December 18.", "The release freeze ends on January 5."),
    ("The staging DB runs on port 5432.",
     "The staging DB runs on port 5433 for the analytics replica."),
    # a negation elsewhere, or a different statement on the topic
    ("Test coverage must stay above 80%.", "Snapshot tests are not counted towards coverage."),
    ("Alice prefers TypeScript for frontend work.", "Alice prefers Go for backend work."),
])
def test_a_different_fact_on_the_same_topic_is_a_new_memory(old: str, new: str) -> None:
    for similarity in (0.9, 0.75):
        assert decide(new, [Candidate("a", old, similarity)], PARAMS).decision == "create"


def test_a_memory_holding_other_facts_is_not_hidden_for_one_of_them() -> None:
    old = Candidate("m", "Carol drinks coffee every morning. She runs 10 km on Sundays and "
                         "works from the Lisbon office.", 0.7)
    gate = decide("Carol does not drink coffee anymore.", [old], PARAMS)
    assert gate.decision == "create"
    short = decide("Carol does not drink coffee anymore.",
                   [Candidate("m", "Carol drinks coffee every morning.", 0.7)], PARAMS)
    assert short.decision == "supersede"


def test_contradiction_wins_over_update_and_merge() -> None:
    candidates = [
        Candidate("a", "Dark mode is enabled by default.", 0.95),
        Candidate("b", "Dark mode is enabled by default in the app.", 0.93),
    ]
    gate = decide("Dark mode is disabled by default.", candidates, PARAMS)
    assert gate.decision == "supersede" and gate.target_ids == ["a"]


def test_long_texts_neither_supersede_nor_are_superseded() -> None:
    """One contradicted clause of a long text does not make the text false as a whole."""
    filler = " ".join(f"Step {i} checks the {w} log." for i, w in
                      enumerate(["build", "deploy", "audit", "cache", "queue"]))
    long_old = f"The staging database listens on port 5432. {filler}"
    assert len(split_clauses(long_old)) > PARAMS.supersede_max_clauses
    short_new = "The staging database listens on port 5433."
    gate = decide(short_new, [Candidate("long", long_old, 0.7)], PARAMS)
    assert gate.decision == "create"
    gate = decide(f"{short_new} {filler}", [Candidate("m1", "The staging database listens on "
                                                       "port 5432.", 0.7)], PARAMS)
    assert gate.decision == "create"
    short = decide(short_new, [Candidate("m1", "The staging database listens on port 5432.", 0.7)],
                   PARAMS)
    assert short.decision == "supersede"


def test_different_speakers_never_fold_or_supersede() -> None:
    old = Candidate("m", "Emi: I have 2 exams tomorrow", 0.9)
    assert decide("Elise: I have 3 exams tomorrow", [old], PARAMS).decision == "create"
    assert decide("Elise: I have 2 exams tomorrow", [old], PARAMS).decision == "create"
    assert decide("Emi: I have 2 exams tomorrow!", [old], PARAMS).decision == "reinforce"
    lower = Candidate("m", "elise: I would also choose Orlando, not just for Disney World", 0.8)
    assert decide("Kevin: Orlando offers more than Disney World", [lower], PARAMS).decision \
        == "create"


@pytest.mark.parametrize(("old", "new"), [
    ("elise: Where in California are you from?", "elise: I'm Emily from San Diego"),
    ("Emi: Here let me show you", "Emi: I never knew where the show would end up, it got me "
                                   "hooked from the start"),
    ("Emi: Hey Kate!", "Emi: Hey Emily!"),
])
def test_questions_and_greetings_are_never_superseded(old: str, new: str) -> None:
    assert decide(new, [Candidate("m", old, 0.7)], PARAMS).decision != "supersede"


def test_the_changed_candidate_is_targeted_not_the_closest() -> None:
    candidates = [
        Candidate("close", "The staging cluster runs Kubernetes 1.29 with three nodes.", 0.81),
        Candidate("conflict", "The staging cluster is hosted in Frankfurt.", 0.64),
    ]
    gate = decide("The staging cluster is hosted in Dublin.", candidates, PARAMS)
    assert gate.decision == "supersede" and gate.target_ids == ["conflict"]


def test_below_the_floors_nothing_is_compared() -> None:
    old = Candidate("m1", "The user lives in Paris.", 0.3)
    assert decide("The user moved to Berlin.", [old], PARAMS).decision == "create"
    assert decide("The user moved to Berlin.", [Candidate("m1", "The user lives in Paris.", 0.51)],
                  PARAMS).decision == "supersede"


def test_two_copies_of_the_same_statement_merge() -> None:
    candidates = [
        Candidate("a", "Weekly sync is on Mondays at 10:00 in room Alpha.", 0.97),
        Candidate("b", "The weekly sync is Mondays 10:00, room Alpha.", 0.93),
        Candidate("c", "Room Alpha has a projector.", 0.61),
    ]
    gate = decide("The weekly sync is on Mondays at 10:00 in room Alpha", candidates, PARAMS)
    assert gate.decision == "merge" and gate.target_ids == ["a", "b"]


def test_close_neighbours_that_differ_do_not_merge() -> None:
    candidates = [
        Candidate("a", "Weekly sync is on Mondays at 10:00 in room Alpha.", 0.95),
        Candidate("b", "Weekly sync is on Mondays at 10:00 in room Beta.", 0.93),
    ]
    gate = decide("Weekly sync is on Mondays at 10:00 in room Alpha.", candidates, PARAMS)
    assert gate.decision == "reinforce" and gate.target_ids == ["a"]


def test_restatement_reinforces_and_elaboration_updates() -> None:
    old = "The user lives in Paris and works as a data engineer."
    same = decide("The user works as a data engineer and lives in Paris.",
                  [Candidate("m", old, 0.95)], PARAMS)
    assert same.decision == "reinforce" and same.target_ids == ["m"]
    more = decide("The user lives in Paris and works as a data engineer at Spotify.",
                  [Candidate("m", old, 0.93)], PARAMS)
    assert more.decision == "update" and more.target_ids == ["m"] and "spotify" in more.reason


def test_a_change_marker_is_not_nothing_new() -> None:
    """Every word of the old text, but "dropped" says the fact ended."""
    old = Candidate("m", "The library supports Python 2.", 0.86)
    gate = decide("The library dropped support for Python 2.", [old], PARAMS)
    assert gate.decision != "reinforce"


def test_a_word_swapped_in_place_is_not_a_restatement() -> None:
    old = Candidate("m", "The meeting is at noon in the small room.", 0.93)
    assert decide("The meeting is at noon in the big room.", [old], PARAMS).decision == "create"


def test_unrelated_neighbours_create_and_report_the_best_similarity() -> None:
    candidates = [Candidate("x", "Bananas are rich in potassium.", 0.2),
                  Candidate("y", "Our CI runs on GitHub Actions.", 0.45)]
    gate = decide("The VPN gateway address is vpn.example.org", candidates, PARAMS)
    assert gate.decision == "create" and gate.similarity == 0.45 and gate.target_ids == []


def test_detector_is_injectable() -> None:
    calls: list[tuple[str, str]] = []

    def always(old: str, new: str) -> Contradiction:
        calls.append((old, new))
        return Contradiction(True, "negation", "forced")

    gate = decide("b c", [Candidate("m", "b d", 0.6), Candidate("n", "e", 0.2)], PARAMS,
                  detector=always)
    assert gate.decision == "supersede" and gate.target_ids == ["m"]
    assert calls == [("b d", "b c")]  # candidates below the floors are not even compared


def test_params_are_frozen_and_thresholds_matter() -> None:
    with pytest.raises(FrozenInstanceError):
        PARAMS.update = 0.1  # type: ignore[misc]
    old = Candidate("m", "Our CI pipeline uses GitHub Actions.", 0.72)
    new = "Our CI pipeline uses GitHub Actions, with a self-hosted runner for GPU tests."
    assert decide(new, [old], PARAMS).decision == "update"
    assert decide(new, [old], GatingParams(update=0.80)).decision == "create"


def test_a_verbatim_restatement_reinforces_even_beside_a_conflicting_neighbour() -> None:
    candidates = [
        Candidate("same", "Builds of Paxuru take $414 longer on Swift than on AWS.", 0.99),
        Candidate("other", "Builds of Paxuru take $900 longer on Swift than on AWS.", 0.90),
    ]
    gate = decide("Builds of Paxuru take $414 longer on Swift than on AWS.", candidates, PARAMS)
    assert gate.decision == "reinforce" and gate.target_ids == ["same"]
