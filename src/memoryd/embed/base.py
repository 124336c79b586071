"""The ``Embedder`` interface: batching, normalisation and output checks.

Providers implement one method, ``_embed_batch``; everything a caller can rely
on (shape, dtype, unit-length rows, order, ``EmbeddingError`` on failure) is
enforced here so every provider behaves the same.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memoryd.errors import EmbeddingError
from memoryd.heap import release_free_memory

DEFAULT_BATCH_SIZE = 64


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors of a fixed dimension.

    ``model_id`` is recorded next to every stored vector and ``dims`` is known
    without loading anything, so a store can check both on open.
    """

    #: Sort texts by length before batching, so each batch pads less.
    #: Only worth it for providers that pad (local transformer models).
    sort_by_length: bool = False

    def __init__(self, *, model_id: str, dims: int, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if not model_id:
            raise EmbeddingError("an embedder needs a non-empty model id")
        if dims < 1:
            raise EmbeddingError(f"embedder {model_id!r}: dims must be positive, got {dims}")
        if batch_size < 1:
            raise EmbeddingError(f"embedder {model_id!r}: batch_size must be positive")
        self._model_id = model_id
        self._dims = int(dims)
        self.batch_size = int(batch_size)

    @property
    def model_id(self) -> str:
        """Stable identifier of the model that made the vectors."""
        return self._model_id

    @property
    def dims(self) -> int:
        """Length of every vector this embedder returns."""
        return self._dims

    @property
    def loaded(self) -> bool:
        """Whether the model is ready; providers with nothing to load are always ready."""
        return True

    def load(self) -> None:
        """Warm up eagerly (load weights, open connections). Idempotent."""
        return None  # nothing to load by default

    def load_within(self, timeout: float) -> bool:
        """Make sure the model is loading and wait for it at most ``timeout`` seconds; True
        when it is ready. Providers with nothing to load are always ready."""
        return self.loaded

    def close(self) -> None:
        """Release resources (HTTP connections); the embedder stays usable."""
        return None  # nothing to release by default

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into an ``(n, dims)`` float32 array of L2-normalised rows.

        Row ``i`` is the vector of ``texts[i]``. Raises ``EmbeddingError`` if
        the provider fails or returns vectors of the wrong shape, NaN/inf, or
        all zeros.
        """
        texts = self._checked_texts(texts)
        out = np.empty((len(texts), self._dims), dtype=np.float32)
        if not texts:
            return out
        if self.sort_by_length:
            order = np.argsort([-len(t) for t in texts], kind="stable")
        else:
            order = np.arange(len(texts))
        for start in range(0, len(texts), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = [texts[i] for i in idx]
            out[idx] = self._checked_batch(batch)
        return out

    @staticmethod
    def _checked_texts(texts: Sequence[str]) -> list[str]:
        """``texts`` as a list, refused with ``TypeError`` unless it is a sequence of str."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_one() for one text")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
        return texts

    def embed_one(self, text: str) -> np.ndarray:
        """Embed a single text into a ``(dims,)`` float32 unit vector."""
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}, not str")
        return self.embed([text])[0]

    def embed_query(self, text: str, *, alone: bool = False) -> np.ndarray:
        """A search query's ``(dims,)`` unit vector: :meth:`embed_one`, unless the embedder
        has a faster path for queries in the same vector space (the ONNX preset's int8 copy).
        Stored memories are always embedded by :meth:`embed`. ``alone``: no other search is
        running in this process, so the embedder may take more than one core for this one."""
        return self.embed_one(text)

    def _checked_batch(self, batch: list[str]) -> np.ndarray:
        """Run the provider on one batch and validate/normalise what it returns."""
        return self._checked_run(lambda: self._embed_batch(batch), len(batch))

    def _checked_run(self, run: Callable[[], Any], rows: int) -> np.ndarray:
        """Call ``run`` (a provider's inference for ``rows`` texts); its vectors checked and
        normalised, any failure an ``EmbeddingError``."""
        try:
            raw: Any = run()
        except EmbeddingError:
            raise
        except Exception as exc:  # any provider failure must surface as EmbeddingError
            raise EmbeddingError(
                f"embedder {self._model_id!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            vectors = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"embedder {self._model_id!r} returned something that is not a "
                f"numeric matrix: {exc}"
            ) from exc
        expected = (rows, self._dims)
        if vectors.shape != expected:
            raise EmbeddingError(
                f"embedder {self._model_id!r} returned shape {vectors.shape}, expected {expected}"
            )
        if not np.isfinite(vectors).all():
            raise EmbeddingError(f"embedder {self._model_id!r} returned NaN or infinite values")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EmbeddingError(f"embedder {self._model_id!r} returned an all-zero vector")
        return vectors / norms

    @abstractmethod
    def _embed_batch(self, texts: list[str]) -> np.ndarray | Sequence[Sequence[float]]:
        """Embed one batch (at most ``batch_size`` texts); return one row per text.

        Rows need not be normalised; the base class checks and normalises them.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self._model_id!r}, dims={self._dims})"


class LazyModelEmbedder(Embedder):
    """An embedder whose model loads on first use (once, thread-safe).

    Subclasses implement :meth:`_load_model` and read ``self._model``.
    """

    def __init__(self, *, model_id: str, dims: int, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        super().__init__(model_id=model_id, dims=dims, batch_size=batch_size)
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._loading: threading.Thread | None = None
        self._loading_lock = threading.Lock()  # guards _loading only: never held while loading
        self._load_done = threading.Event()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._model is not None

    def load(self) -> None:
        """Load the model now (idempotent, thread-safe)."""
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is None:
                self._model = self._load_model()
                self._load_done.set()
                release_free_memory()  # what loading the runtime and weights freed

    def load_within(self, timeout: float) -> bool:
        """Load the model on a background thread (once) and wait for it at most ``timeout``
        seconds: a caller that cannot wait for a slow model is not held up longer, and the
        load goes on. A failed background load resurfaces on the next real use."""
        if self._model is not None:
            return True
        with self._loading_lock:
            thread = None
            if self._loading is None and self._model is None:
                thread = self._loading = threading.Thread(
                    target=self._load_quietly, daemon=True, name=f"load {self.model_id}")
        if thread is not None:
            thread.start()
        self._load_done.wait(max(0.0, timeout))
        return self._model is not None

    def _load_quietly(self) -> None:
        try:
            self.load()
        except Exception:  # noqa: BLE001 - raised again by the next embed()
            pass
        finally:
            with self._loading_lock:
                self._loading = None
            self._load_done.set()

    @abstractmethod
    def _load_model(self) -> Any:
        """Load and return the model object."""
