"""Speaker cues: "what did I say…", "what did you suggest…", "what did Caroline tell…"."""

from __future__ import annotations

import pytest
from test_relevance import assert_cues_keep_clear_differences

from memoryd.cognition.extraction import Message
from memoryd.retrieval.speaker import memory_speaker, query_speaker, same_speaker


@pytest.mark.parametrize("query, speaker", [
    ("Where did I say I met Laura?", "user"),
    ("How many times did I mention submitting my cover letter?", "user"),
    ("Which roles have I mentioned so far?", "user"),
    ("the titles I mentioned for April 6", "user"),
    ("What did the user say about the trip in May?", "user"),
    ("How did you recommend structuring the work?", "assistant"),
    ("the movie options you recommended for our evening", "assistant"),
    ("What did the assistant suggest for retries?", "assistant"),
    ("What did you suggest after I mentioned the deadline?", "assistant"),
    ("What did Caroline say about the adoption agency?", "caroline"),
    ("What has Melanie Brown told you about pottery?", "melanie brown"),
    ("Something Jon mentioned about his dance studio", "jon"),
])
def test_a_query_about_past_words_names_its_speaker(query: str, speaker: str) -> None:
    assert query_speaker(query) == speaker


@pytest.mark.parametrize("query", [
    "What would you suggest for dinner?",          # a request, not a past statement
    "Can you recommend some audiobooks for me?",
    "How would you suggest I set this up?",
    "What did we decide about the deploy window?",
    "When is the release?",
    "What did Python 3.12 change in f-strings?",   # no speech verb
    "",
])
def test_other_queries_name_no_speaker(query: str) -> None:
    assert query_speaker(query) is None


@pytest.mark.parametrize("content, metadata, speaker", [
    ("Use a token bucket", {"role": "assistant"}, "assistant"),
    ("We fly on Friday", {"role": "Human"}, "user"),
    ("The kids start school", {"speaker": "Caroline"}, "caroline"),
    ("User: Remember that deploys are on Fridays.", {}, "user"),
    ("Assistant: Use a token bucket.", {}, "assistant"),
    ("Melanie: I painted a sunrise last week", {}, "melanie"),
    ("Deploys go out on Tuesdays after standup", {}, None),
    ("Deploys go out on Tuesdays", {"role": 3}, None),  # not a string: ignored
])
def test_a_memory_speaker_comes_from_metadata_or_a_name_prefix(content, metadata, speaker) -> None:
    assert memory_speaker(content, metadata) == speaker


def test_speakers_match_by_role_or_first_name() -> None:
    assert same_speaker("user", "user")
    assert not same_speaker("user", "assistant")
    assert not same_speaker("user", None)
    assert same_speaker("caroline", "caroline smith")
    assert same_speaker("smith", "caroline smith")
    assert not same_speaker("user", "user smith")
    assert not same_speaker("caroline", "melanie")


# --------------------------------------------------------------------------- in the engine

TWIN = "We should take the night train to Lisbon for the trip"


def _conversation(open_mem, store_url, **settings):
    mem = open_mem(store_url, **settings)
    ids = {
        "user": mem.add(TWIN, metadata={"role": "user"}).id,
        "assistant": mem.add(TWIN, metadata={"role": "assistant"}).id,
        "melanie": mem.add(f"Melanie: {TWIN}").id,
        "caroline": mem.add(f"Caroline: {TWIN}").id,
        "other": mem.add("The staging database listens on port 5433", metadata={"role": "user"}).id,
    }
    return mem, ids


@pytest.mark.parametrize("query, speaker", [
    ("what did I say about the night train to Lisbon?", "user"),
    ("what did you suggest about the night train to Lisbon?", "assistant"),
    ("what did Melanie say about the night train to Lisbon?", "melanie"),
    ("what did Caroline mention about the night train to Lisbon?", "caroline"),
])
def test_the_speaker_a_query_asks_about_comes_first(open_mem, store_url, query, speaker) -> None:
    mem, ids = _conversation(open_mem, store_url)
    hits = mem.search(query, 4, associations=False, record_access=False)
    assert hits[0].memory.id == ids[speaker]


def test_a_speaker_cue_never_reverses_a_clear_difference(open_mem, store_url) -> None:
    mem, ids = _conversation(open_mem, store_url)
    room = mem.settings.rank_close_margin + mem.settings.speaker_margin
    assert_cues_keep_clear_differences(mem, [
        "what did I say about the night train to Lisbon?",
        "what did I say about the staging database?",
        "what did you suggest about the database port?"], room, 5)
    # The user said both; the one about the database answers a question about the database.
    hits = mem.search("what did I say about the staging database?", 5, record_access=False)
    assert hits[0].memory.id == ids["other"]


def test_speaker_cues_can_be_turned_off(open_mem, store_url) -> None:
    mem, ids = _conversation(open_mem, store_url, speaker_margin=0.0)
    for query in ["what did I say about the night train to Lisbon?",
                  "what did you suggest about the night train to Lisbon?"]:
        hits = mem.search(query, 4, cognitive=False, associations=False, record_access=False)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    hits = mem.search("what did you suggest about the night train to Lisbon?", 5,
                      cognitive=False, associations=False, record_access=False)
    score = {h.memory.id: h.score for h in hits}
    assert score[ids["user"]] == pytest.approx(score[ids["assistant"]])  # nothing tells them apart


def test_captured_turns_answer_by_speaker(open_mem, store_url) -> None:
    """/capture writes "User: …" and "Assistant: …"; the prefix is the speaker."""
    mem = open_mem(store_url)
    result = mem.capture([
        Message(role="user", content="We decided to run the billing service on Postgres 16."),
        Message(role="assistant", content="We agreed to add two read replicas to the billing "
                                          "database, so let's do that."),
    ], session_key="s1")
    stored = {r.memory_id for r in result.stored}
    by_speaker = {m.content.split(":")[0].lower(): m.id for m in mem.list(limit=10)
                  if m.id in stored}
    assert set(by_speaker) == {"user", "assistant"}
    for query, speaker in [("what did I say about the billing service database?", "user"),
                           ("what did you suggest for the billing service database?", "assistant")]:
        hits = mem.search(query, 2, associations=False, record_access=False)
        assert hits[0].memory.id == by_speaker[speaker], query
