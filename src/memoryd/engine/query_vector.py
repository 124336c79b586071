"""The query's embedding, computed on a worker thread while the keyword side runs.

Embedding a query (about 6 ms with the default ONNX runtime, 13-17 ms with torch, on a
2-core machine) and scoring the keyword candidates (10-12 ms at 100k memories) do not depend
on each other, and both let go of the GIL while they work (the model's forward pass; SQLite's
and PostgreSQL's query execution), so a search starts the embedding first and asks for the
vector only when the vector side needs it (bench/results/search_onnx.md: x0.77 end to end on
SQLite at 100k, x0.84 on PostgreSQL).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from memoryd.embed import Embedder

_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool): a forked child makes its own


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            # Concurrent searches (a server's request threads) embed at once up to one per
            # core; more would only wait for a core.
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1),
                                                     thread_name_prefix="memoryd-query-vector"))
        return _pool[1]


class QueryVector:
    """A query vector that is given, being computed, or not wanted (keyword search while the
    model loads). :meth:`get` waits for it; an embedding error is raised there."""

    def __init__(self, value: np.ndarray | None, pending: Future[np.ndarray] | None = None) -> None:
        self._value = value
        self._pending = pending

    @classmethod
    def start(cls, embedder: Embedder, query: str, given: np.ndarray | None, *,
              embed: bool) -> QueryVector:
        """``given`` if there is one; otherwise start embedding ``query`` when ``embed``."""
        if given is not None or not embed:
            return cls(given)
        return cls(None, _workers().submit(lambda: embedder.embed([query])[0]))

    def get(self) -> np.ndarray | None:
        """The vector (waiting for it if it is being computed), or None if not wanted."""
        if self._pending is not None:
            self._value, self._pending = self._pending.result(), None
        return self._value
