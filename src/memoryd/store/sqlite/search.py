"""Vector search in the SQLite store: the ``memory_vectors`` table and the in-memory index
that caches it (exact below ``hnsw_threshold`` vectors, an HNSW graph above).

The index is caught up by change sequence number after every commit and before each
search, so vectors written by another process become searchable too; an HNSW graph saved
beside the file is reused (and repaired) on open when it matches the table. The store's
core and its transfer part share one :class:`VectorCache`, handed to each when the store is
built. Opening a store loads the index on a thread of its own (reading 100,000 vectors and a
saved graph takes about a second); whatever reads the index meanwhile waits for it.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.errors import StoreError
from memoryd.heap import release_free_memory
from memoryd.models import SearchFilters, VectorHit
from memoryd.store.filters import where
from memoryd.store.sqlite import saved_vectors
from memoryd.store.sqlite.database import SQLiteDatabase
from memoryd.store.sqlite.vector_index import VectorIndex

# Filtered vector search is exact when the filter allows at most this many rows.
EXACT_FILTER_ROWS = 5_000
# Vectors read from the table per query while the index catches up.
_SYNC_PAGE = 10_000


class VectorCache:
    """The in-memory vector index of an SQLite store, kept in step with its table."""

    def __init__(self, db: SQLiteDatabase, *, hnsw_threshold: int = 20_000,
                 ef_search: int = 128) -> None:
        self.db = db
        self._index: VectorIndex | None = None
        self._loader: threading.Thread | None = None
        self._closing = threading.Event()  # a load still waiting for its signal gives up
        self._lock = threading.Lock()
        self._vector_seq = 0
        self._hnsw_threshold = hnsw_threshold
        self._ef_search = ef_search
        self._graph_paused = False
        db.on_commit(self._committed)

    @property
    def hnsw_path(self) -> Path:
        """Where the HNSW graph is saved."""
        return self.db.path.with_name(self.db.path.name + ".hnsw.usearch")

    @property
    def hnsw_meta_path(self) -> Path:
        """What the saved graph holds (the vector seq and count it was saved at)."""
        return self.db.path.with_name(self.db.path.name + ".hnsw.json")

    @property
    def vectors_path(self) -> Path:
        """Where the index's float32 vectors are saved with the graph (saved_vectors)."""
        return self.db.path.with_name(self.db.path.name + ".hnsw.vectors")

    @property
    def index(self) -> VectorIndex | None:
        """The in-memory index (once a load started by :meth:`open` has finished)."""
        self._wait()
        return self._index

    @index.setter
    def index(self, value: VectorIndex | None) -> None:
        self._wait()
        self._index = value

    @property
    def loaded(self) -> bool:
        """False while :meth:`open` is loading the index in the background."""
        loader = self._loader
        return loader is None or not loader.is_alive()

    def wait(self) -> None:
        """Return once a load started by :meth:`open` has finished."""
        self._wait()

    def _wait(self) -> None:
        loader = self._loader
        if loader is not None and loader is not threading.current_thread():
            loader.join()

    def _committed(self, removed: list[int]) -> None:
        if self.index is not None and removed:
            self.index.remove(removed)
        self.sync()

    def _dims(self) -> int | None:
        value = self.db.meta("embedding_dims")
        return int(value) if value else None

    def open(self, *, background: bool = False, until: threading.Event | None = None) -> None:
        """Load the index of the store's vectors (when it has a model); ``background``: on a
        thread of its own, while readers of the index wait for it, and there once ``until``
        is set, if given (or the cache closes: then nothing loads)."""
        dims = self._dims()
        if not dims:
            return
        if not background:
            self.load(dims)
            return
        self._wait()
        self._loader = threading.Thread(target=self._load_quietly, args=(dims, until),
                                        name="memoryd-vector-index")
        self._loader.start()

    def _load_quietly(self, dims: int, until: threading.Event | None = None) -> None:
        while until is not None and not until.wait(0.05):
            if self._closing.is_set():
                return
        try:
            self.load(dims)
        except Exception:  # the next reader loads it again and meets the error itself
            self._index = None

    def load(self, dims: int) -> None:
        """Rebuild the in-memory index from the table; reuse (and repair) a saved graph."""
        self._wait()  # for a load running in the background, before taking the lock it takes
        saved = self._read_hnsw_meta()
        with self._lock:
            self.index = VectorIndex(dims, hnsw_threshold=self._hnsw_threshold,
                                     ef_search=self._ef_search)
            self._vector_seq = 0
            if not self._adopt_saved_vectors(saved, dims):
                self.index.reserve(self.db.rows("SELECT count(*) FROM memory_vectors")[0][0])
        self.sync(build_graph=False)
        reused = False
        if saved is not None and isinstance(saved.get("vector_seq"), int):
            # Vectors written after the graph was saved (by any process, or before a crash).
            changed = [r[0] for r in self.db.rows(
                "SELECT memory_rowid FROM memory_vectors WHERE seq > ?", (saved["vector_seq"],))]
            reused = self.index.load_hnsw(self.hnsw_path, changed=changed)
            if reused and (saved["vector_seq"], saved.get("count")) != (self._vector_seq,
                                                                        len(self.index)):
                self.save()  # repaired: save, so the next open does not repeat it
        if not reused:
            self.index.ensure_hnsw()
            self.save()  # so that a crash does not cost a rebuild next time
        release_free_memory()  # the pages of rows read and freed while loading

    def _adopt_saved_vectors(self, saved: dict[str, Any] | None, dims: int) -> bool:
        """Fill the new index from the saved vectors when the table still holds exactly what
        they were saved from: the same last sequence number (every write of a vector takes a
        new one) and the same count and sums of the rows' sequence numbers and row ids (a
        delete changes them, and so does a bulk import, whose rows keep older numbers)."""
        if not saved or not isinstance(saved.get("vectors"), list) or not isinstance(
                saved.get("vector_seq"), int):
            return False
        last_seq = self.db.rows("SELECT coalesce(max(seq), 0) FROM memory_vectors")[0][0]
        fingerprint = self._fingerprint(dims)
        if (last_seq, fingerprint) != (saved["vector_seq"], [saved.get("count"), *saved["vectors"]]):
            return False
        found = saved_vectors.read(self.vectors_path, fingerprint[0], dims)
        if found is None:
            return False
        assert self._index is not None
        self._index.adopt(*found)
        self._vector_seq = last_seq
        return True

    def _fingerprint(self, dims: int, up_to: int | None = None) -> list[int]:
        """Count, sum of sequence numbers and sum of row ids of the table's vectors of
        ``dims`` (those up to sequence number ``up_to`` when given)."""
        clause, params = ("AND seq <= ?", (dims, up_to)) if up_to is not None else ("", (dims,))
        row = self.db.rows("SELECT count(*), coalesce(sum(seq), 0), coalesce(sum(memory_rowid), 0) "
                           f"FROM memory_vectors WHERE dims = ? {clause}", params)[0]
        return [int(v) for v in row]

    def reload(self, dims: int) -> None:
        """Load the index anew unless it already has ``dims`` (a model change)."""
        if self.index is None or self.index.dims != dims:
            self.load(dims)

    def sync(self, *, build_graph: bool = True) -> None:
        """Apply vectors written since the last sync (by any process) to the index."""
        if self.index is None:
            dims = self._dims()
            if dims:
                self.load(dims)
            return
        with self._lock:
            index = self._index
            assert index is not None
            # A page at a time: a first load of 100,000 vectors never holds the table's rows,
            # their joined bytes and the matrix at once (the process would keep the peak).
            while True:
                rows = self.db.rows("SELECT memory_rowid, vector, seq, dims FROM memory_vectors "
                                    "WHERE seq > ? ORDER BY seq LIMIT ?",
                                    (self._vector_seq, _SYNC_PAGE))
                if not rows:
                    return
                last_seq = rows[-1][2]
                # Vectors of another dimension belong to an unfinished re-embed; they are
                # loaded when the store switches models (set_embedding_model reloads).
                rows = [r for r in rows if r[3] == index.dims]
                if rows:
                    self._apply(rows, build_graph)
                self._vector_seq = last_seq

    def _apply(self, rows: list[tuple[Any, ...]], build_graph: bool) -> None:
        assert self.index is not None
        keys = [r[0] for r in rows]
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), -1)
        if matrix.shape[1] != self.index.dims:
            raise StoreError("stored vectors have a different dimension than the index")
        if not build_graph:
            threshold, self.index.hnsw_threshold = self.index.hnsw_threshold, 0
            self.index.upsert(keys, matrix)
            self.index.hnsw_threshold = threshold
        else:
            self.index.upsert(keys, matrix)

    def _read_hnsw_meta(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.hnsw_meta_path.read_text())
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        """Give up a load still waiting for its signal, then save the graph (:meth:`save`)."""
        self._closing.set()
        self.save()

    def save(self) -> None:
        """Save the HNSW graph beside the file (when there is one)."""
        index = self.index
        if index is None or not index.uses_hnsw:
            return
        before = self._read_hnsw_meta()
        meta: dict[str, Any] = {"vector_seq": self._vector_seq, "count": len(index)}
        keys, matrix = index.live()
        count, seq_sum, rowid_sum = self._fingerprint(index.dims, up_to=self._vector_seq)
        if (count, rowid_sum) == (len(keys), int(keys.sum())):  # the index is the table's
            meta["vectors"] = [seq_sum, rowid_sum]
        try:
            self.hnsw_meta_path.unlink(missing_ok=True)
            if index.save_hnsw(self.hnsw_path):
                if "vectors" not in meta:
                    self.vectors_path.unlink(missing_ok=True)
                elif before != meta or not self.vectors_path.exists():  # else still current
                    saved_vectors.write(self.vectors_path, keys, matrix)
                self.hnsw_meta_path.write_text(json.dumps(meta))
        except OSError:
            pass  # the graph and the vectors are a cache: read from the table on the next open

    def discard(self) -> None:
        """Forget the index and the saved graph (the table was replaced underneath)."""
        self.hnsw_meta_path.unlink(missing_ok=True)
        self.hnsw_path.unlink(missing_ok=True)
        self.vectors_path.unlink(missing_ok=True)
        self.index = None

    def pause_graph(self) -> None:
        """Build no HNSW graph batch by batch until :meth:`resume` (a bulk import: imported
        rows keep their old sequence numbers, which the catch-up by seq cannot follow)."""
        if self.index is not None and not self._graph_paused:
            self.index.hnsw_threshold = 1 << 62
            self._graph_paused = True

    def resume(self) -> None:
        """Rebuild the index from the table after a bulk import."""
        self.open()
        self._graph_paused = False

    # --- search ------------------------------------------------------------
    def search(self, vector: np.ndarray, filters: SearchFilters, now: datetime,
               limit: int) -> list[VectorHit]:
        """The nearest neighbours passing the filters, most similar first."""
        self.sync()
        index = self.index
        if index is None or len(index) == 0:
            return []
        clause, params = where(filters, now, self.db.dialect)
        if _is_selective(filters):
            # A narrow filter: exact search over the rows it allows. A broad one (more
            # rows than an exact pass should scan) falls through to over-fetch + filter.
            cap = max(EXACT_FILTER_ROWS, len(index) // 10)
            rows = self.db.rows(f"SELECT m.rowid FROM memories m WHERE {clause} LIMIT ?",
                                [*params, cap + 1])
            if len(rows) <= cap:
                allowed = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                return self._resolve(index.search(vector, limit, allowed=allowed))
        want = limit
        while True:
            resolved = self._resolve(index.search(vector, want), clause, params)
            if len(resolved) >= limit or want >= len(index):
                return resolved[:limit]
            want = min(len(index), want * 4)

    def _resolve(self, hits: list[tuple[int, float]], clause: str = "1",
                 params: list[Any] | None = None) -> list[VectorHit]:
        id_of: dict[int, str] = {}
        for chunk in self.db.chunks([h[0] for h in hits]):
            rows = self.db.rows(f"SELECT m.rowid, m.id FROM memories m WHERE m.rowid IN "
                                f"({self.db.marks(len(chunk))}) AND {clause}",
                                [*chunk, *(params or [])])
            id_of.update({r[0]: r[1] for r in rows})
        return [VectorHit(memory_id=id_of[k], similarity=s) for k, s in hits if k in id_of]

    def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the given memories.

        Once the index is loaded they come from it, caught up with the table first: the same
        float32 values without reading 1.5 KB a memory from the table (a search reads those
        of its keyword candidates: 1.2 of 10 ms at 100k). The table serves them while the
        index loads, inside a write transaction (catching up there could take in vectors the
        transaction has not committed), and any the index does not hold.
        """
        wanted = list(dict.fromkeys(memory_ids))
        if not wanted or not self.loaded or self._index is None or self.db.in_transaction():
            return self._table_vectors(wanted)
        self.sync()
        index = self._index
        rowid_of: dict[str, int] = {}
        for chunk in self.db.chunks(wanted):
            rowid_of.update(self.db.rows(
                f"SELECT id, rowid FROM memories WHERE id IN ({self.db.marks(len(chunk))})", chunk))
        held = index.vectors_for(rowid_of.values()) if index is not None else {}
        out = {i: held[r] for i, r in rowid_of.items() if r in held}
        missing = [i for i in rowid_of if i not in out]
        return out | self._table_vectors(missing) if missing else out

    def _table_vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for chunk in self.db.chunks(memory_ids):
            rows = self.db.rows(
                "SELECT m.id, v.vector FROM memory_vectors v JOIN memories m "
                f"ON m.rowid = v.memory_rowid WHERE m.id IN ({self.db.marks(len(chunk))})", chunk)
            out.update({r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows})
        return out


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
