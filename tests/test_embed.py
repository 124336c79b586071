"""Tests of the embedding layer against the real bundled model and real HTTP servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import memoryd.embed
from memoryd.config import Settings
from memoryd.embed import Embedder, LocalEmbedder, make_embedder
from memoryd.embed.fastembed import FastEmbedEmbedder
from memoryd.embed.http import OllamaEmbedder, OpenAIEmbedder
from memoryd.errors import EmbeddingError

SRC_DIR = Path(memoryd.embed.__file__).resolve().parents[2]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def local(torch_embedder: LocalEmbedder) -> LocalEmbedder:
    """all-MiniLM-L6-v2 on torch (``MEMORYD_EMBEDDER=local``), loaded once for the session."""
    return torch_embedder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _make_app(model: LocalEmbedder):
    """A tiny Starlette app speaking the OpenAI and Ollama embedding protocols.

    The requested model name selects a behaviour: ``good`` answers correctly,
    ``fail`` -> HTTP 500, ``wrong-dims``/``wrong-count`` -> malformed vectors,
    ``slow`` -> sleeps past the client's timeout, ``keyed`` -> requires a key.
    """
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def vectors(name: str, texts: list[str]) -> list[list[float]] | JSONResponse:
        if name == "fail":
            return JSONResponse({"error": "model exploded"}, status_code=500)
        if name == "slow":
            time.sleep(1.0)
        # Scaled so the client must normalise them itself.
        rows = (model.embed(texts) * 2.5).tolist()
        if name == "wrong-dims":
            rows = [row[:100] for row in rows]
        if name == "wrong-count":
            rows = rows[:-1]
        return rows

    async def openai(request: Request) -> JSONResponse:
        body = await request.json()
        if body["model"] == "keyed" and request.headers.get("authorization") != "Bearer s3cret":
            return JSONResponse({"error": "bad key"}, status_code=401)
        rows = await run_in_threadpool(vectors, body["model"], body["input"])
        if isinstance(rows, JSONResponse):
            return rows
        data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
        # Real servers may return items out of order; the client must sort by index.
        data.reverse()
        return JSONResponse({"object": "list", "data": data, "model": body["model"]})

    async def ollama(request: Request) -> JSONResponse:
        body = await request.json()
        rows = await run_in_threadpool(vectors, body["model"], body["input"])
        if isinstance(rows, JSONResponse):
            return rows
        return JSONResponse({"model": body["model"], "embeddings": rows})

    return Starlette(
        routes=[
            Route("/v1/embeddings", openai, methods=["POST"]),
            Route("/api/embed", ollama, methods=["POST"]),
        ]
    )


@pytest.fixture(scope="module")
def server_url(local: LocalEmbedder) -> Iterator[str]:
    """Base URL of a real uvicorn server on 127.0.0.1, running in a thread."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(_make_app(local), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "test server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# --------------------------------------------------------------------------- local model


