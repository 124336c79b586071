"""The auth matrix over real HTTP: no key, bad key, revoked key, read-only key writing,
scoped and agent-bound keys, admin-only routes, anonymous opt-in, X-Agent-Id, /mcp guards."""

from __future__ import annotations

from typing import Iterator

import httpx
import pytest
from api_fixtures import LiveServer, clean_env, module_server, start_server

from memoryd.errors import NoKeysConfigured
from memoryd.config import Settings

MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


def _count(server: LiveServer) -> int:
    return server.engine.store.count()


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("POST", "/search", {"query": "x"}),
        ("POST", "/smart_ingest", {"content": "x"}),
        ("GET", "/api/v1/memories", None),
        ("GET", "/api/v1/stats", None),
        ("POST", "/recall", {"prompt": "x"}),
        ("POST", "/capture", {"messages": [], "session_key": "s"}),
        ("POST", "/mcp", MCP_INIT),
    ],
)
def test_no_key_and_bad_key_are_401(live_server: LiveServer, method, path, body):
    with httpx.Client(base_url=live_server.url, headers=MCP_HEADERS) as anon:
        response = anon.request(method, path, json=body)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert "missing API key" in response.json()["error"]
        for bad in (
            {"Authorization": "Bearer mk_wrong"},
            {"X-API-Key": "mk_wrong"},
            {"Authorization": "Basic dXNlcjpwYXNz"},
        ):
            assert anon.request(method, path, json=body, headers=bad).status_code == 401


def test_x_api_key_header_works(live_server: LiveServer):
    response = httpx.get(
        f"{live_server.url}/api/v1/stats", headers={"X-API-Key": live_server.keys["reader"]}
    )
    assert response.status_code == 200


def test_revoked_key_is_401(live_server: LiveServer):
    made = live_server.engine.admin.create_key("temp", scopes=["read"])
    with live_server.client(made.secret) as client:
        assert client.get("/api/v1/stats").status_code == 200
        live_server.engine.admin.revoke_key(made.key.id)
        response = client.get("/api/v1/stats")
        assert response.status_code == 401 and "revoked" in response.json()["error"]


def test_last_used_is_recorded(live_server: LiveServer):
    made = live_server.engine.admin.create_key("usage", scopes=["read"])
    keys = live_server.engine.admin.list_keys
    assert next(k for k in keys() if k.id == made.key.id).last_used is None
    with live_server.client(made.secret) as client:
        client.get("/api/v1/stats").raise_for_status()
    assert next(k for k in keys() if k.id == made.key.id).last_used is not None


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("POST", "/smart_ingest", {"content": "reader tries to write"}),
        ("POST", "/ingest", {"content": "reader tries to write"}),
        ("POST", "/api/v1/memories", {"content": "reader tries to write"}),
        ("POST", "/memory", {"action": "delete", "id": "x"}),
        (
            "POST",
            "/capture",
            {
                "messages": [{"role": "user", "content": "I prefer tea to coffee."}],
                "session_key": "r",
            },
        ),
        ("POST", "/codebase", {"action": "remember_decision", "codebase": "c", "decision": "d"}),
        (
            "POST",
            "/intention",
            {"action": "set", "description": "d", "trigger": {"type": "event", "event": "e"}},
        ),
        ("POST", "/api/v1/consolidate", {"dry_run": False}),
    ],
)
def test_read_only_key_cannot_write(live_server: LiveServer, method, path, body):
    before = _count(live_server)
    with live_server.client("reader") as reader:
        response = reader.request(method, path, json=body)
    assert response.status_code == 403, response.text
    assert "needs the 'write' scope" in response.json()["error"]
    assert _count(live_server) == before
    assert live_server.engine.store.bookkeeping.get_watermark("capture:r") == 0


def test_read_only_key_can_read(live_server: LiveServer):
    with live_server.client("reader") as reader:
        assert reader.post("/search", json={"query": "x"}).status_code == 200
        assert reader.post("/recall", json={"prompt": "x"}).status_code == 200
        assert reader.post("/api/v1/consolidate", json={"dry_run": True}).status_code == 200


