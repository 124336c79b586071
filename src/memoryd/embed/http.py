"""Embedders that call an HTTP service: OpenAI-compatible APIs and Ollama."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import numpy as np
from pydantic import SecretStr

from memoryd.embed.base import DEFAULT_BATCH_SIZE, Embedder
from memoryd.errors import EmbeddingError

DEFAULT_OPENAI_URL = "https://api.openai.com"
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_TIMEOUT = 60.0
CONNECT_TIMEOUT = 5.0

#: Native dimensions of common hosted/Ollama models, so ``dims`` can be omitted.
KNOWN_DIMS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
}


def known_dims(model: str) -> int | None:
    """Native dimensions of ``model`` if well known (an Ollama ``:tag`` is ignored)."""
    return KNOWN_DIMS.get(model) or KNOWN_DIMS.get(model.split(":", 1)[0])


class _HTTPEmbedder(Embedder):
    """Shared plumbing: one pooled ``httpx.Client``, request/response error mapping."""

    def __init__(
        self,
        *,
        model_id: str,
        dims: int | None,
        url: str,
        headers: dict[str, str],
        batch_size: int,
        timeout: float,
    ) -> None:
        if dims is None:
            raise EmbeddingError(
                f"embedder {model_id!r} has unknown vector dimensions; set them "
                "explicitly (MEMORYD_EMBED_DIMS), since they must be known before "
                "the first request"
            )
        super().__init__(model_id=model_id, dims=dims, batch_size=batch_size)
        self.url = url
        self.timeout = timeout
        self._headers = headers
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def _http(self) -> httpx.Client:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = httpx.Client(
                        headers=self._headers,
                        timeout=httpx.Timeout(
                            self.timeout, connect=min(CONNECT_TIMEOUT, self.timeout)
                        ),
                    )
        return self._client

    def close(self) -> None:
        """Close the pooled HTTP connections (a later call reopens them)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _post(self, payload: dict[str, Any]) -> Any:
        """POST ``payload`` as JSON to ``self.url`` and return the decoded JSON body."""
        try:
            response = self._http().post(self.url, json=payload)
        except httpx.TimeoutException as exc:
            raise EmbeddingError(
                f"embedding request to {self.url} timed out after {self.timeout:g}s "
                f"({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(
                f"could not reach embedding service at {self.url}: {type(exc).__name__}: {exc}"
            ) from exc
        if response.status_code != 200:
            body = response.text[:300].strip()
            raise EmbeddingError(
                f"embedding service {self.url} returned HTTP {response.status_code}"
                + (f": {body}" if body else "")
            )
        try:
            return response.json()
        except ValueError as exc:
            raise EmbeddingError(
                f"embedding service {self.url} returned HTTP 200 with a body that is not JSON"
            ) from exc

    def _check_rows(self, rows: Any, expected: int) -> np.ndarray:
        """Validate the count and length of returned vectors, naming the URL on failure."""
        if not isinstance(rows, list) or len(rows) != expected:
            got = len(rows) if isinstance(rows, list) else type(rows).__name__
            raise EmbeddingError(
                f"embedding service {self.url} returned {got} vectors for {expected} texts"
            )
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != self.dims:
                got = len(row) if isinstance(row, list) else type(row).__name__
                raise EmbeddingError(
                    f"embedding service {self.url} returned a vector of {got} dims for "
                    f"text {i}; {self.model_id!r} is configured for {self.dims} dims"
                )
        try:
            return np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"embedding service {self.url} returned non-numeric vector values"
            ) from exc


class OpenAIEmbedder(_HTTPEmbedder):
    """Any OpenAI-compatible ``POST /v1/embeddings`` endpoint (OpenAI, vLLM, LM Studio, ...)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | SecretStr | None = None,
        dims: int | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if isinstance(api_key, SecretStr):
            api_key = api_key.get_secret_value()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        base = base_url.rstrip("/")
        # Accept both "https://host" and "https://host/v1" as the base URL.
        url = f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"
        super().__init__(
            model_id=f"openai:{model}",
            dims=dims or known_dims(model),
            url=url,
            headers=headers,
            batch_size=batch_size,
            timeout=timeout,
        )
        self.model = model

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        body = self._post({"model": self.model, "input": texts})
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"embedding service {self.url} returned no 'data' list")
        try:
            items = sorted(data, key=lambda item: item["index"])
            indices = [item["index"] for item in items]
            rows = [item["embedding"] for item in items]
        except (KeyError, TypeError) as exc:
            raise EmbeddingError(
                f"embedding service {self.url} returned items without 'index'/'embedding'"
            ) from exc
        if len(rows) == len(texts) and indices != list(range(len(texts))):
            raise EmbeddingError(
                f"embedding service {self.url} returned indices {indices[:10]}..., "
                f"expected 0..{len(texts) - 1}"
            )
        return self._check_rows(rows, len(texts))


class OllamaEmbedder(_HTTPEmbedder):
    """An Ollama server's ``POST /api/embed`` endpoint."""

    def __init__(
        self,
        base_url: str = DEFAULT_OLLAMA_URL,
        model: str = "nomic-embed-text",
        dims: int | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        # Ollama treats "name" and "name:latest" as the same model.
        model_id = f"ollama:{model.removesuffix(':latest')}"
        super().__init__(
            model_id=model_id,
            dims=dims or known_dims(model),
            url=f"{base_url.rstrip('/')}/api/embed",
            headers={},
            batch_size=batch_size,
            timeout=timeout,
        )
        self.model = model

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        body = self._post({"model": self.model, "input": texts})
        rows = body.get("embeddings") if isinstance(body, dict) else None
        if rows is None:
            raise EmbeddingError(f"embedding service {self.url} returned no 'embeddings' list")
        return self._check_rows(rows, len(texts))
