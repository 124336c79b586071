"""The ``speaker`` filter: who said a memory, kept beside it on every write path, on both
backends (``store`` fixture), filled for stores written before it (SQLite m008, PostgreSQL
m011), and reachable through the engine, the CLI and the REST API."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.old_stores import postgres_store_without, sqlite_store_without
from pydantic import ValidationError

from memoryd.errors import InvalidFilter
from memoryd.models import Memory, SchedulingState, SearchFilters
from memoryd.retrieval.tokens import query_terms
from memoryd.store.base import Actor, Store

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ACTOR = Actor("test")
# key: (content, metadata) -> the speaker memoryd reads
SAID = {
    "hike": ("I love hiking on weekends", {"role": "user"}),
    "bucket": ("Assistant: use a token bucket for the rate limit", {}),
    "cafe": ("We met at the cafe near the station", {"speaker": "Caroline  Smith"}),
    "sunrise": ("Melanie: I painted a lake sunrise last year", {}),
    "deploy": ("Deploys go out on Tuesdays after standup", {}),
    "human": ("Remind me to water the plants", {"author": "Human"}),
    "blank": ("Bot: hello there", {"speaker": "  "}),  # a blank speaker falls through
    "odd": ("100%_off! sale", {"speaker": "Dr. 100%_Off!"}),
}


def make(key: str) -> Memory:
    content, metadata = SAID[key]
    return Memory(id=key, content=content, metadata=metadata, created_at=NOW, updated_at=NOW,
                  state=SchedulingState(last_review=NOW))


def said_by(store: Store, speaker: str) -> set[str]:
    return {m.id for m in store.list(SearchFilters(speaker=speaker), now=NOW, limit=100)}


@pytest.fixture
def filled(store: Store, embed) -> Store:
    memories = [make(k) for k in SAID]
    store.insert(memories, embed([m.content for m in memories]), ACTOR)
    return store


@pytest.mark.parametrize(("speaker", "expected"), [
    ("user", {"hike", "human"}),
    ("Human", {"hike", "human"}),  # an alias of the user
    ("me", {"hike", "human"}),
    ("assistant", {"bucket", "blank"}),
    ("AI", {"bucket", "blank"}),
    ("caroline", {"cafe"}),  # a name finds fuller ones
    ("Caroline Smith", {"cafe"}),
    ("smith   caroline", {"cafe"}),  # every word, in any order
    ("carol", set()),  # words, not parts of words
    ("caroline jones", set()),
    ("melanie", {"sunrise"}),
    ("Melanie Smith", {"sunrise"}),  # a name finds shorter ones within it
    ("smith melanie", {"sunrise"}),
    ("caroline melanie smith", {"cafe", "sunrise"}),
    ("the user", set()),  # never the user or the assistant by a word of a name
    ("one two three four melanie", set()),  # a fifth word is not read for shorter names
    ("dr. 100%_off!", {"odd"}),  # LIKE's special characters are taken literally
    ("100%_off!", {"odd"}),
    ("100%", set()),  # a word, not a pattern
    ("%", set()),
])
def test_the_filter_finds_what_each_party_said(filled: Store, speaker: str,
                                               expected: set[str]) -> None:
    assert said_by(filled, speaker) == expected


def test_candidates_of_both_sides_honour_the_filter(filled: Store, embed) -> None:
    only_user = SearchFilters(speaker="user")
    terms = query_terms("water plants, hiking weekends, token bucket, the cafe")
    everyone = filled.keyword_candidates(terms, SearchFilters(), now=NOW, limit=10)
    assert {c.memory_id for c in everyone.candidates} == {"hike", "human", "bucket", "cafe"}
    keyword = filled.keyword_candidates(terms, only_user, now=NOW, limit=10)
    assert {c.memory_id for c in keyword.candidates} == {"hike", "human"}
    nearest = filled.vector_search(embed(["a walk in the hills"])[0], only_user, now=NOW,
                                   limit=10)
    assert {h.memory_id for h in nearest} == {"hike", "human"}


def test_updates_read_the_speaker_again(filled: Store) -> None:
    filled.update("cafe", {"metadata": {"speaker": "Bob"}}, ACTOR)  # metadata only
    filled.update("sunrise", {"content": "I painted a lake sunrise last year"}, ACTOR)
    filled.update("deploy", {"content": "User: deploys go out on Tuesdays"}, ACTOR)
    filled.update("hike", {"tags": ["outdoors"]}, ACTOR)  # text, same speaker
    assert said_by(filled, "caroline") == set()
    assert said_by(filled, "bob") == {"cafe"}
    assert said_by(filled, "melanie") == set()
    assert said_by(filled, "user") == {"hike", "human", "deploy"}


def test_imported_rows_carry_their_speaker(filled: Store, store_factory, backend: str,
                                           shared_embedder) -> None:
    copy = store_factory(backend, name="copy")
    copy.set_embedding_model(shared_embedder.model_id, shared_embedder.dims)
    copy.transfer.import_rows("memories", filled.transfer.export_rows("memories"))
    for speaker in ("user", "assistant", "caroline", "melanie"):
        assert said_by(copy, speaker) == said_by(filled, speaker)


def test_an_empty_speaker_is_refused() -> None:
    with pytest.raises(ValidationError, match="speaker must name someone"):
        SearchFilters(speaker="  ")


def test_the_engine_search_and_list_take_the_filter(mem) -> None:
    mem.add_many([{"content": c, "metadata": m} for c, m in SAID.values()])
    hits = mem.search("what did we talk about", 10, speaker="user", record_access=False)
    assert {h.memory.content for h in hits} == {SAID["hike"][0], SAID["human"][0]}
    listed = mem.list(speaker="melanie")
    assert [m.content for m in listed] == [SAID["sunrise"][0]]
    with pytest.raises(InvalidFilter):
        mem.search("anything", 3, speaker="")


def test_the_cli_takes_the_filter(run_cli) -> None:
    for content, metadata in SAID.values():
        run_cli("add", content, "--metadata", json.dumps(metadata))
    out = run_cli("list", "--speaker", "assistant", "--json")
    assert {m["content"] for m in json.loads(out.stdout)} == {SAID["bucket"][0], SAID["blank"][0]}
    out = run_cli("search", "painting", "--speaker", "Melanie", "--json")
    assert [h["memory"]["content"] for h in json.loads(out.stdout)] == [SAID["sunrise"][0]]


# --------------------------------------------------------------------------- older stores

OLD = [{"id": key, "content": SAID[key][0], "metadata": SAID[key][1]}
       for key in ("hike", "bucket", "cafe", "deploy")]


def test_sqlite_m008_fills_the_speakers_of_an_older_store(tmp_path: Path) -> None:
    with sqlite_store_without(tmp_path / "old.db", 8, OLD) as store:
        check_old_speakers(store)


def test_postgres_m011_fills_the_speakers_of_an_older_store(pg_database) -> None:
    with postgres_store_without(pg_database(migrated=False), 11, OLD) as store:
        check_old_speakers(store)


def check_old_speakers(store: Store) -> None:
    assert said_by(store, "user") == {"hike"}
    assert said_by(store, "assistant") == {"bucket"}
    assert said_by(store, "caroline smith") == {"cafe"}

