"""memoryd's worker: runs in memoryd's environment and imports only memoryd.

    python memoryd_side.py JOB.json

Driven through its Python API the way its users use it: ``memoryd.open(url)`` (the default
embedder, ONNX int8 MiniLM), ``Engine.add_many`` for batch ingest and ``Engine.search``
(hybrid, the default, with the query embedded; ``mode="vector"`` beside it). Prints one JSON
line.
"""

from __future__ import annotations

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


def run(job: dict) -> dict:
    """Load, batch-ingest the memories into a new store, then time each query."""
    import memoryd

    with memoryd.open(f"sqlite:///{job['db']}") as mem:
        mem.warm()
        loaded_s, loaded_rss = time.perf_counter() - STARTED, rss_mb()
        items = [{"content": m["content"], "node_type": m["type"], "tags": m["tags"]}
                 for m in json.load(open(job["memories"]))]
        t0 = time.perf_counter()
        stored = len(mem.add_many(items))
        ingest_s = time.perf_counter() - t0
        ingested_rss = rss_mb()
        queries = json.load(open(job["queries"]))
        for q in queries[: job["warmup"]]:
            mem.search(q, 10)
        times: dict[str, list[float]] = {"hybrid": [], "vector": []}
        for q in queries:
            for mode in ("hybrid", "vector"):
                t0 = time.perf_counter()
                hits = mem.search(q, 10, mode=mode)
                times[mode].append((time.perf_counter() - t0) * 1000)
                if not hits:
                    raise SystemExit(f"memoryd found nothing for {q!r}")
    return {"stored": stored, "ingest_s": ingest_s, "load_s": loaded_s, "rss_loaded_mb": loaded_rss,
            "rss_ingested_mb": ingested_rss, "search_ms": times, "peak_rss_mb": peak_mb()}


def cold(job: dict) -> dict:
    """Open an existing store and answer one query, as a freshly started process. memoryd
    answers by keywords while its model is still loading; the time to the first answer by
    meaning is reported beside it."""
    import memoryd

    with memoryd.open(f"sqlite:///{job['db']}") as mem:
        hits = mem.search(job["query"], 10)
        first = time.perf_counter() - STARTED
        by_meaning = mem.model_ready
        if not by_meaning:
            mem.warm()
            mem.search(job["query"], 10)
        meaning = time.perf_counter() - STARTED if not by_meaning else first
        return {"first_result_s": first, "hits": len(hits), "by_meaning": by_meaning,
                "first_by_meaning_s": meaning, "answer_s": time.perf_counter() - STARTED}


def vectors(job: dict) -> dict:
    import numpy as np

    from memoryd.config import Settings
    from memoryd.embed import make_embedder

    texts = json.load(open(job["texts"]))
    np.save(job["out"], make_embedder(Settings()).embed(texts))
    return {"saved": job["out"]}


def main() -> None:
    job = json.load(open(sys.argv[1]))
    print(json.dumps({"run": run, "cold": cold, "vectors": vectors}[job["kind"]](job)), flush=True)


if __name__ == "__main__":
    main()
