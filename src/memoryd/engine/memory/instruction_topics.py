"""How well a search's query fits the topic of each conditional standing instruction among
its candidates (see :mod:`memoryd.retrieval.instructions`).

The store reads each memory's topic when the memory is written and hands it over with the
candidates (:mod:`memoryd.store.terms`), so a search reads no text for it. A topic is
embedded once per model and kept in a small LRU cache, so a store's instructions cost one
embedding each, ever. When the query has no vector (keyword search while the model loads) or
the embedder fails, every reading is 0 and the candidates are scored by their other evidence
alone.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from memoryd.embed import Embedder
from memoryd.engine.context import EngineContext
from memoryd.errors import EmbeddingError

__all__ = ["topic_cosines"]

log = logging.getLogger(__name__)

_CACHE_SIZE = 4096
_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_lock = threading.Lock()


def topic_cosines(ctx: EngineContext, instruction_topics: Sequence[str | None],
                  query_vector: np.ndarray | None) -> list[float]:
    """Per candidate (given by the topic its instruction is conditioned on, or None): the
    cosine of the query to that topic, or 0 when it states no such instruction."""
    out = [0.0] * len(instruction_topics)
    topics = {i: t for i, t in enumerate(instruction_topics) if t}
    if query_vector is None or not topics:
        return out
    try:
        vectors = _topic_vectors(ctx.embedder, sorted(set(topics.values())))
    except EmbeddingError as exc:  # the query itself was embedded; a topic may still fail
        log.warning("instruction topics not embedded, scored without them: %s", exc)
        return out
    query = np.asarray(query_vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    for i, topic in topics.items():
        vector = vectors[topic]
        if vector.shape == query.shape and norm > 0:
            out[i] = float(vector @ query) / norm  # topic vectors are unit length
    return out


def _topic_vectors(embedder: Embedder, topics: list[str]) -> dict[str, np.ndarray]:
    """Each topic's embedding, from the cache or embedded now (one batch for the new ones)."""
    model = embedder.model_id
    found: dict[str, np.ndarray] = {}
    with _lock:
        for topic in topics:
            vector = _cache.get((model, topic))
            if vector is not None:
                _cache.move_to_end((model, topic))
                found[topic] = vector
    missing = [t for t in topics if t not in found]
    if missing:
        fresh = embedder.embed(missing)
        with _lock:
            for topic, vector in zip(missing, fresh):
                _cache[(model, topic)] = found[topic] = vector
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return found
