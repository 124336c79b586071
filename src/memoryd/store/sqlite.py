"""The embedded store: one SQLite file (WAL) with FTS5 keywords and an in-memory vector index.

Concurrency: each thread gets its own connection; writes are serialised in-process
by a lock and across processes by SQLite (``BEGIN IMMEDIATE`` + busy timeout), so
several memoryd processes may share one file. The vector index is a cache of the
``memory_vectors`` table, caught up by change sequence number before each search,
so vectors written by another process become searchable too.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from memoryd import ledger
from memoryd.errors import (
    MemoryNotFound,
    ModelMismatch,
    NotAMemorydStore,
    SchemaTooNew,
    StoreError,
)
from memoryd.models import HistoryEntry, Memory, SchedulingState, SearchFilters, StoreStats
from memoryd.store.base import Actor, KeywordHit, ListOrder, Store, VectorHit
from memoryd.store.fts import match_expression
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS
from memoryd.store.sqlite_aux import SQLiteAuxTables
from memoryd.store.sqlite_rows import SQLiteRows
from memoryd.store.sqlite_schema import APP_MARKER, LATEST_VERSION, applied_version, migrate
from memoryd.store.vector_index import VectorIndex

BUSY_TIMEOUT_MS = 30_000
# Filtered vector search is exact when the filter allows at most this many rows.
EXACT_FILTER_ROWS = 5_000
# bm25() column weights for (content, summary, tags).
BM25_WEIGHTS = (1.0, 0.5, 0.5)

# The column lists are shared with the PostgreSQL store and the migration rows.
_STATE_FIELDS = STATE_FIELDS
_MEMORY_FIELDS = MEMORY_FIELDS
_JSON_FIELDS = {"tags", "domains", "domain_scores", "metadata"}
_TIME_FIELDS = {"created_at", "updated_at", "valid_from", "valid_until", "last_review", "last_accessed"}
_COLUMNS = ("rowid",) + _MEMORY_FIELDS + _STATE_FIELDS + ("seq",)
_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in _COLUMNS) + " FROM memories m"
_UPDATABLE = set(_MEMORY_FIELDS) - {"id", "created_at"}
_ORDERS = {
    "created_desc": "m.created_at DESC, m.rowid DESC",
    "created_asc": "m.created_at ASC, m.rowid ASC",
    "updated_desc": "m.updated_at DESC, m.rowid DESC",
}


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=timezone.utc) if value is not None else None


def _to_db(field: str, value: Any) -> Any:
    if field in _JSON_FIELDS:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if field in _TIME_FIELDS:
        return _ts(value)
    return value


def _row_to_memory(row: sqlite3.Row | tuple) -> Memory:
    data = dict(zip(_COLUMNS, row))
    state = {f: data.pop(f) for f in _STATE_FIELDS}
    for f in ("last_review", "last_accessed"):
        state[f] = _dt(state[f])
    data.pop("rowid")
    for f in _JSON_FIELDS:
        data[f] = json.loads(data[f])
    for f in ("created_at", "updated_at", "valid_from", "valid_until"):
        data[f] = _dt(data[f])
    return Memory(**data, state=SchedulingState(**state))


def parse_sqlite_url(url: str) -> Path:
    """``sqlite:///abs/path.db`` (or a bare path) to a Path."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite://") :])
    if url.startswith("sqlite:"):
        raise StoreError(f"SQLite URLs take an absolute path: sqlite:///abs/path.db, got {url!r}")
    return Path(url)


