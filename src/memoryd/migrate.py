"""Copy a whole memory from one store to another (SQLite <-> PostgreSQL), and check it.

``copy_store(source, target)`` moves every table of :mod:`memoryd.store.rows` —
memories with their vectors and scheduling state, history, edges, intentions, API
keys, session access marks, watermarks and reports — keeping ids, timestamps and
change sequence numbers. Nothing is re-embedded.

Resumable and idempotent: after each batch the target remembers how far it got
(a watermark ``migrate:<source>:<table>``), and a row whose key already exists
in the target is skipped, so an interrupted copy re-run continues where it
stopped and a finished copy re-run copies nothing. The target must be empty, or
be the target of an earlier copy from the same source.

Verification reads both stores again and compares, per table, the row count and
an order-independent checksum of the rows' canonical form.

Stop writers to the source while copying: rows changed after they were copied are
not copied again, and verification then reports the table as different.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Protocol

import numpy as np

from memoryd.config import _mask_url_password
from memoryd.errors import StoreError
from memoryd.store.base import Store
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS, TABLES, TIME_FIELDS, Checksum, check_table

Progress = Callable[[str, int, "int | None"], None]  # (table, rows just copied, total or None)
MARKER_PREFIX = "migrate:"


class RowAccess(Protocol):
    """What a migration needs from a store (the proposed contract addition)."""

    def export_rows(self, table: str, *, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        ...

    def import_rows(self, table: str, rows: list[dict[str, Any]]) -> int:
        ...


@dataclass
class TableCheck:
    """Counts and checksums of one table on both sides."""

    table: str
    source_rows: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def ok(self) -> bool:
        return (self.source_rows, self.source_checksum) == (self.target_rows, self.target_checksum)


@dataclass
class MigrationReport:
    """What a copy did: rows inserted per table, and the verification if it ran."""

    source: str
    target: str
    copied: dict[str, int] = field(default_factory=dict)
    checks: list[TableCheck] = field(default_factory=list)
    resumed: bool = False

    @property
    def verified(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


def source_key(store: Store) -> str:
    """A short, stable name of a store (its URL without password), for resume marks."""
    return hashlib.sha256(_mask_url_password(store.url).encode()).hexdigest()[:12]


def rows_of(store: Store) -> RowAccess:
    """The row access of a store: its own, or an adapter for SQLite stores."""
    if hasattr(store, "export_rows") and hasattr(store, "import_rows"):
        return store  # type: ignore[return-value]
    from memoryd.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        return SQLiteRows(store)
    raise StoreError(f"the {store.backend} store cannot export or import rows")


def _visible(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # A copy's own resume marks are bookkeeping of the target, not data to move or compare.
    if table != "watermarks":
        return rows
    return [r for r in rows if not str(r.get("key", "")).startswith(MARKER_PREFIX)]


def copy_store(
    source: Store,
    target: Store,
    *,
    batch_size: int = 1000,
    verify: bool = True,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy every row of ``source`` into ``target``; see the module docstring."""
    src, dst = rows_of(source), rows_of(target)
    key = source_key(source)
    marker = f"{MARKER_PREFIX}{key}"
    report = MigrationReport(_mask_url_password(source.url), _mask_url_password(target.url))
    report.resumed = target.get_watermark(marker) > 0
    if not report.resumed and (target.count() > 0 or target.stats().last_seq > 0):
        raise StoreError(
            f"the target {report.target} already holds memories; memoryd migrate copies into an "
            "empty store (or resumes an interrupted copy from the same source)"
        )
    _match_models(source, target)
    target.set_watermark(marker, 1)
    totals = {"memories": source.count(), "history": None}
    for table in TABLES:
        cursor_key = f"{marker}:{table}"
        after = target.get_watermark(cursor_key)
        copied = 0
        while True:
            rows = src.export_rows(table, after=after, limit=batch_size)
            if not rows:
                break
            copied += dst.import_rows(table, _visible(table, rows))
            after = rows[-1]["_pos"]
            target.set_watermark(cursor_key, after)
            if progress:
                progress(table, len(rows), totals.get(table))
        report.copied[table] = copied
    finish = getattr(dst, "finish", None)
    if finish:
        finish()
    target.set_watermark(marker, 2)
    if verify:
        report.checks = verify_stores(source, target, batch_size=batch_size, progress=progress)
    return report


def _match_models(source: Store, target: Store) -> None:
    model, dims = source.embedding_model, source.embedding_dims
    if model is None or dims is None:
        return
    if target.embedding_model is None:
        target.set_embedding_model(model, dims)
    elif (target.embedding_model, target.embedding_dims) != (model, dims):
        raise StoreError(
            f"the source's vectors were made by {model!r} ({dims} dims) but the target's by "
            f"{target.embedding_model!r} ({target.embedding_dims} dims); copy into an empty store"
        )


def table_checksum(store: Store, table: str, *, batch_size: int = 1000,
                   progress: Progress | None = None) -> Checksum:
    """Count and checksum of one table of a store."""
    access = rows_of(store)
    check = Checksum(table)
    after = 0
    while True:
        rows = access.export_rows(table, after=after, limit=batch_size)
        if not rows:
            return check
        check.add(_visible(table, rows))
        after = rows[-1]["_pos"]
        if progress:
            progress(f"verify {table}", len(rows), None)


def verify_stores(source: Store, target: Store, *, batch_size: int = 1000,
                  progress: Progress | None = None) -> list[TableCheck]:
    """Compare every table of two stores by row count and checksum."""
    out = []
    for table in TABLES:
        a = table_checksum(source, table, batch_size=batch_size, progress=progress)
        b = table_checksum(target, table, batch_size=batch_size)
        out.append(TableCheck(table, a.count, b.count, a.hexdigest, b.hexdigest))
    return out


