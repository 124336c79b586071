"""The query's embedding, computed on a worker thread while the keyword side runs.

Embedding a query (about 6 ms with the default ONNX runtime, 13-17 ms with torch, on a
2-core machine) and scoring the keyword candidates (10-12 ms at 100k memories) do not depend
on each other, and both let go of the GIL while they work (the model's forward pass; SQLite's
and PostgreSQL's query execution), so a search starts the embedding first and asks for the
vector only when the vector side needs it (bench/results/search_onnx.md: x0.77 end to end on
SQLite at 100k, x0.84 on PostgreSQL).
"""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np

from memoryd.embed import Embedder
from memoryd.engine.memory.workers import pool


class QueryVector:
    """A query vector that is given, being computed, or not wanted (keyword search while the
    model loads). :meth:`get` waits for it; an embedding error is raised there."""

    def __init__(self, value: np.ndarray | None, pending: Future[np.ndarray] | None = None) -> None:
        self._value = value
        self._pending = pending

    @classmethod
    def start(cls, embedder: Embedder, query: str, given: np.ndarray | None, *,
              embed: bool, alone: bool = False) -> QueryVector:
        """``given`` if there is one; otherwise start embedding ``query`` when ``embed``
        (``alone``: nothing else is running, see :func:`running.search_running`)."""
        if given is not None or not embed:
            return cls(given)
        return cls(None, pool("query-vector").submit(
            lambda: embedder.embed_query(query, alone=alone)))

    @property
    def ready(self) -> bool:
        """Whether :meth:`get` returns without waiting (the vector was given, or is done)."""
        return self._pending is None or self._pending.done()

    def get(self) -> np.ndarray | None:
        """The vector (waiting for it if it is being computed), or None if not wanted."""
        if self._pending is not None:
            self._value, self._pending = self._pending.result(), None
        return self._value
