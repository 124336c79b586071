"""Search in the PostgreSQL store: keyword candidates from the generated ``tsvector`` column
(GIN index), vector candidates from pgvector's HNSW index. A mixin of PostgresStore."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Callable

import numpy as np
import psycopg

from memoryd.errors import StoreError
from memoryd.models import SearchFilters
from memoryd.retrieval.fts import query_terms
from memoryd.store.base import KeywordHit, VectorHit
from memoryd.store.postgres_codec import to_vector

# ts_rank weights for labels {D, C, B, A}: content (A) 1.0, summary (B) and tags (C)
# 0.5 each, as the SQLite backend weighs its FTS5 columns. ts_rank, not ts_rank_cd: an
# OR query ranks every match (13% of a 100k store for a median bench query), and the
# cover-density rank cost 1.7x as much there (bench/results/scale_100000.md).
RANK_WEIGHTS = "{0.1, 0.5, 0.5, 1.0}"
# Rank normalisation 1: divide by 1 + log(document length), a mild length penalty.
RANK_NORMALIZATION = 1


def tsquery_text(text: str) -> str | None:
    """A ``to_tsquery`` expression for free text: its words, quoted, joined by OR.

    Words are ``\\w+`` tokens (as for SQLite's FTS5), so no operator or quote of the user's
    text ever reaches the query parser.
    """
    terms = query_terms(text) or query_terms(text, keep_stopwords=True)
    if not terms:
        return None
    return " | ".join(f"'{t}'" for t in terms)


class PostgresSearch:
    """keyword_search, vector_search and vectors of PostgresStore."""

    _ef_search: int

    _conn: Callable[[], AbstractContextManager[psycopg.Connection[Any]]]  # PostgresStore's
    _where: Callable[[SearchFilters, datetime], tuple[str, list[Any]]]

    def _keyword_search(self, text: str, filters: SearchFilters, now: datetime,
                        limit: int) -> list[KeywordHit]:
        query = tsquery_text(text)
        if query is None:
            return []
        where, params = self._where(filters, now)
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT m.id, ts_rank(%s::float4[], m.search_vec, q, {RANK_NORMALIZATION}) AS score "
                f"FROM memories m, to_tsquery('english', %s) q "
                f"WHERE m.search_vec @@ q AND {where} ORDER BY score DESC, m.rowid LIMIT %s",
                [RANK_WEIGHTS, query, *params, limit],
            ).fetchall()
        return [KeywordHit(memory_id=r[0], score=float(r[1])) for r in rows]

    def _vector_search(self, vector: np.ndarray, filters: SearchFilters, now: datetime,
                       limit: int) -> list[VectorHit]:
        if limit < 1:
            return []
        where, params = self._where(filters, now)
        query = to_vector(vector)
        statement = (
            "WITH hits AS MATERIALIZED ("
            "SELECT m.id, m.embedding <=> %s AS distance FROM memories m "
            f"WHERE m.embedding IS NOT NULL AND {where} ORDER BY distance LIMIT %s) "
            "SELECT id, 1 - distance FROM hits ORDER BY distance"
        )
        try:
            with self._conn() as conn, conn.transaction():
                if limit > self._ef_search:
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(limit),))
                rows = conn.execute(statement, [query, *params, limit]).fetchall()
        except psycopg.errors.DataException as exc:
            raise StoreError(f"vector search failed: {exc}") from exc
        return [VectorHit(memory_id=r[0], similarity=float(r[1])) for r in rows]

    def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT m.id, coalesce(p.embedding, m.embedding::vector) FROM memories m "
                "LEFT JOIN pending_vectors p ON p.memory_id = m.id "
                "WHERE m.id = ANY(%s) AND (m.embedding IS NOT NULL OR p.embedding IS NOT NULL)",
                (ids,),
            ).fetchall()
        return {r[0]: to_vector(r[1]) for r in rows}


