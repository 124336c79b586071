"""Requests for advice lift the user's preferences and standing instructions."""

from __future__ import annotations

import pytest
from test_relevance import assert_cues_keep_clear_differences

from memoryd.cognition.extraction import states_preference
from memoryd.retrieval.requests import asks_for_advice


@pytest.mark.parametrize("query", [
    "How would you suggest I break up my editing sessions?",
    "Can you recommend some books for me?",
    "What should I pack for the trip to Lisbon?",
    "Show me how to add a login page",
    "Any tips for keeping my Flask app small?",
])
def test_requests_for_advice(query: str) -> None:
    assert asks_for_advice(query)


@pytest.mark.parametrize("query", [
    "How many times did I mention my cover letter?",
    "What did you recommend for the retries?",         # about what was said
    "Can you summarize what we discussed about the budget?",
    "Can you list the order in which I brought up the features?",
    "When did we move the billing service?",
    "Which port does the staging database listen on?",
    "",
])
def test_questions_about_the_past_are_not_requests(query: str) -> None:
    assert not asks_for_advice(query)


@pytest.mark.parametrize("text, stated", [
    ("I prefer e-books for their portability", True),
    ("Always include version numbers when I ask about libraries.", True),
    ("We never deploy on Fridays", True),
    ("My favourite editor is Helix", True),
    ("The bookstore on Main Street sells e-books", False),
])
def test_preferences_and_standing_instructions(text: str, stated: bool) -> None:
    assert states_preference(text) is stated


# --------------------------------------------------------------------------- in the engine

TWIN = "I prefer paperback novels I can read on the train"
REQUEST = "Can you recommend some novels to read on the train?"


def _store(open_mem, store_url, roles=("user", "assistant"), **settings):
    """The twins written in the order ``roles`` gives, so a tie-break cannot pass the tests."""
    mem = open_mem(store_url, **settings)
    ids = {role: mem.add(TWIN, metadata={"role": role}).id for role in roles}
    ids["fact"] = mem.add("The station kiosk sells paperback novels to read on the train").id
    return mem, ids


@pytest.mark.parametrize("roles", [("user", "assistant"), ("assistant", "user")])
def test_a_request_lifts_the_users_preference_over_its_twin(open_mem, store_url, roles) -> None:
    mem, ids = _store(open_mem, store_url, roles)
    hits = mem.search(REQUEST, 3, associations=False, record_access=False)
    place = {h.memory.id: i for i, h in enumerate(hits)}
    assert place[ids["user"]] < place[ids["assistant"]]  # the assistant's "I prefer" is not one
    # A question about the past gives a preference no lift: the twins stay tied.
    past = mem.search("How many novels did I mention reading on the train?", 3, cognitive=False,
                      associations=False, record_access=False)
    score = {h.memory.id: h.score for h in past}
    assert score[ids["user"]] == pytest.approx(score[ids["assistant"]])


@pytest.mark.parametrize("types", [("fact", "preference"), ("preference", "fact")])
def test_a_preference_memory_counts_whoever_wrote_it(open_mem, store_url, types) -> None:
    mem = open_mem(store_url)
    ids = {t: mem.add("Paperback novels for reading on the train", node_type=t).id for t in types}
    hits = mem.search(REQUEST, 2, associations=False, record_access=False)
    assert [h.memory.id for h in hits] == [ids["preference"], ids["fact"]]


def test_a_preference_cue_never_reverses_a_clear_difference(open_mem, store_url) -> None:
    mem, _ = _store(open_mem, store_url)
    mem.add("I prefer dark mode in every editor", metadata={"role": "user"})
    room = mem.settings.rank_close_margin + mem.settings.preference_margin
    assert_cues_keep_clear_differences(mem, [
        REQUEST, "What should I read on the train?", "Can you suggest an editor theme?"], room, 5)


def test_preference_cues_can_be_turned_off(open_mem, store_url) -> None:
    mem, ids = _store(open_mem, store_url, preference_margin=0.0)
    hits = mem.search(REQUEST, 3, cognitive=False, associations=False, record_access=False)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    score = {h.memory.id: h.score for h in hits}
    assert score[ids["user"]] == pytest.approx(score[ids["assistant"]])


HOW_TO = "How do I get access to the build machines?"
TEAM_NOTES = [
    "Build machines are reached through the bastion host with your SSO login",
    "The build farm runs twelve Linux machines in the basement rack",
    "New laptops are ordered through the IT portal",
    "Our CI pipeline caches dependencies between runs",
]


def test_a_request_does_not_lift_a_preference_about_something_else(open_mem, store_url,
                                                                   tmp_path) -> None:
    # A store's preferences are about many things; a how-to request lifts only those likely
    # to answer it (score at least the recall threshold), not every preference in the store.
    def ranked(url: str, **settings) -> list[str]:
        mem = open_mem(url, **settings)
        for text in TEAM_NOTES:
            mem.add(text)
        mem.add("Ines wants release notes written as one-page memos", node_type="preference")
        hits = mem.search(HOW_TO, 5, associations=False, record_access=False)
        return [h.memory.content for h in hits]

    lifted = ranked(store_url)
    assert lifted == ranked(f"sqlite:///{tmp_path / 'off.db'}", preference_margin=0.0)
    assert lifted[0] == TEAM_NOTES[0]
