"""Floods: a list far past its limit is refused before any per-item work, and no request holds
the event loop meanwhile. A real server on 127.0.0.1 with a read-only key.

De-duplicating tags used to run before the 64-item limit, by list search, on the event loop:
40,000 tags (389 KB) held every request, /readyz included, for 9-19 s, 100,000 (under the
1 MiB body limit) for about a minute.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import httpx
import pytest
from api_fixtures import LiveServer, module_server

from memoryd.models import MemoryFields
from memoryd.operations import REGISTRY

FLOOD_TAGS = 100_000  # ~1 MB of JSON: just under the default body limit


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


def _arrays(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every array schema in a JSON schema, with where it is (not in the rules across fields,
    ``allOf``: those say what a field must hold, the field's own schema says its limits)."""
    if isinstance(node, dict):
        if node.get("type") == "array" or "array" in (node.get("type") or []):
            yield path, node
        for key, child in node.items():
            if key != "allOf":
                yield from _arrays(child, f"{path}/{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _arrays(child, f"{path}/{i}")


def test_every_list_an_operation_takes_has_a_limit():
    """A list without maxItems could carry a million items into per-item validators."""
    unbounded = [
        f"{name}{where}"
        for name, op in sorted(REGISTRY.items())
        for where, schema in _arrays(op.input.model_json_schema())
        if "maxItems" not in schema
    ]
    assert not unbounded, unbounded


def test_the_tag_limit_counts_the_tags_given_before_any_is_deduplicated():
    """64 copies of one tag are one tag; 65 are refused as too many, without looking at them."""
    assert MemoryFields(tags=["same"] * 64).tags == ["same"]
    with pytest.raises(ValueError, match="at most 64"):
        MemoryFields(tags=["same"] * 65)


def _flood(server: LiveServer, path: str, body: dict[str, Any]) -> httpx.Response:
    raw = json.dumps(body).encode()
    assert len(raw) < server.settings.max_body_bytes
    with server.client("reader") as client:
        return client.post(path, content=raw, headers={"content-type": "application/json"})


def test_a_tags_flood_is_refused_and_readyz_answers_meanwhile(live_server: LiveServer):
    tags = [f"t{i}" for i in range(FLOOD_TAGS)]
    floods = [
        ("/api/v1/search", {"query": "kiln", "tags": tags}, "tags"),
        ("/api/v1/memories", {"content": "kiln", "tags": tags}, "tags"),
        ("/api/v1/ingest", {"items": [{"content": "kiln", "tags": tags}]}, "items.0.tags"),
        ("/search", {"query": "kiln", "tags": tags}, "tags"),
    ] * 2
    done = threading.Event()
    polls: list[int | str] = []

    def poll() -> None:
        # Generous: before the fix one such flood held /readyz for about a minute.
        with httpx.Client(base_url=live_server.url, timeout=20) as client:
            while not done.is_set():
                try:
                    polls.append(client.get("/readyz").status_code)
                except httpx.TimeoutException:
                    polls.append("no answer within 20 s")

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda f: (_flood(live_server, f[0], f[1]), f[2]), floods))
    finally:
        done.set()
        poller.join()
    for response, field in answers:
        assert response.status_code == 422, response.text[:300]
        assert response.json()["error"].startswith(f"{field}: List should have at most 64")
    assert polls and set(polls) == {200}, sorted(set(map(str, polls)))


def test_a_flood_of_other_lists_is_refused_too(live_server: LiveServer):
    many = [f"x{i}" for i in range(50_000)]
    cases = [
        ("/api/v1/search", {"query": "kiln", "domains": many}, "domains"),
        ("/api/v1/search", {"query": "kiln", "categories": many}, "categories"),
        ("/recall", {"prompt": "kiln", "node_types": ["fact"] * 50_000}, "node_types"),
        ("/capture", {"session_key": "s", "messages": [{"role": "user", "content": "hi"}] * 20_000},
         "messages"),
    ]
    for path, body, field in cases:  # validation comes before the key's scope is checked
        response = _flood(live_server, path, body)
        assert response.status_code == 422, (path, response.text[:200])
        assert response.json()["error"].startswith(f"{field}:"), response.text[:200]
