"""The write policy every backend follows, written once: what a change records in history,
what a purge scrubs, which fields may change, how a history row reads back, and that no
text holds NUL (U+0000), which PostgreSQL cannot store and SQLite would (:func:`refuse_nul`,
applied to the arguments of every contract call, so both backends refuse it alike).

The backends (``sqlite.py``, ``postgres.py``) supply SQL and call these functions, so a
memory's history and ledger look the same whichever database holds it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

import numpy as np

from memoryd import ledger
from memoryd.errors import InvalidInput, StoreError
from memoryd.models import HistoryEntry, Memory, SchedulingState
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS

# Fields a change may set (state fields through update_states or an update of them).
UPDATABLE: frozenset[str] = frozenset(MEMORY_FIELDS) - {"id", "created_at"}
# What remains of every history row of a purged memory.
PURGED_DETAILS: dict[str, Any] = {"purged": True}
HISTORY_COLUMNS = ("seq", "memory_id", "operation", "actor", "agent_id", "at", "details")


@dataclass(frozen=True)
class Change:
    """One change to one memory: its fields (and maybe vector), and how history names it."""

    memory_id: str
    fields: dict[str, Any]
    vector: np.ndarray | None
    operation: str
    details: dict[str, Any] | None


def check_change(change: Change) -> None:
    """Refuse fields no update may set (a bug in the caller, not bad user input)."""
    unknown = set(change.fields) - UPDATABLE - set(STATE_FIELDS)
    if unknown:
        raise StoreError(f"cannot update fields: {', '.join(sorted(unknown))}")


def check_insert(memories: list[Memory], vectors: np.ndarray | None) -> None:
    """Refuse a batch whose vectors do not match it or that repeats an id."""
    if vectors is not None and len(vectors) != len(memories):
        raise StoreError("insert needs exactly one vector per memory")
    ids = [m.id for m in memories]
    if len(set(ids)) != len(ids):
        raise StoreError("insert got the same memory id twice")


def create_details(memory: Memory) -> dict[str, Any]:
    """History details of a new memory."""
    return {"content": memory.content}


def update_details(before: Memory, change: Change) -> dict[str, Any]:
    """History details of an update: the caller's details plus the old values it changed."""
    record = dict(change.details or {})
    record.setdefault(
        "changed",
        {f: jsonable(getattr(before, f, None)) for f in change.fields if f in UPDATABLE},
    )
    return record


def delete_details(before: Memory, purge: bool) -> dict[str, Any]:
    """History details of a deletion: a tombstone, or for a purge only the content's hash."""
    if purge:
        return {"content_sha256": hashlib.sha256(before.content.encode("utf-8")).hexdigest()}
    return {"content": before.content, "node_type": before.node_type}


def content_after(before: Memory, change: Change) -> str:
    """The memory's content once the change is applied (what the ledger hashes)."""
    return change.fields.get("content", before.content)


def pending(memory_id: str, operation: str, actor: Any, content: str | None) -> ledger.PendingEntry:
    """The ledger entry a history row brings with it."""
    return ledger.PendingEntry(operation, memory_id, ledger.content_digest(content),
                               actor.name, actor.agent_id, actor.key_label)


def jsonable(value: Any) -> Any:
    """A field value as JSON can hold it (datetimes as ISO text)."""
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def history_entry(row: tuple[Any, ...], at: Callable[[Any], datetime | None],
                  details: Callable[[Any], dict[str, Any]]) -> HistoryEntry:
    """A history row (in :data:`HISTORY_COLUMNS` order) read back with the backend's
    converters for the time and the details."""
    return HistoryEntry(seq=row[0], memory_id=row[1], operation=row[2], actor=row[3],
                        agent_id=row[4], at=at(row[5]), details=details(row[6]))


#: Values that hold no text, passed over at once: a batch of access records hands the store
#: hundreds of scheduling states (numbers and times only; tests/test_nul.py).
TEXTLESS = (int, float, datetime, SchedulingState, np.ndarray, type(None))


def refuse_nul(arguments: Any) -> None:
    """InvalidInput if any text in ``arguments`` (strings, mapping keys, lists, models and
    dataclasses at any depth) holds NUL. The faces refuse it earlier, naming the field."""
    stack = [arguments]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise InvalidInput("text must not contain the NUL character (U+0000)")
        elif isinstance(item, TEXTLESS):
            continue
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif hasattr(item, "__pydantic_fields__"):
            stack.extend(vars(item).values())
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
