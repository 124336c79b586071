"""Fresh-process probes (run as subprocesses): cold open time and resident memory.

    python -m bench.latency.probe open <db path>
    python -m bench.latency.probe rss <db path> <queries.json> [onnx|local]

Each prints one JSON object on its last stdout line.
"""

from __future__ import annotations

import json
import sys
import time

T_START = time.perf_counter()


def _wrap_timer(cls, name: str, bucket: dict[str, float]) -> None:
    original = getattr(cls, name)

    def timed(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            bucket[name] = bucket.get(name, 0.0) + time.perf_counter() - t0

    setattr(cls, name, timed)


def probe_open(path: str) -> dict:
    from bench.common import peak_rss_mb, rss_mb
    from bench.latency.stores import isolate_settings, store_url

    isolate_settings()
    t0 = time.perf_counter()
    import memoryd
    from memoryd.store.sqlite import SQLiteStore
    from memoryd.store.sqlite.vector_index import VectorIndex

    t_import = time.perf_counter() - t0
    parts: dict[str, float] = {}
    _wrap_timer(SQLiteStore, "_sync_index", parts)
    _wrap_timer(VectorIndex, "load_hnsw", parts)
    _wrap_timer(VectorIndex, "ensure_hnsw", parts)
    t1 = time.perf_counter()
    mem = memoryd.open(store_url(__import__("pathlib").Path(path)))
    t_open = time.perf_counter() - t1
    out = {
        "import_seconds": round(t_import, 3),
        "open_seconds": round(t_open, 3),
        "parts_seconds": {k: round(v, 3) for k, v in parts.items()},
        "uses_hnsw": mem.store.vector_cache.index.uses_hnsw,
        "vectors": len(mem.store.vector_cache.index),
        "rss_mb": round(rss_mb(), 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    # Do not save the graph again on exit: closing would rewrite the sidecar files.
    mem.store.vector_cache.index = None
    mem.close()
    return out


def probe_rss(path: str, queries_file: str, embedder: str | None = None) -> dict:
    """RSS by stage; ``embedder`` names the embedding runtime (default: the settings' default)."""
    from bench.common import peak_rss_mb, rss_mb
    from bench.latency.stores import isolate_settings, store_url

    isolate_settings()
    import pathlib

    import memoryd
    from memoryd.config import Settings
    from memoryd.embed import make_embedder

    stages = {"python_and_imports": round(rss_mb(), 1)}
    queries = json.loads(pathlib.Path(queries_file).read_text())
    settings = Settings(embedder=embedder) if embedder else Settings()
    mem = memoryd.open(store_url(pathlib.Path(path)), embedder=make_embedder(settings))
    stages["store_open_model_not_loaded"] = round(rss_mb(), 1)
    stages["peak_after_open"] = round(peak_rss_mb(), 1)
    mem.embedder.load()
    stages["plus_model_loaded"] = round(rss_mb(), 1)
    for q in queries:
        mem.search(q, 10)
    stages[f"after_{len(queries)}_searches"] = round(rss_mb(), 1)
    stages["peak"] = round(peak_rss_mb(), 1)
    index = mem.store.vector_cache.index
    uses_hnsw = index.uses_hnsw
    components = {
        "index_matrix_capacity_mb": round(index._matrix.nbytes / 2**20, 1),
        "index_matrix_used_mb": round(index._n * index.dims * 4 / 2**20, 1),
        "index_keys_alive_pos_mb": round(
            (index._keys.nbytes + index._alive.nbytes) / 2**20 + len(index._pos) * 100 / 2**20, 1
        ),
        "hnsw_graph_mb": round(index._hnsw.memory_usage / 2**20, 1) if uses_hnsw else 0.0,
    }
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        stages["after_gc_and_malloc_trim"] = round(rss_mb(), 1)
    except OSError:
        pass
    mem.store.vector_cache.index = None  # keep the saved graph as it is
    mem.close()
    return {
        "stages_mb": stages,
        "components_mb": components,
        "rss_mb": stages[f"after_{len(queries)}_searches"],
        "peak_rss_mb": stages["peak"],
        "uses_hnsw": uses_hnsw,
    }


def main() -> None:
    kind = sys.argv[1]
    if kind == "open":
        result = probe_open(sys.argv[2])
    elif kind == "rss":
        result = probe_rss(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        raise SystemExit(f"unknown probe {kind}")
    result["process_seconds"] = round(time.perf_counter() - T_START, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
