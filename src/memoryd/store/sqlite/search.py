"""Search in the SQLite store: keyword candidates from the term tables
(:mod:`memoryd.store.terms`), and vector candidates from an in-memory index (exact below ``hnsw_threshold`` vectors, an HNSW graph above) that caches the
``memory_vectors`` table.

A mixin of SQLiteStore. The index is caught up by change sequence number before each
search, so vectors written by another process become searchable too; an HNSW graph saved
beside the file is reused (and repaired) on open when it matches the table.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from memoryd.errors import StoreError
from memoryd.models import SearchFilters
from memoryd.retrieval.bm25 import Candidate, CorpusStats
from memoryd.store.base import VectorHit
from memoryd.store.terms import (
    FIRST_PASS,
    CandidateQuery,
    candidates_from_rows,
    candidates_sql,
    corpus_stats,
    frequencies_sql,
)
from memoryd.store.sqlite.vector_index import VectorIndex

# Filtered vector search is exact when the filter allows at most this many rows.
EXACT_FILTER_ROWS = 5_000


class SQLiteSearch:
    """Keyword and vector candidates and vectors of SQLiteStore, and its vector index."""

    path: Path
    _index: VectorIndex | None
    _index_lock: threading.Lock
    _vector_seq: int
    _hnsw_threshold: int
    _ef_search: int
    embedding_dims: int | None

    _conn: sqlite3.Connection  # these three are SQLiteStore's
    _where: Callable[[SearchFilters, datetime], tuple[str, list[Any]]]

    def _corpus_stats(self, terms: list[str]) -> CorpusStats:
        return corpus_stats(self._conn, "?", terms)

    def _keyword_candidates(self, query: CandidateQuery, filters: SearchFilters, now: datetime,
                            limit: int) -> list[Candidate]:
        where, params = self._where(filters, now)
        head = query.head_params()
        rows = self._conn.execute(candidates_sql(query, where, "?", first_pass=True),
                                  [*head, max(FIRST_PASS, limit), *params, limit]).fetchall()
        found = candidates_from_rows(rows, scored=True)
        if len(found) < limit:
            # The filters removed too many of the best matches: rank every allowed one.
            rows = self._conn.execute(candidates_sql(query, where, "?", first_pass=False),
                                      [*head, *params, limit]).fetchall()
            found = candidates_from_rows(rows, scored=True)
        return found

    def _term_frequencies(self, memory_ids: list[str], terms: list[str]) -> list[Candidate]:
        out: list[Candidate] = []
        for chunk in _chunks(memory_ids, 500):
            rows = self._conn.execute(frequencies_sql(terms, chunk, "?"), [*terms, *chunk])
            out.extend(candidates_from_rows(rows.fetchall(), scored=False))
        return out

    def _vector_search(self, vector: np.ndarray, filters: SearchFilters, now: datetime,
                       limit: int) -> list[VectorHit]:
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
                     "session_id", "domains", "speaker")
    )


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
