"""Stand-in embedders for tests that need a *different* model than the real one."""

from __future__ import annotations

import hashlib

import numpy as np

from memoryd.embed import Embedder


class HashEmbedder(Embedder):
    """A stand-in model with another id: deterministic vectors from a hash (no weights)."""

    def __init__(self, model_id: str = "test/hash-embedder", dims: int = 384) -> None:
        super().__init__(model_id=model_id, dims=dims)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).normal(size=self.dims))
        return np.asarray(rows, dtype=np.float32)


class FailingEmbedder(Embedder):
    """Wraps a real embedder (same model id) and fails on the n-th batch."""

    def __init__(self, inner: Embedder, fail_on_call: int) -> None:
        super().__init__(model_id=inner.model_id, dims=inner.dims, batch_size=1024)
        self.inner, self.fail_on_call, self.calls = inner, fail_on_call, 0

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise RuntimeError("model crashed")
        return self.inner.embed(texts)
