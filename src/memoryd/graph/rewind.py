"""Time travel over history: a memory as it was recorded at an earlier moment.

Every change a store records keeps the old values of the fields it changed
(``details.changed``), so undoing, newest first, the changes made after a moment gives
the memory as it stood then: its text, its validity and its graph state (archived or
not, in ``metadata.kg``). A memory created after that moment did not exist yet.

    >>> rewind(memory, later_entries)        # history entries recorded after the moment
    Memory(...)                               # or None: it did not exist then
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from memoryd.models import HistoryEntry, Memory

# History operations that bring a memory into existence.
CREATING = frozenset({"create", "import"})
_FIELDS = frozenset(Memory.model_fields) - {"id", "state", "seq"}


def rewind(memory: Memory, later: Iterable[HistoryEntry]) -> Memory | None:
    """``memory`` with the changes of ``later`` (its history entries recorded after the
    moment asked about) undone; None if one of them created it. Usage counts are not
    rewound (retrievals keep no history): a ``last_accessed`` after the first undone
    change is cleared."""
    entries = sorted(later, key=lambda e: e.seq, reverse=True)
    if not entries:
        return memory
    data: dict[str, Any] = memory.model_dump()
    for entry in entries:
        if entry.operation in CREATING:
            return None
        changed = entry.details.get("changed")
        if isinstance(changed, dict):
            data.update({k: v for k, v in changed.items() if k in _FIELDS})
    first = min(e.at for e in entries)
    state = data["state"]
    if state.get("last_accessed") is not None and _after(state["last_accessed"], first):
        state["last_accessed"] = None
    try:
        return Memory.model_validate(data)
    except ValidationError:
        return memory  # an old value that no longer validates: keep what is stored


def _after(value: Any, moment: datetime) -> bool:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return bool(value >= moment)


def by_memory(entries: Iterable[HistoryEntry]) -> dict[str, list[HistoryEntry]]:
    """History entries grouped by memory id (order kept)."""
    out: dict[str, list[HistoryEntry]] = {}
    for entry in entries:
        out.setdefault(entry.memory_id, []).append(entry)
    return out
