"""Models derived from the one model of a memory (models/derive.py): output views (view) and
write inputs (settable, changes), from the fields of ``Memory`` marked ``Settable``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, Callable

import pytest
from pydantic import Field, ValidationError

from memoryd.engine import Engine
from memoryd.models import Memory, MemoryFields, MemoryPatch, NewMemory, SearchHit
from memoryd.models.derive import Settable, View, changes, settable, settable_fields, view
from memoryd.models.memory import NULLABLE
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


# --- write inputs ---------------------------------------------------------------------
Mood = Annotated[str, Field(max_length=20, description="How it felt.")]
Weight = Annotated[int, Field(ge=0, le=9)]


class Richer(Memory):
    """A memory with two more fields callers set, one that may be empty and one that may not."""

    mood: Annotated[str | None, Settable(Mood)] = None
    weight: Annotated[int, Settable(Weight, description="How heavy.")] = 1


def test_a_settable_field_added_to_the_memory_appears_in_the_write_inputs() -> None:
    fields = settable(Richer, name="RicherFields")
    patch = changes(Richer, name="RicherChanges")
    for made in (fields, patch):
        assert {"mood", "weight"} <= set(made.model_fields)
    schema = fields.model_json_schema()["properties"]
    assert schema["mood"]["anyOf"][0] == {"description": "How it felt.", "maxLength": 20,
                                          "type": "string"}
    assert (schema["weight"]["minimum"], schema["weight"]["maximum"]) == (0, 9)
    assert (schema["weight"]["default"], schema["weight"]["description"]) == (1, "How heavy.")
    assert fields(mood="glad").weight == 1  # the stored field's default
    with pytest.raises(ValidationError, match="mood"):
        fields(mood="x" * 21)
    with pytest.raises(ValidationError, match="weight"):
        fields(weight=10)
    # A change: both optional; null clears the one a memory may lack, the schema offers no
    # null for the other.
    changed = patch.model_json_schema()["properties"]
    assert {"type": "null"} in changed["mood"]["anyOf"]
    assert (changed["weight"]["type"], changed["weight"]["maximum"]) == ("integer", 9)
    assert patch(weight=3).model_dump(exclude_unset=True) == {"weight": 3}
    with pytest.raises(ValidationError, match="mood"):
        patch(mood="x" * 21)


def test_the_write_inputs_are_the_memorys_settable_fields() -> None:
    """MemoryFields, NewMemory and MemoryPatch take exactly the fields Memory marks, with
    their input types; NULLABLE are the changeable ones a memory may lack."""
    new, changed = settable_fields(Memory, new=True), settable_fields(Memory, changed=True)
    assert list(MemoryFields.model_fields) == list(new)
    assert set(NewMemory.model_fields) - set(new) == {"content", "created_at", "id", "embed_text"}
    assert list(MemoryPatch.model_fields) == list(changed)
    assert NULLABLE == {n for n in changed if Memory.model_fields[n].default is None}
    with pytest.raises(ValidationError, match="importance"):
        MemoryFields(importance=1.5)
    with pytest.raises(ValidationError, match=r"tags\n.*cannot be null"):
        MemoryPatch(tags=None)


# A value of each settable field as a new memory carries it (None: a new one does not), and a
# change to it (None: a change does not set it). A field added to Memory (with its migration)
# needs a line here, and is then stored and read back below.
SAMPLES: dict[str, tuple[Any, Any]] = {
    "content": ("The launch went well.", "The launch went very well."),
    "summary": ("Launch", "The launch"),
    "node_type": ("event", "decision"),
    "category": ("work", "release"),
    "subcategory": ("release", "launch"),
    "tags": (["launch"], ["launch", "q1"]),
    "source": ("chat", "mail"),
    "agent_id": ("a1", None),
    "session_id": ("s1", None),
    "scope": ("project:x", "project:y"),
    "importance": (0.7, 0.2),
    "severity": ("low", "high"),
    "created_at": (NOW - timedelta(days=1), None),
    "valid_from": (NOW, NOW + timedelta(days=1)),
    "valid_until": (NOW + timedelta(days=2), NOW + timedelta(days=3)),
    "superseded_by": (None, "other"),
    "tier": (None, "cold"),
    "metadata": ({"mood": "glad"}, {"mood": "calm"}),
}


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, store_url: str,
           open_mem: Callable[..., Engine]) -> Engine:
    url = store_url if request.param == "sqlite" else request.getfixturevalue("pg_database")()
    return open_mem(url)


def test_every_settable_field_is_stored_and_read_back(engine: Engine) -> None:
    """Through the write inputs: each field a new memory carries is stored as given, each a
    change sets is changed, and each a change may clear is cleared (both backends)."""
    assert set(SAMPLES) == set(settable_fields(Memory)), "give SAMPLES a value of each field"
    other = engine.add("Another memory.")
    given = {n: new for n, (new, _) in SAMPLES.items() if new is not None}
    created = engine.add_many([NewMemory(**given)])[0]
    got = engine.get(created.id)
    assert {n: getattr(got, n) for n in given} == given
    changed = {n: SAMPLES[n][1] for n in settable_fields(Memory, changed=True)}
    changed["superseded_by"] = other.id
    engine.update(created.id, **MemoryPatch(**changed).changes())
    got = engine.get(created.id)
    assert {n: getattr(got, n) for n in changed} == changed
    engine.update(created.id, **MemoryPatch(**dict.fromkeys(NULLABLE)).changes())
    got = engine.get(created.id)
    assert {n: getattr(got, n) for n in NULLABLE} == dict.fromkeys(NULLABLE)
