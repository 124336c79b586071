"""Backfill from what agents already wrote: Claude Code transcripts and OpenClaw memory files.

**Claude Code** keeps one JSONL file per session,
``~/.claude/projects/<cwd with each non-alphanumeric character as '-'>/<sessionId>.jsonl``.
The line format was read from the ``@anthropic-ai/claude-code`` npm package (its 2.0
``cli.js`` writes and reads these files); what this importer relies on:

- every line is one JSON object with a ``type``; ``user`` and ``assistant`` lines carry
  ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp`` (ISO 8601), ``cwd``,
  ``gitBranch``, ``version``, ``isSidechain`` (sub-agent traffic) and ``message``
  (``{"role", "content"}``, content a string or a list of blocks: ``text``, ``tool_use``,
  ``tool_result``, ``thinking``, ``image``);
- ``isMeta`` marks injected context, ``isCompactSummary`` the summary written when a
  conversation was compacted; slash commands arrive wrapped in ``<command-name>`` /
  ``<local-command-stdout>`` tags;
- ``summary`` lines (``{"type": "summary", "summary", "leafUuid"}``) title a session;
  ``system``, ``attachment``, ``checkpoint`` and ``file-history-snapshot`` lines are skipped.

**OpenClaw** keeps curated long-term memory in ``MEMORY.md`` and a log per day in
``memory/YYYY-MM-DD.md`` in the agent's workspace; each list item (or paragraph) becomes
one memory, its headings become tags.

**What extraction without an LLM can do, honestly:** it stores what was *said* — the
user's requests, the assistant's final answer of each turn, the summaries Claude Code
itself wrote, the notes OpenClaw kept — not what was *learned*. It does not distil
insights, resolve contradictions or drop chatter; memoryd's smart ingest (dedup,
supersede) and an optional model (:mod:`memoryd.graph.chat`) do that part.

Every item has a stable id (UUID v5 of where it came from, and for notes of its text), so
importing the same files again yields the same ids and the store skips what it has.

    >>> batch = read_claude_code_session(path)
    >>> batch.items[0].node_type, batch.problems
    ('message', [])
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memoryd.models import NewMemory, as_utc

NAMESPACE = uuid.UUID("5b0c3f5e-8a51-4c36-9a44-6f6b2f0d8c11")
MAX_ITEM_CHARS = 4000
_SCOPE_JUNK = re.compile(r"[^A-Za-z0-9_.\-]+")
_WRAPPED_COMMAND = re.compile(
    r"^\s*<(command-name|command-message|local-command-stdout|"
    r"local-command-stderr|command-args|bash-input|bash-stdout)>"
)
_NOISE = ("[Request interrupted by user", "Caveat: The messages below were generated")


def stable_id(*parts: str) -> str:
    """A UUID v5 of ``parts``: the same source always yields the same memory id."""
    return str(uuid.uuid5(NAMESPACE, "\x1f".join(parts)))


def project_scope(path: str | Path | None) -> str:
    """``project:<directory name>`` for a working directory (``user`` if there is none)."""
    if not path:
        return "user"
    name = _SCOPE_JUNK.sub("-", Path(str(path)).name).strip("-.")[:128]
    return f"project:{name}" if name else "user"


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_ITEM_CHARS else text[: MAX_ITEM_CHARS - 1].rstrip() + "…"


@dataclass
class ImportBatch:
    """Items read from one file, and the lines that could not be read (``path:line: why``)."""

    source: Path
    items: list[NewMemory] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lines: int = 0


# --------------------------------------------------------------------------- Claude Code


def find_claude_code_sessions(root: Path | str | None = None) -> list[Path]:
    """Session files under ``root`` (default ``~/.claude/projects``), oldest first."""
    base = Path(root) if root is not None else Path.home() / ".claude" / "projects"
    if not base.is_dir():
        return []
    files = [p for p in base.glob("*/*.jsonl") if p.is_file()]
    return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))


def message_text(message: Any) -> str:
    """The plain text of a Claude Code message: string content, or its ``text`` blocks
    (tool calls, tool results, thinking and images are not text a person wrote)."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b.get("text", "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        return "\n".join(p for p in parts if p.strip())
    return ""


def _is_prompt(entry: dict[str, Any], text: str) -> bool:
    if entry.get("isMeta") or not text.strip():
        return False
    return not _WRAPPED_COMMAND.match(text) and not text.startswith(_NOISE)


def _timestamp(entry: dict[str, Any]) -> datetime | None:
    raw = entry.get("timestamp")
    if not isinstance(raw, str):
        return None
    try:
        return as_utc(datetime.fromisoformat(raw.replace("Z", "+00:00")))
    except ValueError:
        return None


def _memory(
    entry: dict[str, Any], text: str, kind: str, role: str, source: str, scope: str | None
) -> NewMemory:
    session = str(entry.get("sessionId") or "")
    return NewMemory(
        id=stable_id("claude-code", session, str(entry.get("uuid")), kind),
        content=_clip(text),
        node_type="summary" if kind == "compact" else "message",
        created_at=_timestamp(entry),
        session_id=session or None,
        scope=scope or project_scope(entry.get("cwd")),
        source=source,
        tags=["claude-code", role if kind != "compact" else "compaction"],
        # The role makes "what did I say about…" / "what did you suggest…" find the turn.
        metadata={k: entry[k] for k in ("uuid", "cwd", "gitBranch", "version") if entry.get(k)}
        | ({"role": role} if kind != "compact" else {}),
    )