@pytest.mark.parametrize("key", ["writer", "reader", "alpha"])
def test_admin_routes_need_admin(live_server: LiveServer, key):
    with live_server.client(key) as client:
        for method, path, body in (
            ("GET", "/api/v1/keys", None),
            ("POST", "/api/v1/keys", {"label": "x"}),
            ("DELETE", "/api/v1/keys/abc", None),
            ("POST", "/api/v1/gc", {}),
        ):
            assert client.request(method, path, json=body).status_code == 403


def test_purge_needs_admin(live_server: LiveServer):
    with live_server.client("writer") as writer, live_server.client("admin") as admin:
        mid = writer.post("/api/v1/memories", json={"content": "purge me"}).json()["id"]
        assert writer.delete(f"/api/v1/memories/{mid}", params={"purge": True}).status_code == 403
        assert writer.post("/memory", json={"action": "purge", "id": mid}).status_code == 403
        assert admin.delete(f"/api/v1/memories/{mid}", params={"purge": True}).json()["purged"]


def test_scoped_key_sees_only_its_scope(live_server: LiveServer):
    with live_server.client("writer") as writer, live_server.client("alpha") as alpha:
        outside = writer.post(
            "/api/v1/memories",
            json={"content": "Beta project uses the zebra codename", "scope": "project:beta"},
        ).json()
        inside = alpha.post(
            "/api/v1/memories", json={"content": "Alpha project uses the zebra codename too"}
        ).json()
        assert inside["scope"] == "project:alpha"
        # Reading: search, list, get, history, recall, the memory tool.
        hits = alpha.post("/search", json={"query": "zebra codename"}).json()["data"]["results"]
        assert [h["id"] for h in hits] == [inside["id"]]
        listed = alpha.get("/api/v1/memories", params={"limit": 1000}).json()
        assert {m["scope"] for m in listed["items"]} == {"project:alpha"}
        assert alpha.get(f"/api/v1/memories/{outside['id']}").status_code == 404
        assert alpha.get(f"/api/v1/memories/{outside['id']}/history").status_code == 404
        assert alpha.post("/memory", json={"action": "get", "id": outside["id"]}).status_code == 404
        recall = alpha.post("/recall", json={"prompt": "zebra codename"}).json()
        assert [i["id"] for i in recall["items"]] == [inside["id"]]
        # Asking for another scope, or writing to it, is refused; nothing is written.
        asked = alpha.post("/search", json={"query": "zebra", "scope": "project:beta"})
        assert asked.status_code == 403
        before = _count(live_server)
        assert (
            alpha.post("/smart_ingest", json={"content": "x", "scope": "user"}).status_code == 403
        )
        assert (
            alpha.patch(f"/api/v1/memories/{outside['id']}", json={"tags": ["x"]}).status_code
            == 404
        )
        assert alpha.delete(f"/api/v1/memories/{outside['id']}").status_code == 404
        assert (
            alpha.post("/codebase", json={"action": "get_context", "codebase": "beta"}).status_code
            == 403
        )
        assert alpha.get("/api/v1/stats").status_code == 403
        assert _count(live_server) == before
        # The unscoped key still sees both.
        both = writer.post("/search", json={"query": "zebra codename"}).json()["data"]["results"]
        assert {outside["id"], inside["id"]} <= {h["id"] for h in both}


