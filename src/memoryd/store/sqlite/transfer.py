"""Logical rows of the SQLite store (``export_rows`` / ``import_rows`` for migration) and
its backup and restore.

A mixin of SQLiteStore. Rows follow :mod:`memoryd.store.rows`; the SQLite layout
(memories with a separate vector table, timestamps as epoch seconds, JSON as text)
is translated here and nowhere else. A backup is a consistent copy of the file made with
SQLite's online backup API.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.errors import ModelMismatch, StoreError
from memoryd.store.change import Actor, Recorded
from memoryd.store.rows import (
    JSON_FIELDS,
    MEMORY_FIELDS,
    STATE_FIELDS,
    TIME_FIELDS,
    VECTOR_FIELDS,
    check_importable,
    check_table,
)
from memoryd.store.sqlite.codec import dt, ts
from memoryd.store.sqlite.database import SQLiteDatabase
from memoryd.store.sqlite.search import VectorCache
from memoryd.store.terms import TermChanges, apply_changes

# The column that orders each logical table for export (and resuming a copy).
_POS = {
    "memories": "m.rowid", "history": "seq", "edges": "rowid", "intentions": "rowid",
    "api_keys": "rowid", "watermarks": "rowid", "reports": "id", "ledger": "seq",
    "tasks": "rowid", "task_messages": "id", "wait_jobs": "rowid", "graph_files": "rowid",
    "domains": "rowid", "domain_proposals": "rowid", "domain_settings": "rowid",
    "term_stats": "rowid", "term_totals": "id",
}


class SQLiteRows:
    """``export_rows`` / ``import_rows`` / ``finish_import``, ``backup`` / ``restore``."""

    path: Path
    db: SQLiteDatabase
    vector_cache: VectorCache
    _conn: sqlite3.Connection
    embedding_model: str | None  # properties of Store
    embedding_dims: int | None

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:  # provided by SQLiteStore
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
                    value = dt(value)
                elif name in VECTOR_FIELDS:
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
            return ts(value)
        if name in VECTOR_FIELDS:
            return np.asarray(value, dtype=np.float32).tobytes()
        return value

    def import_rows(self, table: str, rows: list[dict[str, Any]]) -> int:
        """Insert rows exactly as given, skipping those whose key exists; one transaction.

        No history or ledger entry is recorded: both are tables to import themselves.
        Returns how many rows were inserted.
        """
        fields = check_importable(table)
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
        self.vector_cache.pause_graph()
        cols = MEMORY_FIELDS + STATE_FIELDS + ("seq",)
        marks = ", ".join("?" * len(cols))
        inserted = 0
        keywords = TermChanges()
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
                keywords.add(rowid, row["content"], row.get("summary"), row.get("tags"),
                             row.get("metadata") or {})
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
            apply_changes(conn, "?", keywords)
        return inserted

    def finish_import(self) -> None:
        """Rebuild the vector index from the table after a bulk import."""
        self.vector_cache.resume()

    # --- backup and restore ---------------------------------------------
    def backup(self, path: Path) -> None:
        path = Path(path)
        if path.exists():
            raise StoreError(f"backup target {path} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        target = sqlite3.connect(path)
        try:
            self._conn.backup(target)
        finally:
            target.close()

    def restore(self, path: Path, *, expect_model: str | None = None) -> None:
        """Replace this store's contents with the memoryd store at ``path``.

        Refuses (before touching anything) a backup whose vectors were made by a model
        other than ``expect_model``. The change sequence keeps counting from where this
        store was, so seq numbers never go backwards, and the restore is recorded.
        """
        source = type(self)(path, create=False, hnsw_threshold=0)
        try:
            backup_model = source.embedding_model
            has_vectors = source.count() > 0 and source.stats().vectors > 0
        finally:
            source.close()
        if expect_model and backup_model and has_vectors and backup_model != expect_model:
            raise ModelMismatch(backup_model, expect_model)
        (high,) = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()
        with self.db.exclusive() as conn:
            src = sqlite3.connect(Path(path))
            try:
                src.backup(conn)
            finally:
                src.close()
        self.vector_cache.discard()
        self.db.migrate()
        with self.db.write() as conn:
            (restored,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()
            conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'history'",
                         (max(high, restored),))
            self.db.record(conn, [Recorded("", "restore", Actor("restore"), {"from": str(path)})])
        if self.vector_cache.index is None:  # the commit above loaded it when there are vectors
            self.vector_cache.open()
