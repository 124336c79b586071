"""The hooks inside a real Claude Code session.

``claude -p`` (the real CLI, offline) runs one turn with the hooks of
integrations/claude-code/settings.json against a local server speaking the Anthropic
Messages protocol, and a real memoryd. The test shows that SessionStart's and
UserPromptSubmit's recall blocks reached the model's request, and that SessionEnd read the
real transcript and captured the user's statement.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Iterator

import pytest
from api_fixtures import LiveServer, module_server
from chat_server import ChatServer
from node_tools import CLAUDE_BIN, ROOT, require

SETTINGS = ROOT / "integrations" / "claude-code" / "settings.json"
HOOK = ROOT / "integrations" / "claude-code" / "memoryd_hook.py"


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


def test_a_claude_code_turn_gets_recall_and_is_captured(live_server, tmp_path):
    require(CLAUDE_BIN)
    with live_server.client("writer") as client:
        client.post("/smart_ingest", json={"content": "The shop-api service runs on Kubernetes in eu-west-3."})
    settings = tmp_path / "settings.json"
    settings.write_text(SETTINGS.read_text().replace("/path/to/memoryd/integrations/claude-code/memoryd_hook.py", str(HOOK)))
    project = tmp_path / "shop-api"
    project.mkdir()
    (tmp_path / "home").mkdir()
    with ChatServer("Noted. shop-api runs in eu-west-3.") as model:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "ANTHROPIC_", "CLAUDE"))}
        env.update(
            HOME=str(tmp_path / "home"),
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="sk-ant-local-test",
            DISABLE_TELEMETRY="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            MEMORYD_URL=live_server.url,
            MEMORYD_TOKEN=live_server.keys["writer"],
        )
        turn = subprocess.run(
            [str(CLAUDE_BIN), "-p", "--settings", str(settings),
             "Remember that we deploy shop-api on Fridays. Which region does shop-api run in?"],
            cwd=project, env=env, capture_output=True, text=True, timeout=300,
        )
    assert turn.returncode == 0, turn.stdout[-2000:] + turn.stderr[-2000:]
    assert "eu-west-3" in turn.stdout
    sent = "\n".join(json.dumps(r) for r in model.requests)
    assert "SessionStart hook additional context: <system_memory" in sent
    assert "UserPromptSubmit hook additional context: <system_memory" in sent
    assert "runs on Kubernetes in eu-west-3" in sent

    with live_server.client("admin") as client:
        items = client.get("/api/v1/memories", params={"agent_id": "claude-code", "limit": 50}).json()["items"]
    captured = [m for m in items if "Fridays" in m["content"]]
    assert len(captured) == 1, [m["content"] for m in items]
    assert captured[0]["session_id"].startswith("claude-code:")