def test_agent_bound_key_and_x_agent_id(live_server: LiveServer):
    with live_server.client("bot") as bot, live_server.client("writer", agent="claude") as claude:
        mine = bot.post("/api/v1/memories", json={"content": "Bot one likes owls"}).json()
        assert mine["agent_id"] == "bot-1"
        theirs = claude.post("/api/v1/memories", json={"content": "Claude likes owls"}).json()
        assert theirs["agent_id"] == "claude"
        history = claude.get(f"/api/v1/memories/{theirs['id']}/history").json()["entries"]
        assert history[0]["agent_id"] == "claude" and history[0]["actor"] == "key:writer"
        hits = bot.post("/search", json={"query": "likes owls"}).json()["data"]["results"]
        assert [h["id"] for h in hits] == [mine["id"]]
        impostor = bot.post("/search", json={"query": "owls"}, headers={"X-Agent-Id": "claude"})
        assert impostor.status_code == 403
        widened = bot.post("/search", json={"query": "owls", "agent_id": "claude"})
        assert widened.status_code == 403
        posing = bot.post(
            "/capture", json={"messages": [], "session_key": "x", "agent_id": "claude"}
        )
        assert posing.status_code == 403
        # X-Agent-Id is a filter for unbound keys, never a widening.
        only = claude.get("/api/v1/memories", params={"agent_id": "claude"}).json()["items"]
        assert {m["agent_id"] for m in only} == {"claude"}
        bad = claude.get("/api/v1/stats", headers={"X-Agent-Id": "bad\u00e9".encode()})
        assert bad.status_code == 400


def test_mcp_rejects_foreign_hosts(live_server: LiveServer):
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {live_server.keys['reader']}"}
    ok = httpx.post(f"{live_server.url}/mcp", json=MCP_INIT, headers=headers)
    assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["name"] == "memoryd"
    evil = httpx.post(
        f"{live_server.url}/mcp", json=MCP_INIT, headers={**headers, "Host": "evil.example:80"}
    )
    assert evil.status_code == 421
    origin = httpx.post(
        f"{live_server.url}/mcp",
        json=MCP_INIT,
        headers={**headers, "Origin": "http://evil.example"},
    )
    assert origin.status_code == 403


def test_cors_is_off_by_default(live_server: LiveServer):
    response = httpx.options(
        f"{live_server.url}/search",
        headers={"Origin": "http://example.com", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in response.headers
    assert Settings().host == "127.0.0.1" and Settings().allow_anonymous is False


@pytest.fixture(scope="module")
def open_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    """A server with MEMORYD_ALLOW_ANONYMOUS, an allowed extra host, and CORS for one origin."""
    base = tmp_path_factory.mktemp("anon")
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        server = start_server(
            base,
            shared_embedder,
            allow_anonymous=True,
            allowed_hosts=["memoryd.lan:*"],
            cors_origins=["http://app.local"],
            key_specs={"admin": {"scopes": ["admin"]}},
        )
        yield server
        server.stop()


def test_anonymous_opt_in(open_server: LiveServer):
    with httpx.Client(base_url=open_server.url) as anon:
        made = anon.post("/api/v1/memories", json={"content": "anonymous write"})
        assert made.status_code == 201
        assert anon.post("/search", json={"query": "anonymous"}).status_code == 200
        assert anon.get("/api/v1/keys").status_code == 403  # admin still needs a key
        assert (
            anon.get("/api/v1/stats", headers={"Authorization": "Bearer mk_bad"}).status_code == 401
        )
    with open_server.client("admin") as admin:
        assert admin.get("/api/v1/keys").status_code == 200


def test_configured_hosts_and_cors(open_server: LiveServer):
    headers = {**MCP_HEADERS, "Host": "memoryd.lan:8765"}
    assert httpx.post(f"{open_server.url}/mcp", json=MCP_INIT, headers=headers).status_code == 200
    preflight = httpx.options(
        f"{open_server.url}/search",
        headers={
            "Origin": "http://app.local",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert preflight.headers["access-control-allow-origin"] == "http://app.local"


def test_app_refuses_to_start_without_keys(shared_embedder, tmp_path, monkeypatch):
    """The lifespan refuses (the CLI test runs `memoryd serve` for the user-facing message)."""
    import asyncio

    import memoryd
    from memoryd.serving.http import create_app

    clean_env(monkeypatch, tmp_path)
    engine = memoryd.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=shared_embedder)
    app = create_app(lambda: engine, Settings(home=tmp_path))

    async def start() -> None:
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(NoKeysConfigured, match="memoryd keys create"):
        asyncio.run(start())