def test_shape_dtype_and_unit_norm(local: LocalEmbedder) -> None:
    vectors = local.embed(["the cat sat on the mat", "memoryd stores memories", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    one = local.embed_one("the cat sat on the mat")
    assert one.shape == (384,)
    assert one.dtype == np.float32
    np.testing.assert_allclose(one, vectors[0], atol=1e-5)


def test_identity_and_defaults(local: LocalEmbedder) -> None:
    assert local.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert local.dims == 384
    assert local.loaded


def test_empty_input(local: LocalEmbedder) -> None:
    for empty in ([], ()):
        out = local.embed(empty)
        assert out.shape == (0, 384)
        assert out.dtype == np.float32


def test_order_preserved_with_mixed_lengths_and_batches(local: LocalEmbedder) -> None:
    texts = [
        "short",
        "a considerably longer sentence that talks about deploying services to production "
        "on friday afternoons, which the user says is a bad idea " * 3,
        "medium length text about coffee",
        "x",
        "the user prefers dark mode in every editor they use",
        "another medium sentence, about databases",
        "ok",
    ]
    singles = np.stack([local.embed_one(t) for t in texts])
    original = local.batch_size
    try:
        for batch_size in (2, 3, 64):
            local.batch_size = batch_size
            batched = local.embed(texts)
            # Padding changes the arithmetic slightly, never the meaning.
            np.testing.assert_allclose(batched, singles, atol=1e-4)
    finally:
        local.batch_size = original


def test_semantic_sanity(local: LocalEmbedder) -> None:
    query, paraphrase, unrelated = local.embed(
        [
            "How do I reset my password?",
            "I forgot my password and need to change it",
            "The stock market fell sharply this afternoon",
        ]
    )
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.3


def test_rejects_a_bare_string(local: LocalEmbedder) -> None:
    with pytest.raises(TypeError):
        local.embed("not a list")  # type: ignore[arg-type]


def test_import_and_construction_are_lazy() -> None:
    code = (
        "import memoryd.embed, sys\n"
        "from memoryd.embed import LocalEmbedder, make_embedder\n"
        "e = LocalEmbedder()\n"
        "assert e.dims == 384 and not e.loaded\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'httpx')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC_DIR), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_concurrent_load_loads_once() -> None:
    embedder = LocalEmbedder()
    barrier = threading.Barrier(4)
    models: list[object] = []

    def worker() -> None:
        barrier.wait()
        embedder.load()
        models.append(embedder._model)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(models) == 4 and all(m is models[0] for m in models)


def test_concurrent_embed_is_safe(local: LocalEmbedder) -> None:
    texts = [f"memory number {i} about topic {i % 5}" for i in range(40)]
    expected = local.embed(texts)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(local.embed(texts))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_custom_local_model_needs_dims(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="dims"):
        LocalEmbedder(tmp_path)
    missing = LocalEmbedder(tmp_path, dims=384)
    with pytest.raises(EmbeddingError, match="no sentence-transformers model"):
        missing.embed(["hi"])


# --------------------------------------------------------------------------- base-class checks


class _FixedEmbedder(Embedder):
    """A real (if trivial) provider whose output is chosen by the test."""

    def __init__(self, output, dims: int = 4, batch_size: int = 2) -> None:
        super().__init__(model_id="test:fixed", dims=dims, batch_size=batch_size)
        self.output = output
        self.batches: list[list[str]] = []

    def _embed_batch(self, texts: list[str]):
        self.batches.append(texts)
        if isinstance(self.output, BaseException):
            raise self.output
        return self.output(texts) if callable(self.output) else self.output


def test_base_batches_and_normalises() -> None:
    embedder = _FixedEmbedder(lambda texts: [[float(len(t)), 0, 0, 0] for t in texts])
    out = embedder.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert [len(b) for b in embedder.batches] == [2, 2, 1]
    np.testing.assert_allclose(out, np.tile([1, 0, 0, 0], (5, 1)))
    assert out.dtype == np.float32


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (np.ones((2, 3)), "shape"),
        (np.ones((1, 4)), "shape"),
        (np.array([[1, np.nan, 0, 0], [1, 0, 0, 0]]), "NaN"),
        (np.array([[1, np.inf, 0, 0], [1, 0, 0, 0]]), "NaN"),
        (np.zeros((2, 4)), "zero"),
        ([[1, 2, 3, 4], [1, 2]], "numeric"),
        (RuntimeError("backend crashed"), "backend crashed"),
    ],
)
def test_base_rejects_bad_provider_output(output, message: str) -> None:
    with pytest.raises(EmbeddingError, match=message):
        _FixedEmbedder(output).embed(["one", "two"])


def test_base_validates_construction() -> None:
    with pytest.raises(EmbeddingError):
        _FixedEmbedder(None, dims=0)


# --------------------------------------------------------------------------- HTTP providers


def test_openai_protocol(server_url: str, local: LocalEmbedder) -> None:
    texts = ["the user likes tea", "deploys happen on mondays", "x" * 50]
    embedder = OpenAIEmbedder(server_url, "good", dims=384, batch_size=2)
    try:
        assert embedder.model_id == "openai:good"
        out = embedder.embed(texts)
    finally:
        embedder.close()
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out, local.embed(texts), atol=1e-5)


def test_openai_accepts_v1_base_url_and_sends_key(server_url: str) -> None:
    embedder = OpenAIEmbedder(f"{server_url}/v1/", "keyed", api_key="s3cret", dims=384)
    assert embedder.url == f"{server_url}/v1/embeddings"
    assert embedder.embed_one("hello").shape == (384,)
    wrong = OpenAIEmbedder(server_url, "keyed", api_key="nope", dims=384)
    with pytest.raises(EmbeddingError, match="401"):
        wrong.embed(["hello"])


