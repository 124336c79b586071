"""GET /health: a deep check that the store answers, with the embedder's state."""

from __future__ import annotations

import sqlite3

import pytest
from fastapi.testclient import TestClient

import memoryd
from memoryd.api.app import create_app
from memoryd.config import Settings


@pytest.fixture
def client_for(shared_embedder):
    clients = []

    def make(url: str) -> TestClient:
        settings = Settings(allow_anonymous=True)
        app = create_app(lambda: memoryd.open(url, embedder=shared_embedder, settings=settings),
                         settings)
        client = TestClient(app)
        client.__enter__()  # runs the lifespan (opens the engine)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def test_health_ok(client_for, store_url, shared_embedder) -> None:
    with memoryd.open(store_url, embedder=shared_embedder) as mem:
        mem.add_many([{"content": "healthy memory one"}, {"content": "healthy memory two"}])
    client = client_for(store_url)
    response = client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["version"] == memoryd.__version__
    assert body["store"]["ok"] is True and body["store"]["memories"] == 2
    assert body["embedder"]["model_id"] == shared_embedder.model_id
    assert body["embedder"]["loaded"] is True  # the shared model is loaded
    assert "Authorization" not in response.request.headers  # public, no key needed


def test_health_reports_an_unusable_store(client_for, store_url, store_path) -> None:
    client = client_for(store_url)
    assert client.get("/health").status_code == 200
    conn = sqlite3.connect(store_path)
    conn.execute("DROP TABLE memories")  # the store breaks behind the server's back
    conn.commit()
    conn.close()
    response = client.get("/health")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unhealthy"
    assert body["store"]["ok"] is False and "memories" in body["store"]["error"]
