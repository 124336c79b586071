"""PostgreSQL-only helpers of the scale benchmark: bulk-load index handling and a one-round-trip
hybrid query to compare with memoryd's own search path. They use the store's connection and
are not part of the store contract."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
from psycopg import sql

from memoryd.models import SearchFilters
from memoryd.retrieval.fts import query_terms
from memoryd.retrieval.fusion import Fused
from memoryd.store.postgres import vectors as vector_sql
from memoryd.store.postgres import PostgresStore
from memoryd.store.filters import where as sql_where

# The ts_rank ranking the PostgreSQL store used before memoryd kept its own keyword index
# (content A 1.0, summary B and tags C 0.5; normalisation 1 = divide by 1 + log(length)); the
# tsvector column it reads is still maintained. Kept here for the one-query what-if only.
RANK_WEIGHTS = "{0.1, 0.5, 0.5, 1.0}"
RANK_NORMALIZATION = 1


def tsquery_text(text: str) -> str | None:
    """A ``to_tsquery`` expression for free text: its words, quoted, joined by OR."""
    terms = query_terms(text) or query_terms(text, keep_stopwords=True)
    return " | ".join(f"'{t}'" for t in terms) if terms else None


def drop_vector_index(store: PostgresStore) -> None:
    """Drop the HNSW index (before a large bulk load); rebuild with build_vector_index."""
    with store.db.write() as cur:
        cur.execute(sql.SQL("DROP INDEX IF EXISTS {}.memories_embedding_hnsw").format(
            sql.Identifier(store.db.schema)))


def build_vector_index(store: PostgresStore, *, maintenance_work_mem: str = "1GB",
                       workers: int = 2) -> None:
    """(Re)build the HNSW index, with more memory and parallel workers than a plain insert."""
    with store.db.write() as cur:
        cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
        cur.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)",
                    (str(workers),))
        vector_sql.create_vector_index(cur, store.db.schema)


def hybrid_search(store: PostgresStore, text: str, vector: np.ndarray, filters: SearchFilters, *,
                  now: datetime, limit: int, pool: int = 50, k: int = 60,
                  keyword_weight: float = 1.0, vector_weight: float = 1.0) -> list[Fused]:
    """Keyword and vector candidates fused by RRF in one SQL round trip (the same candidates,
    weights and tie order as memoryd.retrieval.fusion.reciprocal_rank_fusion)."""
    where, params = sql_where(filters, now, store.db.dialect)
    query = tsquery_text(text)
    statement = (
        "WITH kw AS (SELECT m.id, m.rowid, ts_rank(%s::float4[], m.search_vec, q, "
        f"{RANK_NORMALIZATION}) AS score FROM memories m, to_tsquery('english', %s) q "
        f"WHERE %s::text IS NOT NULL AND m.search_vec @@ q AND {where} "
        "ORDER BY score DESC, m.rowid LIMIT %s), "
        "kwr AS (SELECT id, score, row_number() OVER (ORDER BY score DESC, rowid) AS rank FROM kw), "
        "vec AS MATERIALIZED (SELECT m.id, m.embedding <=> %s AS distance FROM memories m "
        f"WHERE m.embedding IS NOT NULL AND {where} ORDER BY distance LIMIT %s), "
        "vecr AS (SELECT id, 1 - distance AS sim, row_number() OVER (ORDER BY distance) AS rank "
        "FROM vec), "
        "fused AS (SELECT coalesce(kwr.id, vecr.id) AS id, "
        "coalesce(%s::float8 / (%s + kwr.rank), 0) + coalesce(%s::float8 / (%s + vecr.rank), 0) "
        "AS fused, kwr.rank AS kw_rank, kwr.score AS kw_score, vecr.rank AS vec_rank, vecr.sim "
        "FROM kwr FULL OUTER JOIN vecr ON kwr.id = vecr.id) "
        "SELECT id, fused, kw_rank, kw_score, vec_rank, sim, "
        "(SELECT count(*) FROM kwr), (SELECT count(*) FROM vecr) FROM fused "
        "ORDER BY fused DESC, kw_rank IS NULL, kw_rank, vec_rank LIMIT %s"
    )
    args: list[Any] = [RANK_WEIGHTS, query or "", query, *params, pool,
                       np.asarray(vector, dtype=np.float32), *params, pool,
                       keyword_weight, k, vector_weight, k, limit]
    with store.db.read() as conn, conn.transaction():
        if pool > store.db.ef_search:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(pool),))
        rows = conn.execute(statement, args).fetchall()
    if not rows:
        return []
    best = (keyword_weight if rows[0][6] else 0.0) + (vector_weight if rows[0][7] else 0.0)
    scale = (k + 1) / best if best > 0 else 1.0
    return [
        Fused(memory_id=r[0], fused=float(r[1]) * scale, keyword_rank=r[2],
              keyword_score=None if r[3] is None else float(r[3]), semantic_rank=r[4],
              semantic_similarity=None if r[5] is None else float(r[5]))
        for r in rows
    ]
