"""Search latency: end to end, without query embedding, and the parts."""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from typing import Any, Callable

import numpy as np

from bench.common import summarize


def _run(
    fn: Callable[[int], Any], n: int, warmup: int
) -> tuple[list[float], list[float], list[Any]]:
    """Call fn(i) for i in range(n) after ``warmup`` untimed calls.

    Returns (wall ms per call, this thread's CPU ms per call, results). On a shared
    machine the CPU time is the contention-robust estimate for single-threaded code.
    """
    for i in range(min(warmup, n)):
        fn(i)
    times, cpu, results = [], [], []
    for i in range(n):
        c0 = time.thread_time()
        t0 = time.perf_counter()
        r = fn(i)
        times.append((time.perf_counter() - t0) * 1000.0)
        cpu.append((time.thread_time() - c0) * 1000.0)
        results.append(r)
    return times, cpu, results


def measure_search(
    mem,
    queries: dict[str, list[tuple[str, int]]],
    qvecs: dict[str, np.ndarray],
    *,
    warmup: int = 10,
    corpus_ids: Callable[[int], str] = lambda i: f"bench-{i:07d}",
) -> dict[str, Any]:
    """Every mode over every query of every set; summaries overall and per set."""
    from memoryd.models import SearchFilters

    store = mem.store
    kinds = list(queries)
    texts = [q for k in kinds for q, _ in queries[k]]
    targets = [t for k in kinds for _, t in queries[k]]
    vecs = np.concatenate([qvecs[k] for k in kinds])
    set_of = [k for k in kinds for _ in queries[k]]
    no_filters = SearchFilters()
    decision = {"node_types": ["decision"]}

    def now():
        return mem.context.clock()

    modes: dict[str, Callable[[int], Any]] = {
        "query_embedding": lambda i: mem.embedder.embed([texts[i]]),
        "hybrid_end_to_end": lambda i: mem.search(texts[i], 10),
        "hybrid_no_embedding": lambda i: mem.search(texts[i], 10, query_vector=vecs[i]),
        "keyword_only": lambda i: mem.search(texts[i], 10, mode="keyword"),
        "vector_only_no_embedding": lambda i: mem.search(
            texts[i], 10, mode="vector", query_vector=vecs[i]
        ),
        "store_keyword_search_pool50": lambda i: store.keyword_search(
            texts[i], no_filters, now=now(), limit=50
        ),
        "store_vector_search_pool50": lambda i: store.vector_search(
            vecs[i], no_filters, now=now(), limit=50
        ),
        "index_search_k50": lambda i: store.vector_cache.index.search(vecs[i], 50),
        "hybrid_no_embedding_filtered_node_type": lambda i: mem.search(
            texts[i], 10, query_vector=vecs[i], filters=decision
        ),
    }
    out: dict[str, Any] = {"queries": len(texts), "warmup_calls_excluded": warmup, "modes": {}}
    hit_rates: dict[str, float] = {}
    for name, fn in modes.items():
        times, cpu, results = _run(fn, len(texts), warmup)
        entry = {"all": summarize(times), "thread_cpu": summarize(cpu)}
        for k in kinds:
            entry[k] = summarize([t for t, s in zip(times, set_of) if s == k])
        out["modes"][name] = entry
        if name in ("hybrid_no_embedding", "keyword_only", "vector_only_no_embedding"):
            found = sum(
                any(h.memory.id == corpus_ids(t) for h in hits) for hits, t in zip(results, targets)
            )
            hit_rates[name] = round(found / len(texts), 3)
    out["source_memory_in_top10"] = hit_rates
    return out


def profile_search(mem, texts: list[str], vecs: np.ndarray, top: int = 30) -> str:
    """cProfile of hybrid search without query embedding; the top functions as text."""
    for i in range(min(10, len(texts))):
        mem.search(texts[i], 10, query_vector=vecs[i])
    prof = cProfile.Profile()
    prof.enable()
    for i in range(len(texts)):
        mem.search(texts[i], 10, query_vector=vecs[i])
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    buf.write(f"hybrid search without query embedding, {len(texts)} queries\n\n")
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()
