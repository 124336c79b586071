"""The links between memories (``edges``), written once for every backend: insert or replace
by (source, target, type), read around some memories or from every memory passing a filter,
and expire one. Rows come back in the order they were first written."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.errors import StoreError
from memoryd.models import Edge, SearchFilters
from memoryd.store.filters import where
from memoryd.store.rows import TABLES

if TYPE_CHECKING:
    from memoryd.store.database import Database

COLUMNS = TABLES["edges"]
KEY = ("source_id", "target_id", "edge_type")


def _row(edge: Edge) -> dict[str, Any]:
    return edge.model_dump(mode="python", include=set(COLUMNS))


def _edge(db: Database, values: tuple[Any, ...]) -> Edge:
    return Edge(**db.decode_row("edges", COLUMNS, values))


def upsert(db: Database, edges: list[Edge]) -> None:
    """Insert edges, replacing (source, target, type) duplicates (the last given wins)."""
    unique = {(e.source_id, e.target_id, e.edge_type): e for e in edges}
    if not unique:
        return
    try:
        with db.write() as tx:
            db.upsert(tx, "edges", [_row(e) for _, e in sorted(unique.items())], key=KEY)
    except db.constraint_errors as exc:
        raise StoreError(f"an edge names a memory that does not exist: {exc}") from exc


def around(db: Database, memory_ids: list[str], now: datetime | None) -> list[Edge]:
    """Edges touching any of the memories (either direction); valid at ``now`` if given."""
    found: dict[tuple[str, str, str], Edge] = {}
    for chunk in db.chunks(list(dict.fromkeys(memory_ids)), lists=2):
        sources, params = db.dialect.in_list("source_id", chunk)
        targets, more = db.dialect.in_list("target_id", chunk)
        clause, params = f"({sources} OR {targets})", [*params, *more]
        if now is not None:
            clause += (f" AND (valid_until IS NULL OR valid_until > {db.mark})"
                       f" AND (valid_from IS NULL OR valid_from <= {db.mark})")
            params += [db.dialect.time(now)] * 2
        rows = db.rows(f"SELECT {', '.join(COLUMNS)} FROM edges WHERE {clause} "
                       f"ORDER BY {db.position}", params)
        for values in rows:
            edge = _edge(db, values)
            found.setdefault((edge.source_id, edge.target_id, edge.edge_type), edge)
    return list(found.values())


def from_matching(db: Database, filters: SearchFilters, now: datetime) -> list[Edge]:
    """Every edge (expired ones too) whose source memory passes the filters."""
    clause, params = where(filters, now, db.dialect)
    rows = db.rows(f"SELECT {', '.join('e.' + c for c in COLUMNS)} FROM memories m "
                   f"JOIN edges e ON e.source_id = m.id WHERE {clause} "
                   f"ORDER BY e.{db.position}", params)
    return [_edge(db, values) for values in rows]


def expire(db: Database, source_id: str, target_id: str, edge_type: str, at: datetime) -> bool:
    """Set valid_until on one edge; False if there is no such edge."""
    with db.write() as tx:
        cur = tx.execute(f"UPDATE edges SET valid_until = {db.mark} WHERE source_id = {db.mark} "
                         f"AND target_id = {db.mark} AND edge_type = {db.mark}",
                         (db.dialect.time(at), source_id, target_id, edge_type))
        return cur.rowcount > 0
