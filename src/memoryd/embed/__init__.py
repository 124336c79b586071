"""Embedding providers: text in, unit-length float32 vectors out.

``make_embedder(settings)`` picks the provider named by ``settings.embedder``.
This package imports neither torch nor httpx; each provider pulls in its heavy
dependencies only when it is constructed or first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.embed.base import Embedder
from memoryd.embed.local import DEFAULT_DIMS, DEFAULT_MODEL_ID, LocalEmbedder
from memoryd.errors import EmbeddingError

if TYPE_CHECKING:
    from memoryd.config import Settings
    from memoryd.embed.fastembed import FastEmbedEmbedder
    from memoryd.embed.http import OllamaEmbedder, OpenAIEmbedder
    from memoryd.embed.onnx import OnnxEmbedder

__all__ = [
    "DEFAULT_DIMS",
    "DEFAULT_MODEL_ID",
    "Embedder",
    "FastEmbedEmbedder",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "make_embedder",
]

# Names under which the bundled default model may be configured.
_DEFAULT_MODEL_NAMES = {DEFAULT_MODEL_ID, "all-MiniLM-L6-v2", "all-minilm-l6-v2"}


def make_embedder(settings: Settings) -> Embedder:
    """Build the embedder selected by ``settings`` (nothing is loaded or contacted yet).

    Raises ``EmbeddingError`` if the configuration is incomplete, e.g. an
    OpenAI embedder without a model or a model of unknown dimensions.
    """
    kind = settings.embedder
    model = settings.embed_model
    batch_size = settings.embed_batch_size
    dims = settings.embed_dims
    if kind == "local":
        if model is None or model in _DEFAULT_MODEL_NAMES:
            return LocalEmbedder(batch_size=batch_size)
        # Any other name is a local sentence-transformers directory.
        return LocalEmbedder(model, dims=dims, batch_size=batch_size)
    if kind == "onnx":
        from memoryd.embed.onnx import PRESETS, OnnxEmbedder

        if model is None or model in PRESETS:
            return OnnxEmbedder.preset(model or "minilm-int8", batch_size=batch_size)
        # Any other name is a directory holding model.onnx and tokenizer.json.
        return OnnxEmbedder.from_directory(model, dims=dims, batch_size=batch_size)
    if kind == "fastembed":
        from memoryd.embed.fastembed import DEFAULT_FASTEMBED_MODEL, FastEmbedEmbedder

        return FastEmbedEmbedder(model or DEFAULT_FASTEMBED_MODEL, dims=dims, batch_size=batch_size)
    if kind == "openai":
        from memoryd.embed.http import DEFAULT_OPENAI_URL, OpenAIEmbedder

        if not model:
            raise EmbeddingError(
                "MEMORYD_EMBEDDER=openai needs a model name (MEMORYD_EMBED_MODEL), "
                "e.g. text-embedding-3-small"
            )
        return OpenAIEmbedder(
            settings.embed_url or DEFAULT_OPENAI_URL,
            model,
            api_key=settings.embed_api_key,
            dims=dims,
            batch_size=batch_size,
        )
    if kind == "ollama":
        from memoryd.embed.http import DEFAULT_OLLAMA_URL, OllamaEmbedder

        return OllamaEmbedder(
            settings.embed_url or DEFAULT_OLLAMA_URL,
            model or "nomic-embed-text",
            dims=dims,
            batch_size=batch_size,
        )
    raise EmbeddingError(
        f"unknown embedder {kind!r}; use local, onnx, fastembed, openai or ollama"
    )


def __getattr__(name: str) -> Any:
    # Lazy exports keep httpx (and fastembed) out of `import memoryd.embed`.
    if name in ("OpenAIEmbedder", "OllamaEmbedder"):
        from memoryd.embed import http

        return getattr(http, name)
    if name == "OnnxEmbedder":
        from memoryd.embed import onnx

        return onnx.OnnxEmbedder
    if name == "FastEmbedEmbedder":
        from memoryd.embed import fastembed

        return fastembed.FastEmbedEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
