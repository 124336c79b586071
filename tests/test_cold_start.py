"""Starting up without waiting: an SQLite store loads its vector index on a thread of its
own (readers wait for it), and /readyz says ready only once the index and the embedding
model are loaded. Real SQLite files, the real model, a real server on 127.0.0.1."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import numpy as np
from api_fixtures import start_server

from memoryd.config import Settings
from memoryd.embed import make_embedder
from memoryd.models import SearchFilters, utcnow
from memoryd.store.sqlite import SQLiteStore

TEXTS = [f"Service {i} is owned by team {i % 7} and deploys on day {i % 5}" for i in range(240)]


def _store_with_graph(path: Path, shared_embedder) -> np.ndarray:
    """A store above the HNSW threshold, closed (so its graph is saved); returns a query."""
    import memoryd

    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder, hnsw_threshold=100) as m:
        m.add_many([{"content": t} for t in TEXTS])
    return shared_embedder.embed_one("which team owns service 12")


def test_an_index_loading_in_the_background_answers_like_one_loaded_at_once(
        tmp_path: Path, shared_embedder) -> None:
    path = tmp_path / "m.db"
    query = _store_with_graph(path, shared_embedder)
    assert path.with_name("m.db.hnsw.usearch").exists()
    now, filters = utcnow(), SearchFilters()
    at_once = SQLiteStore(path, hnsw_threshold=100)
    at_once.vector_cache.load(at_once.embedding_dims)  # loaded again, on this thread
    expected = at_once.vector_search(query, filters, now=now, limit=10)
    at_once.close()
    store = SQLiteStore(path, hnsw_threshold=100)  # returns while the index loads
    try:
        assert store.vector_search(query, filters, now=now, limit=10) == expected
        assert store.vector_cache.loaded and store.health()["vectors_loaded"] is True
        assert store.vector_cache.index is not None and store.vector_cache.index.uses_hnsw
        assert len(store.vector_cache.index) == len(TEXTS)
    finally:
        store.close()


def test_a_write_right_after_opening_is_searchable(tmp_path: Path, shared_embedder) -> None:
    """A commit during the background load waits for it, then catches the index up."""
    import memoryd

    path = tmp_path / "m.db"
    _store_with_graph(path, shared_embedder)
    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder, hnsw_threshold=100) as m:
        added = m.add("The billing service is owned by the payments team")
        hits = m.search("who owns billing", 3, mode="vector")
        assert hits[0].memory.id == added.id


def test_readyz_waits_for_the_embedding_model(tmp_path: Path) -> None:
    """Ready means a search would not wait: before the model is loaded /readyz is 503
    (the process answers /health meanwhile)."""
    embedder = make_embedder(Settings())
    assert not embedder.loaded
    server = start_server(tmp_path, embedder, key_specs={"admin": {"scopes": ["admin"]}})
    try:
        assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200
        not_yet = httpx.get(f"{server.url}/readyz", timeout=30)
        assert not_yet.status_code == 503 and not_yet.json() == {"ready": False}
        server.engine.warm()
        assert httpx.get(f"{server.url}/readyz", timeout=30).json() == {"ready": True}
    finally:
        server.stop()
        server.engine.close()


def test_the_index_loads_once_its_signal_is_set(tmp_path: Path, shared_embedder) -> None:
    """A server holds the vector index's load until the model has loaded (their passing
    buffers would add up): nothing loads before the signal, readers meanwhile wait for it,
    and the index is then the one a load at once gives."""
    path = tmp_path / "m.db"
    query = _store_with_graph(path, shared_embedder)
    signal = threading.Event()
    store = SQLiteStore(path, hnsw_threshold=100, vector_index_until=signal)
    try:
        assert not store.vector_cache.loaded and store.health()["vectors_loaded"] is False
        found: list = []
        reader = threading.Thread(target=lambda: found.append(
            store.vector_search(query, SearchFilters(), now=utcnow(), limit=3)))
        reader.start()
        reader.join(0.5)
        assert reader.is_alive() and not found  # waits for the index, not an empty answer
        signal.set()
        reader.join(60)
        assert len(found[0]) == 3 and store.vector_cache.loaded
        assert len(store.vector_cache.index) == len(TEXTS)
    finally:
        store.close()


def test_closing_a_store_whose_index_waits_for_its_signal_loads_nothing(tmp_path: Path,
                                                                         shared_embedder) -> None:
    path = tmp_path / "m.db"
    _store_with_graph(path, shared_embedder)
    store = SQLiteStore(path, hnsw_threshold=100, vector_index_until=threading.Event())
    closer = threading.Thread(target=store.close)
    closer.start()
    closer.join(30)  # the signal never comes: close must not wait for it
    assert not closer.is_alive()
    assert store.vector_cache._index is None
    assert path.with_name("m.db.hnsw.usearch").exists()  # the saved graph is left as it was
