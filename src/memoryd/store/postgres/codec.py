"""How memoryd values are written to and read from PostgreSQL: JSON as jsonb (read back with
sorted keys, as SQLite gives them), timestamps in UTC, vectors as pgvector, rows of the
memories table as :class:`Memory`, and the filter dialect."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import partial
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from memoryd.models import Memory, SchedulingState
from memoryd.store import filters as sql_filters
from memoryd.store.rows import JSON_FIELDS, MEMORY_FIELDS, STATE_FIELDS, state_from_row

COLUMNS = MEMORY_FIELDS + STATE_FIELDS + ("seq",)
_MEMORY_JSON = JSON_FIELDS["memories"] & {"domain_scores", "metadata"}
dumps = partial(json.dumps, ensure_ascii=False, default=str)


def _sorted_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # jsonb orders keys by length; SQLite's JSON text keeps them sorted. Sort on
    # read so both backends hand back identical dicts (and identical exports).
    return dict(sorted(pairs))


def loads(data: str | bytes) -> Any:
    return json.loads(data, object_pairs_hook=_sorted_object)


def to_db(field: str, value: Any) -> Any:
    if field in _MEMORY_JSON:
        return Jsonb(value, dumps=dumps)
    return value


def utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc)


def row_to_memory(row: tuple[Any, ...]) -> Memory:
    data = dict(zip(COLUMNS, row))
    state = row_to_state([data.pop(f) for f in STATE_FIELDS])
    for f in ("created_at", "updated_at", "valid_from", "valid_until"):
        data[f] = utc(data[f])
    return Memory(**data, state=state)


def row_to_state(row: Sequence[Any]) -> SchedulingState:
    """The ``STATE_FIELDS`` columns of a row as a SchedulingState."""
    return state_from_row(row, utc)


def _in_list(column: str, values: list[Any]) -> tuple[str, list[Any]]:
    return f"{column} = ANY(%s::text[])", [values]


def _tags(tags: list[str], mode: str) -> tuple[str, list[Any]]:
    return f"m.tags {'@>' if mode == 'all' else '&&'} %s::text[]", [tags]


# The predicate of the partial index memories_graph (migration m007).
GRAPH_NODE = "(m.metadata -> 'kg') IS NOT NULL"


def _domains(domains: list[str]) -> tuple[str, list[Any]]:
    return "m.domains && %s::text[]", [domains]


DIALECT = sql_filters.Dialect(mark="%s", true="TRUE", time=lambda d: d, in_list=_in_list,
                              tags=_tags, graph_node=GRAPH_NODE, domains=_domains)


def to_vector(value: Any) -> np.ndarray:
    if hasattr(value, "to_numpy"):  # pgvector.Vector, as psycopg loads some vector results
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)
