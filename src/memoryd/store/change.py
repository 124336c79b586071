"""Who makes a change and what a change records: every write of a store records one history
row per memory it touches, and the ledger entry that history row brings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Actor:
    """Who makes a change: recorded in the history of every mutation."""

    name: str | None = None  # e.g. "key:<label>", "cli", "import"
    agent_id: str | None = None
    key_label: str | None = None  # the API key the change came through, if any


@dataclass(frozen=True)
class Recorded:
    """One change to record: a history row and the ledger entry it brings."""

    memory_id: str
    operation: str
    actor: Actor
    details: dict[str, Any] | None = None
    content: str | None = None  # the memory's content after the change (the ledger hashes it)
