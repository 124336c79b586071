"""The shared store: PostgreSQL with pgvector, for many agents on many machines.

It keeps the same contract as :class:`memoryd.store.sqlite.SQLiteStore`:

* keyword search ranks by memoryd's own BM25 over the term tables that
  :mod:`memoryd.store.terms` keeps (the same tables, statistics and SQL as SQLite's, so
  both backends rank keywords alike);
* vector search runs on a ``vector(<dims>)`` column with an HNSW index
  (``vector_cosine_ops``); similarity is ``1 - cosine distance``; ``hnsw.ef_search``
  comes from the settings and iterative index scans keep filtered queries full;
* filters are the same as SQLite's, including the default exclusion of
  superseded and expired memories;
* every contract write is one transaction that records one history row per
  memory it touches (what it records is :mod:`memoryd.store.policy`'s, as on SQLite).

Writes that record history take a transaction-level advisory lock first. History
sequence numbers are therefore handed out in commit order, so ``changes_since(n)``
never skips a change that commits late, and writers cannot deadlock each other.
Reads never wait for it: PostgreSQL's MVCC serves them from a snapshot.

Connections come from a ``psycopg_pool.ConnectionPool``. The store URL is a libpq
URL; memoryd reads three extra query parameters and removes them before connecting:
``schema`` (default ``memoryd``), ``pool_min`` (1) and ``pool_max`` (10).

Backups are logical: :meth:`PostgresStore.backup` writes every table's rows as
JSON lines from one consistent snapshot (see :mod:`memoryd.store.rows`), and
:meth:`PostgresStore.restore` reads them back. This needs no ``pg_dump`` on the
machine; for large production databases use PostgreSQL's own tools (``pg_dump``,
base backups with WAL archiving) instead.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Iterator
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb, set_json_loads
from psycopg_pool import ConnectionPool

from memoryd.config import mask_url_password
from memoryd.errors import MemoryNotFound, NotAMemorydStore, StoreError
from memoryd.models import Memory, SchedulingState, SearchFilters, StoreStats
from memoryd.store import policy
from memoryd.store.postgres import schema as schema_mod
from memoryd.store.postgres import vectors as vector_sql
from memoryd.store.base import Actor, Store
from memoryd.store.filters import where
from memoryd.store.postgres.aux import PostgresAuxTables
from memoryd.store.postgres.codec import (
    COLUMNS,
    DIALECT,
    loads,
    row_to_memory,
    to_db,
    to_vector,
)
from memoryd.store.postgres.domains import PostgresDomains
from memoryd.store.postgres.history import PostgresHistory
from memoryd.store.postgres.transfer import PostgresRows
from memoryd.store.postgres.search import PostgresSearch
from memoryd.store.postgres.work import PostgresWorkTables
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS
from memoryd.store.terms import INDEXED_FIELDS, TermChanges, apply_changes

_EXTRA_PARAMS = ("schema", "pool_min", "pool_max")
_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in COLUMNS) + " FROM memories m"


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


class PostgresStore(PostgresHistory, PostgresSearch, PostgresRows, PostgresAuxTables,
                    PostgresWorkTables, PostgresDomains, Store):
    """A memoryd store in a PostgreSQL database with the pgvector extension.

    >>> store = PostgresStore("postgresql://memoryd@db.internal/memoryd")
    """

    backend = "postgresql"
    driver_errors = (psycopg.Error,)

    def __init__(
        self,
        url: str,
        *,
        ef_search: int = 128,
        create: bool = True,
        pool_min: int | None = None,
        pool_max: int | None = None,
    ) -> None:
        self.url = url
        self._conninfo, extra = split_url(url)
        self.schema = extra.get("schema", schema_mod.DEFAULT_SCHEMA)
        self._ef_search = ef_search
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
        with self._conn() as conn:
            row = conn.execute(
                "SELECT pg_get_serial_sequence(%s, 'seq'), pg_get_serial_sequence(%s, 'id')",
                (f'"{self.schema}".history', f'"{self.schema}".reports'),
            ).fetchone()
            assert row is not None
            self._history_seq, self._reports_seq = row

    # --- connections -----------------------------------------------------
    def _migrate(self, create: bool) -> str:
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=30)
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self._masked}: {exc}") from exc
        try:
            if not create and schema_mod.applied_version(conn, self.schema) == 0:
                raise NotAMemorydStore(f"no memoryd store in schema {self.schema!r} at {self._masked}")
            self.schema_version = schema_mod.migrate(conn, self.schema)
            ext = vector_sql.vector_schema(conn)
            assert ext is not None
            return ext
        except psycopg.Error as exc:
            raise StoreError(f"cannot prepare the memoryd schema at {self._masked}: {exc}") from exc
        finally:
            conn.close()

    @property
    def _masked(self) -> str:
        return mask_url_password(self.url)

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            sql.SQL(
                "SET search_path TO {}, {}; SET TIME ZONE 'UTC'; "
                "SET hnsw.ef_search = {}; SET hnsw.iterative_scan = relaxed_order"
            ).format(
                sql.Identifier(self.schema),
                sql.Identifier(self._ext_schema),
                sql.Literal(self._ef_search),
            )
        )
        register_vector(conn)
        set_json_loads(loads, conn)

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
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
            raise StoreError(f"PostgreSQL at {self._masked} failed: {exc}") from exc

    @contextmanager
    def _write(self, *, lock: bool = True) -> Iterator[psycopg.Cursor[Any]]:
        """One write transaction; ``lock`` serialises it with other history writers.

        Inside :meth:`transaction` it joins the open transaction as a savepoint, so a
        failed inner write is undone whole and the outer transaction stays usable.
        """
        outer = getattr(self._local, "conn", None)
        if outer is not None:
            with outer.transaction(), outer.cursor() as cur:
                if lock and not self._local.locked:
                    cur.execute("SELECT pg_advisory_xact_lock(%s)", (self._write_key,))
                    self._local.locked = True
                yield cur
            return
        with self._conn() as conn:
            self._local.conn, self._local.locked = conn, lock
            try:
                with conn.transaction(), conn.cursor() as cur:
                    if lock:
                        cur.execute("SELECT pg_advisory_xact_lock(%s)", (self._write_key,))
                    yield cur
            finally:
                self._local.conn, self._local.locked = None, False

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several write calls into one transaction (all or nothing)."""
        with self._write():
            yield

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.close()

    def health(self) -> dict[str, Any]:
        try:
            with self._conn() as conn:
                (count,) = conn.execute("SELECT count(*) FROM memories").fetchone()  # type: ignore[misc]
        except (psycopg.Error, StoreError) as exc:
            raise StoreError(f"store at {self._masked} is unusable: {exc}") from exc
        return {"backend": self.backend, "url": self._masked, "schema": self.schema,
                "memories": count, "ok": True}

    # --- meta ------------------------------------------------------------
    def _meta(self, key: str, cur: psycopg.Cursor[Any] | None = None) -> str | None:
        if cur is not None:
            row = cur.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
            return row[0] if row else None
        with self._conn() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def set_embedding_model(self, model_id: str, dims: int) -> None:
        with self._write() as cur:
            self._set_model(cur, model_id, dims)

    def _set_model(self, cur: psycopg.Cursor[Any], model_id: str, dims: int) -> None:
        if vector_sql.column_dims(cur.connection, self.schema) != dims:
            vector_sql.set_vector_dims(cur, self.schema, dims)
        else:
            cur.execute(
                "UPDATE memories m SET embedding = p.embedding, embedding_model = p.model "
                "FROM pending_vectors p WHERE p.memory_id = m.id AND vector_dims(p.embedding) = %s",
                (dims,),
            )
            cur.execute("DELETE FROM pending_vectors")
            vector_sql.create_vector_index(cur, self.schema)
        cur.executemany(
            "INSERT INTO meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [("embedding_model", model_id), ("embedding_dims", str(dims))],
        )

    # --- writes ----------------------------------------------------------
    def _insert(self, memories: list[Memory], vectors: np.ndarray | None, actor: Actor,
                operation: str) -> list[Memory]:
        cols = COLUMNS + ("embedding",)
        statement = (
            f"INSERT INTO memories ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})"
        )
        with self._write() as cur:
            if vectors is not None and self._meta("embedding_model", cur) is None:
                raise StoreError("set_embedding_model before storing vectors")
            ids = [m.id for m in memories]
            row = cur.execute("SELECT id FROM memories WHERE id = ANY(%s) LIMIT 1", (ids,)).fetchone()
            if row is not None:
                raise StoreError(f"memory {row[0]} already exists")
            seqs = self._record_many(cur, [(m.id, operation, actor, policy.create_details(m),
                                            m.content) for m in memories])
            out = [m.model_copy(update={"seq": s}) for m, s in zip(memories, seqs)]
            cur.executemany(statement, [
                [to_db(f, getattr(m, f)) for f in MEMORY_FIELDS]
                + [getattr(m.state, f) for f in STATE_FIELDS]
                + [m.seq, None if vectors is None else to_vector(vectors[i])]
                for i, m in enumerate(out)
            ])
            rowids = dict(cur.execute("SELECT id, rowid FROM memories WHERE id = ANY(%s)",
                                      (ids,)).fetchall())
            keywords = TermChanges()
            for m in out:
                keywords.add(rowids[m.id], m.content, m.summary, m.tags, m.metadata)
            apply_changes(cur, "%s", keywords)
        return out

    @staticmethod
    def _rowid(cur: psycopg.Cursor[Any], memory_id: str) -> int:
        row = cur.execute("SELECT rowid FROM memories WHERE id = %s", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        return int(row[0])

    def _locked(self, cur: psycopg.Cursor[Any], memory_id: str) -> Memory:
        row = cur.execute(_SELECT + " WHERE m.id = %s FOR UPDATE", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        return row_to_memory(row)

    def _update(self, change: policy.Change, actor: Actor) -> Memory:
        with self._write() as cur:
            before = self._locked(cur, change.memory_id)
            seq = self._record(cur, change.memory_id, change.operation, actor,
                               policy.update_details(before, change),
                               content=policy.content_after(before, change))
            if INDEXED_FIELDS & change.fields.keys():
                keywords = TermChanges()
                keywords.update(cur, "%s", self._rowid(cur, change.memory_id), before,
                                change.fields)
                apply_changes(cur, "%s", keywords)
            sets = {f: to_db(f, v) for f, v in change.fields.items()} | {"seq": seq}
            if change.vector is not None:
                sets["embedding"] = to_vector(change.vector)
            assignments = sql.SQL(", ").join(
                sql.SQL("{} = %s").format(sql.Identifier(c)) for c in sets
            )
            row = cur.execute(
                sql.SQL("UPDATE memories m SET {} WHERE m.id = %s RETURNING ").format(assignments)
                + sql.SQL(", ".join(f"m.{c}" for c in COLUMNS)),
                [*sets.values(), change.memory_id],
            ).fetchone()
        assert row is not None
        return row_to_memory(row)

    def _update_states(self, states: dict[str, SchedulingState], record: str | None,
                       actor: Actor, details: dict[str, Any] | None) -> None:
        assignments = ", ".join(f"{f} = %s" for f in STATE_FIELDS)
        ids = list(states)
        with self._write() as cur:
            if not record:
                cur.executemany(f"UPDATE memories SET {assignments} WHERE id = %s",
                                [[getattr(states[i], f) for f in STATE_FIELDS] + [i] for i in ids])
                return
            contents = dict(cur.execute(
                "SELECT id, content FROM memories WHERE id = ANY(%s)", (ids,)).fetchall())
            seqs = self._record_many(
                cur, [(i, record, actor, details, contents.get(i)) for i in ids])
            cur.executemany(
                f"UPDATE memories SET {assignments}, seq = %s WHERE id = %s",
                [[getattr(states[i], f) for f in STATE_FIELDS] + [s, i] for i, s in zip(ids, seqs)],
            )

    def delete(self, memory_id: str, actor: Actor, *, purge: bool = False) -> None:
        with self._write() as cur:
            before = self._locked(cur, memory_id)
            if purge:
                cur.execute("UPDATE history SET details = %s WHERE memory_id = %s",
                            (Jsonb(policy.PURGED_DETAILS), memory_id))
            self._record(cur, memory_id, "purge" if purge else "delete", actor,
                         policy.delete_details(before, purge), content=before.content)
            keywords = TermChanges()
            keywords.remove_held(cur, "%s", self._rowid(cur, memory_id))
            apply_changes(cur, "%s", keywords)
            # Edges and pending vectors go with it (ON DELETE CASCADE); the vector is a
            # column of the row itself.
            cur.execute("DELETE FROM memories WHERE id = %s", (memory_id,))
            cur.execute("DELETE FROM session_access WHERE memory_id = %s", (memory_id,))

    def replace_vectors(self, vectors: dict[str, np.ndarray], model_id: str) -> None:
        if not vectors:
            return
        with self._write() as cur:
            dims = vector_sql.column_dims(cur.connection, self.schema)
            ids = list(vectors)
            found = dict(
                cur.execute("SELECT id, content FROM memories WHERE id = ANY(%s)", (ids,)).fetchall()
            )
            for memory_id in ids:
                if memory_id not in found:
                    raise MemoryNotFound(memory_id)
            seqs = self._record_many(
                cur, [(i, "reembed", Actor("reembed"), {"model": model_id}, found[i]) for i in ids]
            )
            fits = [(i, s) for i, s in zip(ids, seqs) if dims in (None, len(vectors[i]))]
            later = [(i, s) for i, s in zip(ids, seqs) if dims not in (None, len(vectors[i]))]
            cur.executemany(
                "UPDATE memories SET embedding = %s, embedding_model = %s, seq = %s WHERE id = %s",
                [(to_vector(vectors[i]), model_id, s, i) for i, s in fits],
            )
            cur.executemany(
                "DELETE FROM pending_vectors WHERE memory_id = %s", [(i,) for i, _ in fits]
            )
            # Another dimension than the column: kept aside until set_embedding_model.
            cur.executemany(
                "INSERT INTO pending_vectors (memory_id, model, embedding) VALUES (%s, %s, %s) "
                "ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, "
                "embedding = excluded.embedding",
                [(i, model_id, to_vector(vectors[i])) for i, _ in later],
            )
            cur.executemany(
                "UPDATE memories SET embedding_model = %s, seq = %s WHERE id = %s",
                [(model_id, s, i) for i, s in later],
            )

    # --- reads -----------------------------------------------------------
    def get(self, memory_id: str) -> Memory | None:
        with self._conn() as conn:
            row = conn.execute(_SELECT + " WHERE m.id = %s", (memory_id,)).fetchone()
        return row_to_memory(row) if row else None

    def get_many(self, memory_ids: list[str]) -> dict[str, Memory]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}
        with self._conn() as conn:
            rows = conn.execute(_SELECT + " WHERE m.id = ANY(%s)", (ids,)).fetchall()
        found = {r[0]: row_to_memory(r) for r in rows}
        return {i: found[i] for i in ids if i in found}

    def _where(self, filters: SearchFilters, now: datetime) -> tuple[str, list[Any]]:
        return where(filters, now, DIALECT)

    def _select(self, filters: SearchFilters, now: datetime, tail: str,
                tail_params: list[Any]) -> list[Memory]:
        where, params = self._where(filters, now)
        with self._conn() as conn:
            rows = conn.execute(f"{_SELECT} WHERE {where} {tail} LIMIT %s OFFSET %s",
                                [*params, *tail_params]).fetchall()
        return [row_to_memory(r) for r in rows]

    def matching_ids(self, memory_ids: list[str], filters: SearchFilters, *, now: datetime) -> set[str]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return set()
        where, params = self._where(filters, now)
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT m.id FROM memories m WHERE m.id = ANY(%s) AND {where}", [ids, *params]
            ).fetchall()
        return {r[0] for r in rows}

    def count(self, filters: SearchFilters | None = None, *, now: datetime | None = None) -> int:
        with self._conn() as conn:
            if filters is None:
                row = conn.execute("SELECT count(*) FROM memories").fetchone()
            else:
                where, params = self._where(filters, now or datetime.now(timezone.utc))
                row = conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params).fetchone()
        assert row is not None
        return int(row[0])

    def iter_memories(self, batch_size: int = 500) -> Iterator[Memory]:
        last = 0
        while True:
            with self._conn() as conn:
                rows = conn.execute(
                    _SELECT.replace("SELECT ", "SELECT m.rowid, ", 1)
                    + " WHERE m.rowid > %s ORDER BY m.rowid LIMIT %s",
                    (last, batch_size),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield row_to_memory(row[1:])
            last = rows[-1][0]

    def stats(self) -> StoreStats:
        with self._conn() as conn:
            by_type = dict(conn.execute("SELECT node_type, count(*) FROM memories GROUP BY node_type").fetchall())
            by_tier = dict(conn.execute("SELECT tier, count(*) FROM memories GROUP BY tier").fetchall())
            row = conn.execute(
                "SELECT (SELECT count(*) FROM memories WHERE embedding IS NOT NULL) "
                "+ (SELECT count(*) FROM pending_vectors p JOIN memories m ON m.id = p.memory_id "
                "   WHERE m.embedding IS NULL), "
                "(SELECT coalesce(max(seq), 0) FROM history), "
                "(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r')",
                (self.schema,),
            ).fetchone()
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        assert row is not None
        return StoreStats(
            url=self._masked,
            backend=self.backend,
            memories=sum(by_type.values()),
            by_node_type=by_type,
            by_tier=by_tier,
            vectors=int(row[0]),
            embedding_model=meta.get("embedding_model"),
            embedding_dims=int(meta["embedding_dims"]) if meta.get("embedding_dims") else None,
            last_seq=int(row[1]),
            schema_version=self.schema_version,
            size_bytes=int(row[2]),
        )
