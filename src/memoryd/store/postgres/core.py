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

Connections, transactions (ordered by an advisory lock) and the store URL's own
parameters are :mod:`memoryd.store.postgres.database`'s; the parts of the store
(``store.work``, ``store.domains``, ...) are built over the same database handle.

Backups are logical: ``store.transfer.backup`` writes every table's rows as
JSON lines from one consistent snapshot (see :mod:`memoryd.store.rows`), and
``store.transfer.restore`` reads them back. This needs no ``pg_dump`` on the
machine; for large production databases use PostgreSQL's own tools (``pg_dump``,
base backups with WAL archiving) instead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memoryd.errors import MemoryNotFound, StoreError
from memoryd.models import Memory, SchedulingState, SearchFilters, StoreStats, VectorHit
from memoryd.store import policy
from memoryd.store.base import Actor, Store
from memoryd.store.change import Recorded
from memoryd.store.postgres import domains, search
from memoryd.store.postgres import schema as schema_mod
from memoryd.store.postgres import vectors as vector_sql
from memoryd.store.postgres.codec import COLUMNS, row_to_memory, to_db, to_vector
from memoryd.store.postgres.database import PostgresDatabase, split_url
from memoryd.store.postgres.transfer import PostgresTransfer
from memoryd.store.rows import MEMORY_FIELDS, STATE_FIELDS
from memoryd.store.keyword_index import KeywordCache
from memoryd.store.terms import INDEXED_FIELDS, TermChanges, apply_changes

__all__ = ["PostgresStore", "split_url"]

_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in COLUMNS) + " FROM memories m"


