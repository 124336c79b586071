"""GET /health on a real server: a deep check that the store answers. Without a key it says
only ``{"status": ...}``; the details (version, database path, counts, embedder) need a key."""

from __future__ import annotations

import sqlite3

import httpx
import pytest
from api_fixtures import clean_env, start_server

import memoryd


@pytest.fixture
def server(shared_embedder, tmp_path, monkeypatch):
    clean_env(monkeypatch, tmp_path)
    with memoryd.open(f"sqlite:///{tmp_path / 'memoryd.db'}", embedder=shared_embedder) as mem:
        mem.add_many([{"content": "healthy memory one"}, {"content": "healthy memory two"}])
    live = start_server(
        tmp_path,
        shared_embedder,
        key_specs={"reader": {"scopes": ["read"]}, "gone": {"scopes": ["read"]},
                   "bot": {"scopes": ["read", "write"], "agent_id": "bot-1"},
                   "alpha": {"scopes": ["read"], "memory_scope": "project:alpha"}},
        allow_anonymous=True,
        mcp_tools="full",
    )
    yield live
    live.stop()


def test_health_without_a_key_says_only_the_status(server) -> None:
    response = httpx.get(f"{server.url}/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert str(server.engine.settings.home) not in response.text
    bad = httpx.get(f"{server.url}/health", headers={"Authorization": "Bearer mk_wrong"})
    assert bad.status_code == 200 and bad.json() == {"status": "ok"}


def test_health_with_a_key_has_the_details(server, shared_embedder) -> None:
    with server.client("reader") as client:
        body = client.get("/health").json()
    assert body["status"] == "ok"
    assert body["version"] == memoryd.__version__
    assert body["store"]["ok"] is True and body["store"]["memories"] == 2
    assert body["embedder"]["model_id"] == shared_embedder.model_id
    assert body["embedder"]["loaded"] is True  # the shared model is loaded


def test_a_bound_key_is_not_told_how_many_memories_the_store_holds(server) -> None:
    """The count covers every scope and agent (stats is refused to a bound key for that):
    the details a key bound to an agent or scope gets, over REST and MCP, leave it out."""
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def tool(key: str) -> dict:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.keys[key]}"},
                                  timeout=60)
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as c:
            return (await c.call_tool("health", {})).structured_content

    for key in ("bot", "alpha"):
        with server.client(key) as client:
            body = client.get("/health").json()
        assert body["status"] == "ok" and body["store"]["ok"] is True
        assert "memories" not in body["store"], key
        answer = asyncio.run(tool(key))
        assert answer["status"] == "ok" and "memories" not in answer["store"], key
    assert asyncio.run(tool("reader"))["store"]["memories"] == 2


def test_a_revoked_key_does_not_unlock_the_details(server) -> None:

    record = next(k for k in server.engine.admin.list_keys() if k.label == "gone")
    server.engine.admin.revoke_key(record.id)
    with server.client("gone") as client:
        assert client.get("/health").json() == {"status": "ok"}


def test_health_reports_an_unusable_store(server, tmp_path) -> None:
    assert httpx.get(f"{server.url}/health").status_code == 200
    conn = sqlite3.connect(tmp_path / "memoryd.db")
    conn.execute("DROP TABLE memories")  # the store breaks behind the server's back
    conn.commit()
    conn.close()
    response = httpx.get(f"{server.url}/health")
    assert response.status_code == 503 and response.json() == {"status": "unhealthy"}
    with server.client("reader") as client:
        detailed = client.get("/health")
    assert detailed.status_code == 503
    body = detailed.json()
    assert body["status"] == "unhealthy"
    assert body["store"]["ok"] is False and "memories" in body["store"]["error"]
