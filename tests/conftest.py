"""Shared fixtures: the real embedding model (loaded once), real SQLite stores in temp
dirs, a store factory keyed by backend, and an isolated environment for the CLI.

Every test runs with the developer's memoryd configuration hidden: ``MEMORYD_*``
variables are removed and the XDG config/data directories point at temp dirs.
"""

from __future__ import annotations

import os

# One intra-op thread for torch (here and in CLI/writer subprocesses, which inherit
# the environment). On a busy or small machine OpenMP's spinning worker threads make
# inference 5-10x slower than a single thread; an explicit setting is respected.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from pg_fixtures import close_before_drop
from pg_fixtures import pg_database, pg_server, pg_url  # noqa: F401 - fixtures

import memoryd
from memoryd.embed import Embedder, LocalEmbedder, OnnxEmbedder
from memoryd.engine import Engine
from memoryd.store.base import Store

TESTS_DIR = Path(__file__).resolve().parent
HELPERS_DIR = TESTS_DIR / "helpers"
VENV_BIN = Path(sys.executable).parent
MEMORYD_BIN = VENV_BIN / "memoryd"

# Backends the store contract runs against. PostgreSQL is a real server started once
# per session (tests/pg_fixtures.py), or the one named by MEMORYD_TEST_PG_URL.
STORE_BACKENDS = ["sqlite", "postgresql"]


# --------------------------------------------------------------------------- environment


def is_memoryd_setting(name: str) -> bool:
    """MEMORYD_* variables configure memoryd; MEMORYD_TEST_* configure the test harness."""
    return name.startswith("MEMORYD_") and not name.startswith("MEMORYD_TEST_")


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The int8 copy of the model that queries run (memoryd.embed.onnx_int8) is written once
    per session, to a temporary cache, never to the real home of whoever runs the tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(autouse=True)
def _isolate_memoryd_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Hide the developer's MEMORYD_* variables and config file from every test."""
    for name in list(os.environ):
        if is_memoryd_setting(name):
            monkeypatch.delenv(name)
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "data"))


# --------------------------------------------------------------------------- embedder


@pytest.fixture(scope="session")
def shared_embedder() -> Embedder:
    """The real default embedder (all-MiniLM-L6-v2, int8, ONNX Runtime), loaded once per
    session."""
    embedder = OnnxEmbedder.preset("minilm-int8")
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def torch_embedder() -> LocalEmbedder:
    """The same model in float32 on torch (``MEMORYD_EMBEDDER=local``), loaded once."""
    embedder = LocalEmbedder()
    embedder.load()
    return embedder


class _VectorCache:
    """Vectors of texts embedded once per session by the shared model."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for text, vec in zip(todo, self.embedder.embed(todo)):
                self._cache[text] = vec
        return np.stack([self._cache[t] for t in texts]) if texts else np.empty(
            (0, self.embedder.dims), np.float32
        )


@pytest.fixture(scope="session")
def embed(shared_embedder: Embedder) -> _VectorCache:
    """``embed(texts) -> (n, 384)`` real vectors, cached across the session."""
    return _VectorCache(shared_embedder)


# --------------------------------------------------------------------------- engines


def clean_memoryd_env() -> pytest.MonkeyPatch:
    """A MonkeyPatch (use as a context) without MEMORYD_* variables, for wider-scoped fixtures."""
    patch = pytest.MonkeyPatch()
    for name in list(os.environ):
        if is_memoryd_setting(name):
            patch.delenv(name)
    return patch


@pytest.fixture(scope="module")
def module_mem_factory(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder
) -> Iterator[Callable[..., Engine]]:
    """Open engines that live for a whole test module (for read-only query batteries)."""
    opened: list[Engine] = []

    def _open(name: str = "module", **kwargs: object) -> Engine:
        path = tmp_path_factory.mktemp(name) / "m.db"
        patch = clean_memoryd_env()
        try:
            engine = memoryd.open(f"sqlite:///{path}", embedder=shared_embedder, **kwargs)
        finally:
            patch.undo()
        opened.append(engine)
        return engine

    yield _open
    for engine in opened:
        engine.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "m.db"


@pytest.fixture
def store_url(store_path: Path) -> str:
    return f"sqlite:///{store_path}"


@pytest.fixture
def open_mem(
    shared_embedder: Embedder, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Engine]]:
    """``open_mem(url, **overrides)``: memoryd.open with the shared model; closed at teardown
    (before the test's PostgreSQL databases are dropped)."""
    opened: list[Engine] = []

    def _open(url: str, **kwargs: object) -> Engine:
        kwargs.setdefault("embedder", shared_embedder)
        engine = memoryd.open(url, **kwargs)
        opened.append(engine)
        return engine

    def close_all() -> None:
        for engine in reversed(opened):
            try:
                engine.close()
            except Exception:  # already closed by the test
                pass

    close_before_drop(request, close_all)
    yield _open
    close_all()


@pytest.fixture
def mem(store_url: str, shared_embedder: Embedder) -> Iterator[Engine]:
    """A fresh memory in a temp SQLite file, using the shared real embedder."""
    engine = memoryd.open(store_url, embedder=shared_embedder)
    yield engine
    engine.close()


# --------------------------------------------------------------------------- stores


@pytest.fixture
def store_factory(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Store]]:
    """``store_factory(backend, name="s", **kwargs)``: a new, empty store of that backend."""
    made: list[Store] = []

    def make(backend: str = "sqlite", name: str = "s", **kwargs: object) -> Store:
        if backend == "sqlite":
            from memoryd.store.sqlite import SQLiteStore

            store: Store = SQLiteStore(tmp_path / f"{name}.db", **kwargs)  # type: ignore[arg-type]
        elif backend == "postgresql":
            from memoryd.config import Settings
            from memoryd.opening import open_store

            # A fresh database per store (dropped after the test).
            url = request.getfixturevalue("pg_database")()
            store = open_store(url, Settings(**kwargs))  # type: ignore[arg-type]
        else:
            raise ValueError(f"unknown backend {backend!r}")
        made.append(store)
        return store

    yield make
    for store in reversed(made):
        try:
            store.close()
        except Exception:
            pass


@pytest.fixture(params=STORE_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(backend: str, store_factory: Callable[..., Store], shared_embedder: Embedder) -> Store:
    """An empty store of each backend, with the shared model recorded as its embedder."""
    made = store_factory(backend)
    made.set_embedding_model(shared_embedder.model_id, shared_embedder.dims)
    return made


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for CLI subprocesses: MEMORYD_HOME and XDG dirs in temp dirs."""
    env = {k: v for k, v in os.environ.items() if not is_memoryd_setting(k)}
    home = tmp_path / "memoryd-home"
    config = tmp_path / "xdg-config"
    data = tmp_path / "xdg-data"
    for d in (home, config, data):
        d.mkdir(exist_ok=True)
    env.update(
        MEMORYD_HOME=str(home),
        XDG_CONFIG_HOME=str(config),
        XDG_DATA_HOME=str(data),
        COLUMNS="200",  # keep Rich from wrapping messages
        NO_COLOR="1",
        PYTHONIOENCODING="utf-8",
    )
    return env


@pytest.fixture
def run_cli(cli_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the installed ``memoryd`` console script; returns the completed process."""

    def run(
        *args: str,
        env: dict[str, str] | None = None,
        input: str | None = None,
        timeout: float = 180,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(MEMORYD_BIN), *args],
            env=env if env is not None else cli_env,
            input=input,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
        )

    return run
