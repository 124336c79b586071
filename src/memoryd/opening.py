"""The composition root: read settings, pick a store and an embedder, make an Engine."""

from __future__ import annotations

import threading
from typing import Any

from memoryd.config import Settings
from memoryd.embed import Embedder, make_embedder
from memoryd.engine import Clock, Engine
from memoryd.errors import StoreError
from memoryd.models import utcnow
from memoryd.store.base import Store


def open_store(url: str, settings: Settings, *, create: bool = True,
               keyword_index_until: threading.Event | None = None,
               vector_index_until: threading.Event | None = None) -> Store:
    """The store behind a URL: ``sqlite:///abs/path.db`` (or a path) or ``postgresql://``;
    its in-memory keyword copy is built once ``keyword_index_until`` is set, and an SQLite
    store's vector index once ``vector_index_until`` is set, if given."""
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from memoryd.store.postgres import PostgresStore
        except ImportError as exc:  # pragma: no cover - depends on optional extras
            raise StoreError(f"PostgreSQL support is not available: {exc}") from exc
        return PostgresStore(url, ef_search=settings.hnsw_ef_search, create=create,
                             keyword_index=settings.keyword_index,
                             keyword_index_until=keyword_index_until)
    from memoryd.store.sqlite import SQLiteStore, parse_sqlite_url

    return SQLiteStore(
        parse_sqlite_url(url),
        hnsw_threshold=settings.hnsw_threshold,
        ef_search=settings.hnsw_ef_search,
        create=create,
        keyword_index=settings.keyword_index,
        keyword_index_until=keyword_index_until,
        vector_index_until=vector_index_until,
    )


def open(  # noqa: A001 - mirrors the built-in on purpose: memoryd.open(...)
    url: str | None = None,
    *,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    clock: Clock = utcnow,
    allow_model_mismatch: bool = False,
    create: bool = True,
    keyword_index_until: threading.Event | None = None,
    vector_index_until: threading.Event | None = None,
    **overrides: Any,
) -> Engine:
    """Open a memory.

    ``url`` defaults to the SQLite file under ``MEMORYD_HOME``. ``overrides`` are
    Settings fields (e.g. ``rrf_k=40``). The embedding model loads on first use. The
    in-memory copy of the keyword postings loads in the background, once
    ``keyword_index_until`` is set when it is given (a server sets it when it is ready);
    an SQLite store's vector index once ``vector_index_until`` is set (a server sets it once
    the model has loaded, so that the two loads' passing buffers do not add up).
    """
    if settings is None:
        settings = Settings(**overrides)
    elif overrides:
        settings = settings.model_copy(update=overrides)
    store = open_store(url or settings.resolved_store_url, settings, create=create,
                       keyword_index_until=keyword_index_until,
                       vector_index_until=vector_index_until)
    try:
        return Engine(
            store,
            embedder or make_embedder(settings),
            settings,
            clock=clock,
            allow_model_mismatch=allow_model_mismatch,
        )
    except BaseException:
        store.close()
        raise
