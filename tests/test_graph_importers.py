"""Backfill: Claude Code transcripts and OpenClaw memory files on disk, and the optional
chat-completions client against a local HTTP server speaking that protocol."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memoryd.graph.chat import ChatClient, CompressionFailed, compress_transcript, transcript_text
from memoryd.graph.importers import (
    find_claude_code_sessions,
    find_openclaw_files,
    markdown_items,
    project_scope,
    read_claude_code_session,
    read_openclaw_file,
)
from memoryd.models import NewMemory

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
CWD = "/home/dev/work/shop-api"
SESSION = "3f0c8a52-1b1e-4c2e-9d7a-0c7d1e2f3a4b"


def line(
    kind: str, uuid: str, parent: str | None, message: dict[str, Any] | None = None, **extra: Any
) -> str:
    """One transcript line shaped as Claude Code writes it."""
    entry: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": SESSION,
        "version": "2.0.0",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-03-01T10:0{len(uuid)}:00.000Z",
    }
    if message is not None:
        entry["message"] = message
    entry.update(extra)
    return json.dumps(entry)


def user(text_or_blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": text_or_blocks}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(blocks),
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10},
    }


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


@pytest.fixture()
def claude_home(tmp_path: Path) -> Path:
    projects = tmp_path / ".claude" / "projects"
    folder = projects / "-home-dev-work-shop-api"
    folder.mkdir(parents=True)
    lines = [
        json.dumps({"type": "summary", "summary": "Fix flaky order tests", "leafUuid": "a3"}),
        line(
            "user",
            "u1",
            None,
            user("<command-name>/clear</command-name>\n<command-message>clear</command-message>"),
            isMeta=True,
        ),
        line(
            "user",
            "u2",
            None,
            user("The order tests fail randomly on CI. I want them fixed without sleeps."),
        ),
        line(
            "assistant",
            "a1",
            "u2",
            assistant(
                {"type": "thinking", "thinking": "hmm", "signature": "x"},
                text("Let me look at the tests."),
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Bash",
                    "input": {"command": "pytest tests/test_orders.py"},
                },
            ),
        ),
        line(
            "user",
            "u3",
            "a1",
            user([{"tool_use_id": "toolu_1", "type": "tool_result", "content": "1 failed"}]),
            toolUseResult={"stdout": "1 failed"},
        ),
        line(
            "assistant",
            "a2",
            "u3",
            assistant(
                text(
                    "The fixture shares one database between workers; "
                    "I gave each worker its own schema."
                )
            ),
        ),
        "{this line is broken",
        line("assistant", "s1", "a2", assistant(text("sub-agent chatter")), isSidechain=True),
        line("user", "u4", "a2", user([text("Good. Always use per-worker schemas from now on.")])),
        line("user", "u5", "u4", user("[Request interrupted by user]")),
        line("assistant", "a3", "u4", assistant(text("Noted: per-worker schemas."))),
        json.dumps(
            {
                "type": "file-history-snapshot",
                "messageId": "a3",
                "snapshot": {},
                "isSnapshotUpdate": False,
            }
        ),
        line(
            "user",
            "u6",
            "a3",
            user(
                "This session is being continued from a previous conversation. Summary: "
                "orders use per-worker schemas."
            ),
            isCompactSummary=True,
        ),
    ]
    (folder / f"{SESSION}.jsonl").write_text("\n".join(lines) + "\n")
    return projects


def test_claude_code_session_yields_prompts_answers_and_summaries(claude_home: Path) -> None:
    (path,) = find_claude_code_sessions(claude_home)
    batch = read_claude_code_session(path)
    assert batch.problems == [f"{path}:7: not a JSON line (JSONDecodeError)"]
    assert batch.lines == 13
    got = [(m.node_type, m.tags[1], m.content) for m in batch.items]
    assert got == [
        ("summary", "session-title", "Fix flaky order tests"),
        (
            "message",
            "user",
            "The order tests fail randomly on CI. I want them fixed without sleeps.",
        ),
        (
            "message",
            "assistant",
            "The fixture shares one database between workers; I gave each worker its own schema.",
        ),
        ("message", "user", "Good. Always use per-worker schemas from now on."),
        ("message", "assistant", "Noted: per-worker schemas."),
        (
            "summary",
            "compaction",
            "This session is being continued from a previous conversation. "
            "Summary: orders use per-worker schemas.",
        ),
    ]
    prompt = batch.items[1]
    assert isinstance(prompt, NewMemory)
    assert prompt.scope == "project:shop-api" and prompt.session_id == SESSION
    assert prompt.created_at == datetime(2026, 3, 1, 10, 2, tzinfo=timezone.utc)
    assert prompt.metadata == {"uuid": "u2", "cwd": CWD, "gitBranch": "main", "version": "2.0.0",
                               "role": "user"}
    assert {m.metadata.get("role") for m in batch.items} >= {"user", "assistant"}
    assert prompt.source == f"{path}:3"


def test_claude_code_import_is_idempotent(claude_home: Path) -> None:
    (path,) = find_claude_code_sessions(claude_home)
    first = [m.id for m in read_claude_code_session(path).items]
    second = [m.id for m in read_claude_code_session(path).items]
    assert first == second and len(set(first)) == len(first)
    scoped = read_claude_code_session(path, scope="project:shop")
    assert {m.scope for m in scoped.items} == {"project:shop"}
    assert find_claude_code_sessions(claude_home / "missing") == []


def test_project_scope_names() -> None:
    assert project_scope("/home/dev/My Project (old)") == "project:My-Project-old"
    assert project_scope(None) == "user" and project_scope("/") == "user"


@pytest.fixture()
def openclaw(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(
        "# Long-term memory\n\n## Preferences\n- Prefers TypeScript for new services\n"
        "- Wants answers short,\n  without bullet soup\n\n## Infra\n"
        "The staging DB listens on port 5433.\n\n1. Deploys go out on Tuesdays\n  - nested detail\n"
    )
    (ws / "memory" / "2026-02-27.md").write_text(
        "# Friday\n- Shipped the cart rewrite\n- [x] Rotated keys\n"
    )
    (ws / "memory" / "notes.md").write_text("- not a daily file\n")
    return ws


def test_openclaw_files_become_items_with_headings_as_tags(openclaw: Path) -> None:
    files = find_openclaw_files(openclaw)
    assert [p.name for p in files] == ["MEMORY.md", "2026-02-27.md"]
    long_term = read_openclaw_file(files[0])
    assert [m.content for m in long_term.items] == [
        "Prefers TypeScript for new services",
        "Wants answers short, without bullet soup",
        "The staging DB listens on port 5433.",
        "Deploys go out on Tuesdays",
        "nested detail",
    ]
    assert long_term.items[0].tags == ["openclaw", "long-term", "long-term-memory", "preferences"]
    assert long_term.items[0].category == "Preferences" and long_term.items[0].node_type == "note"
    daily = read_openclaw_file(files[1], scope="project:shop")
    assert [m.content for m in daily.items] == ["Shipped the cart rewrite", "Rotated keys"]
    assert daily.items[0].created_at == datetime(2026, 2, 27, tzinfo=timezone.utc)
    assert daily.items[0].node_type == "event" and daily.items[0].scope == "project:shop"


def test_openclaw_ids_follow_the_text(openclaw: Path) -> None:
    path = openclaw / "MEMORY.md"
    before = {m.content: m.id for m in read_openclaw_file(path).items}
    path.write_text(path.read_text().replace("port 5433", "port 5434"))
    after = {m.content: m.id for m in read_openclaw_file(path).items}
    assert (
        before["Prefers TypeScript for new services"]
        == after["Prefers TypeScript for new services"]
    )
    assert before["The staging DB listens on port 5433."] not in after.values()
    (openclaw / "memory" / "2026-02-28.md").write_bytes(b"- caf\xe9\n")
    broken = read_openclaw_file(openclaw / "memory" / "2026-02-28.md")
    assert broken.items == [] and "not UTF-8" in broken.problems[0]
    assert list(markdown_items("")) == []


# --------------------------------------------------------------------------- chat client


class ChatServer(BaseHTTPRequestHandler):
    """Speaks OpenAI's chat-completions protocol; replies with ``server.reply``."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {
                "path": self.path,
                "auth": self.headers.get("Authorization"),  # type: ignore[attr-defined]
                "body": body,
            }
        )
        status, content = self.server.reply  # type: ignore[attr-defined]
        if status != 200:
            payload = json.dumps({"error": {"message": "model overloaded", "type": "server_error"}})
        else:
            payload = json.dumps(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1772323200,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
                }
            )
        data = payload.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def chat_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ChatServer)
    server.requests = []  # type: ignore[attr-defined]
    server.reply = (200, "{}")  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def client_for(server: ThreadingHTTPServer, **kw: Any) -> ChatClient:
    return ChatClient(f"http://127.0.0.1:{server.server_address[1]}/v1", model="local-model", **kw)