def _entries(path: Path, batch: ImportBatch) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            batch.lines = number
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                batch.problems.append(
                    f"{path}:{number}: not a JSON line ({exc.__class__.__name__})"
                )
                continue
            if isinstance(entry, dict):
                yield number, entry
            else:
                batch.problems.append(f"{path}:{number}: not a JSON object")


def read_claude_code_session(path: Path | str, *, scope: str | None = None) -> ImportBatch:
    """Items of one session file: user prompts, the assistant's last text before each new
    prompt, compaction summaries and session titles. Sub-agent (sidechain) traffic is
    skipped. ``scope`` overrides the ``project:<cwd name>`` derived from each line."""
    path = Path(path)
    batch = ImportBatch(path)
    pending: tuple[dict[str, Any], str, int] | None = None  # the turn's latest answer
    for number, entry in _entries(path, batch):
        kind = entry.get("type")
        if entry.get("isSidechain"):
            continue
        if kind == "summary" and isinstance(entry.get("summary"), str):
            text = entry["summary"].strip()
            if text:
                batch.items.append(
                    NewMemory(
                        id=stable_id("claude-code-summary", str(entry.get("leafUuid")), text),
                        content=_clip(text),
                        node_type="summary",
                        scope=scope or "user",
                        source=f"{path}:{number}",
                        tags=["claude-code", "session-title"],
                    )
                )
            continue
        if kind not in ("user", "assistant"):
            continue
        text = message_text(entry.get("message"))
        if kind == "assistant":
            if text.strip():
                pending = (entry, text, number)
            continue
        compaction = bool(entry.get("isCompactSummary")) and bool(text.strip())
        if not compaction and not _is_prompt(entry, text):
            continue
        if pending:  # a new prompt ends the turn: its last answer goes in first
            batch.items.append(_answer(pending, path, scope))
            pending = None
        kind, role = ("compact", "user") if compaction else ("prompt", "user")
        batch.items.append(_memory(entry, text, kind, role, f"{path}:{number}", scope))
    if pending:
        batch.items.append(_answer(pending, path, scope))
    return batch


def _answer(pending: tuple[dict[str, Any], str, int], path: Path, scope: str | None) -> NewMemory:
    entry, text, number = pending
    return _memory(entry, text, "answer", "assistant", f"{path}:{number}", scope)


# --------------------------------------------------------------------------- OpenClaw

_DAILY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_TAG_JUNK = re.compile(r"[^a-z0-9]+")


def find_openclaw_files(workspace: Path | str) -> list[Path]:
    """``MEMORY.md`` and ``memory/YYYY-MM-DD.md`` in an OpenClaw workspace, dated files by date."""
    root = Path(workspace)
    out = [root / "MEMORY.md"] if (root / "MEMORY.md").is_file() else []
    daily = root / "memory"
    if daily.is_dir():
        out += sorted(p for p in daily.iterdir() if p.is_file() and _DAILY.match(p.name))
    return out


def markdown_items(text: str) -> Iterator[tuple[list[str], str, int]]:
    """(headings above, item text, first line) for each list item or paragraph.

    A list item takes its indented continuation lines; nested items are items of their own.
    """
    headings: list[str] = []
    current: list[str] = []
    start = 0

    def flush() -> Iterator[tuple[list[str], str, int]]:
        text_ = " ".join(s.strip() for s in current).strip()
        if text_:
            yield list(headings), text_, start

    for number, line in enumerate(text.splitlines(), start=1):
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        if heading or bullet or not line.strip():
            yield from flush()
            current = []
        if heading:
            level = len(heading.group(1))
            headings = headings[: level - 1] + [heading.group(2)]
        elif bullet:
            current, start = [bullet.group(3)], number
        elif line.strip():
            if not current:
                start = number
            current.append(line)
    yield from flush()


def _tag(heading: str) -> str:
    return _TAG_JUNK.sub("-", heading.lower()).strip("-")[:64]


def read_openclaw_file(path: Path | str, *, scope: str = "user") -> ImportBatch:
    """Items of ``MEMORY.md`` (long-term notes) or ``memory/YYYY-MM-DD.md`` (that day's log).

    A daily item is dated that day (00:00 UTC); a ``MEMORY.md`` item is dated by the file's
    modification time. Ids hash the file name and the item's text: an unchanged item keeps
    its id, an edited one is a new item.
    """
    path = Path(path)
    batch = ImportBatch(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        batch.problems.append(f"{path}: not UTF-8 text (byte {exc.start})")
        return batch
    daily = _DAILY.match(path.name)
    if daily:
        created = datetime(int(daily[1]), int(daily[2]), int(daily[3]), tzinfo=timezone.utc)
        kind, tags = "event", ["openclaw", "daily"]
    else:
        created = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
        kind, tags = "note", ["openclaw", "long-term"]
    batch.lines = text.count("\n") + 1
    for headings, item, line in markdown_items(text):
        extra = [t for t in (_tag(h) for h in headings[-2:]) if t]
        batch.items.append(
            NewMemory(
                id=stable_id("openclaw", path.name, " ".join(item.split())),
                content=_clip(item),
                node_type=kind,
                created_at=created,
                scope=scope,
                source=f"{path}:{line}",
                tags=list(dict.fromkeys(tags + extra)),
                category=headings[-1][:128] if headings else None,
            )
        )
    return batch
