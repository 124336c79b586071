"""The chats of the ingest bench: BEAM and REALTALK as memory items and questions.

Both data sets are read in place by the recall bench's loaders (``bench.recall.data`` for
BEAM, ``bench.recall.realtalk`` for REALTALK) and nothing is copied. Every non-empty message
becomes one item in the shape ``Engine.add_many`` and ``Engine.ingest_many`` both take: its
own id, its text, its chat session as ``session_id``, its role (or speaker) in the metadata,
and a write time in conversation order (the message's date, or the last one seen, plus one
minute per message, as the recall bench writes them). A question is kept when it has
evidence; its evidence names item ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from bench.recall import data as beam
from bench.recall import realtalk

DATA_SETS = ("beam", "realtalk")
_FIXED_START = datetime(2024, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Question:
    """One question with evidence (item ids)."""

    ability: str
    text: str
    evidence: tuple[str, ...]


@dataclass
class Chat:
    """One conversation: its items in order and its questions."""

    data_set: str
    number: int
    items: list[dict[str, Any]]
    questions: list[Question]

    @property
    def last_write(self) -> datetime:
        return max(item["created_at"] for item in self.items)


def _write_times(created: list[datetime | None]) -> list[datetime]:
    start = min((d for d in created if d is not None), default=_FIXED_START)
    out, last = [], start
    for i, d in enumerate(created):
        last = max(last, d or last)
        out.append(last + timedelta(minutes=i))
    return out


def to_chat(data_set: str, conversation: beam.Conversation) -> Chat:
    """A loaded conversation (either data set) as items and questions with evidence."""
    messages = [m for m in conversation.messages if m.content.strip()]
    prefix = f"{data_set[0]}{conversation.number}-"
    written = _write_times([m.created_at for m in messages])
    items = [{"id": f"{prefix}{m.id}", "content": m.content, "node_type": "message",
              "session_id": str(m.session), "created_at": when, "metadata": {"role": m.role}}
             for m, when in zip(messages, written)]
    known = {item["id"] for item in items}
    questions = []
    for q in conversation.questions:
        evidence = tuple(e for e in (f"{prefix}{i}" for i in q.evidence) if e in known)
        if evidence and q.question.strip():
            questions.append(Question(q.ability, q.question, evidence))
    return Chat(data_set, conversation.number, items, questions)


def load(data_set: str) -> list[Chat]:
    """Every chat of one data set (an empty list when the data is absent)."""
    if data_set == "beam":
        return [to_chat("beam", beam.load_conversation(d)) for d in beam.conversation_dirs()]
    if data_set == "realtalk":
        return [to_chat("realtalk", c) for c in realtalk.load_realtalk()]
    raise ValueError(f"unknown data set {data_set!r} (choose from {', '.join(DATA_SETS)})")
