"""The PostgreSQL database of a store: a connection pool, write transactions ordered by an
advisory lock, and how logical values are written in it (JSON as jsonb, times as
timestamptz, vectors as pgvector).

Writes that record history take a transaction-level advisory lock first. History sequence
numbers are therefore handed out in commit order, so ``changes_since(n)`` never skips a
change that commits late, and writers cannot deadlock each other. Reads never wait for it:
PostgreSQL's MVCC serves them from a snapshot.

The store URL is a libpq URL; memoryd reads three extra query parameters and removes them
before connecting: ``schema`` (default ``memoryd``), ``pool_min`` (1) and ``pool_max`` (10).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb, set_json_loads
from psycopg_pool import ConnectionPool

from memoryd.config import mask_url_password
from memoryd.errors import NotAMemorydStore, StoreError
from memoryd.models import Memory, SchedulingState
from memoryd.store.change import Recorded
from memoryd.store.database import Database
from memoryd.store.postgres import schema as schema_mod
from memoryd.store.postgres import vectors as vector_sql
from memoryd.store.postgres.codec import (
    COLUMNS,
    DIALECT,
    dumps,
    loads,
    row_to_memory,
    row_to_state,
    to_vector,
    utc,
)
from memoryd.store.rows import JSON_FIELDS, VECTOR_FIELDS

_EXTRA_PARAMS = ("schema", "pool_min", "pool_max")
# Columns of the memories table that are text[] rather than jsonb.
_ARRAYS = frozenset({"tags", "domains"})


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """Separate memoryd's own query parameters from a libpq URL."""
    parts = urlsplit(url)
    keep: list[str] = []
    extra: dict[str, str] = {}
    for item in parts.query.split("&") if parts.query else []:
        name = item.split("=", 1)[0]
        if name in _EXTRA_PARAMS:
            extra.update(parse_qsl(item))
        else:
            keep.append(item)
    scheme = "postgresql" if parts.scheme == "postgres" else parts.scheme
    return urlunsplit((scheme, parts.netloc, parts.path, "&".join(keep), parts.fragment)), extra


