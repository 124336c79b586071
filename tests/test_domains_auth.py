"""Keys limited to domains, over real HTTP (REST and MCP at /mcp): such a key reads, searches,
lists, recalls, explores and writes only memories in its domains, ids guessed from another
domain are "not found", a write that would land outside is refused with nothing stored; the
X-Memoryd-Domain header sets a default domain; admins make domain keys over REST and MCP.

The store holds the hand-written corpus (network, home, rust, cooking), whose discovered
domains are renamed after their topics.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any, Iterator

import httpx
import httpx2
import pytest
from api_fixtures import LiveServer, clean_env, start_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import memoryd
from memoryd.engine import Access

CORPUS = Path(__file__).resolve().parent / "data" / "domains_corpus.jsonl"
ROWS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
KEYS = {
    "admin": {"scopes": ["admin"]},
    "writer": {"scopes": ["read", "write"]},
    "home": {"scopes": ["read", "write"], "domains": ["home"]},
    "home_reader": {"scopes": ["read"], "domains": ["home"]},
    "bot": {"scopes": ["read", "write"], "agent_id": "bot-1"},
    "alpha": {"scopes": ["read", "write"], "memory_scope": "project:alpha"},
}
NETWORK_TEXT = "The core routers peer over eBGP and VLAN 40 carries the backup traffic"
HOME_TEXT = "The heat pump drew 11 kWh last night and the solar battery is full"


def _build(path: Path, embedder: Any) -> None:
    """The corpus, discovered, with each domain named after the topic most of it is about."""
    mem = memoryd.open(f"sqlite:///{path}", embedder=embedder)
    try:
        mem.add_many([{"content": r["text"], "tags": r["topics"]} for r in ROWS])
        mem.settle(timeout=300)
        votes: dict[str, dict[str, int]] = {}
        for m in mem.list(limit=1000):
            if len(m.tags) == 1 and m.domains:
                counts = votes.setdefault(m.domains[0], {})
                counts[m.tags[0]] = counts.get(m.tags[0], 0) + 1
        for name, counts in votes.items():
            mem.domains.rename(name, max(counts, key=counts.__getitem__))
        assert sorted(d.name for d in mem.domains.list()) == ["cooking", "home", "network", "rust"]
    finally:
        mem.close()


@pytest.fixture(scope="module")
def server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("domains-live")
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        _build(base / "memoryd.db", shared_embedder)
        live = start_server(base, shared_embedder, key_specs=KEYS,
                            mcp_tools="memory,admin,tasks,kg")
        try:
            yield live
        finally:
            live.stop()


def ids_in(server: LiveServer, domain: str, exclusive: bool = True) -> list[str]:
    """Memories in ``domain`` (and, if ``exclusive``, in no domain the home key may see)."""
    found = server.engine.list(domains=[domain], limit=1000)
    return [m.id for m in found if not exclusive or "home" not in m.domains]


def in_home(server: LiveServer, memory_ids: list[str]) -> bool:
    found = server.engine.store.get_many(memory_ids)
    return all("home" in found[i].domains for i in memory_ids)


# --------------------------------------------------------------------------- REST: reading


def test_rest_reads_stay_inside_the_domain(server: LiveServer) -> None:
    outside = ids_in(server, "network")
    with server.client("home") as home:
        for path, body in (("/search", {"query": "BGP routers VLAN"}),
                           ("/api/v1/search", {"query": "BGP routers VLAN", "limit": 50})):
            response = home.post(path, json=body)
            assert response.status_code == 200, response.text
            data = response.json()
            results = (data["data"] if "data" in data else data)["results"]
            assert in_home(server, [r["id"] for r in results])
            assert all("home" in r["domains"] for r in results)
        listed = home.get("/api/v1/memories", params={"limit": 1000}).json()
        assert listed["items"] and listed["total"] == len(listed["items"])
        assert listed["total"] == server.engine.count(domains=["home"])
        assert all("home" in m["domains"] for m in listed["items"])
        recalled = home.post("/recall", json={"prompt": "how are the routers peering?"}).json()
        assert in_home(server, [i["id"] for i in recalled["items"]])
        # ids guessed from another domain: not found, whatever the route
        for memory_id in outside[:3]:
            for method, path in (("GET", f"/api/v1/memories/{memory_id}"),
                                 ("GET", f"/api/v1/memories/{memory_id}/history"),
                                 ("GET", f"/api/v1/memories/{memory_id}/neighbours"),
                                 ("PATCH", f"/api/v1/memories/{memory_id}"),
                                 ("DELETE", f"/api/v1/memories/{memory_id}"),
                                 ("POST", f"/api/v1/memories/{memory_id}/promote")):
                body = {"tags": ["x"]} if method == "PATCH" else None
                response = home.request(method, path, json=body)
                assert response.status_code == 404, (method, path, response.text)
            assert home.post("/memory", json={"action": "get", "id": memory_id}).status_code == 404
        # asking for another domain is refused
        asked = home.post("/api/v1/search", json={"query": "bgp", "domains": ["network"]})
        assert asked.status_code == 403 and "limited to domains home" in asked.json()["error"]
        assert home.get("/api/v1/memories", params={"domains": "network"}).status_code == 403
        for path in ("/api/v1/stats", "/api/v1/domains/proposals"):
            assert home.get(path).status_code == 403
        assert home.get("/api/v1/journal", params={"day": "2025-01-01"}).status_code == 403
    assert server.engine.get(outside[0]).tags  # untouched


def test_rest_graph_walks_stop_at_the_domain(server: LiveServer) -> None:
    inside, outside = ids_in(server, "home", False)[0], ids_in(server, "network")[0]
    server.engine.link(inside, outside, "related", 1.0)
    with server.client("home") as home, server.client("writer") as writer:
        mine = home.get(f"/api/v1/memories/{inside}/neighbours").json()
        assert outside not in {n["memory"]["id"] for n in mine["neighbours"]}
        theirs = writer.get(f"/api/v1/memories/{inside}/neighbours").json()
        assert outside in {n["memory"]["id"] for n in theirs["neighbours"]}


def test_rest_domain_listing_shows_only_the_keys_domains(server: LiveServer) -> None:
    with server.client("home") as home, server.client("writer") as writer:
        assert [d["name"] for d in home.get("/api/v1/domains").json()["domains"]] == ["home"]
        assert home.get("/api/v1/domains/network").status_code == 404
        assert home.get("/api/v1/domains/home").json()["name"] == "home"
        assert len(writer.get("/api/v1/domains").json()["domains"]) == 4
        assert "centroid" not in writer.get("/api/v1/domains/home").json()


@pytest.mark.parametrize("key", ["bot", "alpha"])
def test_a_key_bound_to_an_agent_or_scope_learns_no_domain_names(server: LiveServer,
                                                                   key: str) -> None:
    """Domain names come from every scope's and agent's memories: a key bound to an agent or
    scope cannot list them, and naming a domain (unknown or not) in a filter or in
    X-Memoryd-Domain neither lists them nor tells it which names exist."""
    names = ("network", "home", "rust", "cooking")
    with server.client(key) as client:
        assert client.get("/api/v1/domains").status_code == 403
        for domain in ("nowhere", "network"):
            header = {"X-Memoryd-Domain": domain}
            for method, path, params, body, headers in (
                    ("POST", "/api/v1/search", None, {"query": "routers", "domains": [domain]},
                     None),
                    ("GET", "/api/v1/memories", {"domains": domain}, None, None),
                    ("POST", "/api/v1/search", None, {"query": "routers"}, header),
                    ("POST", "/api/v1/recall", None, {"prompt": "routers"}, header),
            ):
                response = client.request(method, path, params=params, json=body,
                                          headers=headers)
                assert response.status_code == 200, (domain, path, response.text)
                leaked = [n for n in names if n != domain and n in response.text]
                assert not leaked, (domain, path, leaked, response.text)


# --------------------------------------------------------------------------- REST: writing


def test_rest_writes_must_land_inside(server: LiveServer) -> None:
    before = server.engine.store.count()
    with server.client("home") as home, server.client("home_reader") as reader:
        for path, body in (("/api/v1/memories", {"content": NETWORK_TEXT}),
                           ("/api/v1/ingest", {"content": NETWORK_TEXT}),
                           ("/smart_ingest", {"items": [{"content": HOME_TEXT},
                                                        {"content": NETWORK_TEXT}]})):
            refused = home.post(path, json=body)
            assert refused.status_code == 403, (path, refused.text)
            assert "may only write memories in domains home" in refused.json()["error"]
        assert server.engine.store.count() == before
        mine = ids_in(server, "home", False)[0]
        original = server.engine.get(mine).content
        moved = home.patch(f"/api/v1/memories/{mine}", json={"content": NETWORK_TEXT})
        assert moved.status_code == 403 and server.engine.get(mine).content == original
        assert reader.post("/api/v1/memories", json={"content": HOME_TEXT}).status_code == 403
        made = home.post("/api/v1/memories", json={"content": HOME_TEXT})
        assert made.status_code == 201 and "home" in made.json()["domains"]
        assert home.get(f"/api/v1/memories/{made.json()['id']}").status_code == 200
    assert server.engine.store.count() == before + 1


# --------------------------------------------------------------------------- headers, admin


def test_x_memoryd_domain_is_a_default_within_the_key(server: LiveServer) -> None:
    header = {"X-Memoryd-Domain": "rust"}
    with server.client("writer", headers=header) as rusty, server.client("home") as home:
        hits = rusty.post("/api/v1/search", json={"query": "anything at all", "limit": 30})
        assert in_rust(server, [h["id"] for h in hits.json()["results"]])
        listed = rusty.get("/api/v1/memories", params={"limit": 1000}).json()["items"]
        assert listed and all("rust" in m["domains"] for m in listed)
        wider = rusty.get("/api/v1/memories", params={"domains": ["rust", "home"],
                                                      "limit": 1000}).json()["items"]
        assert {"home", "rust"} <= {d for m in wider for d in m["domains"]}
        outside = home.get("/api/v1/memories", headers=header)
        assert outside.status_code == 403 and "X-Memoryd-Domain" in outside.json()["error"]
        bad = home.get("/api/v1/memories", headers={"X-Memoryd-Domain": "not a name!"})
        assert bad.status_code in (400, 422) and "X-Memoryd-Domain" in bad.json()["error"]
        unknown = rusty.get("/api/v1/memories", headers={"X-Memoryd-Domain": "nowhere"})
        assert unknown.status_code == 422 and "no domain named nowhere" in unknown.text


def in_rust(server: LiveServer, memory_ids: list[str]) -> bool:
    found = server.engine.store.get_many(memory_ids)
    return bool(memory_ids) and all("rust" in found[i].domains for i in memory_ids)


def test_admins_make_domain_keys_over_rest(server: LiveServer) -> None:
    with server.client("admin") as admin, server.client("writer") as writer:
        made = admin.post("/api/v1/keys", json={"label": "cook", "scopes": ["read"],
                                                "domains": ["Cooking"]})
        assert made.status_code == 201 and made.json()["key"]["domains"] == ["cooking"]
        assert admin.post("/api/v1/keys", json={"label": "x", "domains": ["nowhere"]}
                          ).status_code == 422
        assert admin.post("/api/v1/keys", json={"label": "x", "domains": []}).status_code == 422
        assert writer.post("/api/v1/keys", json={"label": "x", "domains": ["home"]}
                           ).status_code == 403
        listed = {k["label"]: k for k in admin.get("/api/v1/keys").json()["keys"]}
        assert listed["cook"]["domains"] == ["cooking"] and listed["writer"]["domains"] is None
    with server.client(made.json()["secret"]) as cook:
        items = cook.get("/api/v1/memories", params={"limit": 1000}).json()["items"]
        assert items and all("cooking" in m["domains"] for m in items)


def test_domain_changes_need_admin(server: LiveServer) -> None:
    with server.client("writer") as writer, server.client("home") as home:
        for client in (writer, home):
            for method, path, body in (
                ("POST", "/api/v1/domains/discover", {}),
                ("PATCH", "/api/v1/domains/home", {"name": "house"}),
                ("POST", "/api/v1/domains/merge", {"ids": ["home", "rust"]}),
                ("POST", "/api/v1/domains/home/split", None),
                ("POST", "/api/v1/domains/threshold", {"threshold": 0.5}),
                ("POST", "/api/v1/domains/proposals/x/accept", None),
                ("POST", "/api/v1/domains/proposals/x/reject", None),
            ):
                assert client.request(method, path, json=body).status_code == 403, path
    assert sorted(d.name for d in server.engine.domains.list()) == ["cooking", "home", "network",
                                                                "rust"]


def test_tasks_waits_and_graphs_are_closed_to_a_domain_key(server: LiveServer) -> None:
    """Tasks, waits and graph nodes carry no domains: a key limited to domains would see
    every one of its scope, so it gets none (403), over REST and MCP."""
    with server.client("writer") as writer:
        task = writer.post("/api/v1/tasks", json={"name": "Plan the network rebuild"})
        assert task.status_code == 201, task.text
        task_id = task.json()["task"]["id"]
        node = writer.post("/api/v1/graph/write", json={"nodes": [{"name": "Router notes"}]})
        assert node.status_code == 200, node.text
    with server.client("home") as home:
        for method, path, body in [
            ("GET", "/api/v1/tasks", None), ("GET", f"/api/v1/tasks/{task_id}", None),
            ("POST", "/api/v1/tasks", {"name": "home task"}),
            ("PATCH", f"/api/v1/tasks/{task_id}", {"message": "hijacked"}),
            ("GET", "/api/v1/waits", None),
            ("POST", "/api/v1/waits", {"target": "pid:1", "criteria": "exit", "timeout_s": 5}),
            ("GET", "/api/v1/graph/core", None), ("GET", "/api/v1/graph/changes", None),
            ("POST", "/api/v1/graph/search", {"query": "router"}),
            ("POST", "/api/v1/graph/write", {"nodes": [{"name": "Home node"}]}),
        ]:
            response = home.request(method, path, json=body)
            assert response.status_code == 403, (method, path, response.text)
            assert "limited to domains" in response.json()["error"]

    async def session() -> list[Any]:
        async with _mcp(server, "home") as client:
            return [await client.call_tool("task_list", {}),
                    await client.call_tool("task_get", {"id": task_id}),
                    await client.call_tool("wait_list", {}),
                    await client.call_tool("kg_read", {}),
                    await client.call_tool("kg_search", {"query": "router"})]

    for result in asyncio.run(session()):
        assert result.is_error and "limited to domains" in result.content[0].text
    assert server.engine.tasks.get(task_id).task.name == "Plan the network rebuild"


# --------------------------------------------------------------------------- MCP over HTTP


def _mcp(server: LiveServer, key: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.keys.get(key, key)}"},
                              timeout=120)
    return Client(streamable_http_client(f"{server.url}/mcp", http_client=http))


def test_mcp_reads_and_writes_stay_inside_the_domain(server: LiveServer) -> None:
    outside = ids_in(server, "network")[0]
    before = server.engine.store.count()

    async def session() -> dict[str, Any]:
        async with _mcp(server, "home") as client:
            return {
                "search": await client.call_tool("search", {"query": "BGP routers", "limit": 20}),
                "asked": await client.call_tool("search", {"query": "bgp",
                                                           "domains": ["network"]}),
                "get": await client.call_tool("memory", {"id": outside}),
                "recall": await client.call_tool("recall", {"prompt": "routers and VLANs"}),
                "explore": await client.call_tool("explore", {"id": outside}),
                "ingest": await client.call_tool("smart_ingest", {"content": NETWORK_TEXT}),
                "edit": await client.call_tool("memory_edit", {"id": outside, "tags": ["x"]}),
                "domains": await client.call_tool("domains", {"action": "list"}),
                "rename": await client.call_tool("domains", {"action": "rename", "id": "home",
                                                             "name": "house"}),
            }

    got = asyncio.run(session())
    assert in_home(server, [r["id"] for r in got["search"].structured_content["results"]])
    assert got["asked"].is_error and "limited to domains home" in got["asked"].content[0].text
    for name in ("get", "explore", "edit"):
        assert got[name].is_error and "no memory" in got[name].content[0].text, name
    assert in_home(server, [i["id"] for i in got["recall"].structured_content["items"]])
    assert got["ingest"].is_error and "only write memories in domains home" in \
        got["ingest"].content[0].text
    assert [d["name"] for d in got["domains"].structured_content["domains"]] == ["home"]
    assert got["rename"].is_error and "admin" in got["rename"].content[0].text
    assert server.engine.store.count() == before
    assert server.engine.get(outside).tags != ["x"]


def test_mcp_admin_makes_a_domain_key(server: LiveServer) -> None:
    async def make() -> Any:
        async with _mcp(server, "admin") as client:
            return await client.call_tool("keys_create", {"label": "mcp-home",
                                                          "scopes": ["read"],
                                                          "domains": ["home"]})

    made = asyncio.run(make())
    assert not made.is_error and made.structured_content["key"]["domains"] == ["home"]
    secret = made.structured_content["secret"]

    async def use() -> Any:
        async with _mcp(server, secret) as client:
            return await client.call_tool("search", {"query": "routers cooking bread cargo",
                                                     "limit": 30})

    results = asyncio.run(use()).structured_content["results"]
    assert results and in_home(server, [r["id"] for r in results])


def test_export_by_a_domain_key_holds_only_its_domain(server: LiveServer) -> None:
    limited = server.engine.acting_as(access=Access(domains=frozenset({"home"})))
    out = io.StringIO()
    count = limited.admin.export_jsonl(out)
    exported = [json.loads(line) for line in out.getvalue().splitlines()]
    assert count == len(exported) == server.engine.count(domains=["home"],
                                                         include_superseded=True)
    assert exported and all("home" in m["domains"] for m in exported)


def test_a_fresh_server_url_answers(server: LiveServer) -> None:
    assert httpx.get(f"{server.url}/health").status_code == 200


def test_intentions_and_capture_with_a_domain_key(server: LiveServer) -> None:
    server.engine.tasks.set_intention("Water the greenhouse basil",
                                      {"type": "event", "event": "dusk"})
    with server.client("home") as home, server.client("writer") as writer:
        refused = home.post("/intention", json={"action": "set", "description": "d",
                                                "trigger": {"type": "event", "event": "e"}})
        assert refused.status_code == 403 and "belong to no domain" in refused.json()["error"]
        assert home.post("/intention", json={"action": "list"}).json()["data"]["intentions"] == []
        assert writer.post("/intention", json={"action": "list"}).json()["data"]["intentions"]
        before = server.engine.store.count()
        message = ("I decided that the core routers must peer over eBGP with AS 64513 and that "
                   "VLAN 50 carries the camera traffic.")
        captured = home.post("/capture", json={
            "messages": [{"role": "user", "content": message}], "session_key": "s-home"})
        assert captured.status_code == 403, captured.text  # the decision lands in network
        assert "belongs to network" in captured.json()["error"]
        assert server.engine.store.count() == before
