"""The logical row format every backend exports and imports (migration and backup).

A store's tables, seen independently of how a backend lays them out: each row is
a dict of plain Python values (``datetime`` in UTC, ``dict``/``list`` for JSON,
a float32 ``numpy`` array for a memory's vector or a domain's centroid) plus ``_pos``, a
backend-private integer that grows in export order and lets a copy resume where it stopped.

Rows keep everything that identifies them: memory ids, ``created_at``, change
sequence numbers, report ids. Importing a row whose key already exists does
nothing, so copying twice copies nothing twice.

:func:`table_checksum` hashes rows canonically (timestamps to whole microseconds,
vectors by their float32 bytes, JSON with sorted keys), order-independently, so
the same data gives the same checksum on SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from memoryd.ledger import LEDGER_FIELDS
from memoryd.models.memory import Memory, SchedulingState

# A memory's columns are the fields of the one model of a memory (its scheduling state
# apart, and ``seq``, which the store assigns): a field added to ``Memory`` is stored.
MEMORY_FIELDS: tuple[str, ...] = tuple(n for n in Memory.model_fields if n not in ("state", "seq"))
STATE_FIELDS: tuple[str, ...] = tuple(SchedulingState.model_fields)


def state_from_row(row: Sequence[Any], time: Callable[[Any], datetime | None]) -> SchedulingState:
    """The :data:`STATE_FIELDS` columns of a row as a SchedulingState, its times read by
    ``time`` (the backend's converter)."""
    state = dict(zip(STATE_FIELDS, row))
    for f in ("last_review", "last_accessed"):
        state[f] = time(state[f])
    return SchedulingState(**state)


# Tables in copy order: memories before the edges that reference them.
TABLES: dict[str, tuple[str, ...]] = {
    "memories": MEMORY_FIELDS + STATE_FIELDS + ("seq", "vector"),
    "history": ("seq", "memory_id", "operation", "actor", "agent_id", "at", "details"),
    "edges": ("source_id", "target_id", "edge_type", "weight", "created_at", "valid_from",
              "valid_until", "metadata"),
    "intentions": ("id", "description", "trigger", "priority", "status", "deadline", "due_at",
                   "snoozed_until", "created_at", "updated_at", "agent_id", "scope", "metadata"),
    "api_keys": ("id", "label", "prefix", "key_hash", "scopes", "memory_scope", "agent_id",
                 "domains", "created_at", "last_used", "revoked_at"),
    "session_access": ("session_id", "memory_id", "at"),
    "watermarks": ("key", "value", "updated_at"),
    "reports": ("id", "kind", "at", "body"),
    "ledger": LEDGER_FIELDS,
    "tasks": ("id", "name", "status", "plan", "created_at", "updated_at", "agent_id", "scope",
              "metadata", "memory_id"),
    "task_messages": ("id", "task_id", "role", "kind", "content", "created_at", "metadata"),
    "wait_jobs": ("id", "target", "criteria", "timeout_s", "created_at", "updated_at",
                  "deadline", "resolved_at", "status", "task_id", "wake", "owner", "runner",
                  "scope", "agent_id", "result", "last_observation", "checks", "cursor",
                  "wake_attempts"),
    "graph_files": ("path", "scope", "base", "signature", "seq", "updated_at"),
    "domains": ("id", "name", "centroid", "member_count", "top_terms", "suggested_name",
                "origin", "created_at", "updated_at", "renamed_at"),
    "domain_proposals": ("id", "kind", "status", "summary", "domain_ids", "evidence", "payload",
                         "created_at", "decided_at", "decided_by"),
    "domain_settings": ("key", "value", "updated_at"),
}
#: Tables a store derives from its memories (the keyword index, memoryd.store.terms): a copy
#: rebuilds them instead of copying them, and verification compares them, so a target that
#: indexed the memories differently is caught.
DERIVED_TABLES: dict[str, tuple[str, ...]] = {
    "term_stats": ("term", "df"),
    "term_totals": ("documents", "total_terms"),
}
TIME_FIELDS = frozenset({
    "created_at", "updated_at", "valid_from", "valid_until", "last_review", "last_accessed",
    "at", "deadline", "due_at", "snoozed_until", "last_used", "revoked_at", "resolved_at",
    "renamed_at", "decided_at",
})
# Fields holding a float32 vector.
VECTOR_FIELDS = frozenset({"vector", "centroid"})
JSON_FIELDS: dict[str, frozenset[str]] = {
    "memories": frozenset({"tags", "domains", "domain_scores", "metadata"}),
    "history": frozenset({"details"}),
    "edges": frozenset({"metadata"}),
    "intentions": frozenset({"trigger", "metadata"}),
    "api_keys": frozenset({"scopes", "domains"}),
    "session_access": frozenset(),
    "watermarks": frozenset(),
    "reports": frozenset({"body"}),
    "ledger": frozenset(),
    "tasks": frozenset({"plan", "metadata"}),
    "task_messages": frozenset({"metadata"}),
    "wait_jobs": frozenset({"criteria", "wake", "owner", "last_observation", "cursor",
                            "wake_attempts"}),
    "graph_files": frozenset({"base"}),
    "domains": frozenset({"top_terms"}),
    "domain_proposals": frozenset({"domain_ids", "evidence", "payload"}),
    "domain_settings": frozenset({"value"}),
    "term_stats": frozenset(),
    "term_totals": frozenset(),
}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICRO = timedelta(microseconds=1)


def check_table(table: str) -> tuple[str, ...]:
    """The fields of a logical table (derived ones included); ValueError for an unknown name."""
    fields = TABLES.get(table) or DERIVED_TABLES.get(table)
    if fields is None:
        raise ValueError(f"unknown table {table!r}; known: {', '.join([*TABLES, *DERIVED_TABLES])}")
    return fields


def check_importable(table: str) -> tuple[str, ...]:
    """The fields of a table ``import_rows`` takes; ValueError for derived or unknown ones."""
    if table in DERIVED_TABLES:
        raise ValueError(f"{table} is derived from the memories: the store rebuilds it, "
                         "import the memories instead")
    return check_table(table)


def micros(value: datetime) -> int:
    """Whole microseconds since the epoch (naive datetimes are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return (value - _EPOCH) // _MICRO


def from_micros(value: int) -> datetime:
    """The inverse of :func:`micros`."""
    return _EPOCH + value * _MICRO


def _canonical(field: str, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, datetime):
        return micros(value)
    if isinstance(value, np.ndarray):
        return hashlib.sha256(np.asarray(value, dtype=np.float32).tobytes()).hexdigest()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(_json_numbers(value), sort_keys=True, ensure_ascii=False, default=str)
    return value


def _json_numbers(value: Any) -> Any:
    """JSON numbers as their value, not their spelling: JSON does not tell 4e16 from
    40000000000000000, and PostgreSQL's jsonb gives a float with no fraction back as an
    integer (in its shortest decimal form: past 2^53 not the float's exact value)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        exact = abs(value) <= 2**53 and float(value).is_integer()
        return int(value) if exact else repr(float(value))
    if isinstance(value, dict):
        return {k: _json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_numbers(v) for v in value]
    return value


def row_digest(table: str, row: dict[str, Any]) -> int:
    """A 64-bit hash of one row's canonical form (``_pos`` is not part of it)."""
    canon = [_canonical(f, row.get(f)) for f in check_table(table)]
    blob = json.dumps(canon, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")


class Checksum:
    """An order-independent checksum of a multiset of rows: count and summed digests."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.count = 0
        self._sum = 0

    def add(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.count += 1
            self._sum = (self._sum + row_digest(self.table, row)) % (1 << 64)

    @property
    def hexdigest(self) -> str:
        return f"{self._sum:016x}"


def to_json(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row as JSON-able values: timestamps as microseconds, vectors as lists."""
    out: dict[str, Any] = {}
    for field in check_table(table):
        value = row.get(field)
        if isinstance(value, datetime):
            value = micros(value)
        elif isinstance(value, np.ndarray):
            value = np.asarray(value, dtype=np.float32).tolist()
        out[field] = value
    return out


def from_json(table: str, data: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`to_json`."""
    row: dict[str, Any] = {}
    for field in check_table(table):
        value = data.get(field)
        if value is not None and field in TIME_FIELDS:
            value = from_micros(int(value))
        elif value is not None and field in VECTOR_FIELDS:
            value = np.asarray(value, dtype=np.float32)
        row[field] = value
    return row
