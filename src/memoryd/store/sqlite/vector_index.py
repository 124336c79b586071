"""In-memory vector index: exact NumPy search, plus an HNSW graph for large stores.

The store's table of vectors is the source of truth; this index is a cache of it,
rebuilt or caught up when the store opens. Vectors are L2-normalised, so the dot
product is the cosine similarity.

Below ``hnsw_threshold`` live vectors every query is an exact matrix-vector product
(cheap up to tens of thousands of rows). Above it a usearch HNSW graph answers
unfiltered queries; filtered queries over a small allowed set stay exact, so a
selective filter never loses results to the graph's approximation.

The float32 matrix is the one full-precision copy. The graph keeps int8 copies (a quarter of
the matrix's size) to find neighbours, and its candidates are re-scored from the matrix, so
every similarity a search returns is exact (bench/results/vector_memory.md). A graph saved
by an earlier version in float16 is loaded as it is.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterable

import numpy as np

from memoryd.embed.runtime import onnxruntime_loadable

_GROWTH = 1.5


_blas: object = None  # threadpoolctl's controller, made once
_blas_lock = threading.Lock()


def _single_blas_thread():
    """One BLAS thread for a matrix-vector product: on a busy 2-core machine, threaded
    OpenBLAS made single-query products 2-50x slower (bench/results/latency.md).

    One controller serves every search: making one per call reads the process's memory
    map to find the BLAS libraries again, which took longer than the product at 5k rows.
    """
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        with _blas_lock:
            if _blas is None:
                _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas")  # type: ignore[attr-defined]
# Exact search over the allowed rows when they are at most this share of the index.
_EXACT_SHARE = 0.25
# A saved graph is repaired on load when at most this share of the live keys changed.
_MAX_REPAIR = 0.2
#: Graphs of at least this many vectors are built on every core (see _build_hnsw).
_PARALLEL_BUILD = 10_000


def _usearch_index() -> type:
    """usearch's Index class, imported after onnxruntime when that is installed.

    onnxruntime 1.23 and later crash the process (SIGSEGV) when they are imported after
    usearch's extension module, and a server opens its store (and its HNSW graph) before it
    loads the embedding model. Imported first, both work (tests/test_embed_onnx.py); when
    the host program loaded usearch first, onnxruntime is left alone here and the model's
    load says why it cannot run (memoryd.embed.runtime).
    """
    onnxruntime_loadable()
    from usearch.index import Index

    return Index


class VectorIndex:
    """Keys (int64 row ids) to unit vectors, searchable by cosine similarity."""

    def __init__(self, dims: int, *, hnsw_threshold: int = 20_000, ef_search: int = 128) -> None:
        self.dims = dims
        self.hnsw_threshold = hnsw_threshold
        self.ef_search = ef_search
        self._matrix = np.zeros((1024, dims), dtype=np.float32)
        self._keys = np.full(1024, -1, dtype=np.int64)
        self._alive = np.zeros(1024, dtype=bool)
        self._pos: dict[int, int] = {}
        self._n = 0
        self._live = 0
        self._hnsw = None  # usearch.index.Index once built
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return self._live

    @property
    def uses_hnsw(self) -> bool:
        """Whether unfiltered searches go through the HNSW graph."""
        return self._hnsw is not None

    def upsert(self, keys: Iterable[int], vectors: np.ndarray) -> None:
        """Add vectors, replacing any already stored under the same keys."""
        keys = np.asarray(list(keys), dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(keys), self.dims)
        with self._lock:
            self._reserve(self._n + len(keys))
            if not self._append_new(keys, vectors):
                self._put(keys, vectors)
            if self._hnsw is not None:
                for key in keys.tolist():
                    if key in self._hnsw:
                        self._hnsw.remove(key)
                self._hnsw.add(keys, vectors)
            elif self._live >= self.hnsw_threshold > 0:
                self._build_hnsw()

    def _append_new(self, keys: np.ndarray, vectors: np.ndarray) -> bool:
        """Append keys the index has never held (a load) in one slice; False if any is known
        (or repeated), leaving the index untouched."""
        listed = keys.tolist()
        if not self._pos.keys().isdisjoint(listed) or len(set(listed)) != len(listed):
            return False
        start, end = self._n, self._n + len(listed)
        self._matrix[start:end] = vectors
        self._keys[start:end] = keys
        self._alive[start:end] = True
        self._pos.update(zip(listed, range(start, end)))
        self._n, self._live = end, self._live + len(listed)
        return True

    def _put(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Add or replace vectors one key at a time."""
        for key, vec in zip(keys.tolist(), vectors):
            pos = self._pos.get(key)
            if pos is None:
                pos = self._n
                self._n += 1
                self._pos[key] = pos
                self._keys[pos] = key
                self._live += 1
            elif not self._alive[pos]:
                self._live += 1
            self._matrix[pos] = vec
            self._alive[pos] = True

    def adopt(self, keys: np.ndarray, matrix: np.ndarray) -> None:
        """Take ``matrix`` (one row per key of ``keys``, distinct) as the storage of an empty
        index, without a copy: a load from the saved vectors."""
        with self._lock:
            if self._n:
                raise ValueError("adopt() fills an empty index")
            self._matrix = np.ascontiguousarray(matrix, dtype=np.float32)
            self._keys = np.asarray(keys, dtype=np.int64).copy()
            self._alive = np.ones(len(self._keys), dtype=bool)
            self._pos = dict(zip(self._keys.tolist(), range(len(self._keys))))
            self._n = self._live = len(self._keys)

    def live(self) -> tuple[np.ndarray, np.ndarray]:
        """The live keys and a copy of their vectors (for saving)."""
        with self._lock:
            alive = self._alive[: self._n]
            if alive.all():  # no copy of the matrix
                return self._keys[: self._n].copy(), self._matrix[: self._n]
            return self._keys[: self._n][alive], self._matrix[: self._n][alive]

    def remove(self, keys: Iterable[int]) -> None:
        """Forget the vectors under these keys (missing keys are ignored)."""
        with self._lock:
            for key in keys:
                pos = self._pos.get(int(key))
                if pos is not None and self._alive[pos]:
                    self._alive[pos] = False
                    self._live -= 1
                    if self._hnsw is not None and int(key) in self._hnsw:
                        self._hnsw.remove(int(key))

    def vectors_for(self, keys: Iterable[int]) -> dict[int, np.ndarray]:
        """The stored vectors of the given keys that exist."""
        with self._lock:
            out = {}
            for key in keys:
                pos = self._pos.get(int(key))
                if pos is not None and self._alive[pos]:
                    out[int(key)] = self._matrix[pos].copy()
            return out

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` (key, similarity) pairs, best first, optionally among ``allowed`` keys."""
        query = np.asarray(query, dtype=np.float32).reshape(self.dims)
        with self._lock:
            if self._live == 0 or k <= 0:
                return []
            if allowed is not None:
                if len(allowed) <= max(self._live * _EXACT_SHARE, self.hnsw_threshold):
                    return self._exact_subset(query, k, allowed)
                return self._approximate(query, k, allowed_set=allowed)
            if self._hnsw is not None and k <= self._live * _EXACT_SHARE:
                return self._approximate(query, k, allowed_set=None)
            return self._exact_all(query, k)

    def _exact_all(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        with _single_blas_thread():
            sims = self._matrix[: self._n] @ query
        if self._live < self._n:
            sims = np.where(self._alive[: self._n], sims, -np.inf)
        return self._top(sims, self._keys[: self._n], k)

    def _exact_subset(self, query: np.ndarray, k: int, allowed: np.ndarray) -> list[tuple[int, float]]:
        # One product over the whole matrix and a mask beats gathering the allowed rows.
        keys = self._keys[: self._n]
        mask = np.isin(keys, allowed) & self._alive[: self._n]
        if not mask.any():
            return []
        with _single_blas_thread():
            sims = self._matrix[: self._n] @ query
        sims = np.where(mask, sims, -np.inf)
        return self._top(sims, keys, min(k, int(mask.sum())))

    def _approximate(
        self, query: np.ndarray, k: int, allowed_set: np.ndarray | None
    ) -> list[tuple[int, float]]:
        if self._hnsw is None:
            hits = self._exact_all(query, self._live)
        else:
            want = k if allowed_set is None else min(self._live, k * 4)
            hits = self._rescored(query, self._hnsw.search(query, want).keys)
        if allowed_set is not None:
            keep = np.isin(np.fromiter((h[0] for h in hits), np.int64, len(hits)), allowed_set)
            hits = [hit for hit, ok in zip(hits, keep) if ok]
        return hits[:k]

    def _rescored(self, query: np.ndarray, keys: np.ndarray) -> list[tuple[int, float]]:
        """The graph's candidates with their exact similarities, best first: the graph holds
        int8 copies, good for finding neighbours, not for the score a caller reads."""
        rows = np.fromiter((self._pos[int(key)] for key in keys), np.int64, len(keys))
        sims = self._matrix[rows] @ query
        order = np.argsort(-sims, kind="stable")
        return [(int(keys[i]), float(sims[i])) for i in order]

    @staticmethod
    def _top(sims: np.ndarray, keys: np.ndarray, k: int) -> list[tuple[int, float]]:
        k = min(k, len(sims))
        if k == 0:
            return []
        idx = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        idx = idx[np.argsort(-sims[idx], kind="stable")]
        return [(int(keys[i]), float(sims[i])) for i in idx if np.isfinite(sims[i])]

    def reserve(self, capacity: int) -> None:
        """Make room for ``capacity`` vectors at once: a load of a known size then neither
        copies the matrix while it grows nor keeps unused rows."""
        with self._lock:
            self._reserve(capacity, growth=1.0)

    def _reserve(self, needed: int, growth: float = _GROWTH) -> None:
        cap = len(self._keys)
        if needed <= cap:
            return
        new_cap = max(needed, int(cap * growth))
        matrix = np.zeros((new_cap, self.dims), dtype=np.float32)
        matrix[: self._n] = self._matrix[: self._n]
        keys = np.full(new_cap, -1, dtype=np.int64)
        keys[: self._n] = self._keys[: self._n]
        alive = np.zeros(new_cap, dtype=bool)
        alive[: self._n] = self._alive[: self._n]
        self._matrix, self._keys, self._alive = matrix, keys, alive

    def _new_hnsw(self):
        Index = _usearch_index()
        return Index(
            ndim=self.dims,
            metric="cos",
            dtype="i8",  # finding neighbours only: hits are re-scored from the matrix
            connectivity=16,
            expansion_add=128,
            expansion_search=self.ef_search,
        )

    def _build_hnsw(self) -> None:
        index = self._new_hnsw()
        live = self._alive[: self._n]
        # Inserting on several threads at once makes the graph depend on their timing, so
        # what a search finds can differ from one build of the same vectors to the next.
        # One thread keeps small builds (milliseconds) reproducible.
        threads = 0 if self._live >= _PARALLEL_BUILD else 1
        index.add(self._keys[: self._n][live], self._matrix[: self._n][live], threads=threads)
        self._hnsw = index

    def save_hnsw(self, path: Path) -> bool:
        """Write the HNSW graph to ``path``; False when there is no graph to save."""
        with self._lock:
            if self._hnsw is None:
                return False
            self._hnsw.save(str(path))
            return True

    def load_hnsw(self, path: Path, *, changed: Iterable[int] = (), max_repair: float = _MAX_REPAIR) -> bool:
        """Load a saved graph and bring it up to date with the live vectors.

        ``changed`` are keys whose vectors were written after the graph was saved: they
        are put in again. Keys the graph holds that are no longer live are removed and
        live keys it lacks are added, so a graph saved before other writes (or before a
        crash) is repaired instead of rebuilt. Returns False, leaving no graph, when the
        file is unusable or more than ``max_repair`` of the live keys need repair (a
        rebuild is then about as cheap and gives a better graph).
        """
        with self._lock:
            if self.hnsw_threshold <= 0 or self._live < self.hnsw_threshold or not path.exists():
                return False
            index = self._new_hnsw()
            try:
                index.load(str(path))
                graph_keys = np.asarray(index.keys, dtype=np.int64)
            except Exception:  # a truncated or foreign file: rebuild instead
                return False
            live = self._keys[: self._n][self._alive[: self._n]]
            gone = np.setdiff1d(graph_keys, live, assume_unique=True)
            changed_live = np.intersect1d(np.fromiter(changed, np.int64), live)
            refresh = np.union1d(np.setdiff1d(live, graph_keys, assume_unique=True), changed_live)
            if len(gone) + len(refresh) > max_repair * self._live:
                return False
            stale = np.concatenate([gone, np.intersect1d(refresh, graph_keys, assume_unique=True)])
            if len(stale):
                index.remove(stale)
            if len(refresh):
                rows = np.fromiter((self._pos[int(k)] for k in refresh), np.int64, len(refresh))
                index.add(refresh, self._matrix[rows])
            if len(index) != self._live:
                return False
            index.expansion_search = self.ef_search
            self._hnsw = index
            return True

    def ensure_hnsw(self) -> None:
        """Build the graph now if the index is large enough and has none."""
        with self._lock:
            if self._hnsw is None and self._live >= self.hnsw_threshold > 0:
                self._build_hnsw()
