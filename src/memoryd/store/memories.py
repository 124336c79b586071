"""Reading memories, the same way on every backend: by id, by filter (paged and ordered),
which of some ids pass a filter, how many do, and all of them in order. Each row starts
with the memory's ``rowid`` (the order memories were written in); the database handle says
which columns follow and reads a row back as a :class:`~memoryd.models.Memory`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.models import Memory, SchedulingState, SearchFilters
from memoryd.store.filters import where
from memoryd.store.rows import STATE_FIELDS

if TYPE_CHECKING:
    from memoryd.store.database import Database


def _select(db: Database, clause: str, params: list[Any]) -> list[Memory]:
    rows = db.rows(f"SELECT {db.memory_columns} FROM memories m WHERE {clause}", params)
    return [db.memory(row) for row in rows]


def by_id(db: Database, memory_id: str) -> Memory | None:
    """One memory by id, or None."""
    found = _select(db, f"m.id = {db.mark}", [memory_id])
    return found[0] if found else None


def by_ids(db: Database, memory_ids: list[str]) -> dict[str, Memory]:
    """Memories by id, in the order asked (missing ids are left out)."""
    ids = list(dict.fromkeys(memory_ids))
    found: dict[str, Memory] = {}
    for chunk in db.chunks(ids):
        clause, params = db.dialect.in_list("m.id", chunk)
        found.update((m.id, m) for m in _select(db, clause, params))
    return {i: found[i] for i in ids if i in found}


def states_by_ids(db: Database, memory_ids: list[str]) -> dict[str, SchedulingState]:
    """The scheduling states of memories by id, in the order asked (missing ids are left
    out): only their columns, not the memories whole."""
    ids = list(dict.fromkeys(memory_ids))
    columns = ", ".join(f"m.{f}" for f in STATE_FIELDS)
    found: dict[str, SchedulingState] = {}
    for chunk in db.chunks(ids):
        clause, params = db.dialect.in_list("m.id", chunk)
        rows = db.rows(f"SELECT m.id, {columns} FROM memories m WHERE {clause}", params)
        found.update((r[0], db.state(r[1:])) for r in rows)
    return {i: found[i] for i in ids if i in found}


def matching(db: Database, filters: SearchFilters, now: datetime, tail: str,
             tail_params: list[Any]) -> list[Memory]:
    """Memories passing the filters, with ``tail`` (``ORDER BY ...``) and a page."""
    clause, params = where(filters, now, db.dialect)
    return _select(db, f"{clause} {tail} LIMIT {db.mark} OFFSET {db.mark}",
                   [*params, *tail_params])


def matching_ids(db: Database, memory_ids: list[str], filters: SearchFilters,
                 now: datetime) -> set[str]:
    """Which of the given memories pass the filters."""
    clause, params = where(filters, now, db.dialect)
    out: set[str] = set()
    for chunk in db.chunks(list(dict.fromkeys(memory_ids))):
        ids, id_params = db.dialect.in_list("m.id", chunk)
        rows = db.rows(f"SELECT m.id FROM memories m WHERE {ids} AND {clause}",
                       [*id_params, *params])
        out.update(r[0] for r in rows)
    return out


def count(db: Database, filters: SearchFilters | None, now: datetime) -> int:
    """How many memories pass the filters (all when there are none)."""
    if filters is None:
        return int(db.rows("SELECT COUNT(*) FROM memories")[0][0])
    clause, params = where(filters, now, db.dialect)
    return int(db.rows(f"SELECT COUNT(*) FROM memories m WHERE {clause}", params)[0][0])


def every(db: Database, batch_size: int) -> Iterator[Memory]:
    """Every memory, oldest first, read ``batch_size`` at a time."""
    last = 0
    while True:
        rows = db.rows(f"SELECT {db.memory_columns} FROM memories m WHERE m.rowid > {db.mark} "
                       f"ORDER BY m.rowid LIMIT {db.mark}", [last, batch_size])
        if not rows:
            return
        yield from map(db.memory, rows)
        last = rows[-1][0]
