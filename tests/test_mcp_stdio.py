"""`memoryd mcp` as a real stdio subprocess, driven by the SDK's client."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from conftest import MEMORYD_BIN
from mcp import Client, StdioServerParameters

import memoryd
from memoryd.operations import select_tools


@pytest.fixture
def seeded_home(tmp_path: Path, shared_embedder) -> Path:
    home = tmp_path / "home"
    with memoryd.open(f"sqlite:///{home / 'memoryd.db'}", embedder=shared_embedder) as mem:
        mem.add("The release train leaves every second Wednesday", tags=["release"])
    return home


def test_stdio_server_lists_and_calls_tools(seeded_home: Path, cli_env: dict[str, str]):
    env = {**cli_env, "MEMORYD_HOME": str(seeded_home), "MEMORYD_MCP_WARM": "false"}
    params = StdioServerParameters(
        command=str(MEMORYD_BIN), args=["mcp", "--agent-id", "cc", "--tools", "vestige,full"], env=env
    )

    async def session():
        started = time.perf_counter()
        async with Client(params, mode="legacy") as client:
            tools = (await client.list_tools()).tools
            ready = time.perf_counter() - started
            found = await client.call_tool("search", {"query": "release train", "mode": "keyword"})
            health = await client.call_tool("health", {})
            made = await client.call_tool(
                "intention",
                {
                    "action": "set",
                    "description": "Cut the release branch",
                    "trigger": {"type": "event", "event": "release"},
                },
            )
            due = await client.call_tool(
                "intention", {"action": "check", "context": {"event": "release"}}
            )
            bad = await client.call_tool("memory", {"action": "get", "id": "nope"})
            return tools, ready, found, health, made, due, bad

    tools, ready, found, health, made, due, bad = asyncio.run(session())
    assert {"search", "smart_ingest", "memory", "recall", "memory_store"} <= {t.name for t in tools}
    assert ready < 30  # generous: bench/results/mcp_startup.* has the real number
    assert "release train" in found.content[0].text
    assert found.structured_content["results"][0]["tags"] == ["release"]
    assert health.structured_content["status"] == "ok"
    assert made.structured_content["intention"]["agent_id"] == "cc"
    assert [i["description"] for i in due.structured_content["intentions"]] == [
        "Cut the release branch"
    ]
    assert bad.is_error and "no memory with id" in bad.content[0].text


def test_the_first_search_after_spawn_answers_by_meaning(tmp_path: Path, shared_embedder,
                                                         cli_env: dict[str, str]):
    """The first search of a fresh `memoryd mcp` waits (bounded by model_wait_seconds) for the
    model instead of answering from keywords: a paraphrase sharing no word is found."""
    home = tmp_path / "meaning"
    with memoryd.open(f"sqlite:///{home / 'memoryd.db'}", embedder=shared_embedder) as mem:
        mem.add("Deploys go out on Tuesdays after standup")
        mem.add("The cafeteria serves pasta on Thursdays")
    # A generous bound: a busy test machine may take longer than the default 2 s to load.
    env = {**cli_env, "MEMORYD_HOME": str(home), "MEMORYD_MODEL_WAIT_SECONDS": "30"}
    params = StdioServerParameters(command=str(MEMORYD_BIN), args=["mcp"], env=env)

    async def session():
        async with Client(params, mode="legacy") as client:
            return await client.call_tool("search", {"query": "when do we ship?"})

    found = asyncio.run(session())
    text = found.content[0].text
    assert "still loading" not in text
    assert [r["content"] for r in found.structured_content["results"]] == [
        "Deploys go out on Tuesdays after standup"]
    assert 'score="0.00"' not in text


def test_stdio_stdout_carries_only_protocol(seeded_home: Path, cli_env: dict[str, str]):
    """Anything but JSON-RPC on stdout would corrupt the stream: send a bad line, read replies."""
    import json
    import subprocess

    env = {**cli_env, "MEMORYD_HOME": str(seeded_home), "MEMORYD_MCP_WARM": "false"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    lines = [
        json.dumps(init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}),
    ]
    proc = subprocess.Popen(
        [str(MEMORYD_BIN), "mcp", "--tools", "vestige,full"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(3)]  # every line is JSON
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=60)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    by_id = {r.get("id"): r for r in replies}
    assert by_id[1]["result"]["serverInfo"]["name"] == "memoryd"
    assert len(by_id[2]["result"]["tools"]) == len(select_tools("vestige,full"))
    assert by_id[3]["error"]["code"] == -32601
    assert proc.returncode == 0