class PostgresDatabase(Database):
    """A memoryd schema in a PostgreSQL database: the pool, transactions and the codec."""

    backend = "postgresql"
    mark = "%s"
    dialect = DIALECT
    position = "pos"
    chunk = 1 << 30  # arrays have no length limit worth chunking for
    greatest = "greatest"
    collate = ' COLLATE "C"'
    driver_errors = (psycopg.Error,)
    constraint_errors = (psycopg.errors.IntegrityError,)
    memory_columns = "m.rowid, " + ", ".join(f"m.{c}" for c in COLUMNS)

    def __init__(self, url: str, *, ef_search: int = 128, create: bool = True,
                 pool_min: int | None = None, pool_max: int | None = None) -> None:
        self.url = url
        self._conninfo, extra = split_url(url)
        self.schema = extra.get("schema", schema_mod.DEFAULT_SCHEMA)
        self.ef_search = ef_search
        self._write_key = schema_mod.lock_key(self.schema, "write")
        self._closed = False
        self._local = threading.local()
        self._ext_schema = self._migrate(create)
        self._pool = ConnectionPool(
            self._conninfo,
            min_size=pool_min or int(extra.get("pool_min", 1)),
            max_size=pool_max or int(extra.get("pool_max", 10)),
            kwargs={"autocommit": True},
            configure=self._configure,
            name=f"memoryd-{self.schema}",
            open=True,
        )
        row = self.rows("SELECT pg_get_serial_sequence(%s, 'seq'), "
                        "pg_get_serial_sequence(%s, 'id')",
                        (f'"{self.schema}".history', f'"{self.schema}".reports'))[0]
        #: The sequences numbering history rows and reports (set forward after an import).
        self.history_seq, self.reports_seq = row

    @property
    def masked_url(self) -> str:
        """The URL without its password."""
        return mask_url_password(self.url)

    # --- connections -----------------------------------------------------
    def _migrate(self, create: bool) -> str:
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=30)
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self.masked_url}: {exc}") from exc
        try:
            if not create and schema_mod.applied_version(conn, self.schema) == 0:
                raise NotAMemorydStore(
                    f"no memoryd store in schema {self.schema!r} at {self.masked_url}")
            self.schema_version = schema_mod.migrate(conn, self.schema)
            ext = vector_sql.vector_schema(conn)
            assert ext is not None
            return ext
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot prepare the memoryd schema at {self.masked_url}: {exc}") from exc
        finally:
            conn.close()

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            sql.SQL(
                "SET search_path TO {}, {}; SET TIME ZONE 'UTC'; "
                "SET hnsw.ef_search = {}; SET hnsw.iterative_scan = relaxed_order"
            ).format(
                sql.Identifier(self.schema),
                sql.Identifier(self._ext_schema),
                sql.Literal(self.ef_search),
            )
        )
        register_vector(conn)
        set_json_loads(loads, conn)

    @contextmanager
    def read(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection: this thread's open transaction if any, else one from the pool."""
        if self._closed:
            raise StoreError("the store is closed")
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise StoreError(f"PostgreSQL at {self.masked_url} failed: {exc}") from exc

    def in_transaction(self) -> bool:
        return getattr(self._local, "conn", None) is not None

    @contextmanager
    def write(self, *, lock: bool = True) -> Iterator[psycopg.Cursor[Any]]:
        """One write transaction; ``lock`` serialises it with other history writers.

        Inside an open transaction it joins as a savepoint, so a failed inner write is
        undone whole and the outer transaction stays usable.
        """
        outer = getattr(self._local, "conn", None)
        if outer is not None:
            with outer.transaction(), outer.cursor() as cur:
                if lock and not self._local.locked:
                    cur.execute("SELECT pg_advisory_xact_lock(%s)", (self._write_key,))
                    self._local.locked = True
                yield cur
            return
        with self.read() as conn:
            self._local.conn, self._local.locked = conn, lock
            try:
                with conn.transaction(), conn.cursor() as cur:
                    if lock:
                        cur.execute("SELECT pg_advisory_xact_lock(%s)", (self._write_key,))
                    yield cur
            finally:
                self._local.conn, self._local.locked = None, False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.close()

    # --- codec and history -------------------------------------------------
    def encode(self, table: str, field: str, value: Any) -> Any:
        if value is None:
            return None
        if field in JSON_FIELDS[table] and not (table == "memories" and field in _ARRAYS):
            return Jsonb(value, dumps=dumps)
        if field in VECTOR_FIELDS:
            return to_vector(value)
        return value

    def decode(self, table: str, field: str, value: Any) -> Any:
        if isinstance(value, datetime):
            return utc(value)
        if field in VECTOR_FIELDS and value is not None:
            return to_vector(value)
        return value

    def memory(self, row: Sequence[Any]) -> Memory:
        return row_to_memory(tuple(row[1:]))

    def state(self, row: Sequence[Any]) -> SchedulingState:
        return row_to_state(row)

    def insert_id(self, tx: psycopg.Cursor[Any], statement: str, params: Sequence[Any]) -> int:
        row = tx.execute(statement + " RETURNING id", params).fetchone()
        assert row is not None
        return int(row[0])

    def insert_many(self, tx: psycopg.Cursor[Any], statement: str,
                    rows: list[Sequence[Any]]) -> int:
        tx.executemany(statement, rows, returning=False)
        return tx.rowcount if tx.rowcount >= 0 else len(rows)

    def _history(self, tx: psycopg.Cursor[Any], changes: list[Recorded]) -> list[int]:
        # Under the write lock, so these are the next numbers in commit order.
        seqs = sorted(int(r[0]) for r in tx.execute(
            "SELECT nextval(%s) FROM generate_series(1, %s)",
            (self.history_seq, len(changes))).fetchall())
        at = datetime.now(timezone.utc)
        tx.executemany(
            "INSERT INTO history (seq, memory_id, operation, actor, agent_id, at, details) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [(seq, c.memory_id, c.operation, c.actor.name, c.actor.agent_id, at,
              Jsonb(c.details or {}, dumps=dumps)) for seq, c in zip(seqs, changes)])
        return seqs
