"""Store-level keyword and vector latency on warm stores: two passes over the same queries.

    python -m bench.scale.warm --n 100000

Uses the stores bench.scale built (bench/.cache/scale/); pass 0 also warms the caches
(PostgreSQL's shared_buffers, the OS page cache), pass 1 is the warm figure.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import datetime, timezone

import numpy as np

from bench.common import md_table, summarize, write_results
from bench.scale.run import PG_SETTINGS, WORK, pg_base_url, pg_url_for


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.scale.warm")
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=200)
    args = p.parse_args()
    from memoryd.models import SearchFilters
    from memoryd.store.postgres import PostgresStore
    from memoryd.store.sqlite import SQLiteStore

    data = json.loads((WORK / f"queries-question-{args.queries}.json").read_text())
    queries, qvecs = data["queries"], np.asarray(data["vectors"], dtype=np.float32)
    everything, now = SearchFilters(), datetime.now(timezone.utc)
    result = {"n": args.n, "queries": len(queries), "load_average_at_start": os.getloadavg(),
              "postgres_settings": PG_SETTINGS, "passes": {}}
    stores = [("postgresql", lambda: PostgresStore(pg_url_for(pg_base_url(None), args.n))),
              ("sqlite", lambda: SQLiteStore(WORK / f"sqlite-{args.n}.db"))]
    for name, opener in stores:
        store = opener()
        try:
            for number in range(2):
                kw, vec = [], []
                for q in queries:
                    t0 = time.perf_counter()
                    store.keyword_search(q, everything, now=now, limit=50)
                    kw.append((time.perf_counter() - t0) * 1000)
                for v in qvecs:
                    t0 = time.perf_counter()
                    store.vector_search(v, everything, now=now, limit=50)
                    vec.append((time.perf_counter() - t0) * 1000)
                result["passes"][f"{name}/{number}"] = {"keyword_top50": summarize(kw), "vector_top50": summarize(vec)}
        finally:
            store.close()
    rows = [[k.split("/")[0], k.split("/")[1], v["keyword_top50"]["p50_ms"], v["keyword_top50"]["p95_ms"],
             v["vector_top50"]["p50_ms"], v["vector_top50"]["p95_ms"]] for k, v in result["passes"].items()]
    md = "\n".join([
        f"# Store-level search latency at {args.n:,} memories, warm", "",
        f"`python -m bench.scale.warm --n {args.n}`; {len(queries)} question queries, top 50; "
        f"load average at start {tuple(round(x, 1) for x in result['load_average_at_start'])}. "
        "Pass 0 warms the caches; pass 1 is the warm figure.", "",
        md_table(["backend", "pass", "keyword p50", "keyword p95", "vector p50", "vector p95"], rows), ""])
    write_results(f"scale_{args.n}_warm", result, md)


if __name__ == "__main__":
    main()
