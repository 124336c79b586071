"""Conditional standing instructions ("Always X when I ask about Y") are recalled when the
query turns to Y, and nothing else is scored differently."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from memoryd.embed import Embedder
from memoryd.engine.memory.instruction_topics import topic_cosines
from memoryd.errors import EmbeddingError
from memoryd.retrieval import relevance
from memoryd.retrieval.instructions import SCAN_CHARS, instruction_topic
from memoryd.retrieval.relevance import DEFAULT_MODEL, CandidateFeatures


@pytest.mark.parametrize("text, topic", [
    ("Always format dates as MM/DD/YYYY when I ask about scheduling details.", "scheduling details"),
    ("Always include version numbers when I ask about software dependencies or libraries used. ->-> 2,26",
     "software dependencies or libraries used"),
    ("User: never suggest paid tools whenever I ask you for writing aids!", "writing aids"),
    ("Please use metric units if I'm asking about recipes, please", "recipes"),
    ("Every time I request a code review, check the error handling first", "a code review"),
    ("Use tabs whenever I ask you to write Python.", "write Python"),
    ("When I ask about the budget, always give totals in euros.", "the budget"),
])
def test_the_topic_of_a_conditional_instruction(text: str, topic: str) -> None:
    assert instruction_topic(text) == topic


@pytest.mark.parametrize("text", [
    "Always include version numbers in the changelog.",          # no condition
    "I went hiking when I was in Spain.",
    "When I talk to my mom, she always smiles.",                 # chit-chat, not an instruction
    "My dad gets mad when I ask him for money.",                  # asked of someone else
    "I always feel calm when I talk about painting.",
    "The assistant formats dates when you ask about deadlines.",  # not the speaker's own asking
    "When I ask about it.",                                       # a topic too short to mean anything
    "",
])
def test_no_topic_without_a_condition_on_what_i_ask(text: str) -> None:
    assert instruction_topic(text) is None


def test_only_the_start_of_a_long_memory_is_read() -> None:
    late = "x " * SCAN_CHARS + "Always cite sources when I ask about history."
    assert instruction_topic(late) is None
    assert instruction_topic("Always cite sources when I ask about history. " + "x " * 5000) == "history"


def test_the_topic_reading_adds_to_the_log_odds_above_its_floor_and_nothing_else() -> None:
    base = CandidateFeatures(cosine=0.3, cosine_gap=-0.1, coverage=0.5, saturation=0.4,
                             keyword_lead=0.2)
    model = DEFAULT_MODEL
    assert model.instruction_weight > 0 and 0 <= model.instruction_floor < 0.5
    fit = replace(base, topic_cosine=model.instruction_floor + 0.4)
    assert model.logit(fit) - model.logit(base) == pytest.approx(model.instruction_weight * 0.4)
    below = replace(base, topic_cosine=model.instruction_floor / 2)
    assert model.logit(below) == model.logit(base)
    assert replace(model, instruction_weight=0.0).logit(fit) == model.logit(base)
    assert "topic_cosine" not in relevance.FEATURES  # a reading of instructions only


@pytest.mark.parametrize("plain, lifted, expected", [
    ([2.0, 1.0, 0.0], [2.0, 1.0, 5.0], [2.0, 1.0, 2.0 - 1e-9]),   # stops just below the best
    ([2.0, 1.0, 0.0], [2.0, 1.0, 1.5], [2.0, 1.0, 1.5]),          # a lift that stays below
    ([3.0, 1.0], [4.0, 1.0], [3.0, 1.0]),                         # first on its own: keeps it
    ([1.0, 0.0], [1.0, 0.0], [1.0, 0.0]),                         # nothing lifted
    ([0.5], [2.0], [2.0]),                                        # nothing direct to stay below
])
def test_a_lifted_instruction_never_passes_the_best_direct_hit(plain, lifted, expected) -> None:
    assert relevance.below_best_direct(plain, lifted) == pytest.approx(expected, abs=1e-12)


def test_a_lifted_instruction_leaves_the_near_tie_reorder_no_room_to_pass() -> None:
    # The search path passes the room its near-tie reorder has (cognitive margin + cues).
    assert relevance.below_best_direct([2.0, 1.0, 0.0], [2.0, 1.0, 5.0], gap=1.1) == pytest.approx(
        [2.0, 1.0, 0.9])
    assert relevance.below_best_direct([2.0, 1.5], [2.0, 5.0], gap=1.0) == [2.0, 1.5]  # its own


def test_topic_readings_must_align_with_the_candidates() -> None:
    with pytest.raises(ValueError, match="one value per candidate"):
        relevance.candidate_features([0.1, 0.2], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.5])


# --------------------------------------------------------------------------- in the engine

INSTRUCTION = "Always format dates as MM/DD/YYYY when I ask about scheduling details."
ON_TOPIC = "When is my meeting at the library?"
DISTRACTORS = [
    "I like to read crime novels before bed",
    "The library closes at eight on weekdays",
    "Date formats differ between the US and Europe",
    "My meeting notes live in a shared folder",
    "I visited the public library with my niece",
    "We meet the landlord about the lease next month",
]


@pytest.fixture
def store(open_mem, store_url):
    mem = open_mem(store_url)
    ids = {"instruction": mem.add(INSTRUCTION).id}
    ids.update({text: mem.add(text).id for text in DISTRACTORS})
    return mem, ids


def _scores(mem, query: str) -> dict[str, float]:
    """Each hit's ranking value (the topic reading lifts the ranking, not the answer score)."""
    return {h.memory.id: h.fused_score for h in mem.search(query, 10, associations=False,
                                                            record_access=False)}