MESSAGES = [
    ("user", "The order tests fail randomly."),
    ("assistant", "Each worker now gets its own schema."),
]


def test_compression_sends_a_real_chat_request_and_validates_nodes(
    chat_server: ThreadingHTTPServer,
) -> None:
    reply = {
        "nodes": [
            {
                "name": "Per-worker test schemas",
                "type": "convention",
                "body": "Each pytest worker gets its own schema.",
                "touches": ["tests/conftest.py"],
                "tags": ["tests"],
            },
            {
                "name": "Flaky order tests",
                "type": "rumour",
                "body": "Shared DB caused flakes.",
                "touches": ["../../etc/passwd"],
            },
            {"body": "no name"},
            "not an object",
        ]
    }
    chat_server.reply = (200, "```json\n" + json.dumps(reply) + "\n```")  # type: ignore[attr-defined]
    nodes = compress_transcript(
        client_for(chat_server, api_key="sk-local"),
        MESSAGES,
        now=NOW,
        taken_ids={"per-worker-test-schemas"},
    )
    request = chat_server.requests[0]  # type: ignore[attr-defined]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-local"
    body = request["body"]
    assert body["model"] == "local-model" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert (
        body["messages"][1]["content"]
        == "user: The order tests fail randomly.\nassistant: Each worker now gets its own schema."
    )
    assert [(n.name, n.type) for n in nodes] == [
        ("Per-worker test schemas", "convention"),
        ("Flaky order tests", "insight"),
    ]
    assert nodes[0].id.startswith("per-worker-test-schemas-") and nodes[0].touches == [
        "tests/conftest.py"
    ]
    assert nodes[1].touches == []  # the bad path was dropped, the node kept


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ((500, ""), "answered 500"),
        ((200, "not json at all"), "not JSON"),
        ((200, json.dumps({"memories": []})), "no 'nodes' list"),
    ],
)
def test_compression_failures_are_clear(
    chat_server: ThreadingHTTPServer, reply: tuple[int, str], message: str
) -> None:
    chat_server.reply = reply  # type: ignore[attr-defined]
    with pytest.raises(CompressionFailed, match=message):
        compress_transcript(client_for(chat_server), MESSAGES, now=NOW)


def test_unreachable_endpoint_and_empty_transcripts() -> None:
    client = ChatClient("http://127.0.0.1:9/v1", model="m", timeout=2)
    with pytest.raises(CompressionFailed, match="ConnectError"):
        compress_transcript(client, MESSAGES, now=NOW)
    assert compress_transcript(client, [("user", "   ")], now=NOW) == []
    assert transcript_text([("user", "x" * 50)], limit=10) == "x" * 10
