"""Load the BEAM development data (conversations, messages, probing questions).

The data lives outside the project (``<repo>/../shared/data/beam`` or ``$MEMORYD_BEAM_DIR``)
and is read in place; nothing here copies it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
TRACK = "100K"


def beam_dir() -> Path:
    """The BEAM directory: ``$MEMORYD_BEAM_DIR`` or ``<repo>/../shared/data/beam``."""
    explicit = os.environ.get("MEMORYD_BEAM_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return REPO_ROOT.parent / "shared" / "data" / "beam"


def conversation_dirs(root: Path | None = None) -> list[Path]:
    """``<beam>/100K/<n>/`` directories in numeric order (empty if the data is absent)."""
    track = (root or beam_dir()) / TRACK
    if not track.is_dir():
        return []
    dirs = [p for p in track.iterdir() if p.is_dir() and p.name.isdigit()]
    return sorted(dirs, key=lambda p: int(p.name))


@dataclass
class Message:
    """One chat message, indexed as one memory."""

    id: int  # conversation-level message id (what source_chat_ids point at)
    role: str
    content: str
    session: int  # batch_number
    position: int  # index within its session (0-based)
    anchor: str | None  # time anchor carried forward within the session, e.g. "March-15-2024"
    timestamp: datetime | None = None  # an exact write time, when the data set has one

    @property
    def created_at(self) -> datetime | None:
        return self.timestamp or parse_anchor(self.anchor)


@dataclass
class Question:
    """One probing question and its evidence message ids."""

    ability: str
    index: int  # position within its ability list
    question: str
    evidence: list[int]  # flattened, de-duplicated, in order
    evidence_groups: dict[str, list[int]] = field(default_factory=dict)  # when source_chat_ids is a dict


@dataclass
class Conversation:
    number: int
    path: Path
    chat_file: str
    topic: str | None
    messages: list[Message]
    questions: list[Question]

    @property
    def sessions(self) -> dict[int, list[Message]]:
        out: dict[int, list[Message]] = {}
        for m in self.messages:
            out.setdefault(m.session, []).append(m)
        return out


def parse_anchor(anchor: str | None) -> datetime | None:
    """``"March-15-2024"`` to an aware UTC datetime (None if absent or unparsable)."""
    if not anchor:
        return None
    for fmt in ("%B-%d-%Y", "%b-%d-%Y", "%Y-%m-%d"):
        try:
            return datetime.strptime(anchor.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def flatten_ids(value: Any) -> list[int]:
    """Flatten source_chat_ids (a list, a dict of lists, nested lists, or None) to ints."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [i for v in value.values() for i in flatten_ids(v)]
    if isinstance(value, (list, tuple)):
        return [i for v in value for i in flatten_ids(v)]
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return [int(value)]
    return []


def _dedup(ids: list[int]) -> list[int]:
    return list(dict.fromkeys(ids))


def chat_path(conv_dir: Path) -> Path:
    """``chat_trunecated.json`` (upstream's preference, sic) when present, else ``chat.json``."""
    truncated = conv_dir / "chat_trunecated.json"
    return truncated if truncated.is_file() else conv_dir / "chat.json"


def load_messages(path: Path) -> list[Message]:
    """Messages of one chat file, in order; the last seen time anchor carries forward per batch."""
    batches = json.loads(path.read_text(encoding="utf-8"))
    out: list[Message] = []
    for b_index, batch in enumerate(batches, start=1):
        session = int(batch.get("batch_number") or b_index)
        anchor = batch.get("time_anchor") or None
        position = 0
        for turn in batch.get("turns") or []:
            items = turn if isinstance(turn, list) else [turn]
            for msg in items:
                if not isinstance(msg, dict) or "id" not in msg:
                    continue
                anchor = msg.get("time_anchor") or anchor
                content = msg.get("content") or ""
                out.append(
                    Message(
                        id=int(msg["id"]),
                        role=str(msg.get("role") or "user"),
                        content=content,
                        session=session,
                        position=position,
                        anchor=anchor,
                    )
                )
                position += 1
    return out


def load_questions(path: Path) -> list[Question]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out: list[Question] = []
    for ability, items in data.items():
        for i, item in enumerate(items):
            source = item.get("source_chat_ids")
            groups = (
                {k: _dedup(flatten_ids(v)) for k, v in source.items()}
                if isinstance(source, dict)
                else {}
            )
            out.append(
                Question(
                    ability=ability,
                    index=i,
                    question=str(item.get("question") or ""),
                    evidence=_dedup(flatten_ids(source)),
                    evidence_groups=groups,
                )
            )
    return out


def load_conversation(conv_dir: Path) -> Conversation:
    chat = chat_path(conv_dir)
    topic = None
    topic_file = conv_dir / "topic.json"
    if topic_file.is_file():
        try:
            raw = json.loads(topic_file.read_text(encoding="utf-8"))
            topic = raw if isinstance(raw, str) else json.dumps(raw)[:200]
        except ValueError:
            pass
    return Conversation(
        number=int(conv_dir.name),
        path=conv_dir,
        chat_file=chat.name,
        topic=topic,
        messages=load_messages(chat),
        questions=load_questions(conv_dir / "probing_questions" / "probing_questions.json"),
    )
