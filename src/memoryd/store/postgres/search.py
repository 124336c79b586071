"""Search in the PostgreSQL store: keyword candidates from the term tables
(:mod:`memoryd.store.terms`, the same SQL as SQLite's), vector candidates from pgvector's HNSW
index. A mixin of PostgresStore."""

from __future__ import annotations

import math
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Callable, Sequence

import numpy as np
import psycopg

from memoryd.errors import StoreError
from memoryd.models import SearchFilters
from memoryd.retrieval.bm25 import Candidate, CorpusStats
from memoryd.store.base import VectorHit
from memoryd.store.postgres.codec import to_vector
from memoryd.store.terms import (
    FIRST_PASS,
    CandidateQuery,
    candidates_from_rows,
    candidates_sql,
    corpus_stats,
    frequencies_sql,
)


class PostgresSearch:
    """Keyword and vector candidates and vectors of PostgresStore."""

    _ef_search: int

    _conn: Callable[[], AbstractContextManager[psycopg.Connection[Any]]]  # PostgresStore's
    _where: Callable[[SearchFilters, datetime], tuple[str, list[Any]]]

    def _corpus_stats(self, terms: list[str]) -> CorpusStats:
        with self._conn() as conn:
            return corpus_stats(conn, "%s", terms)

    def _keyword_candidates(self, query: CandidateQuery, filters: SearchFilters, now: datetime,
                            limit: int) -> list[Candidate]:
        where, params = self._where(filters, now)
        head = query.head_params()
        with self._conn() as conn:
            rows = conn.execute(
                candidates_sql(query, where, "%s", first_pass=True, collate=' COLLATE "C"'),
                [*head, max(FIRST_PASS, limit), *params, limit]).fetchall()
            found = candidates_from_rows(rows, scored=True)
            if len(found) < limit:
                # The filters removed too many of the best matches: rank every allowed one.
                rows = conn.execute(
                    candidates_sql(query, where, "%s", first_pass=False, collate=' COLLATE "C"'),
                    [*head, *params, limit]).fetchall()
                found = candidates_from_rows(rows, scored=True)
        return found

    def _term_frequencies(self, memory_ids: list[str], terms: list[str]) -> list[Candidate]:
        with self._conn() as conn:
            rows = conn.execute(frequencies_sql(terms, memory_ids, "%s"),
                                [*terms, *memory_ids]).fetchall()
        return candidates_from_rows(rows, scored=False)

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

    def cosines(self, memory_ids: Sequence[str], vector: np.ndarray) -> dict[str, float]:
        """Cosines computed by pgvector, as the vector side computes them (fetching and
        parsing the vectors in Python took most of the keyword side's time at 100k)."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}
        query = np.asarray(vector, dtype=np.float32)
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT m.id, 1 - (m.embedding <=> %s) FROM memories m "
                "WHERE m.id = ANY(%s) AND m.embedding IS NOT NULL "
                "AND vector_dims(m.embedding) = %s",
                (to_vector(query), ids, int(query.shape[0])),
            ).fetchall()
        out = {r[0]: float(r[1]) for r in rows if r[1] is not None and not math.isnan(r[1])}
        rest = [i for i in ids if i not in out]  # e.g. a vector waiting for a re-embed
        if rest:
            out.update(super().cosines(rest, vector))  # type: ignore[misc]
        return out

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


