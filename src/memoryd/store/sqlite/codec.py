"""How memoryd values are written to and read from SQLite: timestamps as epoch seconds,
JSON as text, rows of the memories table as :class:`Memory`, and the filter dialect."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from collections.abc import Sequence
from typing import Any

from memoryd.models import Memory, SchedulingState
from memoryd.store import filters as sql_filters
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS, state_from_row

COLUMNS = ("rowid",) + MEMORY_FIELDS + STATE_FIELDS + ("seq",)
JSON_FIELDS = {"tags", "domains", "domain_scores", "metadata"}
TIME_FIELDS = {"created_at", "updated_at", "valid_from", "valid_until", "last_review", "last_accessed"}


def ts(value: datetime | None) -> float | None:
    """A datetime as epoch seconds."""
    return value.timestamp() if value is not None else None


def dt(value: float | None) -> datetime | None:
    """Epoch seconds as a UTC datetime."""
    return datetime.fromtimestamp(value, tz=timezone.utc) if value is not None else None


def to_db(field: str, value: Any) -> Any:
    """A memory field as its SQLite column holds it."""
    if field in JSON_FIELDS:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if field in TIME_FIELDS:
        return ts(value)
    return value


def row_to_memory(row: sqlite3.Row | tuple) -> Memory:
    data = dict(zip(COLUMNS, row))
    state = row_to_state([data.pop(f) for f in STATE_FIELDS])
    data.pop("rowid")
    for f in JSON_FIELDS:
        data[f] = json.loads(data[f])
    for f in ("created_at", "updated_at", "valid_from", "valid_until"):
        data[f] = dt(data[f])
    return Memory(**data, state=state)


def row_to_state(row: Sequence[Any]) -> SchedulingState:
    """The ``STATE_FIELDS`` columns of a row as a SchedulingState."""
    return state_from_row(row, dt)


def _in_list(column: str, values: list[Any]) -> tuple[str, list[Any]]:
    return f"{column} IN ({', '.join('?' * len(values))})", values


def _tags(tags: list[str], mode: str) -> tuple[str, list[Any]]:
    marks = ", ".join("?" * len(tags))
    inner = f"SELECT memory_rowid FROM memory_tags WHERE tag IN ({marks})"
    if mode == "all":
        return f"m.rowid IN ({inner} GROUP BY memory_rowid HAVING COUNT(*) = ?)", [*tags, len(tags)]
    return f"m.rowid IN ({inner})", tags


# The predicate of the partial index idx_memories_graph (migration m005).
GRAPH_NODE = "json_extract(m.metadata, '$.kg') IS NOT NULL"


def _domains(domains: list[str]) -> tuple[str, list[Any]]:
    marks = ", ".join("?" * len(domains))
    return (f"m.rowid IN (SELECT memory_rowid FROM memory_domains WHERE domain IN ({marks}))",
            domains)


DIALECT = sql_filters.Dialect(mark="?", true="1", time=lambda d: d.timestamp(),
                              in_list=_in_list, tags=_tags, graph_node=GRAPH_NODE, domains=_domains)
