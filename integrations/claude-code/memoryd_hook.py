#!/usr/bin/env python3
"""Claude Code hooks for memoryd: recall before the model answers, capture what a session taught.

One script serves four hook events; Claude Code passes the event as JSON on stdin and
this script answers through the memoryd HTTP server (``memoryd serve``):

* ``SessionStart`` -> ``POST /recall`` with the project's name: the block of what memoryd
  knows about this project and user becomes ``additionalContext``.
* ``UserPromptSubmit`` -> ``POST /recall`` with the prompt: a ``<system_memory>`` block of
  the memories relevant to it becomes ``additionalContext``.
* ``PreCompact`` and ``SessionEnd`` -> ``POST /capture`` with the transcript's messages:
  memoryd keeps a per-session watermark, so sending the transcript again stores nothing twice.

Settings (environment): ``MEMORYD_URL`` (default ``http://127.0.0.1:8765``),
``MEMORYD_TOKEN`` (an API key), ``MEMORYD_HOOK_AGENT_ID`` (default ``claude-code``),
``MEMORYD_HOOK_TIMEOUT`` (seconds, default 10), ``MEMORYD_HOOK_TOKEN_BUDGET`` (default 800).

A hook must never stop the user's session: when memoryd is down or answers an error the
script says so on stderr and exits 0 with no output. Only unreadable hook input exits 1.
Python standard library only, so it runs with any ``python3`` >= 3.9.

Example (what Claude Code runs)::

    echo '{"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hi",
           "cwd": "/src/app", "transcript_path": "/tmp/t.jsonl"}' | python3 memoryd_hook.py
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

MAX_MESSAGES = 400  # the transcript tail sent to /capture (the watermark finds its place)
MAX_MESSAGE_CHARS = 8000  # longer messages are cut: capture extracts statements, not essays
MAX_BODY_BYTES = 900_000  # below memoryd's default 1 MiB request limit


class HookInputError(ValueError):
    """The JSON on stdin is not a Claude Code hook event this script understands."""


def settings() -> dict[str, Any]:
    """The hook's settings from the environment (see the module docstring)."""
    return {
        "url": os.environ.get("MEMORYD_URL", "http://127.0.0.1:8765").rstrip("/"),
        "token": os.environ.get("MEMORYD_TOKEN", ""),
        "agent_id": os.environ.get("MEMORYD_HOOK_AGENT_ID", "claude-code"),
        "timeout": float(os.environ.get("MEMORYD_HOOK_TIMEOUT", "10")),
        "token_budget": int(os.environ.get("MEMORYD_HOOK_TOKEN_BUDGET", "800")),
    }


def post(config: dict[str, Any], path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST JSON to memoryd and return the decoded answer (raises OSError on any failure)."""
    headers = {"Content-Type": "application/json", "X-Agent-Id": config["agent_id"]}
    if config["token"]:
        headers["Authorization"] = f"Bearer {config['token']}"
    request = urllib.request.Request(
        config["url"] + path, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=config["timeout"]) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300]
        raise OSError(f"memoryd answered {exc.code} on {path}: {detail}") from None
    except (urllib.error.URLError, TimeoutError, ValueError) as exc:
        raise OSError(f"memoryd at {config['url']} is unreachable: {exc}") from None


def session_key(event: dict[str, Any]) -> str:
    return f"claude-code:{event['session_id']}"


def context_output(event_name: str, block: str) -> dict[str, Any] | None:
    """The hook answer that adds ``block`` to the model's context (None when empty)."""
    if not block:
        return None
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": block}}


def on_session_start(event: dict[str, Any], config: dict[str, Any]) -> dict[str, Any] | None:
    """Recall what memoryd knows about this project and user."""
    project = Path(event.get("cwd") or ".").name or "this project"
    query = f"{project}: project context, conventions, decisions and the user's preferences"
    answer = post(
        config,
        "/recall",
        {
            "query": query,
            "session_key": session_key(event),
            "token_budget": config["token_budget"],
        },
    )
    return context_output("SessionStart", answer.get("block", ""))


def on_user_prompt(event: dict[str, Any], config: dict[str, Any]) -> dict[str, Any] | None:
    """Recall the memories relevant to the prompt about to be sent."""
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    answer = post(
        config,
        "/recall",
        {
            "prompt": prompt,
            "session_key": session_key(event),
            "token_budget": config["token_budget"],
        },
    )
    return context_output("UserPromptSubmit", answer.get("block", ""))


def message_text(content: Any) -> str:
    """The text of a transcript message (a string or a list of content blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        block.get("text", "")
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "\n".join(p for p in parts if isinstance(p, str))


def read_transcript(path: str) -> list[dict[str, str]]:
    """The user and assistant text messages of a Claude Code transcript (JSON lines).

    Tool calls, tool results, thinking and meta entries carry no statements to remember;
    lines that are not JSON (a partly written last line) are skipped.
    """
    messages: list[dict[str, str]] = []
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return messages
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        if entry.get("isMeta") or entry.get("isCompactSummary"):
            continue
        message = entry.get("message") or {}
        text = message_text(message.get("content")).strip()
        if text:
            messages.append({"role": entry["type"], "content": text[:MAX_MESSAGE_CHARS]})
    return messages


def capture_body(event: dict[str, Any], config: dict[str, Any]) -> dict[str, Any] | None:
    messages = read_transcript(event.get("transcript_path") or "")[-MAX_MESSAGES:]
    while messages:
        body = {
            "messages": messages,
            "session_key": session_key(event),
            "agent_id": config["agent_id"],
        }
        if len(json.dumps(body).encode()) <= MAX_BODY_BYTES:
            return body
        messages = messages[len(messages) // 4 + 1 :]
    return None


def on_capture(event: dict[str, Any], config: dict[str, Any]) -> dict[str, Any] | None:
    """Capture what the transcript taught (PreCompact, SessionEnd); nothing goes to the model."""
    body = capture_body(event, config)
    if body is not None:
        answer = post(config, "/capture", body)
        stored = len(answer.get("stored") or [])
        print(f"memoryd: captured {stored} memories", file=sys.stderr)
    return None


HANDLERS = {
    "SessionStart": on_session_start,
    "UserPromptSubmit": on_user_prompt,
    "PreCompact": on_capture,
    "SessionEnd": on_capture,
}


def parse_event(raw: str) -> dict[str, Any]:
    """The hook event on stdin, checked for the fields every handler needs."""
    try:
        event = json.loads(raw)
    except ValueError as exc:
        raise HookInputError(f"hook input is not JSON: {exc}") from None
    if not isinstance(event, dict):
        raise HookInputError("hook input is not a JSON object")
    name = event.get("hook_event_name")
    if name not in HANDLERS:
        raise HookInputError(f"unsupported hook_event_name {name!r} (use one of {sorted(HANDLERS)})")
    if not isinstance(event.get("session_id"), str) or not event["session_id"]:
        raise HookInputError("hook input has no session_id")
    return event


def main() -> int:
    """Read one hook event on stdin, answer it on stdout; see the module docstring."""
    try:
        event = parse_event(sys.stdin.read())
    except HookInputError as exc:
        print(f"memoryd hook: {exc}", file=sys.stderr)
        return 1
    try:
        output = HANDLERS[event["hook_event_name"]](event, settings())
    except (OSError, ValueError) as exc:
        print(f"memoryd hook: {exc} (continuing without memory)", file=sys.stderr)
        return 0
    if output is not None:
        json.dump(output, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