class PostgresStore(Store):
    """A memoryd store in a PostgreSQL database with the pgvector extension.

    >>> store = PostgresStore("postgresql://memoryd@db.internal/memoryd")
    """

    backend = "postgresql"
    overlapping_sides = True
    driver_errors = (psycopg.Error,)

    def __init__(self, url: str, *, ef_search: int = 128, create: bool = True,
                 pool_min: int | None = None, pool_max: int | None = None,
                 keyword_index: bool = True,
                 keyword_index_until: threading.Event | None = None) -> None:
        db = PostgresDatabase(url, ef_search=ef_search, create=create, pool_min=pool_min,
                              pool_max=pool_max)
        super().__init__(db, assign=domains.assign, transfer=PostgresTransfer(db))
        #: The PostgreSQL schema holding the store's tables (``?schema=`` of the URL).
        self.schema = db.schema
        self.keyword_cache = KeywordCache(db, enabled=keyword_index)
        self.keyword_cache.open(until=keyword_index_until)

    def close(self) -> None:
        self.keyword_cache.close()
        self.db.close()

    def health(self) -> dict[str, Any]:
        try:
            (count,) = self.db.rows("SELECT count(*) FROM memories")[0]
        except (psycopg.Error, StoreError) as exc:
            raise StoreError(f"store at {self.db.masked_url} is unusable: {exc}") from exc
        return {"backend": self.backend, "url": self.db.masked_url, "schema": self.db.schema,
                "memories": count, "ok": True}

    def set_embedding_model(self, model_id: str, dims: int) -> None:
        with self.db.write() as cur:
            vector_sql.set_model(cur, self.db.schema, model_id, dims)

    # --- writes ----------------------------------------------------------
    def _insert(self, memories: list[Memory], vectors: np.ndarray | None, actor: Actor,
                operation: str) -> list[Memory]:
        cols = COLUMNS + ("embedding",)
        statement = f"INSERT INTO memories ({', '.join(cols)}) VALUES ({self.db.marks(len(cols))})"
        with self.db.write() as cur:
            if vectors is not None and self.db.meta("embedding_model") is None:
                raise StoreError("set_embedding_model before storing vectors")
            ids = [m.id for m in memories]
            row = cur.execute("SELECT id FROM memories WHERE id = ANY(%s) LIMIT 1",
                              (ids,)).fetchone()
            if row is not None:
                raise StoreError(f"memory {row[0]} already exists")
            seqs = self.db.record(cur, [Recorded(m.id, operation, actor, policy.create_details(m),
                                                 m.content) for m in memories])
            out = [m.model_copy(update={"seq": s}) for m, s in zip(memories, seqs)]
            cur.executemany(statement, [
                [to_db(f, getattr(m, f)) for f in MEMORY_FIELDS]
                + [getattr(m.state, f) for f in STATE_FIELDS]
                + [m.seq, None if vectors is None else to_vector(vectors[i])]
                for i, m in enumerate(out)
            ])
            rowids = self._rowids(cur, ids)
            keywords = TermChanges()
            for m in out:
                keywords.add(rowids[m.id], m.content, m.summary, m.tags, m.metadata)
            apply_changes(cur, "%s", keywords)
        return out

    @staticmethod
    def _rowids(cur: psycopg.Cursor[Any], ids: Sequence[str]) -> dict[str, int]:
        return dict(cur.execute("SELECT id, rowid FROM memories WHERE id = ANY(%s)",
                                (list(ids),)).fetchall())

    @staticmethod
    def _locked(cur: psycopg.Cursor[Any], memory_id: str) -> Memory:
        row = cur.execute(_SELECT + " WHERE m.id = %s FOR UPDATE", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        return row_to_memory(row)

    def _update(self, change: policy.Change, actor: Actor) -> Memory:
        with self.db.write() as cur:
            before = self._locked(cur, change.memory_id)
            [seq] = self.db.record(cur, [Recorded(
                change.memory_id, change.operation, actor, policy.update_details(before, change),
                policy.content_after(before, change))])
            if INDEXED_FIELDS & change.fields.keys():
                keywords = TermChanges()
                keywords.update(cur, "%s", self._rowids(cur, [change.memory_id])[change.memory_id],
                                before, change.fields)
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
        with self.db.write() as cur:
            if not record:
                cur.executemany(f"UPDATE memories SET {assignments} WHERE id = %s",
                                [[getattr(states[i], f) for f in STATE_FIELDS] + [i] for i in ids])
                return
            contents = self._contents(cur, ids)
            seqs = self.db.record(cur, [Recorded(i, record, actor, details, contents.get(i))
                                        for i in ids])
            cur.executemany(
                f"UPDATE memories SET {assignments}, seq = %s WHERE id = %s",
                [[getattr(states[i], f) for f in STATE_FIELDS] + [s, i] for i, s in zip(ids, seqs)],
            )

    @staticmethod
    def _contents(cur: psycopg.Cursor[Any], ids: list[str]) -> dict[str, str]:
        return dict(cur.execute("SELECT id, content FROM memories WHERE id = ANY(%s)",
                                (ids,)).fetchall())

    def delete(self, memory_id: str, actor: Actor, *, purge: bool = False) -> None:
        with self.db.write() as cur:
            before = self._locked(cur, memory_id)
            if purge:
                cur.execute("UPDATE history SET details = %s WHERE memory_id = %s",
                            (Jsonb(policy.PURGED_DETAILS), memory_id))
            self.db.record(cur, [Recorded(memory_id, "purge" if purge else "delete", actor,
                                          policy.delete_details(before, purge), before.content)])
            keywords = TermChanges()
            keywords.remove_held(cur, "%s", self._rowids(cur, [memory_id])[memory_id])
            apply_changes(cur, "%s", keywords)
            # Edges and pending vectors go with it (ON DELETE CASCADE); the vector is a
            # column of the row itself.
            cur.execute("DELETE FROM memories WHERE id = %s", (memory_id,))
            cur.execute("DELETE FROM session_access WHERE memory_id = %s", (memory_id,))

    def replace_vectors(self, vectors: dict[str, np.ndarray], model_id: str) -> None:
        if not vectors:
            return
        with self.db.write() as cur:
            dims = vector_sql.column_dims(cur.connection, self.db.schema)
            ids = list(vectors)
            found = self._contents(cur, ids)
            for memory_id in ids:
                if memory_id not in found:
                    raise MemoryNotFound(memory_id)
            seqs = self.db.record(cur, [Recorded(i, "reembed", Actor("reembed"),
                                                 {"model": model_id}, found[i]) for i in ids])
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

    def mark_accessed(self, session_id: str, memory_ids: list[str], at: datetime) -> set[str]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return set()
        with self.db.write(lock=False) as cur:
            rows = cur.execute(
                "INSERT INTO session_access (session_id, memory_id, at) "
                "SELECT %s, x, %s FROM unnest(%s::text[]) AS x "
                "ON CONFLICT DO NOTHING RETURNING memory_id",
                (session_id, at, ids),
            ).fetchall()
        return {r[0] for r in rows}

    # --- vectors ---------------------------------------------------------
    def _vector_search(self, vector: np.ndarray, filters: SearchFilters, now: datetime,
                       limit: int) -> list[VectorHit]:
        return search.nearest(self.db, vector, filters, now, limit)

    def cosines(self, memory_ids: Sequence[str], vector: np.ndarray) -> dict[str, float]:
        ids = list(dict.fromkeys(memory_ids))
        out = search.cosines(self.db, ids, vector) if ids else {}
        rest = [i for i in ids if i not in out]  # e.g. a vector waiting for a re-embed
        if rest:
            out.update(super().cosines(rest, vector))
        return out

    def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        ids = list(dict.fromkeys(memory_ids))
        return search.vectors(self.db, ids) if ids else {}

    def stats(self) -> StoreStats:
        with self.db.read() as conn:
            by_type = dict(conn.execute(
                "SELECT node_type, count(*) FROM memories GROUP BY node_type").fetchall())
            by_tier = dict(conn.execute(
                "SELECT tier, count(*) FROM memories GROUP BY tier").fetchall())
            row = conn.execute(
                "SELECT (SELECT count(*) FROM memories WHERE embedding IS NOT NULL) "
                "+ (SELECT count(*) FROM pending_vectors p JOIN memories m ON m.id = p.memory_id "
                "   WHERE m.embedding IS NULL), "
                "(SELECT coalesce(max(seq), 0) FROM history), "
                "(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r')",
                (self.db.schema,),
            ).fetchone()
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        assert row is not None
        return StoreStats(
            url=self.db.masked_url, backend=self.backend, memories=sum(by_type.values()),
            by_node_type=by_type, by_tier=by_tier, vectors=int(row[0]),
            embedding_model=meta.get("embedding_model"),
            embedding_dims=int(meta["embedding_dims"]) if meta.get("embedding_dims") else None,
            last_seq=int(row[1]), schema_version=self.db.schema_version, size_bytes=int(row[2]),
        )

    # --- maintenance -------------------------------------------------------
    @contextmanager
    def maintenance_lock(self, name: str) -> Iterator[bool]:
        """Hold a named lock across servers for a maintenance job (e.g. consolidation).

        Yields False at once, without waiting, when another process holds it:

        >>> with store.maintenance_lock("consolidate") as mine:
        ...     if mine: run_consolidation()
        """
        with self.db.read() as conn:
            # Advisory locks span the whole server: name the database too, so two stores
            # in different databases never hold each other's locks.
            key = schema_mod.lock_key(f"{conn.info.dbname}/{self.db.schema}",
                                      f"maintenance:{name}")
            (got,) = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()  # type: ignore[misc]
            try:
                yield bool(got)
            finally:
                if got:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
