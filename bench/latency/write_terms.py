"""What keeping memoryd's keyword index costs a write, on SQLite and PostgreSQL.

Three write paths on fresh stores, same memories (the synthetic corpus's texts and tags;
random unit vectors: the vector side is the same in all three):

- as shipped: the term tables and the older full-text index (FTS5 / ``tsvector``), which
  search no longer reads but the schema still maintains;
- terms only: the full-text index dropped (FTS5 triggers / the ``tsvector`` column);
- full text only: the term tables not kept (the write path before memoryd's own BM25).

Bulk: ``store.insert`` of 500 memories per call into a store of 1,000; single: one memory
per call. The three stores take turns call by call. Thread CPU time in this process (PostgreSQL's own work is in its server
process, so PostgreSQL is also given in wall time). Part of bench.latency.search_ranking.
"""

from __future__ import annotations

import importlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

VARIANTS = ("as shipped", "terms only", "full text only")


def _memories(corpus, start: int, end: int, prefix: str) -> list:
    from memoryd.models import Memory, SchedulingState

    now = datetime.now(timezone.utc)
    return [Memory(id=f"{prefix}{i}", content=corpus.texts[i], tags=corpus.tags[i], created_at=now,
                   updated_at=now, state=SchedulingState(last_review=now)) for i in range(start, end)]


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    c0, t0 = time.thread_time(), time.perf_counter()
    fn()
    return time.thread_time() - c0, time.perf_counter() - t0


def _prepare(store, variant: str) -> None:
    if variant != "terms only":
        return
    if store.backend == "sqlite":
        for name in ("insert", "delete", "update"):
            store.db.connection().execute(f"DROP TRIGGER memories_fts_{name}")
    else:
        with store.db.write() as cur:
            cur.execute("ALTER TABLE memories DROP COLUMN search_vec")


@contextmanager
def _write_path(store, variant: str) -> Iterator[None]:
    """While inside, ``store.insert`` writes as ``variant`` does (terms skipped for
    "full text only"; the full-text index is dropped once by :func:`_prepare`)."""
    from memoryd.store import terms

    module = importlib.import_module(f"memoryd.store.{'sqlite' if store.backend == 'sqlite' else 'postgres'}.core")
    kept, kept_add = module.apply_changes, terms.TermChanges.add
    if variant == "full text only":  # neither tokenise nor write terms
        module.apply_changes = lambda *a, **k: None
        terms.TermChanges.add = lambda *a, **k: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        module.apply_changes, terms.TermChanges.add = kept, kept_add  # type: ignore[method-assign]


def interleaved(stores: dict[str, Any], corpus, vectors: np.ndarray) -> dict[str, dict[str, float]]:
    """Bulk and single-insert cost of every write path, each on its own fresh store.

    The variants take turns batch by batch (and insert by insert), so a change of load on
    the machine, or a cache warmed by the first variant (the tokenizer's), favours none.
    """
    from memoryd.store.base import Actor

    def insert(variant: str, start: int, end: int, prefix: str) -> tuple[float, float]:
        store = stores[variant]
        with _write_path(store, variant):
            return _timed(lambda: store.insert(_memories(corpus, start, end, prefix),
                                               vectors[start:end], Actor("bench")))

    for variant, store in stores.items():
        store.set_embedding_model("bench", vectors.shape[1])
        _prepare(store, variant)
    for variant in stores:  # warm-up, not counted
        insert(variant, 0, 1000, "w")
    bulk = {v: [0.0, 0.0] for v in stores}
    for start in range(1000, 6000, 500):
        for variant in stores:
            c, w = insert(variant, start, start + 500, "w")
            bulk[variant][0] += c
            bulk[variant][1] += w
    single: dict[str, list[tuple[float, float]]] = {v: [] for v in stores}
    for i in range(200):
        for variant in stores:
            single[variant].append(insert(variant, i, i + 1, "s"))
    return {v: {"bulk_per_s_cpu": round(5000 / bulk[v][0], 1),
                "bulk_per_s_wall": round(5000 / bulk[v][1], 1),
                "single_p50_ms_cpu": round(statistics.median(c for c, _ in single[v]) * 1000, 3),
                "single_p50_ms_wall": round(statistics.median(w for _, w in single[v]) * 1000, 3)}
            for v in stores}


def write_cost(backend: str, make_store: Callable[[str], Any]) -> dict[str, Any]:
    """Every variant on a fresh store made by ``make_store(name)``, interleaved."""
    from bench.latency.corpus import generate_corpus

    corpus = generate_corpus(6000)
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(6000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    stores = {variant: make_store(variant) for variant in VARIANTS}
    try:
        return interleaved(stores, corpus, vectors)
    finally:
        for store in stores.values():
            store.close()


def sqlite_maker() -> Callable[[str], Any]:
    """Fresh SQLite stores in a temporary directory, one file per variant."""
    from memoryd.store.sqlite import SQLiteStore

    base = Path(tempfile.mkdtemp(prefix="write-terms-"))
    return lambda name: SQLiteStore(base / f"{name.replace(' ', '-')}.db", hnsw_threshold=1 << 30)


def postgres_maker(base_url: str) -> Callable[[str], Any]:
    """Fresh PostgreSQL stores, one schema per variant, on the server at ``base_url``."""
    import psycopg

    from memoryd.store.postgres import PostgresStore

    def make(name: str) -> Any:
        schema = "write_" + name.replace(" ", "_")
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        join = "&" if "?" in base_url else "?"
        return PostgresStore(f"{base_url}{join}schema={schema}")

    return make
