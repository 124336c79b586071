"""A real OpenClaw agent turn with the memoryd plugin installed.

OpenClaw (the npm package, run offline) installs the packed plugin, and ``openclaw agent
--local`` drives one turn against a local model server speaking the OpenAI
chat-completions protocol (tests/integrations/chat_server.py), scripted to call
OpenClaw's memory_search tool, then memory_store, then answer. The test shows that the
recall block reached the model's prompt, that memory_search returned memoryd's memory,
that memory_store wrote to memoryd, and that the turn was captured. Slow (about 2-4 min
on a 2-core machine: OpenClaw starts ~110 bundled plugins per command).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
from api_fixtures import LiveServer, module_server
from chat_server import MODEL_ID, ChatServer, ToolCall
from node_tools import OPENCLAW_BIN, OPENCLAW_PLUGIN, node_env, require

SESSION = "e2e-1"


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


@pytest.fixture(scope="module")
def openclaw(tmp_path_factory) -> dict[str, Any]:
    """An isolated OpenClaw home with the packed plugin installed (as a user would)."""
    require(OPENCLAW_BIN)
    base = tmp_path_factory.mktemp("openclaw")
    state = base / "state"
    state.mkdir()
    (base / "home").mkdir()
    env = node_env(
        HOME=str(base / "home"),
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
    )
    config_path = state / "openclaw.json"
    config_path.write_text(json.dumps({"agents": {"defaults": {"model": {"primary": f"local/{MODEL_ID}"}}}}))
    pack = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(base)],
        cwd=OPENCLAW_PLUGIN, env=env, capture_output=True, text=True, timeout=300,
    )
    assert pack.returncode == 0, pack.stderr
    tarball = base / pack.stdout.strip().splitlines()[-1]
    install = subprocess.run(
        [str(OPENCLAW_BIN), "plugins", "install", "--force", "--accept-capabilities", f"npm-pack:{tarball}"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert install.returncode == 0 and "Installed plugin: memoryd" in install.stdout, (
        install.stdout[-3000:] + install.stderr[-3000:]
    )
    config = json.loads(config_path.read_text())
    assert config["plugins"]["slots"]["memory"] == "memoryd"
    return {"env": env, "config_path": config_path}


def configure(openclaw: dict[str, Any], chat: ChatServer, server: LiveServer) -> None:
    """Point OpenClaw's model at the local chat server and the plugin at memoryd."""
    path: Path = openclaw["config_path"]
    config = json.loads(path.read_text())
    config["models"] = {
        "mode": "merge",
        "providers": {
            "local": {
                "baseUrl": chat.url + "/v1",
                "apiKey": "local-test",
                "api": "openai-completions",
                "models": [
                    {
                        "id": MODEL_ID,
                        "name": "memoryd test model",
                        "reasoning": False,
                        "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 128000,
                        "maxTokens": 4096,
                    }
                ],
            }
        },
    }
    # memory-core would otherwise load beside memoryd as the "dreaming" sidecar and claim
    # memory_search / memory_get for its own file index.
    config["plugins"]["entries"]["memory-core"] = {"enabled": False}
    config["plugins"]["entries"]["memoryd"].update(
        {
            "hooks": {"allowConversationAccess": True},
            "config": {"url": server.url, "token": server.keys["writer"], "agentId": "openclaw-e2e"},
        }
    )
    path.write_text(json.dumps(config, indent=1))


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in request["messages"] if m.get("role") == "tool"]


def test_one_agent_turn_recalls_searches_stores_and_captures(live_server, openclaw):
    with live_server.client("writer") as client:
        seeded = client.post(
            "/smart_ingest", json={"content": "The shop's Kubernetes cluster runs in eu-west-3."}
        ).json()["data"]["memory_id"]
    script = [
        ToolCall("tool_call", {"id": "memory_search", "args": {"query": "Kubernetes cluster region"}}),
        ToolCall("tool_call", {"id": "memory_store", "args": {"text": "The shop's status page is status.shop.example", "category": "fact"}}),
        "The cluster runs in eu-west-3.",
    ]
    with ChatServer(script) as chat:
        configure(openclaw, chat, live_server)
        turn = subprocess.run(
            [str(OPENCLAW_BIN), "agent", "--local", "--session-id", SESSION, "--json", "--message",
             "Remember that we deploy on Fridays. Which region is the shop's Kubernetes cluster in?"],
            env=openclaw["env"], capture_output=True, text=True, timeout=900,
        )
    assert turn.returncode == 0, turn.stdout[-3000:] + turn.stderr[-3000:]
    assert len(chat.requests) >= 3, turn.stderr[-3000:]

    # 1. before_prompt_build: the recall block is in the prompt the model received.
    first = chat.prompts()[0]
    assert "<system_memory" in first and "eu-west-3" in first
    assert "untrusted historical data" in first

    # 2. OpenClaw's memory_search answered from memoryd, in OpenClaw's result shape.
    searched = "\n".join(tool_results(chat.requests[1]))
    assert f"memoryd/{seeded}.md" in searched and "eu-west-3" in searched, searched[:3000]

    # 3. memory_store wrote to memoryd; 4. agent_end captured the user's statement.
    with live_server.client("admin") as client:
        items = client.get("/api/v1/memories", params={"limit": 100, "agent_id": "openclaw-e2e"}).json()["items"]
    contents = {m["content"]: m for m in items}
    assert "The shop's status page is status.shop.example" in contents, list(contents)
    captured = [m for m in items if "deploy on Fridays" in m["content"]]
    assert len(captured) == 1, list(contents)
    assert captured[0]["session_id"].endswith(SESSION) and "captured" in captured[0]["tags"]