def test_ollama_protocol(server_url: str, local: LocalEmbedder) -> None:
    texts = ["remember the milk", "the meeting moved to 3pm"]
    embedder = OllamaEmbedder(server_url, "good:latest", dims=384)
    assert embedder.model_id == "ollama:good"
    out = embedder.embed(texts)
    np.testing.assert_allclose(out, local.embed(texts), atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_http_server_error(server_url: str, cls) -> None:
    embedder = cls(server_url, "fail", dims=384)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["hello"])
    assert "500" in str(info.value) and server_url in str(info.value)


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_http_wrong_dims(server_url: str, cls) -> None:
    with pytest.raises(EmbeddingError, match="100 dims"):
        cls(server_url, "wrong-dims", dims=384).embed(["hello", "world"])


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_http_wrong_count(server_url: str, cls) -> None:
    with pytest.raises(EmbeddingError, match="1 vectors for 2 texts"):
        cls(server_url, "wrong-count", dims=384).embed(["hello", "world"])


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_http_connection_refused(cls) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(EmbeddingError) as info:
        cls(url, "good", dims=384).embed(["hello"])
    assert "could not reach" in str(info.value) and url in str(info.value)


def test_http_timeout(server_url: str) -> None:
    embedder = OllamaEmbedder(server_url, "slow", dims=384, timeout=0.3)
    with pytest.raises(EmbeddingError, match="timed out"):
        embedder.embed(["hello"])


def test_http_unknown_dims_is_an_error() -> None:
    with pytest.raises(EmbeddingError, match="MEMORYD_EMBED_DIMS"):
        OpenAIEmbedder("http://127.0.0.1:1", "some-custom-model")
    assert OllamaEmbedder(model="nomic-embed-text:v1.5").dims == 768


# --------------------------------------------------------------------------- fastembed


def test_fastembed_missing_is_a_clear_error(tmp_path: Path) -> None:
    # An empty cache dir: either the package is absent or the model is not cached.
    embedder = FastEmbedEmbedder("BAAI/bge-small-en-v1.5", cache_dir=tmp_path)
    assert embedder.model_id == "fastembed:BAAI/bge-small-en-v1.5"
    assert embedder.dims == 384 and not embedder.loaded
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["hello"])
    message = str(info.value)
    try:
        import fastembed  # noqa: F401
    except ImportError:
        assert "fastembed package, which is not installed" in message
    else:
        assert f"is not cached at {tmp_path}" in message


def test_fastembed_dims_table() -> None:
    assert FastEmbedEmbedder("BAAI/bge-base-en-v1.5").dims == 768
    assert FastEmbedEmbedder("nomic-ai/nomic-embed-text-v1.5").dims == 768
    with pytest.raises(EmbeddingError, match="unknown dimensions"):
        FastEmbedEmbedder("someone/other-model")
    assert FastEmbedEmbedder("someone/other-model", dims=512).dims == 512


# --------------------------------------------------------------------------- make_embedder


@pytest.fixture
def isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Settings built only from arguments (no config file, no MEMORYD_* env)."""
    monkeypatch.setenv("MEMORYD_CONFIG", str(tmp_path / "absent.toml"))
    for name in list(os.environ):
        if name.startswith("MEMORYD_") and name != "MEMORYD_CONFIG":
            monkeypatch.delenv(name)
    return lambda **kw: Settings(home=tmp_path, **kw)


def test_make_embedder_local(isolated_settings) -> None:
    embedder = make_embedder(isolated_settings(embedder="local", embed_batch_size=16))
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.dims == 384 and embedder.batch_size == 16 and not embedder.loaded


def test_make_embedder_http(isolated_settings, server_url: str) -> None:
    openai = make_embedder(
        isolated_settings(
            embedder="openai",
            embed_url=server_url,
            embed_model="keyed",
            embed_api_key="s3cret",
            embed_dims=384,
        )
    )
    assert isinstance(openai, OpenAIEmbedder) and openai.model_id == "openai:keyed"
    assert openai.embed(["tea"]).shape == (1, 384)
    ollama = make_embedder(
        isolated_settings(
            embedder="ollama", embed_url=server_url, embed_model="good", embed_dims=384
        )
    )
    assert isinstance(ollama, OllamaEmbedder) and ollama.dims == 384
    with pytest.raises(EmbeddingError, match="model name"):
        make_embedder(isolated_settings(embedder="openai"))


def test_make_embedder_fastembed(isolated_settings) -> None:
    embedder = make_embedder(isolated_settings(embedder="fastembed"))
    assert isinstance(embedder, FastEmbedEmbedder)
    assert embedder.model_id == "fastembed:BAAI/bge-small-en-v1.5" and embedder.dims == 384


def test_embedder_is_abstract() -> None:
    with pytest.raises(TypeError):
        Embedder(model_id="x", dims=3)  # type: ignore[abstract]
