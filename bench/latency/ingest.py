"""Ingest through the public API: bulk add_many and single add, with their parts."""

from __future__ import annotations

import time
from typing import Any

from bench.common import Stopwatch, summarize


def _items(corpus, start: int, n: int) -> list[dict[str, Any]]:
    return [
        {
            "content": corpus.texts[i],
            "node_type": corpus.node_types[i],
            "tags": corpus.tags[i],
            "agent_id": corpus.agent_ids[i],
        }
        for i in range(start, start + n)
    ]


def bulk(mem, corpus, start: int, n: int) -> dict[str, Any]:
    """``mem.add_many`` of n fresh memories: memories/s including embedding."""
    items = _items(corpus, start, n)
    with Stopwatch() as sw:
        mem.add_many(items)
    return {"n": n, "seconds": round(sw.seconds, 2), "memories_per_s": round(n / sw.seconds, 1)}


def embed_only(embedder, corpus, start: int, n: int) -> dict[str, Any]:
    """Embedding the same kind of texts alone (the model's share of bulk ingest)."""
    texts = corpus.texts[start : start + n]
    with Stopwatch() as sw:
        embedder.embed(texts)
    return {"n": n, "seconds": round(sw.seconds, 2), "texts_per_s": round(n / sw.seconds, 1)}


def single(mem, corpus, start: int, n: int, warmup: int = 5) -> dict[str, Any]:
    """``mem.add`` one at a time: latency per call (embedding + write + index)."""
    items = _items(corpus, start, n + warmup)
    times = []
    for i, item in enumerate(items):
        t0 = time.perf_counter()
        mem.add(**item)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1000.0)
    return summarize(times)


def profile_add(mem, corpus, start: int, n: int, top: int = 30) -> str:
    """cProfile of n single add() calls (the write path at this store size)."""
    import cProfile
    import io
    import pstats

    items = _items(corpus, start, n)
    prof = cProfile.Profile()
    prof.enable()
    for item in items:
        mem.add(**item)
    prof.disable()
    buf = io.StringIO()
    buf.write(f"single add(), {n} calls\n\n")
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def single_store_insert(mem, corpus, start: int, n: int, warmup: int = 5) -> dict[str, Any]:
    """The store's part of one add: ``store.insert`` of one memory with a precomputed vector."""
    from memoryd.engine.checks import build as build_memory
    from memoryd.models import NewMemory
    from memoryd.store.base import Actor

    texts = corpus.texts[start : start + n + warmup]
    vectors = mem.embedder.embed(texts)
    times = []
    for i, text in enumerate(texts):
        memory = build_memory(mem.context, NewMemory(content=text), mem.context.clock())
        t0 = time.perf_counter()
        mem.store.insert([memory], vectors[i : i + 1], Actor("bench"))
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1000.0)
    return summarize(times)