def test_an_instruction_gains_when_its_topic_comes_up_and_nothing_else_changes(store,
                                                                              monkeypatch) -> None:
    mem, ids = store
    with_topics = _scores(mem, ON_TOPIC)
    monkeypatch.setattr(relevance, "DEFAULT_MODEL", replace(DEFAULT_MODEL, instruction_weight=0.0))
    without = _scores(mem, ON_TOPIC)
    assert with_topics[ids["instruction"]] > without[ids["instruction"]]
    for mid, score in without.items():
        if mid != ids["instruction"]:
            assert with_topics[mid] == pytest.approx(score, rel=1e-9)


def test_an_instruction_gains_nothing_on_another_topic(store, monkeypatch) -> None:
    mem, ids = store
    query = "Which crime novels do I like to read?"
    with_topics = _scores(mem, query)
    monkeypatch.setattr(relevance, "DEFAULT_MODEL", replace(DEFAULT_MODEL, instruction_weight=0.0))
    assert _scores(mem, query) == pytest.approx(with_topics, rel=1e-9)


def test_an_instruction_never_passes_the_best_direct_hit(store, monkeypatch) -> None:
    mem, ids = store
    monkeypatch.setattr(relevance, "DEFAULT_MODEL", replace(DEFAULT_MODEL, instruction_weight=100.0))
    hits = mem.search(ON_TOPIC, 3, associations=False, record_access=False)
    assert [h.memory.id for h in hits][:2] == [ids["The library closes at eight on weekdays"],
                                               ids["instruction"]]
    assert hits[0].fused_score > hits[1].fused_score


class _Down(Embedder):
    """An embedding provider that is down (a remote one can be)."""

    def __init__(self) -> None:
        super().__init__(model_id="down", dims=384)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        raise EmbeddingError("the embedding service is unreachable")


def test_without_a_query_vector_or_topic_vectors_the_reading_is_zero(store) -> None:
    mem, ids = store
    memory_ids = [ids["instruction"], ids[DISTRACTORS[0]], "missing"]
    stored = {c.memory_id: c.topic for c in mem.store.term_counts(memory_ids, [])}
    topics = [stored.get(i) for i in memory_ids]  # as the candidates carry them
    assert topics[0] == instruction_topic(INSTRUCTION) and topics[1:] == [None, None]
    ctx = SimpleNamespace(store=mem.store, embedder=mem.embedder)
    query = mem.embedder.embed([ON_TOPIC])[0]
    read = topic_cosines(ctx, topics, query)
    assert read[0] > 0.2 and read[1:] == [0.0, 0.0]
    assert topic_cosines(ctx, topics, None) == [0.0, 0.0, 0.0]  # keyword search, no model yet
    down = SimpleNamespace(store=mem.store, embedder=_Down())
    assert topic_cosines(down, topics, query) == [0.0, 0.0, 0.0]


def test_the_near_tie_reorder_cannot_carry_an_instruction_past_the_best_direct_hit(
        store, monkeypatch) -> None:
    # A request lifts standing instructions by preference_margin in the near-tie reorder; the
    # topic lift leaves the instruction that far below the best direct hit, so it stays below.
    mem, ids = store
    monkeypatch.setattr(relevance, "DEFAULT_MODEL", replace(DEFAULT_MODEL, instruction_weight=100.0))
    hits = mem.search("Can you tell me when my meeting at the library is?", 3,
                      associations=False, record_access=False)
    order = [h.memory.id for h in hits]
    # Two library memories tie (first and second on either side); the instruction, lifted to
    # the room below them and then by the request, stays below both.
    assert set(order[:2]) == {ids["The library closes at eight on weekdays"],
                              ids["I visited the public library with my niece"]}
    assert order[2] == ids["instruction"]  # lifted: fifth of seven without the topic reading
