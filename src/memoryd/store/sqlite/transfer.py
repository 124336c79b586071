"""``store.transfer`` of the SQLite store: paging through its tables, importing memories
(their tags, vectors and keyword index with them), and backup and restore with SQLite's
online backup API (a backup is a memoryd store file itself).

The vector index is the store's :class:`~memoryd.store.sqlite.search.VectorCache`, handed
to this part when the store is built: an import pauses its graph, and a restore replaces
the table it caches.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.errors import ModelMismatch, StoreError
from memoryd.store.change import Actor, Recorded
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS
from memoryd.store.sqlite.database import SQLiteDatabase
from memoryd.store.sqlite.search import VectorCache
from memoryd.store.terms import TermChanges, apply_changes
from memoryd.store.transfer import Transfer

# The column that orders each logical table for export (and resuming a copy).
_POS = {
    "history": "seq", "edges": "rowid", "intentions": "rowid",
    "api_keys": "rowid", "watermarks": "rowid", "reports": "id", "ledger": "seq",
    "tasks": "rowid", "task_messages": "id", "wait_jobs": "rowid", "graph_files": "rowid",
    "domains": "rowid", "domain_proposals": "rowid", "domain_settings": "rowid",
    "term_stats": "rowid", "term_totals": "id",
}
_MEMORY_COLUMNS = MEMORY_FIELDS + STATE_FIELDS + ("seq",)


class SQLiteTransfer(Transfer):
    """Export, import, backup and restore of an SQLite store."""

    db: SQLiteDatabase

    def __init__(self, db: SQLiteDatabase, vectors: VectorCache) -> None:
        super().__init__(db)
        self._vectors = vectors

    def _select_page(self, conn: sqlite3.Connection, table: str, fields: tuple[str, ...],
                     after: int, limit: int) -> list[tuple[Any, ...]]:
        if table == "memories":
            cols = ", ".join(f"m.{c}" for c in fields[:-1])
            return conn.execute(
                f"SELECT m.rowid, {cols}, v.vector FROM memories m "
                "LEFT JOIN memory_vectors v ON v.memory_rowid = m.rowid "
                "WHERE m.rowid > ? ORDER BY m.rowid LIMIT ?", (after, limit)).fetchall()
        if table == "session_access":
            # WITHOUT ROWID: its position is the row's place in key order.
            return conn.execute(
                "SELECT ? + row_number() OVER (ORDER BY session_id, memory_id), session_id, "
                "memory_id, at FROM session_access ORDER BY session_id, memory_id LIMIT ? OFFSET ?",
                (after, limit, after)).fetchall()
        pos = _POS[table]
        return conn.execute(f"SELECT {pos}, {', '.join(fields)} FROM {table} WHERE {pos} > ? "
                            f"ORDER BY {pos} LIMIT ?", (after, limit)).fetchall()

    def _import_memories(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> int:
        model, dims = self.db.meta("embedding_model"), self.db.meta("embedding_dims")
        if any(r.get("vector") is not None for r in rows) and model is None:
            raise StoreError("set_embedding_model before importing vectors")
        # Imported rows keep their old sequence numbers, which the index's catch-up (by seq)
        # cannot follow: the index is rebuilt once in finish_import().
        self._vectors.pause_graph()
        statement = (f"INSERT INTO memories ({', '.join(_MEMORY_COLUMNS)}) "
                     f"VALUES ({self.db.marks(len(_MEMORY_COLUMNS))}) ON CONFLICT DO NOTHING")
        inserted = 0
        keywords = TermChanges()
        for row in rows:
            cur = conn.execute(statement, self.db.encode_row("memories", row, _MEMORY_COLUMNS))
            if not cur.rowcount:
                continue
            inserted += 1
            rowid = int(cur.lastrowid)  # type: ignore[arg-type]
            keywords.add(rowid, row["content"], row.get("summary"), row.get("tags"),
                         row.get("metadata") or {})
            conn.executemany("INSERT INTO memory_tags (memory_rowid, tag) VALUES (?, ?)",
                             [(rowid, tag) for tag in row.get("tags") or []])
            vector = row.get("vector")
            if vector is not None:
                conn.execute(
                    "INSERT INTO memory_vectors (memory_rowid, model, dims, vector, seq) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (rowid, model, int(dims or 0), np.asarray(vector, dtype=np.float32).tobytes(),
                     row["seq"]))
        apply_changes(conn, "?", keywords)
        return inserted

    def finish_import(self) -> None:
        """Rebuild the vector index from the table after a bulk import."""
        self._vectors.resume()

    # --- backup and restore ---------------------------------------------
    def _backup(self, path: Path) -> None:
        target = sqlite3.connect(path)
        try:
            self.db.connection().backup(target)
        finally:
            target.close()

    def restore(self, path: Path, *, expect_model: str | None = None) -> None:
        """Replace this store's contents with the memoryd store at ``path``.

        Refuses (before touching anything) a backup whose vectors were made by a model
        other than ``expect_model``. The change sequence keeps counting from where this
        store was, so seq numbers never go backwards, and the restore is recorded.
        """
        source = SQLiteDatabase(path, create=False)
        try:
            backup_model = source.meta("embedding_model")
            has_vectors = bool(source.rows("SELECT EXISTS (SELECT 1 FROM memories) AND "
                                           "EXISTS (SELECT 1 FROM memory_vectors)")[0][0])
        finally:
            source.close()
        if expect_model and backup_model and has_vectors and backup_model != expect_model:
            raise ModelMismatch(backup_model, expect_model)
        (high,) = self.db.rows("SELECT COALESCE(MAX(seq), 0) FROM history")[0]
        with self.db.exclusive() as conn:
            src = sqlite3.connect(Path(path))
            try:
                src.backup(conn)
            finally:
                src.close()
        self._vectors.discard()
        self.db.migrate()
        with self.db.write() as conn:
            (restored,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()
            conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'history'",
                         (max(high, restored),))
            self.db.record(conn, [Recorded("", "restore", Actor("restore"), {"from": str(path)})])
        if self._vectors.index is None:  # the commit above loads it when there are vectors
            self._vectors.open()
