"""The SQLite database of a store: one file in WAL mode, one connection per thread, write
transactions, and how logical values are written in it (times as epoch seconds, JSON as
text, vectors as float32 blobs).

Concurrency: writes are serialised in-process by a lock and across processes by SQLite
(``BEGIN IMMEDIATE`` + busy timeout), so several memoryd processes may share one file.
Whoever keeps a cache of a table (the vector index) listens for commits
(:meth:`SQLiteDatabase.on_commit`) instead of reaching into the transaction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.errors import NotAMemorydStore, SchemaTooNew, StoreError
from memoryd.models import Memory, SchedulingState
from memoryd.store.change import Recorded
from memoryd.store.database import Database
from memoryd.store.rows import JSON_FIELDS, TIME_FIELDS, VECTOR_FIELDS
from memoryd.store.sqlite.codec import COLUMNS, DIALECT, dt, row_to_memory, row_to_state, ts
from memoryd.store.sqlite.schema import APP_MARKER, LATEST_VERSION, applied_version, migrate

BUSY_TIMEOUT_MS = 30_000

#: Called after each outermost commit with the rowids of the memories it deleted.
CommitListener = Callable[[list[int]], None]


class SQLiteDatabase(Database):
    """A memoryd SQLite file: connections, transactions and the codec."""

    backend = "sqlite"
    mark = "?"
    dialect = DIALECT
    position = "rowid"
    chunk = 500
    greatest = "MAX"
    collate = ""
    driver_errors = (sqlite3.Error,)
    constraint_errors = (sqlite3.IntegrityError,)
    memory_columns = ", ".join(f"m.{c}" for c in COLUMNS)

    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        self.path = Path(path).expanduser().resolve()
        self.url = f"sqlite:///{self.path}"
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        self._listeners: list[CommitListener] = []
        if not self.path.exists():
            if not create:
                raise NotAMemorydStore(f"no memoryd store at {self.path}")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._open_schema()

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

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (inside a write transaction: the transaction's)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    @property
    def open_connections(self) -> int:
        """How many connections are open (none once closed)."""
        with self._conn_lock:
            return len(self._connections)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        yield self.connection()

    @contextmanager
    def write(self, *, lock: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction: in-process lock, then SQLite's write lock (every write
        takes both, whatever ``lock`` says).

        Nested use joins the outer transaction. Commit listeners run only after the
        outermost commit, so a rollback never leaves a cache ahead of the table.
        """
        conn, local = self.connection(), self._local
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
            for listener in self._listeners:
                listener(removed)

    @contextmanager
    def exclusive(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, with no other write of this process running (for
        SQLite's backup API, which brings its own transaction)."""
        with self._write_lock:
            yield self.connection()

    def in_transaction(self) -> bool:
        return bool(getattr(self._local, "depth", 0))

    def on_commit(self, listener: CommitListener) -> None:
        """Call ``listener`` after every outermost commit."""
        self._listeners.append(listener)

    def note_removed(self, rowid: int) -> None:
        """A memory row deleted in the open transaction (told to the commit listeners)."""
        self._local.removed.append(rowid)

    def close(self) -> None:
        with self._conn_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()
        self._local = threading.local()

    # --- schema ----------------------------------------------------------
    def _open_schema(self) -> None:
        """Check that the file is a memoryd store (before touching it), then migrate."""
        try:
            self._check_marker()
        except BaseException:
            self.close()
            raise
        conn = self.connection()
        # WAL is a property of the file; set it only once the file is known to be ours.
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"could not switch {self.path} to WAL mode (got {mode})")
        version = applied_version(conn)
        if version > LATEST_VERSION:
            raise SchemaTooNew(f"{self.path} has schema version {version}; this memoryd knows up "
                               f"to {LATEST_VERSION}. Upgrade memoryd.")
        self.migrate()

    def migrate(self) -> None:
        """Apply the migrations this file lacks (also after a restore brought older tables)."""
        self.schema_version = migrate(self.connection())

    def _check_marker(self) -> None:
        conn = self.connection()
        try:
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'").fetchall()}
            marker = (conn.execute("SELECT value FROM meta WHERE key='app'").fetchone()
                      if "meta" in tables else None)
        except sqlite3.DatabaseError as exc:
            raise NotAMemorydStore(f"{self.path} is not a memoryd store ({exc})") from exc
        if tables and (marker is None or marker[0] != APP_MARKER):
            raise NotAMemorydStore(f"{self.path} is an SQLite file but not a memoryd store")

    # --- codec and history -------------------------------------------------
    def encode(self, table: str, field: str, value: Any) -> Any:
        if value is None:
            return None
        if field in JSON_FIELDS[table]:
            return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        if field in TIME_FIELDS:
            return ts(value)
        if field in VECTOR_FIELDS:
            return np.asarray(value, dtype=np.float32).tobytes()
        return value

    def decode(self, table: str, field: str, value: Any) -> Any:
        if value is None:
            return None
        if field in JSON_FIELDS[table]:
            return json.loads(value)
        if field in TIME_FIELDS:
            return dt(value)
        if field in VECTOR_FIELDS:
            return np.frombuffer(value, dtype=np.float32).copy()
        return value

    def memory(self, row: Sequence[Any]) -> Memory:
        return row_to_memory(row)

    def state(self, row: Sequence[Any]) -> SchedulingState:
        return row_to_state(row)

    def insert_id(self, tx: sqlite3.Connection, statement: str, params: Sequence[Any]) -> int:
        return int(tx.execute(statement, params).lastrowid)  # type: ignore[arg-type]

    def insert_many(self, tx: sqlite3.Connection, statement: str,
                    rows: list[Sequence[Any]]) -> int:
        return int(tx.executemany(statement, rows).rowcount)

    def _history(self, tx: sqlite3.Connection, changes: list[Recorded]) -> list[int]:
        return [self.insert_id(
            tx, "INSERT INTO history (memory_id, operation, actor, agent_id, at, details) "
                "VALUES (?, ?, ?, ?, ?, ?)",
            (c.memory_id, c.operation, c.actor.name, c.actor.agent_id, time.time(),
             json.dumps(c.details or {}, ensure_ascii=False, default=str)))
            for c in changes]


def _begin(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``; a store still locked after the busy timeout is a StoreError."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(f"the store is busy or unusable: {exc}") from exc
