"""The embedded store: one SQLite file (WAL) with memoryd's keyword index
(:mod:`memoryd.store.terms`) and an in-memory vector index.

Concurrency: each thread gets its own connection; writes are serialised in-process
by a lock and across processes by SQLite (``BEGIN IMMEDIATE`` + busy timeout), so
several memoryd processes may share one file. Search and the vector index live in
:mod:`memoryd.store.sqlite.search`; edges, intentions, keys and the other side tables in
:mod:`memoryd.store.sqlite.aux`; tasks and wait jobs in :mod:`memoryd.store.sqlite.work`;
domains in :mod:`memoryd.store.sqlite.domains`; export, import, backup and restore in
:mod:`memoryd.store.sqlite.transfer`.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from memoryd import ledger
from memoryd.errors import MemoryNotFound, NotAMemorydStore, SchemaTooNew, StoreError
from memoryd.models import HistoryEntry, Memory, SchedulingState, SearchFilters, StoreStats
from memoryd.store import policy
from memoryd.store.base import Actor, Store
from memoryd.store.filters import where
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS
from memoryd.store.sqlite.aux import SQLiteAuxTables
from memoryd.store.sqlite.domains import SQLiteDomains
from memoryd.store.sqlite.codec import (
    COLUMNS,
    DIALECT,
    history_entry,
    row_to_memory,
    to_db,
)
from memoryd.store.sqlite.transfer import SQLiteRows
from memoryd.store.sqlite.schema import APP_MARKER, LATEST_VERSION, applied_version, migrate
from memoryd.store.sqlite.work import SQLiteWorkTables
from memoryd.store.sqlite.search import SQLiteSearch, _chunks
from memoryd.store.terms import TermChanges, apply_changes

BUSY_TIMEOUT_MS = 30_000
__all__ = ["SQLiteStore", "parse_sqlite_url"]

_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in COLUMNS) + " FROM memories m"
_INSERT = (f"INSERT INTO memories ({', '.join(MEMORY_FIELDS + STATE_FIELDS + ('seq',))}) "
           f"VALUES ({', '.join('?' * (len(MEMORY_FIELDS) + len(STATE_FIELDS) + 1))})")
_UPSERT_VECTOR = (
    "INSERT INTO memory_vectors (memory_rowid, model, dims, vector, seq) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT(memory_rowid) DO UPDATE SET model = excluded.model, dims = excluded.dims, "
    "vector = excluded.vector, seq = excluded.seq"
)
_HISTORY = f"SELECT {', '.join(policy.HISTORY_COLUMNS)} FROM history"



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


class SQLiteStore(SQLiteSearch, SQLiteAuxTables, SQLiteWorkTables, SQLiteDomains, SQLiteRows,
                  Store):
    """The embedded default store: a single SQLite file in WAL mode."""

    backend = "sqlite"
    driver_errors = (sqlite3.Error,)

    def __init__(self, path: Path | str, *, hnsw_threshold: int = 20_000, ef_search: int = 128,
                 create: bool = True) -> None:
        self.path = Path(path).expanduser().resolve()
        self.url = f"sqlite:///{self.path}"
        self._local = threading.local()
        self._index = None
        self._write_lock = threading.RLock()
        self._connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        self._hnsw_threshold = hnsw_threshold
        self._ef_search = ef_search
        if not self.path.exists():
            if not create:
                raise NotAMemorydStore(f"no memoryd store at {self.path}")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._open_schema()
        self._vector_seq = 0
        self._index_lock = threading.Lock()
        dims = self.embedding_dims
        if dims:
            self._load_index(dims)

    # --- connections -----------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=BUSY_TIMEOUT_MS / 1000)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            raise NotAMemorydStore(f"{self.path} is not a memoryd store ({exc})") from exc
        with self._conn_lock:
            self._connections.append(conn)
        return conn

    @property
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: in-process lock, then SQLite's write lock.

        Nested use (inside :meth:`transaction`) joins the outer transaction. The vector
        index is updated only after the outermost commit, so a rollback never leaves
        the cache ahead of the table.
        """
        conn, local = self._conn, self._local
        if getattr(local, "depth", 0):
            local.depth += 1
            try:
                yield conn
            finally:
                local.depth -= 1
            return
        with self._write_lock:
            _begin(conn)
            local.depth, local.removed = 1, []
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            finally:
                local.depth = 0
                removed, local.removed = local.removed, []
            if self._index is not None and removed:
                self._index.remove(removed)
            self._sync_index()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several write calls into one transaction (all or nothing)."""
        with self._write():
            yield

    def _open_schema(self) -> None:
        """Check that the file is a memoryd store (before touching it), then migrate."""
        try:
            self._check_marker()
        except BaseException:
            self.close()
            raise
        conn = self._conn
        # WAL is a property of the file; set it only once the file is known to be ours.
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"could not switch {self.path} to WAL mode (got {mode})")
        version = applied_version(conn)
        if version > LATEST_VERSION:
            raise SchemaTooNew(f"{self.path} has schema version {version}; this memoryd knows up "
                               f"to {LATEST_VERSION}. Upgrade memoryd.")
        self.schema_version = migrate(conn)

    def _check_marker(self) -> None:
        try:
            tables = {r[0] for r in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'").fetchall()}
            marker = (self._conn.execute("SELECT value FROM meta WHERE key='app'").fetchone()
                      if "meta" in tables else None)
        except sqlite3.DatabaseError as exc:
            raise NotAMemorydStore(f"{self.path} is not a memoryd store ({exc})") from exc
        if tables and (marker is None or marker[0] != APP_MARKER):
            raise NotAMemorydStore(f"{self.path} is an SQLite file but not a memoryd store")

    def close(self) -> None:
        """Save the HNSW graph (if any) and close every connection."""
        self._save_index()
        with self._conn_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()
        self._local = threading.local()

    def health(self) -> dict[str, Any]:
        try:
            (count,) = self._conn.execute("SELECT COUNT(*) FROM memories").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"store at {self.path} is unusable: {exc}") from exc
        return {"backend": self.backend, "path": str(self.path), "memories": count, "ok": True}

    # --- meta ------------------------------------------------------------
    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_embedding_model(self, model_id: str, dims: int) -> None:
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [("embedding_model", model_id), ("embedding_dims", str(dims))],
            )
        if self._index is None or self._index.dims != dims:
            self._load_index(dims)

    # --- history and ledger ----------------------------------------------
    def _record(self, conn: sqlite3.Connection, memory_id: str, operation: str, actor: Actor,
                details: dict[str, Any] | None = None, *, content: str | None = None,
                ledger_batch: list[ledger.PendingEntry] | None = None) -> int:
        """One history row and its ledger entry; ``content`` is the memory's content after.

        With ``ledger_batch`` the entry is collected there instead, for the caller to
        append in one go (same order) before its transaction ends.
        """
        cur = conn.execute(
            "INSERT INTO history (memory_id, operation, actor, agent_id, at, details) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (memory_id, operation, actor.name, actor.agent_id, time.time(),
             json.dumps(details or {}, ensure_ascii=False, default=str)),
        )
        entry = policy.pending(memory_id, operation, actor, content)
        if ledger_batch is None:
            self._ledger_append(conn, [entry])
        else:
            ledger_batch.append(entry)
        return int(cur.lastrowid)

    @staticmethod
    def _ledger_append(conn: sqlite3.Connection, pending: list[ledger.PendingEntry]) -> None:
        # Inside a write transaction (BEGIN IMMEDIATE): nobody else can append meanwhile.
        if not pending:
            return
        head = conn.execute(ledger.HEAD_LINK_SQL).fetchone()
        conn.executemany(ledger.insert_statement("?"), ledger.as_rows(ledger.seal(head, pending)))

    def ledger_entries(self, after: int = 0, limit: int = 1000) -> list[ledger.LedgerEntry]:
        rows = self._conn.execute(ledger.page_statement("?"), (after, limit)).fetchall()
        return [ledger.entry_from_row(r) for r in rows]

    def ledger_head(self) -> ledger.LedgerEntry | None:
        row = self._conn.execute(ledger.HEAD_SQL).fetchone()
        return ledger.entry_from_row(row) if row else None

    # --- writes ----------------------------------------------------------
    def _insert(self, memories: list[Memory], vectors: np.ndarray | None, actor: Actor,
                operation: str) -> list[Memory]:
        model, dims = self.embedding_model, self.embedding_dims
        if vectors is not None and model is None:
            raise StoreError("set_embedding_model before storing vectors")
        out: list[Memory] = []
        pending: list[ledger.PendingEntry] = []
        keywords = TermChanges()
        with self._write() as conn:
            for i, memory in enumerate(memories):
                seq = self._record(conn, memory.id, operation, actor, policy.create_details(memory),
                                   content=memory.content, ledger_batch=pending)
                memory = memory.model_copy(update={"seq": seq})
                values = [to_db(f, getattr(memory, f)) for f in MEMORY_FIELDS]
                values += [to_db(f, getattr(memory.state, f)) for f in STATE_FIELDS]
                try:
                    rowid = conn.execute(_INSERT, values + [seq]).lastrowid
                except sqlite3.IntegrityError as exc:
                    raise StoreError(f"memory {memory.id} already exists") from exc
                conn.executemany("INSERT INTO memory_tags (memory_rowid, tag) VALUES (?, ?)",
                                 [(rowid, tag) for tag in memory.tags])
                keywords.add(rowid, memory.content, memory.summary, memory.tags, memory.metadata)
                if vectors is not None:
                    blob = np.asarray(vectors[i], dtype=np.float32).tobytes()
                    conn.execute(_UPSERT_VECTOR, (rowid, model, dims, blob, seq))
                out.append(memory)
            apply_changes(conn, "?", keywords)
            self._ledger_append(conn, pending)
        return out

    def _rowid(self, conn: sqlite3.Connection, memory_id: str) -> int:
        row = conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        return int(row[0])

    def _update(self, change: policy.Change, actor: Actor) -> Memory:
        with self._write() as conn:
            rowid = self._rowid(conn, change.memory_id)
            before = self._get_by_rowid(conn, rowid)
            seq = self._record(conn, change.memory_id, change.operation, actor,
                               policy.update_details(before, change),
                               content=policy.content_after(before, change))
            sets = {f: to_db(f, v) for f, v in change.fields.items()} | {"seq": seq}
            conn.execute(f"UPDATE memories SET {', '.join(f'{c} = ?' for c in sets)} "
                         "WHERE rowid = ?", [*sets.values(), rowid])
            if "tags" in change.fields:
                conn.execute("DELETE FROM memory_tags WHERE memory_rowid = ?", (rowid,))
                conn.executemany("INSERT INTO memory_tags (memory_rowid, tag) VALUES (?, ?)",
                                 [(rowid, tag) for tag in change.fields["tags"]])
            keywords = TermChanges()
            keywords.update(conn, "?", rowid, before, change.fields)
            apply_changes(conn, "?", keywords)
            if change.vector is not None:
                blob = np.asarray(change.vector, dtype=np.float32).tobytes()
                conn.execute(_UPSERT_VECTOR,
                             (rowid, self.embedding_model, self.embedding_dims, blob, seq))
            return self._get_by_rowid(conn, rowid)

    def _update_states(self, states: dict[str, SchedulingState], record: str | None,
                       actor: Actor, details: dict[str, Any] | None) -> None:
        pending: list[ledger.PendingEntry] = []
        assignments = ", ".join(f"{f} = ?" for f in STATE_FIELDS)
        with self._write() as conn:
            for memory_id, state in states.items():
                values = [to_db(f, getattr(state, f)) for f in STATE_FIELDS]
                if not record:
                    conn.execute(f"UPDATE memories SET {assignments} WHERE id = ?",
                                 [*values, memory_id])
                    continue
                row = conn.execute("SELECT content FROM memories WHERE id = ?",
                                   (memory_id,)).fetchone()
                seq = self._record(conn, memory_id, record, actor, details,
                                   content=row[0] if row else None, ledger_batch=pending)
                conn.execute(f"UPDATE memories SET {assignments}, seq = ? WHERE id = ?",
                             [*values, seq, memory_id])
            self._ledger_append(conn, pending)

    def delete(self, memory_id: str, actor: Actor, *, purge: bool = False) -> None:
        with self._write() as conn:
            rowid = self._rowid(conn, memory_id)
            before = self._get_by_rowid(conn, rowid)
            if purge:
                conn.execute("UPDATE history SET details = ? WHERE memory_id = ?",
                             (json.dumps(policy.PURGED_DETAILS), memory_id))
            self._record(conn, memory_id, "purge" if purge else "delete", actor,
                         policy.delete_details(before, purge), content=before.content)
            keywords = TermChanges()
            keywords.remove_held(conn, "?", rowid)
            apply_changes(conn, "?", keywords)
            # Tags, vector and edges go with it (ON DELETE CASCADE); FTS by trigger.
            conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM session_access WHERE memory_id = ?", (memory_id,))
            self._local.removed.append(rowid)

    def replace_vectors(self, vectors: dict[str, np.ndarray], model_id: str) -> None:
        with self._write() as conn:
            for memory_id, vector in vectors.items():
                blob = np.asarray(vector, dtype=np.float32)
                rowid = self._rowid(conn, memory_id)
                (content,) = conn.execute("SELECT content FROM memories WHERE rowid = ?",
                                          (rowid,)).fetchone()
                seq = self._record(conn, memory_id, "reembed", Actor("reembed"),
                                   {"model": model_id}, content=content)
                conn.execute(_UPSERT_VECTOR, (rowid, model_id, len(blob), blob.tobytes(), seq))
                conn.execute("UPDATE memories SET embedding_model = ?, seq = ? WHERE rowid = ?",
                             (model_id, seq, rowid))

    # --- reads -----------------------------------------------------------
    def _get_by_rowid(self, conn: sqlite3.Connection, rowid: int) -> Memory:
        return row_to_memory(conn.execute(_SELECT + " WHERE m.rowid = ?", (rowid,)).fetchone())

    def get(self, memory_id: str) -> Memory | None:
        row = self._conn.execute(_SELECT + " WHERE m.id = ?", (memory_id,)).fetchone()
        return row_to_memory(row) if row else None

    def get_many(self, memory_ids: list[str]) -> dict[str, Memory]:
        out: dict[str, Memory] = {}
        for chunk in _chunks(list(dict.fromkeys(memory_ids)), 500):
            rows = self._conn.execute(
                _SELECT + f" WHERE m.id IN ({', '.join('?' * len(chunk))})", chunk).fetchall()
            out.update((m.id, m) for m in map(row_to_memory, rows))
        return out

    def _where(self, filters: SearchFilters, now: datetime) -> tuple[str, list[Any]]:
        return where(filters, now, DIALECT)

    def _select(self, filters: SearchFilters, now: datetime, tail: str,
                tail_params: list[Any]) -> list[Memory]:
        where, params = self._where(filters, now)
        rows = self._conn.execute(f"{_SELECT} WHERE {where} {tail} LIMIT ? OFFSET ?",
                                  [*params, *tail_params]).fetchall()
        return [row_to_memory(r) for r in rows]

    def matching_ids(self, memory_ids: list[str], filters: SearchFilters, *,
                     now: datetime) -> set[str]:
        where, params = self._where(filters, now)
        out: set[str] = set()
        for chunk in _chunks(list(dict.fromkeys(memory_ids)), 500):
            rows = self._conn.execute(
                f"SELECT m.id FROM memories m WHERE m.id IN ({', '.join('?' * len(chunk))}) "
                f"AND {where}", [*chunk, *params]).fetchall()
            out.update(r[0] for r in rows)
        return out

    def count(self, filters: SearchFilters | None = None, *, now: datetime | None = None) -> int:
        if filters is None:
            return int(self._conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        where, params = self._where(filters, now or datetime.now(timezone.utc))
        sql = f"SELECT COUNT(*) FROM memories m WHERE {where}"
        return int(self._conn.execute(sql, params).fetchone()[0])

    def iter_memories(self, batch_size: int = 500) -> Iterator[Memory]:
        last = 0
        while True:
            rows = self._conn.execute(_SELECT + " WHERE m.rowid > ? ORDER BY m.rowid LIMIT ?",
                                      (last, batch_size)).fetchall()
            if not rows:
                return
            yield from map(row_to_memory, rows)
            last = rows[-1][0]

    def history(self, memory_id: str) -> list[HistoryEntry]:
        rows = self._conn.execute(f"{_HISTORY} WHERE memory_id = ? ORDER BY seq", (memory_id,))
        return [history_entry(r) for r in rows.fetchall()]

    def changes_since(self, seq: int, limit: int = 1000) -> list[HistoryEntry]:
        rows = self._conn.execute(f"{_HISTORY} WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit))
        return [history_entry(r) for r in rows.fetchall()]

    def changes_between(self, start: datetime, end: datetime,
                        limit: int = 10_000) -> list[HistoryEntry]:
        rows = self._conn.execute(f"{_HISTORY} WHERE at >= ? AND at < ? ORDER BY seq LIMIT ?",
                                  (start.timestamp(), end.timestamp(), limit))
        return [history_entry(r) for r in rows.fetchall()]

    def stats(self) -> StoreStats:
        conn = self._conn
        by_type = dict(conn.execute("SELECT node_type, COUNT(*) FROM memories GROUP BY node_type"))
        by_tier = dict(conn.execute("SELECT tier, COUNT(*) FROM memories GROUP BY tier"))
        (vectors,) = conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()
        (last_seq,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()
        return StoreStats(
            url=self.url, backend=self.backend, memories=sum(by_type.values()),
            by_node_type=by_type, by_tier=by_tier, vectors=vectors,
            embedding_model=self.embedding_model, embedding_dims=self.embedding_dims,
            last_seq=last_seq, schema_version=self.schema_version,
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


def _begin(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``; a store still locked after the busy timeout is a StoreError."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(f"the store is busy or unusable: {exc}") from exc
