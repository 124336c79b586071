"""Fixtures for the HTTP and MCP tests: a real uvicorn server on 127.0.0.1 in a thread.

``LiveServer`` runs ``memoryd.serving.http.create_app`` under uvicorn on a free port with a
real store (SQLite in a temp dir, or a PostgreSQL URL) and the session's real embedding
model. Keys are made with ``memoryd.keys`` before start (the app refuses to start without
one unless anonymous access is on).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest
import uvicorn

import memoryd
from fastapi import FastAPI

from memoryd.config import Settings
from memoryd.embed import Embedder
from memoryd.engine import Engine
from memoryd.serving.http import HttpLimits, create_app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    """A running server plus the keys made for it (``keys[label]`` is the secret)."""

    engine: Engine
    settings: Settings
    port: int
    keys: dict[str, str] = field(default_factory=dict)
    limits: HttpLimits | None = None
    log_level: str = "warning"
    prepare_app: Callable[[FastAPI], None] | None = None
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(
        self, key: str | None = None, agent: str | None = None, **kwargs: Any
    ) -> httpx.Client:
        """An httpx client; ``key`` is a label of ``self.keys`` or a raw secret."""
        headers = dict(kwargs.pop("headers", {}))
        if key is not None:
            headers["Authorization"] = f"Bearer {self.keys.get(key, key)}"
        if agent is not None:
            headers["X-Agent-Id"] = agent
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)

    def start(self) -> LiveServer:
        app = create_app(lambda: self.engine, self.settings, self.limits)
        if self.prepare_app is not None:
            self.prepare_app(app)
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level=self.log_level, lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)


def clean_env(monkeypatch: pytest.MonkeyPatch, base: Path) -> None:
    """Hide MEMORYD_* variables, the user's config file and home directory (for module-scoped
    fixtures): a request naming ``~`` (a project root, a watched path) lands under ``base``,
    never in the real home of whoever runs the tests."""
    for name in list(os.environ):
        if name.startswith("MEMORYD_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "data"))
    (base / "home").mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(base / "home"))


def start_server(
    tmp: Path,
    embedder: Embedder,
    *,
    key_specs: dict[str, dict[str, Any]] | None = None,
    store_url: str | None = None,
    limits: HttpLimits | None = None,
    log_level: str = "warning",
    prepare_app: Callable[[FastAPI], None] | None = None,
    **settings: Any,
) -> LiveServer:
    """Open a store (SQLite under ``tmp`` unless ``store_url``), create the keys, start."""
    config = Settings(home=tmp, **settings)
    url = store_url or f"sqlite:///{tmp / 'memoryd.db'}"
    engine = memoryd.open(url, settings=config, embedder=embedder)
    server = LiveServer(
        engine, config, free_port(), limits=limits, log_level=log_level, prepare_app=prepare_app
    )
    for label, spec in (key_specs or {}).items():
        server.keys[label] = engine.admin.create_key(label, **spec).secret
    return server.start()


# The keys most test modules need.
STANDARD_KEYS: dict[str, dict[str, Any]] = {
    "admin": {"scopes": ["admin"]},
    "writer": {"scopes": ["read", "write"]},
    "reader": {"scopes": ["read"]},
    "alpha": {"scopes": ["read", "write"], "memory_scope": "project:alpha"},
    "bot": {"scopes": ["read", "write"], "agent_id": "bot-1"},
}


def module_server(
    shared_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory, **settings: Any
) -> Iterator[LiveServer]:
    """Body of a module-scoped ``live_server`` fixture: one real server with STANDARD_KEYS.

    Each test module declares the fixture itself (``yield from module_server(...)``).
    """
    base = tmp_path_factory.mktemp("live")
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        server = start_server(base, shared_embedder, key_specs=STANDARD_KEYS, **settings)
        try:
            yield server
        finally:
            server.stop()
