"""Isolation of bound keys through indirect channels, on both backends: what another caller's
write does to the memories a bound key sees, the names domain errors give, and the paths
spreading activation takes. The world (keys, foreign memories) is security_world.py's."""

from __future__ import annotations

from typing import Iterator

import pytest
from security_world import World, world_fixture


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(request, shared_embedder, tmp_path_factory) -> Iterator[World]:
    yield from world_fixture(request, shared_embedder, tmp_path_factory)


def _search(world: World, caller: str, query: str, **extra) -> dict:
    with world.client(caller) as client:
        response = client.post("/api/v1/search", json={"query": query, "limit": 50, **extra})
    assert response.status_code == 200, response.text
    return response.json()


# --- smart ingest by an unbound writer --------------------------------------------------------
@pytest.mark.parametrize("order", ["bot-first", "bot2-first"])
def test_an_unbound_writers_merge_does_not_fold_one_agents_memory_into_anothers(world, order):
    """Near-duplicates of bot-1 and bot-2 (both in the user scope) met by an unbound writer's
    smart ingest: neither agent's text ends up in a memory the other reads, and neither
    memory is superseded by one its agent cannot see (whichever is the closest)."""
    n = 1 if order == "bot-first" else 2
    texts = {"bot": f"The kiln in the pottery shed {n} is fired every second Friday (ref zqk{n}1)",
             "bot2": f"The kiln in the pottery shed {n} gets fired every second Friday "
                     f"(ref zqk{n}2)"}
    authors = ["bot", "bot2"] if order == "bot-first" else ["bot2", "bot"]
    made = {caller: world.create(caller, texts[caller]) for caller in authors}
    with world.client("writer") as client:
        response = client.post("/api/v1/ingest", json={
            "content": f"The kiln in the pottery shed {n} is fired every 2nd Friday"})
    assert response.status_code == 200, response.text
    for caller, other in (("bot", "bot2"), ("bot2", "bot")):
        marker = f"zqk{n}{1 if other == 'bot' else 2}"
        with world.client(caller) as client:
            listed = client.get("/api/v1/memories", params={"limit": 1000,
                                                           "include_superseded": True})
            found = client.post("/api/v1/search", json={"query": texts[other].split(" (ref")[0],
                                                       "limit": 50,
                                                       "detail_level": "full"})
        assert listed.status_code == 200 and found.status_code == 200
        assert marker not in listed.text and marker not in found.text, (caller, marker)
        mine = world.memory(made[caller]["id"])
        assert mine.superseded_by is None or \
            world.memory(mine.superseded_by).agent_id == mine.agent_id
