"""The peer's worker: runs in the peer's own venv and imports only mcp-memory-service.

    <peer venv>/bin/python peer_side.py JOB.json

Driven through its storage API the way its Python users and its MCP tools use it:
``SqliteVecMemoryStorage(path)`` + ``initialize()`` (loads its ONNX MiniLM), ``store_batch``
for batch ingest, ``retrieve`` (its default semantic search, what its ``memory_search`` tool
runs) and ``retrieve_hybrid`` (BM25 + vectors). Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time

STARTED = time.perf_counter()


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def open_storage(path: str):
    from mcp_memory_service.storage.sqlite_vec import SqliteVecMemoryStorage

    storage = SqliteVecMemoryStorage(path)
    await storage.initialize()
    model = type(storage.embedding_model).__name__
    if model != "ONNXEmbeddingModel" or storage.embedding_dimension != 384:
        raise SystemExit(f"the peer is not on its ONNX MiniLM: {model}, "
                         f"{storage.embedding_dimension} dims")
    return storage


def to_memories(items: list[dict]) -> list:
    from mcp_memory_service.models.memory import Memory
    from mcp_memory_service.models.ontology import validate_memory_type
    from mcp_memory_service.utils.hashing import generate_content_hash

    return [Memory(content=m["content"], content_hash=generate_content_hash(m["content"]),
                   tags=m["tags"], memory_type=m["type"] if validate_memory_type(m["type"])
                   else "observation") for m in items]


async def run(job: dict) -> dict:
    """Load, batch-ingest the memories into a new store, then time each query."""
    storage = await open_storage(job["db"])
    loaded_s, loaded_rss = time.perf_counter() - STARTED, rss_mb()
    items = json.load(open(job["memories"]))
    t0 = time.perf_counter()
    stored = 0
    for start in range(0, len(items), job["batch"]):
        results = await storage.store_batch(to_memories(items[start : start + job["batch"]]))
        stored += sum(1 for ok, _ in results if ok)
    ingest_s = time.perf_counter() - t0
    ingested_rss = rss_mb()
    queries = json.load(open(job["queries"]))
    for q in queries[: job["warmup"]]:
        await storage.retrieve(q, n_results=10)
    times: dict[str, list[float]] = {"semantic": [], "hybrid": []}
    for q in queries:
        for mode, search in (("semantic", storage.retrieve), ("hybrid", storage.retrieve_hybrid)):
            t0 = time.perf_counter()
            hits = await search(q, n_results=10)
            times[mode].append((time.perf_counter() - t0) * 1000)
            if not hits:
                raise SystemExit(f"the peer found nothing for {q!r}")
    await storage.close()
    return {"stored": stored, "ingest_s": ingest_s, "load_s": loaded_s, "rss_loaded_mb": loaded_rss,
            "rss_ingested_mb": ingested_rss, "search_ms": times, "peak_rss_mb": peak_mb()}


async def cold(job: dict) -> dict:
    """Open an existing store and answer one query, as a freshly started process."""
    storage = await open_storage(job["db"])
    hits = await storage.retrieve(job["query"], n_results=10)
    first = time.perf_counter() - STARTED
    return {"first_result_s": first, "hits": len(hits), "by_meaning": True,
            "first_by_meaning_s": first, "answer_s": time.perf_counter() - STARTED}


async def vectors(job: dict) -> dict:
    import numpy as np

    storage = await open_storage(job["db"])
    texts = json.load(open(job["texts"]))
    np.save(job["out"], np.asarray(storage.embedding_model.encode(texts), dtype=np.float32))
    return {"saved": job["out"]}


def main() -> None:
    job = json.load(open(sys.argv[1]))
    out = asyncio.run({"run": run, "cold": cold, "vectors": vectors}[job["kind"]](job))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
