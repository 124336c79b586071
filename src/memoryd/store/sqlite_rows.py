"""Logical rows of the SQLite store: ``export_rows`` / ``import_rows`` for migration.

A mixin of SQLiteStore. Rows follow :mod:`memoryd.store.rows`; the SQLite layout
(memories with a separate vector table, timestamps as epoch seconds, JSON as text)
is translated here and nowhere else.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Any

import numpy as np

from memoryd.errors import StoreError
from memoryd.store.rows import JSON_FIELDS, MEMORY_FIELDS, STATE_FIELDS, TIME_FIELDS, check_table

# The column that orders each logical table for export (and resuming a copy).
_POS = {
    "memories": "m.rowid", "history": "seq", "edges": "rowid", "intentions": "rowid",
    "api_keys": "rowid", "watermarks": "rowid", "reports": "id", "ledger": "seq",
}


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=timezone.utc) if value is not None else None


class SQLiteRows:
    """``export_rows`` / ``import_rows`` / ``finish_import`` of SQLiteStore."""

    _conn: sqlite3.Connection
    _index: Any
    _graph_paused: bool = False
    embedding_model: str | None  # properties of Store
    embedding_dims: int | None

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:  # provided by SQLiteStore
        raise NotImplementedError

    def _load_index(self, dims: int) -> None:  # provided by SQLiteStore
        raise NotImplementedError

    def export_rows(self, table: str, *, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Rows of a logical table (see :mod:`memoryd.store.rows`) after position ``after``."""
        fields = check_table(table)
        conn = self._conn
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
            pos = _POS[table]
            rows = conn.execute(
                f"SELECT {pos}, {', '.join(fields)} FROM {table} WHERE {pos} > ? "
                f"ORDER BY {pos} LIMIT ?",
                (after, limit),
            ).fetchall()
        return [self._from_db(table, fields, row) for row in rows]

    @staticmethod
    def _from_db(table: str, fields: tuple[str, ...], row: tuple[Any, ...]) -> dict[str, Any]:
        data: dict[str, Any] = {"_pos": int(row[0])}
        json_fields = JSON_FIELDS[table]
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

    @staticmethod
    def _to_db(table: str, name: str, value: Any) -> Any:
        if value is None:
            return None
        if name in JSON_FIELDS[table]:
            return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        if name in TIME_FIELDS:
            return _ts(value)
        return value

    def import_rows(self, table: str, rows: list[dict[str, Any]]) -> int:
        """Insert rows exactly as given, skipping those whose key exists; one transaction.

        No history or ledger entry is recorded: both are tables to import themselves.
        Returns how many rows were inserted.
        """
        fields = check_table(table)
        if not rows:
            return 0
        if table == "memories":
            return self._import_memories(rows)
        marks = ", ".join("?" * len(fields))
        inserted = 0
        with self._write() as conn:
            for row in rows:
                cur = conn.execute(
                    f"INSERT INTO {table} ({', '.join(fields)}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                    [self._to_db(table, f, row.get(f)) for f in fields],
                )
                inserted += cur.rowcount
        return inserted

    def _import_memories(self, rows: list[dict[str, Any]]) -> int:
        model, dims = self.embedding_model, self.embedding_dims
        if any(r.get("vector") is not None for r in rows) and model is None:
            raise StoreError("set_embedding_model before importing vectors")
        self._pause_graph()
        cols = MEMORY_FIELDS + STATE_FIELDS + ("seq",)
        marks = ", ".join("?" * len(cols))
        inserted = 0
        with self._write() as conn:
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
        # (by seq) cannot follow; the index is rebuilt once in finish_import(). Until
        # then no HNSW graph is built batch by batch.
        if self._index is not None and not self._graph_paused:
            self._index.hnsw_threshold = 1 << 62
            self._graph_paused = True

    def finish_import(self) -> None:
        """Rebuild the vector index from the table after a bulk import."""
        dims = self.embedding_dims
        if dims:
            self._load_index(dims)
        self._graph_paused = False
