"""The MCP tools with the SDK's real client over Streamable HTTP to a real server, through the
real auth path (API keys, X-Agent-Id): names and parameters (a contract the OpenClaw bridge
and agents rely on), annotations, structured results, errors, and key scopes."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import httpx2
import pytest
from api_fixtures import STANDARD_KEYS, LiveServer, clean_env, start_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memoryd.operations import REGISTRY

# These tests pin the Vestige-compatible surface plus the admin and OpenClaw tools, which keeps
# the bundled `memory` tool and the full search and ingest arguments (the default profile is
# pinned by tests/test_mcp_surface.py).
COMPAT = "vestige,full"

# Tool -> (required parameters, some optional ones). Renaming any of these breaks agents.
CONTRACT: dict[str, tuple[set[str], set[str]]] = {
    "search": (
        {"query"},
        {
            "limit",
            "mode",
            "timeframe",
            "node_types",
            "tags",
            "scope",
            "agent_id",
            "min_score",
            "detail_level",
            "session_key",
            "as_of",
            "graph",
            "domains",
        },
    ),
    "smart_ingest": (set(), {"content", "items", "node_type", "tags", "source", "force_create"}),
    "memory": ({"action", "id"}, {"reason", "content", "tags"}),
    "codebase": (
        {"action", "codebase"},
        {"name", "description", "decision", "rationale", "alternatives", "files", "limit"},
    ),
    "intention": (
        {"action"},
        {
            "description",
            "trigger",
            "priority",
            "deadline",
            "id",
            "status",
            "snooze_minutes",
            "context",
        },
    ),
    "recall": (set(), {"prompt", "query", "agent_id", "session_key", "token_budget", "max_items"}),
    "memory_store": (set(), {"summary", "detail", "category", "tags"}),
    "memory_recall": ({"query"}, {"timeframe", "category", "limit"}),
    "explore": ({"id"}, {"depth"}),
    "consolidate": (set(), {"dry_run"}),
    "stats": (set(), set()),
    "health": (set(), set()),
    "memory_feedback": ({"id", "verdict"}, {"reason"}),
    "memory_edit": ({"id"}, {"content", "type", "tags", "importance"}),
    "memory_delete": ({"id"}, {"purge"}),
    "memory_search": ({"query"}, {"maxResults", "minScore"}),
    "memory_get": ({"path"}, {"from", "lines"}),
    "memory_forget": (set(), {"memoryId", "query"}),
    "task_register": ({"name"}, {"plan", "scope", "metadata"}),
    "task_update": ({"id"}, {"message", "kind", "step_done", "add_steps", "status"}),
    "task_get": ({"id"}, {"refresh"}),
    "task_list": (set(), {"status", "limit"}),
    "task_complete": ({"id"}, {"status", "outcome", "learned"}),
    "smart_wait": ({"target", "criteria", "timeout_s"}, {"task_id", "wake"}),
    "wait_status": ({"id"}, {"block_s"}),
    "wait_list": (set(), {"status", "task_id", "limit"}),
    "wait_cancel": ({"id"}, set()),
    "kg_read": (set(), {"project", "budget", "as_of", "files", "include_user"}),
    "kg_write": (set(), {"project", "graph", "nodes", "edges", "remove_edges"}),
    "kg_link": ({"source", "target"}, {"project", "graph", "type", "weight", "remove"}),
    "kg_search": ({"query"}, {"project", "graph", "limit", "include_archived"}),
    "kg_recall": ({"id"}, {"project", "graph"}),
    "kg_archive": (set(), {"project", "dry_run", "budget", "remove_orphans"}),
    "kg_sync": (set(), {"since", "project", "limit"}),
    "kg_ping": (set(), {"project"}),
    "domains": (set(), {"action", "id", "name", "ids", "threshold"}),
    "keys_create": ({"label"}, {"scopes", "memory_scope", "agent_id", "domains"}),
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def live(shared_embedder, tmp_path, monkeypatch) -> Iterator[LiveServer]:
    """A fresh server per test (each test starts from an empty store)."""
    clean_env(monkeypatch, tmp_path)
    server = start_server(tmp_path, shared_embedder, key_specs=STANDARD_KEYS, mcp_tools=COMPAT)
    yield server
    server.stop()


def connect(live: LiveServer, key: str = "writer", agent: str | None = "cc") -> Client:
    """The SDK client over Streamable HTTP with a key (and an X-Agent-Id)."""
    headers = {"Authorization": f"Bearer {live.keys[key]}"}
    if agent:
        headers["X-Agent-Id"] = agent
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    return Client(streamable_http_client(f"{live.url}/mcp", http_client=http))


@pytest.fixture
def server(live: LiveServer) -> LiveServer:
    return live


@pytest.fixture
def mem(live: LiveServer):
    return live.engine


async def _call(server: LiveServer, name: str, args: dict[str, Any], key: str = "writer"):
    async with connect(server, key) as client:
        return await client.call_tool(name, args)


def test_tool_names_parameters_and_annotations(server):
    async def listing():
        async with connect(server, "reader") as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in run(listing())}
    assert set(tools) == set(CONTRACT)
    for name, (required, optional) in CONTRACT.items():
        schema = tools[name].input_schema
        assert set(schema.get("required", [])) == required, name
        assert required | optional <= set(schema["properties"]), name
        assert schema.get("additionalProperties") is False, name
        assert tools[name].output_schema is not None, name
        assert tools[name].description, name
    assert tools["search"].annotations.read_only_hint is False  # it strengthens what it finds
    assert tools["memory"].annotations.destructive_hint is True
    assert tools["smart_ingest"].annotations.read_only_hint is False
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["wait_status"].annotations.read_only_hint is True
    assert tools["smart_wait"].annotations.read_only_hint is False


def test_ingest_search_recall_and_memory_actions(server, mem):
    stored = run(
        _call(
            server,
            "smart_ingest",
            {
                "content": "User prefers vim keybindings",
                "node_type": "preference",
                "tags": ["editor"],
            },
        )
    )
    assert not stored.is_error
    data = stored.structured_content
    assert data["decision"] == "create" and data["results"][0]["memory"]["agent_id"] == "cc"
    history = mem.history(data["memory_id"])
    assert history[0].actor == "key:writer" and history[0].agent_id == "cc"
    assert "CREATE" in stored.content[0].text
    mid = data["memory_id"]
    again = run(
        _call(
            server,
            "smart_ingest",
            {"content": "User prefers vim keybindings", "node_type": "preference"},
        )
    )
    assert again.structured_content["decision"] == "reinforce"
    assert again.structured_content["memory_id"] == mid and mem.store.count() == 1
    run(
        _call(
            server,
            "smart_ingest",
            {
                "items": [
                    {"content": "The team deploys on Tuesdays"},
                    {"content": "CI runs on GitHub Actions"},
                ]
            },
        )
    )
    found = run(_call(server, "search", {"query": "vim", "limit": 2}))
    assert found.structured_content["results"][0]["id"] == mid
    assert "User prefers vim keybindings" in found.content[0].text
    recalled = run(_call(server, "recall", {"prompt": "which editor keybindings?"}))
    assert recalled.content[0].text.startswith("<system_memory")
    assert recalled.structured_content["items"][0]["id"] == mid
    agentos = run(_call(server, "memory_recall", {"query": "deploy day", "category": "fact"}))
    assert any("Tuesdays" in r["content"] for r in agentos.structured_content["results"])
    kept = run(_call(server, "memory_store", {"summary": "Standup at 9", "category": "team"}))
    assert mem.get(kept.structured_content["memory_id"]).category == "team"

    for action in ("get", "state", "history", "versions", "promote", "demote"):
        result = run(_call(server, "memory", {"action": action, "id": mid, "reason": "test"}))
        assert not result.is_error, (action, result.content)
    edited = run(_call(server, "memory", {"action": "edit", "id": mid, "tags": ["editor", "vim"]}))
    assert edited.structured_content["memory"]["tags"] == ["editor", "vim"]
    assert run(_call(server, "explore", {"id": mid})).structured_content["center"]["id"] == mid
    deleted = run(_call(server, "memory", {"action": "delete", "id": mid}))
    assert deleted.structured_content["deleted"] is True and "Deleted" in deleted.content[0].text


def test_codebase_intention_maintenance_tools(server, mem):
    made = run(
        _call(
            server,
            "codebase",
            {
                "action": "remember_decision",
                "codebase": "app",
                "decision": "Use FastAPI",
                "rationale": "typed",
            },
        )
    )
    assert made.structured_content["memory"]["node_type"] == "decision"
    ctx = run(_call(server, "codebase", {"action": "get_context", "codebase": "app"}))
    assert "Use FastAPI" in ctx.content[0].text
    todo = run(
        _call(
            server,
            "intention",
            {
                "action": "set",
                "description": "write docs",
                "trigger": {"type": "time", "in_minutes": 5},
            },
        )
    )
    assert todo.structured_content["intention"]["due_at"]
    listed = run(_call(server, "intention", {"action": "list"}))
    assert "write docs" in listed.content[0].text
    for name, args in (("consolidate", {"dry_run": True}), ("stats", {}), ("health", {})):
        result = run(_call(server, name, args))
        assert not result.is_error and result.structured_content, name
    assert run(_call(server, "health", {})).structured_content["status"] == "ok"
    ran = run(_call(server, "consolidate", {"dry_run": False}))
    assert ran.structured_content["dry_run"] is False
    assert ran.structured_content["examined"] == mem.store.count() == 1


def test_errors_are_tool_errors_and_write_nothing(server, mem):
    async def calls():
        async with connect(server) as client:
            return [
                await client.call_tool("no_such_tool", {}),
                await client.call_tool("search", {"limit": 500}),
                await client.call_tool(
                    "smart_ingest", {"content": "x", "items": [{"content": "y"}]}
                ),
                await client.call_tool("smart_ingest", {"content": "   "}),
                await client.call_tool("memory", {"action": "delete", "id": "missing"}),
                await client.call_tool("smart_ingest", {"items": [{"content": "fine"}, {"content": ""}]}),
                await client.call_tool("memory", {"action": "explode", "id": "x"}),
            ]

    unknown, bad_args, both, empty, missing, half_bad, bad_action = run(calls())
    assert unknown.is_error and "Unknown tool" in unknown.content[0].text
    assert (
        bad_args.is_error
        and "query" in bad_args.content[0].text
        and "limit" in bad_args.content[0].text
    )
    assert both.is_error and "content or items" in both.content[0].text
    assert empty.is_error and missing.is_error and "missing" in missing.content[0].text
    assert half_bad.is_error and "items.1.content" in half_bad.content[0].text
    assert bad_action.is_error and "action" in bad_action.content[0].text
    assert mem.store.count() == 0


def test_scopes_apply_to_tools(server, mem):
    denied = run(_call(server, "smart_ingest", {"content": "reader writes"}, key="reader"))
    assert denied.is_error and "needs the 'write' scope" in denied.content[0].text
    assert mem.store.count() == 0
    assert not run(_call(server, "search", {"query": "anything"}, key="reader")).is_error
    purge = run(_call(server, "memory", {"action": "purge", "id": "x"}, key="writer"))
    assert purge.is_error and "needs the 'admin' scope" in purge.content[0].text
    bound = run(_call(server, "stats", {}, key="alpha"))
    assert bound.is_error and "not available to a key bound" in bound.content[0].text


def test_every_tool_is_a_registry_operation():
    tool_ops = {op.name for op in REGISTRY.values() if op.tools}
    assert tool_ops == {
        "tool_search", "tool_ingest", "tool_memory", "tool_feedback", "tool_edit",
        "tool_delete", "tool_codebase", "tool_intention", "recall", "memory_store",
        "memory_recall", "explore", "consolidate", "stats", "health", "memory_search",
        "memory_get_path", "memory_forget",
        "task_register", "task_update", "task_get", "task_list", "task_complete",
        "smart_wait", "wait_status", "wait_list", "wait_cancel",
        "kg_read", "kg_write", "kg_link", "kg_search", "kg_recall", "kg_archive", "kg_sync",
        "kg_ping",
        "tool_domains", "keys_create",
    }


def test_search_filters_by_speaker(server, mem):
    mem.add_many([{"content": "I keep my notes in Obsidian", "metadata": {"role": "user"}},
                  {"content": "Assistant: Obsidian notes sync well through git"}])
    found = run(_call(server, "search", {"query": "obsidian notes", "speaker": "user"}))
    assert [r["content"] for r in found.structured_content["results"]] == [
        "I keep my notes in Obsidian"]
    refused = run(_call(server, "search", {"query": "obsidian", "speaker": " "}))
    assert refused.is_error and "speaker" in refused.content[0].text
    assert mem.store.count() == 2
