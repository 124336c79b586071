"""Load the REALTALK development data: real two-person messaging-app chats with questions.

Each of the six chats becomes a :class:`~bench.recall.data.Conversation` in BEAM's shape, so
every recall bench reads both data sets alike: one message per memory, written as
``"<speaker>: <text>"`` at the message's own time, its ``dia_id`` (``"D3:12"``) mapped to a
message id, each question's evidence to those ids, and its category to the ability
(``category_1`` .. ``category_3``).

The data lives outside the project (``<repo>/../shared/data/realtalk`` or
``$MEMORYD_REALTALK_DIR``) and is read in place; nothing here copies it.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.recall.data import REPO_ROOT, Conversation, Message, Question

_CHAT_FILE = re.compile(r"^Chat_(\d+)_.*\.json$")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def realtalk_dir() -> Path:
    """The REALTALK directory: ``$MEMORYD_REALTALK_DIR`` or ``<repo>/../shared/data/realtalk``."""
    explicit = os.environ.get("MEMORYD_REALTALK_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return REPO_ROOT.parent / "shared" / "data" / "realtalk"


def chat_files(root: Path | None = None) -> list[Path]:
    """``Chat_<n>_<a>_<b>.json`` files in numeric order (empty if the data is absent)."""
    folder = root or realtalk_dir()
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _CHAT_FILE.match(p.name))]
    return [p for _, p in sorted(found)]


def parse_time(value: str | None) -> datetime | None:
    """``"30.12.2023, 00:32:20"`` as an aware UTC datetime (None if absent or unparsable)."""
    if not value:
        return None
    try:
        return datetime.strptime(value.strip(), "%d.%m.%Y, %H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _message_text(raw: dict[str, Any]) -> str:
    speaker = str(raw.get("speaker") or "").strip()
    text = str(raw.get("clean_text") or "").strip()
    return f"{speaker}: {text}" if speaker else text


def load_chat(path: Path) -> Conversation:
    """One chat file as a conversation; messages without text are left out, and evidence that
    names no kept message is dropped from its question."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = sorted(int(m.group(1)) for k in data if (m := _SESSION_KEY.match(k)))
    messages: list[Message] = []
    ids: dict[str, int] = {}
    for session in sessions:
        position = 0
        for raw in data.get(f"session_{session}") or []:
            if not isinstance(raw, dict) or not str(raw.get("clean_text") or "").strip():
                continue
            ids[str(raw.get("dia_id"))] = len(messages)
            messages.append(Message(
                id=len(messages), role=str(raw.get("speaker") or ""), content=_message_text(raw),
                session=session, position=position, anchor=None,
                timestamp=parse_time(raw.get("date_time")),
            ))
            position += 1
    questions: list[Question] = []
    per_category: dict[str, int] = {}
    for item in data.get("qa") or []:
        ability = f"category_{item.get('category')}"
        evidence = list(dict.fromkeys(ids[e] for e in item.get("evidence") or [] if e in ids))
        questions.append(Question(ability=ability, index=per_category.get(ability, 0),
                                  question=str(item.get("question") or ""), evidence=evidence))
        per_category[ability] = per_category.get(ability, 0) + 1
    number = int(_CHAT_FILE.match(path.name).group(1))  # type: ignore[union-attr]
    return Conversation(number=number, path=path, chat_file=path.name, topic=data.get("name"),
                        messages=messages, questions=questions)


def load_realtalk(root: Path | None = None) -> list[Conversation]:
    """Every REALTALK chat (an empty list when the data is absent)."""
    return [load_chat(p) for p in chat_files(root)]