class SQLiteStore(SQLiteAuxTables, SQLiteRows, Store):
    """The embedded default store: a single SQLite file in WAL mode."""

    backend = "sqlite"

    def __init__(
        self,
        path: Path | str,
        *,
        hnsw_threshold: int = 20_000,
        ef_search: int = 128,
        create: bool = True,
    ) -> None:
        self.path = Path(path).expanduser().resolve()
        self.url = f"sqlite:///{self.path}"
        self._local = threading.local()
        self._index: VectorIndex | None = None
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
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
            )
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
        conn = self._conn
        local = self._local
        if getattr(local, "depth", 0):
            local.depth += 1
            try:
                yield conn
            finally:
                local.depth -= 1
            return
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
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
            self._index = None
            self.close()
            raise
        conn = self._conn
        # WAL is a property of the file; set it only once the file is known to be ours.
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"could not switch {self.path} to WAL mode (got {mode})")
        version = applied_version(conn)
        if version > LATEST_VERSION:
            raise SchemaTooNew(
                f"{self.path} has schema version {version}; this memoryd knows up to "
                f"{LATEST_VERSION}. Upgrade memoryd."
            )
        self.schema_version = migrate(conn)

    def _check_marker(self) -> None:
        try:
            tables = {
                r[0]
                for r in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'"
                ).fetchall()
            }
        except sqlite3.DatabaseError as exc:
            raise NotAMemorydStore(f"{self.path} is not a memoryd store ({exc})") from exc
        if tables and "meta" not in tables:
            raise NotAMemorydStore(f"{self.path} is an SQLite file but not a memoryd store")
        if "meta" in tables:
            row = self._conn.execute("SELECT value FROM meta WHERE key='app'").fetchone()
            if row is None or row[0] != APP_MARKER:
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
            for key, value in (("embedding_model", model_id), ("embedding_dims", str(dims))):
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
        if self._index is None or self._index.dims != dims:
            self._load_index(dims)

    # --- history and ledger ----------------------------------------------
    def _record(
        self,
        conn: sqlite3.Connection,
        memory_id: str,
        operation: str,
        actor: Actor,
        details: dict[str, Any] | None = None,
        *,
        content: str | None = None,
        ledger_batch: list[ledger.PendingEntry] | None = None,
    ) -> int:
        """One history row and its ledger entry; ``content`` is the memory's content after.

        With ``ledger_batch`` the entry is collected there instead, for the caller to
        append in one go (same order) before its transaction ends.
        """
        cur = conn.execute(
            "INSERT INTO history (memory_id, operation, actor, agent_id, at, details) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                memory_id,
                operation,
                actor.name,
                actor.agent_id,
                time.time(),
                json.dumps(details or {}, ensure_ascii=False, default=str),
            ),
        )
        entry = ledger.PendingEntry(operation, memory_id, ledger.content_digest(content),
                                    actor.name, actor.agent_id, actor.key_label)
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
    def insert(
        self,
        memories: list[Memory],
        vectors: np.ndarray | None,
        actor: Actor,
        *,
        operation: str = "create",
    ) -> list[Memory]:
        if vectors is not None and len(vectors) != len(memories):
            raise StoreError("insert needs exactly one vector per memory")
        model, dims = self.embedding_model, self.embedding_dims
        out: list[Memory] = []
        pending: list[ledger.PendingEntry] = []
        with self._write() as conn:
            for i, memory in enumerate(memories):
                seq = self._record(conn, memory.id, operation, actor, {"content": memory.content},
                                   content=memory.content, ledger_batch=pending)
                memory = memory.model_copy(update={"seq": seq})
                values = [_to_db(f, getattr(memory, f)) for f in _MEMORY_FIELDS]
                values += [_to_db(f, getattr(memory.state, f)) for f in _STATE_FIELDS]
                cols = _MEMORY_FIELDS + _STATE_FIELDS + ("seq",)
                try:
                    cur = conn.execute(
                        f"INSERT INTO memories ({', '.join(cols)}) "
                        f"VALUES ({', '.join('?' * len(cols))})",
                        values + [seq],
                    )
                except sqlite3.IntegrityError as exc:
                    raise StoreError(f"memory {memory.id} already exists") from exc
                rowid = cur.lastrowid
                conn.executemany(
                    "INSERT INTO memory_tags (memory_rowid, tag) VALUES (?, ?)",
                    [(rowid, tag) for tag in memory.tags],
                )
                if vectors is not None:
                    if model is None:
                        raise StoreError("set_embedding_model before storing vectors")
                    conn.execute(
                        "INSERT INTO memory_vectors (memory_rowid, model, dims, vector, seq) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (rowid, model, dims, np.asarray(vectors[i], dtype=np.float32).tobytes(), seq),
                    )
                out.append(memory)
            self._ledger_append(conn, pending)
        return out

    def _rowid(self, conn: sqlite3.Connection, memory_id: str) -> int:
        row = conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        return int(row[0])

    def update(
        self,
        memory_id: str,
        changes: dict[str, Any],
        actor: Actor,
        *,
        vector: np.ndarray | None = None,
        operation: str = "update",
        details: dict[str, Any] | None = None,
    ) -> Memory:
        unknown = set(changes) - _UPDATABLE - set(_STATE_FIELDS)
        if unknown:
            raise StoreError(f"cannot update fields: {', '.join(sorted(unknown))}")
        with self._write() as conn:
            rowid = self._rowid(conn, memory_id)
            before = self._get_by_rowid(conn, rowid)
            record = dict(details or {})
            record.setdefault(
                "changed", {f: _jsonable(getattr(before, f, None)) for f in changes if f in _UPDATABLE}
            )
            seq = self._record(conn, memory_id, operation, actor, record,
                               content=changes.get("content", before.content))
            sets = {f: _to_db(f, v) for f, v in changes.items()}
            sets["seq"] = seq
            conn.execute(
                f"UPDATE memories SET {', '.join(f'{c} = ?' for c in sets)} WHERE rowid = ?",
                [*sets.values(), rowid],
            )
            if "tags" in changes:
                conn.execute("DELETE FROM memory_tags WHERE memory_rowid = ?", (rowid,))
                conn.executemany(
                    "INSERT INTO memory_tags (memory_rowid, tag) VALUES (?, ?)",
                    [(rowid, tag) for tag in changes["tags"]],
                )
            if vector is not None:
                conn.execute(
                    "INSERT INTO memory_vectors (memory_rowid, model, dims, vector, seq) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(memory_rowid) DO UPDATE SET "
                    "model = excluded.model, dims = excluded.dims, vector = excluded.vector, "
                    "seq = excluded.seq",
                    (
                        rowid,
                        self.embedding_model,
                        self.embedding_dims,
                        np.asarray(vector, dtype=np.float32).tobytes(),
                        seq,
                    ),
                )
            after = self._get_by_rowid(conn, rowid)
        return after

    def update_states(
        self,
        states: dict[str, SchedulingState],
        *,
        record: str | None = None,
        actor: Actor | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        if not states:
            return
        pending: list[ledger.PendingEntry] = []
        with self._write() as conn:
            for memory_id, state in states.items():
                values = [_to_db(f, getattr(state, f)) for f in _STATE_FIELDS]
                if record:
                    row = conn.execute("SELECT content FROM memories WHERE id = ?",
                                       (memory_id,)).fetchone()
                    seq = self._record(conn, memory_id, record, actor or Actor(), details,
                                       content=row[0] if row else None, ledger_batch=pending)
                    conn.execute(
                        f"UPDATE memories SET {', '.join(f'{f} = ?' for f in _STATE_FIELDS)}, "
                        "seq = ? WHERE id = ?",
                        [*values, seq, memory_id],
                    )
                else:
                    conn.execute(
                        f"UPDATE memories SET {', '.join(f'{f} = ?' for f in _STATE_FIELDS)} "
                        "WHERE id = ?",
                        [*values, memory_id],
                    )
            self._ledger_append(conn, pending)

    def delete(self, memory_id: str, actor: Actor, *, purge: bool = False) -> None:
        with self._write() as conn:
            rowid = self._rowid(conn, memory_id)
            before = self._get_by_rowid(conn, rowid)
            if purge:
                import hashlib

                digest = hashlib.sha256(before.content.encode("utf-8")).hexdigest()
                conn.execute(
                    "UPDATE history SET details = ? WHERE memory_id = ?",
                    (json.dumps({"purged": True}), memory_id),
                )
                self._record(conn, memory_id, "purge", actor, {"content_sha256": digest},
                             content=before.content)
            else:
                self._record(
                    conn, memory_id, "delete", actor, {"content": before.content,
                                                       "node_type": before.node_type},
                    content=before.content,
                )
            # Tags, vector and edges go with it (ON DELETE CASCADE); FTS by trigger.
            conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM session_access WHERE memory_id = ?", (memory_id,))
            self._local.removed.append(rowid)

    def replace_vectors(self, vectors: dict[str, np.ndarray], model_id: str) -> None:
        dims = None
        with self._write() as conn:
            for memory_id, vector in vectors.items():
                vector = np.asarray(vector, dtype=np.float32)
                dims = len(vector)
                rowid = self._rowid(conn, memory_id)
                (content,) = conn.execute("SELECT content FROM memories WHERE rowid = ?",
                                          (rowid,)).fetchone()
                seq = self._record(conn, memory_id, "reembed", Actor("reembed"), {"model": model_id},
                                   content=content)
                conn.execute(
                    "INSERT INTO memory_vectors (memory_rowid, model, dims, vector, seq) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(memory_rowid) DO UPDATE SET "
                    "model = excluded.model, dims = excluded.dims, vector = excluded.vector, "
                    "seq = excluded.seq",
                    (rowid, model_id, dims, vector.tobytes(), seq),
                )
                conn.execute(
                    "UPDATE memories SET embedding_model = ?, seq = ? WHERE rowid = ?",
                    (model_id, seq, rowid),
                )

    # --- reads -----------------------------------------------------------
    def _get_by_rowid(self, conn: sqlite3.Connection, rowid: int) -> Memory:
        row = conn.execute(_SELECT + " WHERE m.rowid = ?", (rowid,)).fetchone()
        return _row_to_memory(row)

    def get(self, memory_id: str) -> Memory | None:
        row = self._conn.execute(_SELECT + " WHERE m.id = ?", (memory_id,)).fetchone()
        return _row_to_memory(row) if row else None

    def get_many(self, memory_ids: list[str]) -> dict[str, Memory]:
        out: dict[str, Memory] = {}
        for chunk in _chunks(list(dict.fromkeys(memory_ids)), 500):
            rows = self._conn.execute(
                _SELECT + f" WHERE m.id IN ({', '.join('?' * len(chunk))})", chunk
            ).fetchall()
            for row in rows:
                memory = _row_to_memory(row)
                out[memory.id] = memory
        return out

    def _where(self, filters: SearchFilters, now: datetime) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        since, until = filters.time_bounds(now)
        if since is not None:
            clauses.append("m.created_at >= ?")
            params.append(since.timestamp())
        if until is not None:
            clauses.append("m.created_at <= ?")
            params.append(until.timestamp())
        for column, values in (
            ("node_type", filters.node_types),
            ("category", filters.categories),
            ("tier", filters.tiers),
        ):
            if values:
                clauses.append(f"m.{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        for column, value in (
            ("scope", filters.scope),
            ("agent_id", filters.agent_id),
            ("session_id", filters.session_id),
        ):
            if value is not None:
                clauses.append(f"m.{column} = ?")
                params.append(value)
        if filters.tags:
            marks = ", ".join("?" * len(filters.tags))
            if filters.tags_mode == "all":
                clauses.append(
                    f"m.rowid IN (SELECT memory_rowid FROM memory_tags WHERE tag IN ({marks}) "
                    "GROUP BY memory_rowid HAVING COUNT(*) = ?)"
                )
                params.extend([*filters.tags, len(filters.tags)])
            else:
                clauses.append(f"m.rowid IN (SELECT memory_rowid FROM memory_tags WHERE tag IN ({marks}))")
                params.extend(filters.tags)
        if not filters.include_superseded:
            clauses.append("m.superseded_by IS NULL AND (m.valid_until IS NULL OR m.valid_until > ?)")
            params.append(now.timestamp())
        return (" AND ".join(clauses) or "1"), params

    def list(
        self,
        filters: SearchFilters,
        *,
        now: datetime,
        limit: int = 50,
        offset: int = 0,
        order: ListOrder = "created_desc",
    ) -> list[Memory]:
        where, params = self._where(filters, now)
        rows = self._conn.execute(
            _SELECT + f" WHERE {where} ORDER BY {_ORDERS[order]} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
        return [_row_to_memory(r) for r in rows]

    def matching_ids(self, memory_ids: list[str], filters: SearchFilters, *, now: datetime) -> set[str]:
        where, params = self._where(filters, now)
        out: set[str] = set()
        for chunk in _chunks(list(dict.fromkeys(memory_ids)), 500):
            rows = self._conn.execute(
                f"SELECT m.id FROM memories m WHERE m.id IN ({', '.join('?' * len(chunk))}) "
                f"AND {where}",
                [*chunk, *params],
            ).fetchall()
            out.update(r[0] for r in rows)
        return out

    def count(self, filters: SearchFilters | None = None, *, now: datetime | None = None) -> int:
        if filters is None:
            return int(self._conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        where, params = self._where(filters, now or datetime.now(timezone.utc))
        return int(self._conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {where}", params).fetchone()[0])

    def keyword_search(
        self, text: str, filters: SearchFilters, *, now: datetime, limit: int
    ) -> list[KeywordHit]:
        expression = match_expression(text)
        if expression is None:
            return []
        where, params = self._where(filters, now)
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        # Rank inside FTS5 first and join only the best rows; an OR query can match
        # a large share of the store, and joining every match before sorting is slow.
        inner = max(200, limit * 4)
        rows = self._conn.execute(
            f"SELECT m.id, r.rank FROM (SELECT rowid, bm25(memories_fts, {weights}) AS rank "
            f"FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) r "
            f"JOIN memories m ON m.rowid = r.rowid WHERE {where} ORDER BY r.rank LIMIT ?",
            [expression, inner, *params, limit],
        ).fetchall()
        if len(rows) < limit:
            # The filters removed too many of the best rows: rank among the allowed ones.
            rows = self._conn.execute(
                f"SELECT m.id, bm25(memories_fts, {weights}) AS rank FROM memories_fts "
                f"JOIN memories m ON m.rowid = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
                [expression, *params, limit],
            ).fetchall()
        return [KeywordHit(memory_id=r[0], score=-float(r[1])) for r in rows]

    def vector_search(
        self, vector: np.ndarray, filters: SearchFilters, *, now: datetime, limit: int
    ) -> list[VectorHit]:
        self._sync_index()
        index = self._index
        if index is None or len(index) == 0:
            return []
        where, params = self._where(filters, now)
        if _is_selective(filters):
            # A narrow filter: exact search over the rows it allows. A broad one (more
            # rows than an exact pass should scan) falls through to over-fetch + filter.
            cap = max(EXACT_FILTER_ROWS, len(index) // 10)
            rows = self._conn.execute(
                f"SELECT m.rowid FROM memories m WHERE {where} LIMIT ?", [*params, cap + 1]
            ).fetchall()
            if len(rows) <= cap:
                allowed = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                return self._resolve_ids(index.search(vector, limit, allowed=allowed))
        want = limit
        while True:
            hits = index.search(vector, want)
            resolved = self._resolve_ids(hits, where=where, params=params)
            if len(resolved) >= limit or want >= len(index):
                return resolved[:limit]
            want = min(len(index), want * 4)

    def _resolve_ids(
        self, hits: list[tuple[int, float]], *, where: str = "1", params: list[Any] | None = None
    ) -> list[VectorHit]:
        if not hits:
            return []
        rowids = [h[0] for h in hits]
        id_of: dict[int, str] = {}
        for chunk in _chunks(rowids, 500):
            rows = self._conn.execute(
                f"SELECT m.rowid, m.id FROM memories m WHERE m.rowid IN ({', '.join('?' * len(chunk))}) "
                f"AND {where}",
                [*chunk, *(params or [])],
            ).fetchall()
            id_of.update({r[0]: r[1] for r in rows})
        return [VectorHit(memory_id=id_of[k], similarity=s) for k, s in hits if k in id_of]

    def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(dict.fromkeys(memory_ids)), 500):
            rows = self._conn.execute(
                "SELECT m.id, v.vector FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid "
                f"WHERE m.id IN ({', '.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            out.update({r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows})
        return out

    def iter_memories(self, batch_size: int = 500) -> Iterator[Memory]:
        last = 0
        while True:
            rows = self._conn.execute(
                _SELECT + " WHERE m.rowid > ? ORDER BY m.rowid LIMIT ?", (last, batch_size)
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _row_to_memory(row)
            last = rows[-1][0]

    def history(self, memory_id: str) -> list[HistoryEntry]:
        rows = self._conn.execute(
            "SELECT seq, memory_id, operation, actor, agent_id, at, details FROM history "
            "WHERE memory_id = ? ORDER BY seq",
            (memory_id,),
        ).fetchall()
        return [_history_entry(r) for r in rows]

    def changes_since(self, seq: int, limit: int = 1000) -> list[HistoryEntry]:
        rows = self._conn.execute(
            "SELECT seq, memory_id, operation, actor, agent_id, at, details FROM history "
            "WHERE seq > ? ORDER BY seq LIMIT ?",
            (seq, limit),
        ).fetchall()
        return [_history_entry(r) for r in rows]

    def changes_between(self, start: datetime, end: datetime, limit: int = 10_000) -> list[HistoryEntry]:
        rows = self._conn.execute(
            "SELECT seq, memory_id, operation, actor, agent_id, at, details FROM history "
            "WHERE at >= ? AND at < ? ORDER BY seq LIMIT ?",
            (start.timestamp(), end.timestamp(), limit),
        ).fetchall()
        return [_history_entry(r) for r in rows]

    def stats(self) -> StoreStats:
        conn = self._conn
        by_type = dict(conn.execute("SELECT node_type, COUNT(*) FROM memories GROUP BY node_type"))
        by_tier = dict(conn.execute("SELECT tier, COUNT(*) FROM memories GROUP BY tier"))
        (vectors,) = conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()
        (last_seq,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()
        return StoreStats(
            url=self.url,
            backend=self.backend,
            memories=sum(by_type.values()),
            by_node_type=by_type,
            by_tier=by_tier,
            vectors=vectors,
            embedding_model=self.embedding_model,
            embedding_dims=self.embedding_dims,
            last_seq=last_seq,
            schema_version=self.schema_version,
            size_bytes=self.path.stat().st_size if self.path.exists() else None,
        )

    # --- maintenance -----------------------------------------------------
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

    def restore(self, path: Path, *, expect_model: str | None = None) -> None:
        """Replace this store's contents with the memoryd store at ``path``.

        Refuses (before touching anything) a backup whose vectors were made by a model
        other than ``expect_model``. The change sequence keeps counting from where this
        store was, so seq numbers never go backwards, and the restore is recorded.
        """
        source = SQLiteStore(path, create=False, hnsw_threshold=0)
        try:
            backup_model = source.embedding_model
            has_vectors = source.count() > 0 and source.stats().vectors > 0
        finally:
            source.close()
        if expect_model and backup_model and has_vectors and backup_model != expect_model:
            raise ModelMismatch(backup_model, expect_model)
        (high,) = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()
        with self._write_lock:
            src = sqlite3.connect(Path(path))
            try:
                src.backup(self._conn)
            finally:
                src.close()
        self._hnsw_meta_path.unlink(missing_ok=True)
        self._hnsw_path.unlink(missing_ok=True)
        self.schema_version = migrate(self._conn)
        with self._write() as conn:
            (restored,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()
            conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'history'",
                         (max(high, restored),))
            self._record(conn, "", "restore", Actor("restore"), {"from": str(path)})
        self._index = None
        dims = self.embedding_dims
        if dims:
            self._load_index(dims)

    # --- vector index ----------------------------------------------------
    @property
    def _hnsw_path(self) -> Path:
        return self.path.with_name(self.path.name + ".hnsw.usearch")

    @property
    def _hnsw_meta_path(self) -> Path:
        return self.path.with_name(self.path.name + ".hnsw.json")

    def _load_index(self, dims: int) -> None:
        """Rebuild the in-memory index from the table; reuse (and repair) a saved graph."""
        with self._index_lock:
            self._index = VectorIndex(dims, hnsw_threshold=self._hnsw_threshold, ef_search=self._ef_search)
            self._vector_seq = 0
        self._sync_index(build_graph=False)
        saved = self._read_hnsw_meta()
        reused = False
        if saved is not None and isinstance(saved.get("vector_seq"), int):
            # Vectors written after the graph was saved (by any process, or before a crash).
            changed = [r[0] for r in self._conn.execute(
                "SELECT memory_rowid FROM memory_vectors WHERE seq > ?", (saved["vector_seq"],))]
            reused = self._index.load_hnsw(self._hnsw_path, changed=changed)
            if reused and (saved["vector_seq"], saved.get("count")) != (self._vector_seq, len(self._index)):
                self._save_index()  # repaired: save, so the next open does not repeat it
        if not reused:
            self._index.ensure_hnsw()
            self._save_index()  # so that a crash does not cost a rebuild next time

    def _sync_index(self, *, build_graph: bool = True) -> None:
        """Apply vectors written since the last sync (by any process) to the index."""
        if self._index is None:
            dims = self.embedding_dims
            if not dims:
                return
            self._load_index(dims)
            return
        with self._index_lock:
            rows = self._conn.execute(
                "SELECT memory_rowid, vector, seq, dims FROM memory_vectors WHERE seq > ? ORDER BY seq",
                (self._vector_seq,),
            ).fetchall()
            if not rows:
                return
            last_seq = rows[-1][2]
            # Vectors of another dimension belong to an unfinished re-embed; they are
            # loaded when the store switches models (set_embedding_model reloads).
            rows = [r for r in rows if r[3] == self._index.dims]
            if not rows:
                self._vector_seq = last_seq
                return
            keys = [r[0] for r in rows]
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
                len(rows), -1
            )
            if matrix.shape[1] != self._index.dims:
                raise StoreError("stored vectors have a different dimension than the index")
            if not build_graph:
                threshold, self._index.hnsw_threshold = self._index.hnsw_threshold, 0
                self._index.upsert(keys, matrix)
                self._index.hnsw_threshold = threshold
            else:
                self._index.upsert(keys, matrix)
            self._vector_seq = last_seq

    def _read_hnsw_meta(self) -> dict[str, Any] | None:
        try:
            return json.loads(self._hnsw_meta_path.read_text())
        except (OSError, ValueError):
            return None

    def _save_index(self) -> None:
        index = self._index
        if index is None or not index.uses_hnsw:
            return
        try:
            self._hnsw_meta_path.unlink(missing_ok=True)
            if index.save_hnsw(self._hnsw_path):
                self._hnsw_meta_path.write_text(
                    json.dumps({"vector_seq": self._vector_seq, "count": len(index)})
                )
        except OSError:
            pass  # the graph is a cache: it is rebuilt on the next open


def _is_selective(filters: SearchFilters) -> bool:
    """Whether the filters narrow the store beyond hiding superseded memories."""
    # Tiers are coarse (most memories are hot): filtering the nearest neighbours
    # afterwards is cheaper than listing every allowed row.
    if filters.timeframe not in (None, "all"):
        return True
    return any(
        getattr(filters, name)
        for name in ("since", "until", "node_types", "categories", "tags", "scope", "agent_id",
                     "session_id")
    )


def _history_entry(row: tuple) -> HistoryEntry:
    return HistoryEntry(
        seq=row[0],
        memory_id=row[1],
        operation=row[2],
        actor=row[3],
        agent_id=row[4],
        at=_dt(row[5]),
        details=json.loads(row[6]),
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
