"""Knowledge graphs over a real HTTP server: REST under /api/v1/graph and the kg_* MCP tools
at /mcp, with keys bound to one project, read-only keys and bad input."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from api_fixtures import LiveServer, clean_env, start_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

KEYS: dict[str, dict[str, Any]] = {
    "writer": {"scopes": ["read", "write"]},
    "reader": {"scopes": ["read"]},
    "alpha": {"scopes": ["read", "write"], "memory_scope": "project:alpha"},
}


@pytest.fixture(scope="module")
def live(shared_embedder, tmp_path_factory) -> Iterator[tuple[LiveServer, Path, Path]]:
    """A server with a graph in project alpha and one in project beta (written by paths)."""
    base = tmp_path_factory.mktemp("kg-live")
    alpha, beta = base / "work" / "alpha", base / "work" / "beta"
    alpha.mkdir(parents=True)
    beta.mkdir(parents=True)
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        server = start_server(base, shared_embedder, key_specs=KEYS, mcp_tools="memory,kg")
        try:
            with server.client("writer") as http:
                for root, slug in ((alpha, "alpha-fact"), (beta, "beta-secret")):
                    r = http.post("/api/v1/graph/write", json={
                        "project": str(root),
                        "nodes": [{"id": slug, "name": f"{slug} knowledge", "type": "fact",
                                   "body": f"Only {root.name} may know this."}]})
                    assert r.status_code == 200, r.text
            yield server, alpha, beta
        finally:
            server.stop()


def mcp_calls(server: LiveServer, key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def go() -> list[Any]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.keys[key]}"},
                                  timeout=120)
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as c:
            return [await c.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def test_rest_read_write_search_recall_and_feed(live) -> None:
    server, alpha, _ = live
    with server.client("writer") as http:
        core = http.get("/api/v1/graph/core", params={"project": str(alpha)})
        assert core.status_code == 200
        body = core.json()
        assert "- alpha-fact (fact) alpha-fact knowledge" in body["text"]
        assert body["tokens"] <= body["budget"] == 5000
        assert body["files"][-1] == str(alpha / ".knowledge" / "graph.json")
        link = http.post("/api/v1/graph/write", json={
            "project": "alpha", "nodes": [{"id": "alpha-two", "name": "Second alpha node"}],
            "edges": [{"source": "alpha-two", "target": "alpha-fact", "type": "depends_on"}]})
        assert link.status_code == 200 and link.json()["edges_added"] == 1
        # named by its name, the project still finds its file
        assert link.json()["file"] == str(alpha / ".knowledge" / "graph.json")
        hits = http.post("/api/v1/graph/search", json={"query": "second alpha",
                                                       "project": "alpha"}).json()
        assert hits["results"][0]["id"] == "alpha-two"
        recalled = http.post("/api/v1/graph/nodes/alpha-two/recall", json={"project": "alpha"})
        assert recalled.status_code == 200 and recalled.json()["node"]["use_count"] == 1
        feed = http.get("/api/v1/graph/changes", params={"since": 0, "project": "alpha"}).json()
        assert {"alpha-fact", "alpha-two"} <= {c["id"] for c in feed["changes"]}
        exported = http.get("/api/v1/graph/export", params={"project": "alpha"}).json()
        assert '"id": "alpha-two"' in exported["text"]
        ping = http.get("/api/v1/graph/ping", params={"project": "alpha"}).json()
        assert ping["seq"] >= feed["next"] and ping["graphs"][-1]["nodes"] == 2


def test_rest_bad_input_is_422_and_stores_nothing(live) -> None:
    server, _, _ = live
    with server.client("writer") as http:
        before = http.get("/api/v1/graph/ping", params={"project": "alpha"}).json()["seq"]
        bad_edge = http.post("/api/v1/graph/write", json={
            "project": "alpha", "nodes": [{"id": "half", "name": "Would be half written"}],
            "edges": [{"source": "half", "target": "missing-node"}]})
        assert bad_edge.status_code == 422 and "missing-node" in bad_edge.json()["error"]
        bad_type = http.post("/api/v1/graph/write", json={
            "project": "alpha", "nodes": [{"name": "x", "type": "nonsense"}]})
        assert bad_type.status_code == 422
        bad_file = http.post("/api/v1/graph/import", json={"project": "alpha",
                                                            "text": '{"format": "memoryd'})
        assert bad_file.status_code == 422 and ":1:" in bad_file.json()["error"]
        after = http.get("/api/v1/graph/ping", params={"project": "alpha"}).json()["seq"]
    assert after == before


def test_a_write_that_names_one_edge_or_node_twice_is_422_and_stores_nothing(live) -> None:
    # Adding and removing the same edge in one call removed it if it existed and kept it if
    # not (reported as '1 added, 1 removed'); an edge given twice was reported as 2 added; a
    # node id given twice kept the second spec, the first silently lost.
    server, _, _ = live
    with server.client("writer") as http:
        made = http.post("/api/v1/graph/write", json={"project": "gamma", "nodes": [
            {"id": "g1", "name": "Gamma one"}, {"id": "g2", "name": "Gamma two"}],
            "edges": [{"source": "g1", "target": "g2"}]})
        assert made.status_code == 200, made.text
        before = http.get("/api/v1/graph/ping", params={"project": "gamma"}).json()["seq"]
        edge = {"source": "g1", "target": "g2"}
        for body, words in (
            ({"edges": [edge], "remove_edges": [edge]}, "both added and removed"),
            ({"edges": [edge, {**edge, "weight": 0.9}]}, "given twice"),
            ({"remove_edges": [edge, edge]}, "given twice"),
            ({"nodes": [{"id": "g3", "name": "First"}, {"id": "g3", "name": "Second"}]},
             "'g3' is given twice"),
        ):
            refused = http.post("/api/v1/graph/write", json={"project": "gamma", **body})
            assert refused.status_code == 422, refused.text
            assert words in refused.json()["error"], refused.text
        [over_mcp] = mcp_calls(server, "writer", [("kg_write", {
            "project": "gamma", "edges": [edge], "remove_edges": [edge]})])
        assert over_mcp.is_error and "both added and removed" in over_mcp.content[0].text
        after = http.get("/api/v1/graph/ping", params={"project": "gamma"}).json()["seq"]
        core = http.get("/api/v1/graph/core", params={"project": "gamma"}).json()["text"]
    assert after == before and "→ relates_to g2" in core and "First" not in core


def test_a_key_bound_to_alpha_cannot_see_or_touch_beta_over_rest(live) -> None:
    server, _, beta = live
    with server.client("alpha") as http:
        mine = http.get("/api/v1/graph/core").json()
        assert mine["scopes"] == ["project:alpha"] and "beta-secret" not in mine["text"]
        assert http.get("/api/v1/graph/core", params={"project": str(beta)}).status_code == 403
        assert http.get("/api/v1/graph/core", params={"project": "beta"}).status_code == 403
        denied = http.post("/api/v1/graph/write", json={"project": "beta",
                                                        "nodes": [{"name": "Injected"}]})
        assert denied.status_code == 403
        user = http.post("/api/v1/graph/write", json={"graph": "user",
                                                      "nodes": [{"name": "Injected"}]})
        assert user.status_code == 403
        assert http.post("/api/v1/graph/nodes/beta-secret/recall", json={}).status_code == 404
        found = http.post("/api/v1/graph/search", json={"query": "only beta may know"}).json()
        assert {h["scope"] for h in found["results"]} <= {"project:alpha"}
        feed = http.get("/api/v1/graph/changes", params={"since": 0}).json()
        assert {c["scope"] for c in feed["changes"]} == {"project:alpha"}
        ok = http.post("/api/v1/graph/write", json={"nodes": [{"name": "Alpha via bound key"}]})
        assert ok.status_code == 200 and ok.json()["scope"] == "project:alpha"
    with server.client("reader") as http:
        assert http.get("/api/v1/graph/core", params={"project": "beta"}).status_code == 200
        assert http.post("/api/v1/graph/write", json={
            "project": "beta", "nodes": [{"name": "Reader cannot"}]}).status_code == 403
        assert http.post("/api/v1/graph/archive", json={"project": "beta"}).status_code == 403


def test_a_key_bound_to_alpha_cannot_see_beta_over_mcp(live) -> None:
    server, alpha, beta = live
    read_dir, read_beta, write_beta, recall_beta, read_own, write_own = mcp_calls(server, "alpha", [
        ("kg_read", {"project": str(beta)}),
        ("kg_read", {"project": "beta"}),
        ("kg_write", {"project": "beta", "nodes": [{"name": "Injected over MCP"}]}),
        ("kg_recall", {"id": "beta-secret"}),
        ("kg_read", {}),
        ("kg_write", {"nodes": [{"name": "Alpha over MCP", "type": "insight"}]}),
    ])
    assert read_dir.is_error and "MEMORYD_KG_ALLOWED_ROOTS" in read_dir.content[0].text
    assert read_beta.is_error and "limited to scope 'project:alpha'" in read_beta.content[0].text
    assert write_beta.is_error and recall_beta.is_error
    assert "no node 'beta-secret' in project:alpha" in recall_beta.content[0].text
    assert not read_own.is_error and "beta-secret" not in read_own.structured_content["text"]
    assert not write_own.is_error
    assert write_own.structured_content["created"] == ["alpha-over-mcp"]
    (denied,) = mcp_calls(server, "reader", [("kg_write", {"project": "alpha",
                                                           "nodes": [{"name": "No"}]})])
    assert denied.is_error and "needs the 'write' scope" in denied.content[0].text
    (core,) = mcp_calls(server, "writer", [("kg_read", {"project": str(alpha), "budget": 200})])
    assert "Alpha over MCP" in core.content[0].text and core.structured_content["tokens"] <= 200
