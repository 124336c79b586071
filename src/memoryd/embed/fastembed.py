"""Optional ONNX embedder backed by the ``fastembed`` package (``memoryd[fastembed]``).

memoryd runs offline, so models are only ever read from fastembed's cache;
nothing is downloaded. Populate the cache on a machine with network access
(``fastembed.TextEmbedding(model_name, cache_dir=...)``) and copy it over.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.embed.base import DEFAULT_BATCH_SIZE, LazyModelEmbedder
from memoryd.embed.runtime import import_onnxruntime
from memoryd.errors import EmbeddingError

DEFAULT_FASTEMBED_MODEL = "BAAI/bge-small-en-v1.5"

#: Dimensions of models whose size is known without loading them.
KNOWN_DIMS: dict[str, int] = {
    "BAAI/bge-small-en-v1.5": 384,
    "BAAI/bge-base-en-v1.5": 768,
    "nomic-ai/nomic-embed-text-v1.5": 768,
}


def default_cache_dir() -> Path:
    """Where fastembed caches models when no ``cache_dir`` is given."""
    override = os.environ.get("FASTEMBED_CACHE_PATH")
    if override:
        return Path(override).expanduser()
    return Path(tempfile.gettempdir()) / "fastembed_cache"


def known_dims(model_name: str) -> int | None:
    """Dimensions of ``model_name`` if it is in ``KNOWN_DIMS`` (also by short name)."""
    if model_name in KNOWN_DIMS:
        return KNOWN_DIMS[model_name]
    short = model_name.rsplit("/", 1)[-1]
    for name, dims in KNOWN_DIMS.items():
        if name.rsplit("/", 1)[-1] == short:
            return dims
    return None


class FastEmbedEmbedder(LazyModelEmbedder):
    """A fastembed ``TextEmbedding`` model read from the local cache only."""

    def __init__(
        self,
        model_name: str = DEFAULT_FASTEMBED_MODEL,
        cache_dir: str | Path | None = None,
        *,
        dims: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        dims = dims or known_dims(model_name)
        if dims is None:
            raise EmbeddingError(
                f"fastembed model {model_name!r} has unknown dimensions; set them "
                f"explicitly (MEMORYD_EMBED_DIMS). Known models: {', '.join(KNOWN_DIMS)}"
            )
        super().__init__(model_id=f"fastembed:{model_name}", dims=dims, batch_size=batch_size)
        self.model_name = model_name
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()

    def _load_model(self) -> Any:
        try:
            import_onnxruntime()  # fastembed runs on it: a clear error, never a crash
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise EmbeddingError(
                "the fastembed embedder needs the fastembed package, which is not "
                "installed; install it with `pip install 'memoryd[fastembed]'` or use "
                "MEMORYD_EMBEDDER=local"
            ) from exc
        try:
            return TextEmbedding(
                model_name=self.model_name,
                cache_dir=str(self.cache_dir),
                local_files_only=True,
            )
        except Exception as exc:
            raise EmbeddingError(
                f"fastembed model {self.model_name} is not cached at {self.cache_dir}; "
                "memoryd does not download models. Run fastembed.TextEmbedding"
                f"({self.model_name!r}, cache_dir=...) on a machine with network "
                "access and copy that cache directory here (or set FASTEMBED_CACHE_PATH). "
                f"Cause: {type(exc).__name__}: {exc}"
            ) from exc

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.load()
        vectors: Iterable[np.ndarray] = self._model.embed(texts, batch_size=len(texts))
        return np.stack(list(vectors))
