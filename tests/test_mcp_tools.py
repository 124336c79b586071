"""The MCP tools with the SDK's real client, in memory: names and parameters (a contract the
OpenClaw bridge and agents rely on), annotations, structured results, and errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from memoryd.mcp.server import build_server

# These tests pin the Vestige-compatible surface (and the admin tools), which keeps the
# bundled `memory` tool and the full search and ingest arguments.
COMPAT = "vestige,full"
from memoryd.operations import REGISTRY, Caller

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
    "domains": (set(), {"action", "id", "name", "ids", "threshold"}),
    "keys_create": ({"label"}, {"scopes", "memory_scope", "agent_id", "domains"}),
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _call(server, name: str, args: dict[str, Any]):
    async with Client(server) as client:
        return await client.call_tool(name, args)


@pytest.fixture
def server(mem):
    return build_server(lambda: mem, lambda ctx: Caller.local("test", agent_id="cc"), tools=COMPAT)


def test_tool_names_parameters_and_annotations(server):
    async def listing():
        async with Client(server) as client:
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


def test_codebase_intention_maintenance_tools(server):
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


def test_errors_are_tool_errors_and_write_nothing(server, mem):
    async def calls():
        async with Client(server) as client:
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


def test_scopes_apply_to_tools(mem):
    reader = Caller(scopes=frozenset({"read"}), name="key:reader")
    server = build_server(lambda: mem, lambda ctx: reader, tools=COMPAT)
    denied = run(_call(server, "smart_ingest", {"content": "reader writes"}))
    assert denied.is_error and "needs the 'write' scope" in denied.content[0].text
    assert mem.store.count() == 0
    assert not run(_call(server, "search", {"query": "anything"})).is_error


def test_every_tool_is_a_registry_operation():
    tool_ops = {op.name for op in REGISTRY.values() if op.tools}
    assert tool_ops == {
        "tool_search", "tool_ingest", "tool_memory", "tool_feedback", "tool_edit",
        "tool_delete", "tool_codebase", "tool_intention", "recall", "memory_store",
        "memory_recall", "explore", "consolidate", "stats", "health", "memory_search",
        "memory_get_path", "memory_forget", "tool_domains", "keys_create",
    }
