"""A local model server speaking the OpenAI chat-completions protocol (and, for Claude Code,
the Anthropic Messages protocol, text answers only), for driving real agents.

It stands in for the remote LLM (the one part that cannot exist here): it records every
request body it receives and answers the n-th request with the n-th step of a script (the
last step repeats): a string is an assistant message, a ``ToolCall`` asks the agent to call
a tool. Answers are streamed as server-sent events when the client asks for
``stream: true`` (as agent runtimes do), or sent as one JSON document otherwise.
``GET /v1/models`` lists the one model.

Example::

    with ChatServer([ToolCall("memory_search", {"query": "deploy day"}), "Fridays."]) as server:
        base_url = server.url + "/v1"       # point the agent's provider here
        ...
        server.requests[0]["messages"]      # what the agent sent to the model
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "memoryd-test-model"


@dataclass(frozen=True)
class ToolCall:
    """A scripted model step: call ``name`` with ``arguments``."""

    name: str
    arguments: dict[str, Any]




class ChatServer:
    """Run on 127.0.0.1 (free port) in a thread; use as a context manager."""

    def __init__(self, script: list[str | ToolCall] | str = "Noted.") -> None:
        self.script = [script] if isinstance(script, str) else list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def prompts(self) -> list[str]:
        """Every recorded request's messages flattened to text (system, user, assistant, tool)."""
        out = []
        for body in self.requests:
            system = body.get("system")
            if isinstance(system, list):
                system = "\n".join(p.get("text", "") for p in system if isinstance(p, dict))
            parts = [f"system: {system}"] if system else []
            for message in body.get("messages", []):
                content = message.get("content")
                if isinstance(content, list):
                    content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
                parts.append(f"{message.get('role')}: {content or ''}")
            out.append("\n".join(parts))
        return out

    def _record(self, body: dict[str, Any]) -> str | ToolCall:
        """Keep the request; the script step that answers it."""
        with self._lock:
            self.requests.append(body)
            return self.script[min(len(self.requests), len(self.script)) - 1]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._json(400, {"error": {"message": "invalid JSON"}})
                    return
                route = self.path.split("?")[0].rstrip("/")
                if route.endswith("/messages/count_tokens"):
                    self._json(200, {"input_tokens": _usage(body, "")["prompt_tokens"]})
                    return
                if route.endswith("/messages"):
                    self._anthropic(body, owner._record(body))
                    return
                if not route.endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                step = owner._record(body)
                if body.get("stream"):
                    self._stream(body, step)
                else:
                    self._json(200, completion(body, step))

            def _anthropic(self, body: dict[str, Any], step: str | ToolCall) -> None:
                if isinstance(step, ToolCall):
                    raise NotImplementedError("tool calls are scripted for chat-completions only")
                if not body.get("stream"):
                    self._json(200, anthropic_message(body, step))
                    return
                self._events([(e["type"], e) for e in anthropic_events(body, step)])

            def _events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def _stream(self, body: dict[str, Any], step: str | ToolCall) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in stream_chunks(body, step):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        return Handler


def _usage(body: dict[str, Any], step: str | ToolCall) -> dict[str, int]:
    prompt = sum(len(json.dumps(m)) for m in body.get("messages", [])) // 4
    completion_tokens = max(1, len(str(step)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


def _tool_call(step: ToolCall, index: int) -> dict[str, Any]:
    return {
        "index": 0,
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": step.name, "arguments": json.dumps(step.arguments)},
    }


def completion(body: dict[str, Any], step: str | ToolCall) -> dict[str, Any]:
    """A non-streamed chat.completion answering with ``step``."""
    if isinstance(step, ToolCall):
        message: dict[str, Any] = {"role": "assistant", "content": None}
        message["tool_calls"] = [_tool_call(step, len(body.get("messages", [])))]
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": step}, "stop"
    return {
        "id": f"chatcmpl-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", MODEL_ID),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(body, step),
    }


def stream_chunks(body: dict[str, Any], step: str | ToolCall) -> list[dict[str, Any]]:
    """The chat.completion.chunk events of a streamed answer (role, text or tool call, stop,
    usage)."""
    base = {
        "id": f"chatcmpl-{int(time.time() * 1000)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", MODEL_ID),
    }
    if isinstance(step, ToolCall):
        deltas = [
            {"role": "assistant", "content": None},
            {"tool_calls": [_tool_call(step, len(body.get("messages", [])))]},
        ]
        finish = "tool_calls"
    else:
        deltas, finish = [{"role": "assistant", "content": ""}, {"content": step}], "stop"
    chunks = [
        {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({**base, "choices": [], "usage": _usage(body, step)})
    return chunks


def anthropic_message(body: dict[str, Any], text: str) -> dict[str, Any]:
    """A non-streamed Anthropic Messages answer with one text block."""
    usage = _usage(body, text)
    return {
        "id": f"msg_{int(time.time() * 1000)}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", MODEL_ID),
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]},
    }


def anthropic_events(body: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """The server-sent events of a streamed Anthropic Messages answer with one text block."""
    message = anthropic_message(body, text)
    start = {**message, "content": [], "stop_reason": None}
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