# --------------------------------------------------------------------------- SQLite rows
#
# The row access of the SQLite store, kept here until it moves into SQLiteStore as
# ``export_rows`` / ``import_rows`` (the proposed contract addition). It reads the
# SQLite schema of memoryd.store.sqlite_schema directly.


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=timezone.utc) if value is not None else None


_SQLITE_POS = {
    "memories": "m.rowid", "history": "seq", "edges": "rowid", "intentions": "rowid",
    "api_keys": "rowid", "watermarks": "rowid", "reports": "id",
}
_SQLITE_JSON = {
    "memories": {"tags", "domains", "domain_scores", "metadata"},
    "history": {"details"},
    "edges": {"metadata"},
    "intentions": {"trigger", "metadata"},
    "api_keys": {"scopes"},
    "session_access": set(),
    "watermarks": set(),
    "reports": {"body"},
}


class SQLiteRows:
    """``export_rows`` / ``import_rows`` for an SQLiteStore."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._graph_paused = False

    def export_rows(self, table: str, *, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        fields = check_table(table)
        conn = self.store._conn
        if table == "memories":
            cols = ", ".join(f"m.{c}" for c in fields[:-1])
            rows = conn.execute(
                f"SELECT m.rowid, {cols}, v.vector FROM memories m "
                "LEFT JOIN memory_vectors v ON v.memory_rowid = m.rowid "
                "WHERE m.rowid > ? ORDER BY m.rowid LIMIT ?",
                (after, limit),
            ).fetchall()
        elif table == "session_access":
            # WITHOUT ROWID: its position is the row's place in key order.
            rows = conn.execute(
                "SELECT ? + row_number() OVER (ORDER BY session_id, memory_id), session_id, "
                "memory_id, at FROM session_access ORDER BY session_id, memory_id LIMIT ? OFFSET ?",
                (after, limit, after),
            ).fetchall()
        else:
            pos = _SQLITE_POS[table]
            rows = conn.execute(
                f"SELECT {pos}, {', '.join(fields)} FROM {table} WHERE {pos} > ? "
                f"ORDER BY {pos} LIMIT ?",
                (after, limit),
            ).fetchall()
        return [self._from_db(table, fields, row) for row in rows]

    @staticmethod
    def _from_db(table: str, fields: tuple[str, ...], row: tuple[Any, ...]) -> dict[str, Any]:
        data: dict[str, Any] = {"_pos": int(row[0])}
        json_fields = _SQLITE_JSON[table]
        for name, value in zip(fields, row[1:]):
            if value is not None:
                if name in json_fields:
                    value = json.loads(value)
                elif name in TIME_FIELDS:
                    value = _dt(value)
                elif name == "vector":
                    value = np.frombuffer(value, dtype=np.float32).copy()
            data[name] = value
        return data

    def _to_db(self, table: str, name: str, value: Any) -> Any:
        if value is None:
            return None
        if name in _SQLITE_JSON[table]:
            return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        if name in TIME_FIELDS:
            return _ts(value)
        return value

    def import_rows(self, table: str, rows: list[dict[str, Any]]) -> int:
        fields = check_table(table)
        if not rows:
            return 0
        store = self.store
        if table == "memories":
            return self._import_memories(rows)
        marks = ", ".join("?" * len(fields))
        inserted = 0
        with store._write() as conn:
            for row in rows:
                cur = conn.execute(
                    f"INSERT INTO {table} ({', '.join(fields)}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                    [self._to_db(table, f, row.get(f)) for f in fields],
                )
                inserted += cur.rowcount
        return inserted

    def _import_memories(self, rows: list[dict[str, Any]]) -> int:
        store = self.store
        model, dims = store.embedding_model, store.embedding_dims
        if any(r.get("vector") is not None for r in rows) and model is None:
            raise StoreError("set_embedding_model before importing vectors")
        self._pause_graph()
        cols = MEMORY_FIELDS + STATE_FIELDS + ("seq",)
        marks = ", ".join("?" * len(cols))
        inserted = 0
        with store._write() as conn:
            for row in rows:
                cur = conn.execute(
                    f"INSERT INTO memories ({', '.join(cols)}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                    [self._to_db("memories", f, row.get(f)) for f in cols],
                )
                if not cur.rowcount:
                    continue
                inserted += 1
                rowid = cur.lastrowid
                conn.executemany(
                    "INSERT INTO memory_tags (memory_rowid, tag) VALUES (?, ?)",
                    [(rowid, tag) for tag in row.get("tags") or []],
                )
                vector = row.get("vector")
                if vector is not None:
                    conn.execute(
                        "INSERT INTO memory_vectors (memory_rowid, model, dims, vector, seq) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (rowid, model, dims, np.asarray(vector, dtype=np.float32).tobytes(), row["seq"]),
                    )
        return inserted

    def _pause_graph(self) -> None:
        # Imported rows keep their old sequence numbers, which the index's catch-up
        # (by seq) cannot follow; the index is rebuilt once in finish(). Until then
        # no HNSW graph is built batch by batch.
        index = getattr(self.store, "_index", None)
        if index is not None and not self._graph_paused:
            index.hnsw_threshold = 1 << 62
            self._graph_paused = True

    def finish(self) -> None:
        """Rebuild the SQLite store's vector index from its table."""
        dims = self.store.embedding_dims
        if dims:
            self.store._load_index(dims)
        self._graph_paused = False
