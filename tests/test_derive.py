"""Output views derived from the one model of a memory (models/derive.py: view)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pydantic import Field

from memoryd.models import Memory, SearchHit
from memoryd.models.derive import View, view
from memoryd.models.views import MemoryBrief, ViewNode
from memoryd.operations.gateway import RecallItem
from memoryd.operations.search import SearchItem
from memoryd.operations.tools import MemoryView, ScoredView
from memoryd.store.base import Actor, Store
from memoryd.store.rows import MEMORY_FIELDS

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
VIEWS = (MemoryView, ScoredView, SearchItem, RecallItem, MemoryBrief, ViewNode)


@pytest.mark.parametrize("model", VIEWS, ids=lambda m: m.__name__)
def test_a_views_shown_fields_are_the_memorys(model: type[View]) -> None:
    """Every field a view shows from a memory (or a search hit) has that field's type and
    description; the rest are the view's own, declared in its body."""
    assert model.__shown__, model
    assert model.__sources__[0] is Memory
    for name, (index, source_name) in model.__shown__.items():
        source = model.__sources__[index]
        theirs, ours = source.model_fields[source_name], model.model_fields[name]
        assert (ours.annotation, ours.description) == (theirs.annotation, theirs.description)
    assert set(model.model_fields) == set(model.__shown__) | set(model.__own__) | (
        {"score"} if model is ScoredView else set())


def test_a_field_added_to_the_memory_appears_in_its_views() -> None:
    class Richer(Memory):
        mood: str | None = Field(None, max_length=20, description="How it felt.")

    class Brief(view(Richer, ["id", "mood", "created", "snippet"], name="BriefFields",
                     rename={"created": "created_at"}, own=("snippet",))):
        snippet: str

    field = Brief.model_fields["mood"]
    assert field.annotation == Richer.model_fields["mood"].annotation
    assert field.description == "How it felt."
    assert Brief.model_json_schema()["properties"]["mood"]["anyOf"][0]["maxLength"] == 20
    memory = Richer(id="m1", content="The launch went well.", mood="glad", created_at=NOW,
                    updated_at=NOW)
    shown = Brief.shown(memory, snippet="The launch")
    assert (shown.id, shown.mood, shown.created, shown.snippet) == (
        "m1", "glad", NOW, "The launch")


def test_a_view_may_require_what_the_memory_defaults() -> None:
    loose = view(Memory, ["id", "node_type", "tags"], name="Loose")
    strict = view(Memory, ["id", "node_type", "tags"], name="Strict", required=("node_type",),
                  defaults={"tags": []})
    assert loose.model_json_schema()["required"] == ["id"]
    schema = strict.model_json_schema()
    assert schema["required"] == ["id", "node_type"]
    assert schema["properties"]["tags"]["default"] == []


def test_a_view_must_declare_its_own_fields() -> None:
    with pytest.raises(TypeError, match="snippet"):
        class Forgot(view(Memory, ["id", "snippet"], name="ForgotFields", own=("snippet",))):
            pass
    with pytest.raises(ValueError, match="colour"):
        view(Memory, ["id", "colour"], name="Unknown")


def test_a_search_item_shows_the_memory_and_the_hit() -> None:
    memory = Memory(id="m1", content="x" * 1500, importance=0.7, created_at=NOW, updated_at=NOW,
                    metadata={"suspect_instruction": True})
    hit = SearchHit(memory=memory, score=0.1234567, keyword_rank=3, semantic_similarity=0.4)
    item = SearchItem.of(hit)
    assert (item.importance, item.keyword_rank, item.semantic_similarity, item.score) == (
        0.7, 3, 0.4, 0.123457)
    assert len(item.content) == 1000 and item.suspect and item.memory is None
    assert MemoryView.of(memory, 10).content == "x" * 9 + "…"


def test_every_field_of_a_memory_is_stored_on_both_backends(store: Store, embed) -> None:
    """The store's columns are Memory's fields (store/rows.py), so every one round-trips."""
    assert MEMORY_FIELDS == tuple(n for n in Memory.model_fields if n not in ("state", "seq"))
    given = Memory(
        id="m1", content="The launch went well.", summary="Launch", node_type="event",
        category="work", subcategory="release", tags=["launch"], source="chat", agent_id="a1",
        session_id="s1", scope="project:x", importance=0.7, severity="low", created_at=NOW,
        updated_at=NOW, valid_from=NOW, valid_until=NOW + timedelta(days=1), tier="warm",
        metadata={"mood": "glad"})
    [stored] = store.insert([given], embed([given.content]), Actor("test"))
    got = store.get(stored.id)
    assert got is not None
    left = {"state", "seq", "embedding_model"}
    assert got.model_dump(exclude=left) == given.model_dump(exclude=left)
