"""Vector search in the PostgreSQL store: pgvector's HNSW index over the ``embedding``
column (similarity is ``1 - cosine distance``), cosines computed in the database, and the
stored vectors (a vector waiting in ``pending_vectors`` for a re-embed included)."""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import psycopg

from memoryd.errors import StoreError
from memoryd.models import SearchFilters, VectorHit
from memoryd.store.filters import where
from memoryd.store.postgres.codec import to_vector
from memoryd.store.postgres.database import PostgresDatabase


def nearest(db: PostgresDatabase, vector: np.ndarray, filters: SearchFilters, now: datetime,
            limit: int) -> list[VectorHit]:
    """The nearest neighbours passing the filters, most similar first."""
    if limit < 1:
        return []
    clause, params = where(filters, now, db.dialect)
    statement = (
        "WITH hits AS MATERIALIZED ("
        "SELECT m.id, m.embedding <=> %s AS distance FROM memories m "
        f"WHERE m.embedding IS NOT NULL AND {clause} ORDER BY distance LIMIT %s) "
        "SELECT id, 1 - distance FROM hits ORDER BY distance"
    )
    args = [to_vector(vector), *params, limit]
    try:
        with db.read() as conn:
            if limit > db.ef_search:  # a wider search for this statement alone
                with conn.transaction():
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(limit),))
                    rows = conn.execute(statement, args).fetchall()
            else:  # no transaction: BEGIN and COMMIT would be two more round trips
                rows = conn.execute(statement, args).fetchall()
    except psycopg.errors.DataException as exc:
        raise StoreError(f"vector search failed: {exc}") from exc
    return [VectorHit(memory_id=r[0], similarity=float(r[1])) for r in rows]


def cosines(db: PostgresDatabase, memory_ids: list[str], vector: np.ndarray) -> dict[str, float]:
    """Cosines computed by pgvector, as the vector side computes them (fetching and parsing
    the vectors in Python took most of the keyword side's time at 100k); memories whose
    vector is not in the column (e.g. one waiting for a re-embed) are left out."""
    query = np.asarray(vector, dtype=np.float32)
    rows = db.rows(
        "SELECT m.id, 1 - (m.embedding <=> %s) FROM memories m "
        "WHERE m.id = ANY(%s) AND m.embedding IS NOT NULL AND vector_dims(m.embedding) = %s",
        (to_vector(query), memory_ids, int(query.shape[0])))
    return {r[0]: float(r[1]) for r in rows if r[1] is not None and not math.isnan(r[1])}


def vectors(db: PostgresDatabase, memory_ids: list[str]) -> dict[str, np.ndarray]:
    """Stored vectors of the given memories."""
    rows = db.rows(
        "SELECT m.id, coalesce(p.embedding, m.embedding::vector) FROM memories m "
        "LEFT JOIN pending_vectors p ON p.memory_id = m.id "
        "WHERE m.id = ANY(%s) AND (m.embedding IS NOT NULL OR p.embedding IS NOT NULL)",
        (memory_ids,))
    return {r[0]: to_vector(r[1]) for r in rows}
