"""Other systems' names (operations/dialects): each translates its arguments, calls memoryd's
operation for the verb, and translates the result. On both backends, with the real model."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from memoryd.engine import Engine
from memoryd.errors import EmptyContent
from memoryd.operations import Caller, invoke

LOCAL = Caller.local("test")
FACTS = [
    ("Deploys go out on Tuesdays after standup.", "decision", "release"),
    ("Deploy rollbacks use the blue-green switch in the load balancer.", "pattern", "release"),
    ("The user prefers dark mode in every editor.", "preference", "ui"),
    ("Deploy failed on 3 March because the disk was full.", "error", "system.disk"),
    ("Standup is at nine every weekday.", "fact", "team"),
]


@pytest.fixture
def engine(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
           open_mem: Callable[..., Engine]) -> Engine:
    url = (f"sqlite:///{tmp_path / 'd.db'}" if backend == "sqlite"
           else request.getfixturevalue("pg_database")())
    mem = open_mem(url)
    for content, node_type, category in FACTS:
        mem.add(content, node_type=node_type, category=category)
    return mem


def _call(engine: Engine, name: str, **arguments: Any) -> Any:
    return invoke(engine, name, arguments, LOCAL)


def _ids(out: Any) -> list[str]:
    return [r.id for r in out.results]


def test_vestige_search_without_vestige_names_is_memoryds_search(engine: Engine) -> None:
    own = _call(engine, "search", query="deploy", limit=4)
    theirs = _call(engine, "vestige_search", query="deploy", limit=4)
    # (each search strengthens what it finds a little, so scores may move; the order not)
    assert _ids(theirs) == _ids(own) and theirs.query == own.query and own.results


def test_vestige_names_translate_to_memoryds_arguments(engine: Engine) -> None:
    typed = _call(engine, "vestige_search", query="deploy", include_types=["error"])
    assert _ids(typed) == _ids(_call(engine, "search", query="deploy", node_types=["error"]))
    assert {r.node_type for r in typed.results} == {"error"}
    left_out = _call(engine, "vestige_search", query="deploy", exclude_types=["error"])
    assert left_out.results and "error" not in {r.node_type for r in left_out.results}
    assert len(_call(engine, "vestige_search", query="deploy", limit=10,
                     retrieval_mode="precise").results) <= 5
    topics = _call(engine, "vestige_search", query="deploy", context_topics=["disk", "full"])
    assert topics.query == "deploy"
    assert _ids(topics) == _ids(_call(engine, "search", query="deploy disk full"))
    similar = _call(engine, "vestige_search", query="deploy", min_similarity=0.99)
    assert all(r.semantic_similarity is None or r.semantic_similarity >= 0.99
               for r in similar.results)
    budget = _call(engine, "vestige_search", query="deploy", token_budget=50)
    assert len(budget.results) == 1 and budget.total == 1


def test_vestige_force_create_is_memoryds_force_create(engine: Engine) -> None:
    again = FACTS[0][0]
    assert _call(engine, "vestige_ingest", content=again).decision != "create"
    assert _call(engine, "vestige_ingest", content=again, forceCreate=True).decision == "create"


def test_agentos_memory_recall_is_memoryds_search_by_category(engine: Engine) -> None:
    out = _call(engine, "memory_recall", query="deploy disk", category="system.*")
    assert [r.category for r in out.results] == ["system.disk"]
    by_type = _call(engine, "memory_recall", query="deploy", category="decision")
    assert {r.node_type for r in by_type.results} == {"decision"}
    threshold = engine.settings.recall_threshold
    everything = _call(engine, "memory_recall", query="deploy", limit=10)
    assert all(r.score >= threshold for r in everything.results)
    assert everything.relevant == everything.total


def test_agentos_memory_store_is_memoryds_smart_ingest(engine: Engine) -> None:
    out = _call(engine, "memory_store", summary="On-call rota", detail="Ana is on call in May.",
                category="team", tags=["rota"], importance=0.8)
    stored = engine.get(out.memory_id)
    assert (stored.content, stored.summary, stored.category, stored.tags, stored.importance) == (
        "Ana is on call in May.", "On-call rota", "team", ["rota"], 0.8)
    alone = engine.get(_call(engine, "memory_store", summary="Lunch is at noon.").memory_id)
    assert (alone.content, alone.summary) == ("Lunch is at noon.", None)
    with pytest.raises(EmptyContent, match="only invisible"):
        _call(engine, "memory_store", detail="\u200b")


def test_openclaw_tools_show_memories_as_files(engine: Engine) -> None:
    found = _call(engine, "memory_search", query="dark mode", maxResults=2)
    own = _call(engine, "search", query="dark mode", limit=2)
    assert [r.path for r in found.results] == [f"memoryd/{i}.md" for i in _ids(own)]
    assert [r.score for r in found.results] == [r.score for r in own.results]
    first = found.results[0]
    text = _call(engine, "memory_get_path", path=first.path).text
    assert text == engine.get(_ids(own)[0]).content == first.snippet
    assert _call(engine, "memory_get_path", path="memoryd/nothing.md").text == ""
    gone = _call(engine, "memory_forget", memoryId=first.path)
    assert gone.deleted == _ids(own)[0] and engine.find(gone.deleted) is None
