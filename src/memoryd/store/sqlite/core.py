"""The embedded store: one SQLite file (WAL) with memoryd's keyword index
(:mod:`memoryd.store.terms`) and an in-memory vector index.

This module is the core of :class:`SQLiteStore`: memories, their tags and vectors, the
keyword index kept in the same transactions, and the store's facts. The connections and
transactions are :mod:`memoryd.store.sqlite.database`'s; vector search and the index are
:mod:`memoryd.store.sqlite.search`'s; the parts of the store (``store.work``,
``store.domains``, ...) are built over the same database handle.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.errors import MemoryNotFound, StoreError
from memoryd.models import Memory, SchedulingState, SearchFilters, StoreStats, VectorHit
from memoryd.store import policy
from memoryd.store.base import Actor, Store
from memoryd.store.keyword_index import KeywordCache
from memoryd.store.change import Recorded
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS
from memoryd.store.sqlite import domains
from memoryd.store.sqlite.codec import COLUMNS, row_to_memory, to_db
from memoryd.store.sqlite.database import SQLiteDatabase
from memoryd.store.sqlite.search import VectorCache
from memoryd.store.sqlite.transfer import SQLiteTransfer
from memoryd.store.terms import TermChanges, apply_changes

__all__ = ["SQLiteStore", "parse_sqlite_url"]

_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in COLUMNS) + " FROM memories m"
_INSERT = (f"INSERT INTO memories ({', '.join(MEMORY_FIELDS + STATE_FIELDS + ('seq',))}) "
           f"VALUES ({', '.join('?' * (len(MEMORY_FIELDS) + len(STATE_FIELDS) + 1))})")
_UPSERT_VECTOR = (
    "INSERT INTO memory_vectors (memory_rowid, model, dims, vector, seq) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT(memory_rowid) DO UPDATE SET model = excluded.model, dims = excluded.dims, "
    "vector = excluded.vector, seq = excluded.seq"
)
_TAGS = "INSERT INTO memory_tags (memory_rowid, tag) VALUES (?, ?)"


def parse_sqlite_url(url: str) -> Path:
    """``sqlite:///abs/path.db`` (or a bare path) to a Path; StoreError for another scheme."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite://") :])
    if url.startswith("sqlite:"):
        raise StoreError(f"SQLite URLs take an absolute path: sqlite:///abs/path.db, got {url!r}")
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", url)
    if scheme:  # not a file name: './mysql:/host/db' would be made silently
        raise StoreError(f"unknown store URL scheme {scheme.group(1)!r}: use "
                         "sqlite:///abs/path.db or postgresql://user@host/db")
    return Path(url)


