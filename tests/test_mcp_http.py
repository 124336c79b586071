"""MCP over Streamable HTTP at /mcp of a real uvicorn server, with the SDK's client."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import httpx2
import pytest
from api_fixtures import LiveServer, module_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    # The Vestige-compatible surface plus the admin tools (the default profile is pinned by
    # tests/test_mcp_surface.py).
    yield from module_server(shared_embedder, tmp_path_factory, mcp_tools="vestige,full")


def _client(server: LiveServer, key: str | None, agent: str | None = None) -> Client:
    headers = {}
    if key:
        headers["Authorization"] = f"Bearer {server.keys.get(key, key)}"
    if agent:
        headers["X-Agent-Id"] = agent
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    return Client(streamable_http_client(f"{server.url}/mcp", http_client=http))


def _session(
    server: LiveServer,
    key: str | None,
    calls: list[tuple[str, dict[str, Any]]],
    agent: str | None = None,
) -> tuple[list[str], list[Any]]:
    async def go():
        async with _client(server, key, agent) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def test_tools_over_http_with_a_key(live_server: LiveServer):
    names, (stored, found, stats) = _session(
        live_server,
        "writer",
        [
            ("smart_ingest", {"content": "The HTTP test likes kiwis", "tags": ["fruit"]}),
            ("search", {"query": "kiwis"}),
            ("stats", {}),
        ],
        agent="openclaw",
    )
    assert "search" in names and "recall" in names
    assert not stored.is_error
    memory = stored.structured_content["results"][0]["memory"]
    assert memory["agent_id"] == "openclaw"
    history = live_server.engine.history(memory["id"])
    assert history[0].actor == "key:writer" and history[0].agent_id == "openclaw"
    assert found.structured_content["results"][0]["id"] == memory["id"]
    assert stats.structured_content["memories"] >= 1


def test_key_scopes_apply_over_http(live_server: LiveServer):
    before = live_server.engine.store.count()
    _, (denied, allowed) = _session(
        live_server,
        "reader",
        [
            ("smart_ingest", {"content": "reader cannot write this"}),
            ("search", {"query": "kiwis"}),
        ],
    )
    assert denied.is_error and "needs the 'write' scope" in denied.content[0].text
    assert not allowed.is_error
    assert live_server.engine.store.count() == before
    _, (scoped,) = _session(live_server, "alpha", [("stats", {})])
    assert scoped.is_error and "bound to a scope" in scoped.content[0].text


@pytest.mark.parametrize("key", [None, "mk_not_a_real_key"])
def test_no_or_bad_key_cannot_connect(live_server: LiveServer, key):
    """The SDK client's first request is answered 401 (with WWW-Authenticate), and the
    session never starts: no tool runs."""
    seen: list[tuple[int, str | None]] = []

    async def record(response) -> None:
        seen.append((response.status_code, response.headers.get("www-authenticate")))

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120, event_hooks={"response": [record]})

    async def go() -> None:
        async with Client(streamable_http_client(f"{live_server.url}/mcp", http_client=http)) as c:
            await c.call_tool("stats", {})

    with pytest.raises(BaseException) as info:
        asyncio.run(go())
    assert not isinstance(info.value, (KeyboardInterrupt, SystemExit))
    assert seen and all(status == (401, "Bearer") for status in seen), seen