class SQLiteStore(Store):
    """The embedded default store: a single SQLite file in WAL mode."""

    backend = "sqlite"
    driver_errors = (sqlite3.Error,)

    def __init__(self, path: Path | str, *, hnsw_threshold: int = 20_000, ef_search: int = 128,
                 create: bool = True, keyword_index: bool = True,
                 keyword_index_until: threading.Event | None = None,
                 vector_index_until: threading.Event | None = None) -> None:
        db = SQLiteDatabase(path, create=create)
        #: The in-memory vector index, shared with the transfer part.
        self.vector_cache = VectorCache(db, hnsw_threshold=hnsw_threshold, ef_search=ef_search)
        #: The in-memory copy of the keyword postings (the first pass of keyword search).
        self.keyword_cache = KeywordCache(db, enabled=keyword_index)
        super().__init__(db, assign=domains.assign,
                         transfer=SQLiteTransfer(db, self.vector_cache))
        self.path = db.path
        self.vector_cache.open(background=True, until=vector_index_until)
        self.keyword_cache.open(after=self.vector_cache.wait, until=keyword_index_until)

    def close(self) -> None:
        """Save the HNSW graph (if any) and close every connection."""
        self.vector_cache.close()
        self.keyword_cache.close()
        self.db.close()

    def health(self) -> dict[str, Any]:
        try:
            (count,) = self.db.rows("SELECT COUNT(*) FROM memories")[0]
        except sqlite3.Error as exc:
            raise StoreError(f"store at {self.path} is unusable: {exc}") from exc
        return {"backend": self.backend, "path": str(self.path), "memories": count, "ok": True,
                "vectors_loaded": self.vector_cache.loaded}

    def set_embedding_model(self, model_id: str, dims: int) -> None:
        with self.db.write() as conn:
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [("embedding_model", model_id), ("embedding_dims", str(dims))],
            )
        self.vector_cache.reload(dims)

    # --- writes ----------------------------------------------------------
    def _insert(self, memories: list[Memory], vectors: np.ndarray | None, actor: Actor,
                operation: str) -> list[Memory]:
        model, dims = self.embedding_model, self.embedding_dims
        if vectors is not None and model is None:
            raise StoreError("set_embedding_model before storing vectors")
        keywords = TermChanges()
        with self.db.write() as conn:
            seqs = self.db.record(conn, [Recorded(m.id, operation, actor, policy.create_details(m),
                                                  m.content) for m in memories])
            out = [m.model_copy(update={"seq": s}) for m, s in zip(memories, seqs)]
            for i, memory in enumerate(out):
                values = [to_db(f, getattr(memory, f)) for f in MEMORY_FIELDS]
                values += [to_db(f, getattr(memory.state, f)) for f in STATE_FIELDS]
                try:
                    rowid = conn.execute(_INSERT, values + [memory.seq]).lastrowid
                except sqlite3.IntegrityError as exc:
                    raise StoreError(f"memory {memory.id} already exists") from exc
                conn.executemany(_TAGS, [(rowid, tag) for tag in memory.tags])
                keywords.add(rowid, memory.content, memory.summary, memory.tags, memory.metadata)
                if vectors is not None:
                    blob = np.asarray(vectors[i], dtype=np.float32).tobytes()
                    conn.execute(_UPSERT_VECTOR, (rowid, model, dims, blob, memory.seq))
            apply_changes(conn, "?", keywords)
        return out

    @staticmethod
    def _rowid(conn: sqlite3.Connection, memory_id: str) -> int:
        row = conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        return int(row[0])

    def _update(self, change: policy.Change, actor: Actor) -> Memory:
        with self.db.write() as conn:
            rowid = self._rowid(conn, change.memory_id)
            before = _by_rowid(conn, rowid)
            [seq] = self.db.record(conn, [Recorded(
                change.memory_id, change.operation, actor, policy.update_details(before, change),
                policy.content_after(before, change))])
            sets = {f: to_db(f, v) for f, v in change.fields.items()} | {"seq": seq}
            conn.execute(f"UPDATE memories SET {', '.join(f'{c} = ?' for c in sets)} "
                         "WHERE rowid = ?", [*sets.values(), rowid])
            if "tags" in change.fields:
                conn.execute("DELETE FROM memory_tags WHERE memory_rowid = ?", (rowid,))
                conn.executemany(_TAGS, [(rowid, tag) for tag in change.fields["tags"]])
            keywords = TermChanges()
            keywords.update(conn, "?", rowid, before, change.fields)
            apply_changes(conn, "?", keywords)
            if change.vector is not None:
                blob = np.asarray(change.vector, dtype=np.float32).tobytes()
                conn.execute(_UPSERT_VECTOR,
                             (rowid, self.embedding_model, self.embedding_dims, blob, seq))
            return _by_rowid(conn, rowid)

    def _update_states(self, states: dict[str, SchedulingState], record: str | None,
                       actor: Actor, details: dict[str, Any] | None) -> None:
        assignments = ", ".join(f"{f} = ?" for f in STATE_FIELDS)
        values = {i: [to_db(f, getattr(s, f)) for f in STATE_FIELDS] for i, s in states.items()}
        with self.db.write() as conn:
            if not record:
                conn.executemany(f"UPDATE memories SET {assignments} WHERE id = ?",
                                 [[*v, i] for i, v in values.items()])
                return
            contents = {i: self._content(conn, i) for i in states}
            seqs = self.db.record(conn, [Recorded(i, record, actor, details, contents[i])
                                         for i in states])
            conn.executemany(f"UPDATE memories SET {assignments}, seq = ? WHERE id = ?",
                             [[*values[i], s, i] for i, s in zip(states, seqs)])

    @staticmethod
    def _content(conn: sqlite3.Connection, memory_id: str) -> str | None:
        row = conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return row[0] if row else None

    def delete(self, memory_id: str, actor: Actor, *, purge: bool = False) -> None:
        with self.db.write() as conn:
            rowid = self._rowid(conn, memory_id)
            before = _by_rowid(conn, rowid)
            if purge:
                conn.execute("UPDATE history SET details = ? WHERE memory_id = ?",
                             (json.dumps(policy.PURGED_DETAILS), memory_id))
            self.db.record(conn, [Recorded(memory_id, "purge" if purge else "delete", actor,
                                           policy.delete_details(before, purge), before.content)])
            keywords = TermChanges()
            keywords.remove_held(conn, "?", rowid)
            apply_changes(conn, "?", keywords)
            # Tags, vector and edges go with it (ON DELETE CASCADE).
            conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM session_access WHERE memory_id = ?", (memory_id,))
            self.db.note_removed(rowid)

    def replace_vectors(self, vectors: dict[str, np.ndarray], model_id: str) -> None:
        with self.db.write() as conn:
            for memory_id, vector in vectors.items():
                blob = np.asarray(vector, dtype=np.float32)
                rowid = self._rowid(conn, memory_id)
                [seq] = self.db.record(conn, [Recorded(
                    memory_id, "reembed", Actor("reembed"), {"model": model_id},
                    self._content(conn, memory_id))])
                conn.execute(_UPSERT_VECTOR, (rowid, model_id, len(blob), blob.tobytes(), seq))
                conn.execute("UPDATE memories SET embedding_model = ?, seq = ? WHERE rowid = ?",
                             (model_id, seq, rowid))

    def mark_accessed(self, session_id: str, memory_ids: list[str], at: datetime) -> set[str]:
        fresh: set[str] = set()
        with self.db.write() as conn:
            for memory_id in dict.fromkeys(memory_ids):
                cur = conn.execute("INSERT OR IGNORE INTO session_access (session_id, memory_id, "
                                   "at) VALUES (?, ?, ?)", (session_id, memory_id, at.timestamp()))
                if cur.rowcount:
                    fresh.add(memory_id)
        return fresh

    # --- vectors ---------------------------------------------------------
    def _vector_search(self, vector: np.ndarray, filters: SearchFilters, now: datetime,
                       limit: int) -> list[VectorHit]:
        return self.vector_cache.search(vector, filters, now, limit)

    def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        return self.vector_cache.vectors(memory_ids)

    def stats(self) -> StoreStats:
        with self.db.read() as conn:
            by_type = dict(conn.execute(
                "SELECT node_type, COUNT(*) FROM memories GROUP BY node_type"))
            by_tier = dict(conn.execute("SELECT tier, COUNT(*) FROM memories GROUP BY tier"))
            (vectors,) = conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()
        return StoreStats(
            url=self.url, backend=self.backend, memories=sum(by_type.values()),
            by_node_type=by_type, by_tier=by_tier, vectors=vectors,
            embedding_model=self.embedding_model, embedding_dims=self.embedding_dims,
            last_seq=self.last_seq(), schema_version=self.db.schema_version,
            size_bytes=self.path.stat().st_size if self.path.exists() else None,
        )

    # --- maintenance -----------------------------------------------------
    @contextmanager
    def maintenance_lock(self, name: str) -> Iterator[bool]:
        """An exclusive, non-blocking ``flock`` on a file beside the store."""
        import fcntl

        lock_path = self.path.with_name(f"{self.path.name}.{name}.lock")
        with open(lock_path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _by_rowid(conn: sqlite3.Connection, rowid: int) -> Memory:
    return row_to_memory(conn.execute(_SELECT + " WHERE m.rowid = ?", (rowid,)).fetchone())
