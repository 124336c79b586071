"""Search latency on an existing store: ``python -m bench.latency.search_now --db PATH``.

A short re-measurement of the search path (end to end, and with a precomputed query
vector) after changes to it, without rebuilding stores; the full picture is
``python -m bench.latency``. Writes bench/results/search_now.{json,md}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from bench.common import machine_info, md_table, summarize, write_results
from bench.latency.corpus import generate_queries, embedded_corpus
from bench.latency.stores import isolate_settings, store_url


def run(db: Path, n: int, per_set: int) -> dict[str, Any]:
    import memoryd
    from memoryd.embed import LocalEmbedder

    isolate_settings()
    embedder = LocalEmbedder()
    embedder.load()
    corpus, _, _ = embedded_corpus(n, embedder, log=lambda m: None)
    queries = [q for kind in ("short", "question", "long")
               for q, _ in generate_queries(corpus, per_set, kind)]
    vectors = embedder.embed(queries)
    out: dict[str, Any] = {"db": str(db), "queries": len(queries)}
    with memoryd.open(store_url(db), embedder=embedder) as mem:
        out["memories"] = mem.store.count()
        modes = {
            "hybrid, end to end": lambda i: mem.search(queries[i], 10, record_access=False),
            "hybrid, query_vector precomputed": lambda i: mem.search(
                queries[i], 10, query_vector=vectors[i], record_access=False),
            "hybrid, precomputed, recording access": lambda i: mem.search(
                queries[i], 10, query_vector=vectors[i], session_key="bench"),
            "keyword only": lambda i: mem.search(queries[i], 10, mode="keyword",
                                                 record_access=False),
            "vector only, precomputed": lambda i: mem.search(
                queries[i], 10, mode="vector", query_vector=vectors[i], record_access=False),
        }
        out["modes"] = {}
        for name, call in modes.items():
            for i in range(10):
                call(i)
            times = []
            for i in range(len(queries)):
                t0 = time.perf_counter()
                call(i)
                times.append((time.perf_counter() - t0) * 1000.0)
            out["modes"][name] = summarize(times)
    out["machine"] = machine_info()
    return out


def render(data: dict[str, Any]) -> str:
    rows = [[name, s["p50_ms"], s["p95_ms"]] for name, s in data["modes"].items()]
    return "\n\n".join([
        "# Search latency, re-measured",
        f"{data['memories']:,} memories, {data['queries']} queries (short / question / long), "
        "limit 10, 10 warm-up calls excluded; shared 2-core machine. Budget (DESIGN.md §6) at "
        "100k: p50 <= 10 ms / p95 <= 25 ms without query embedding, p50 <= 30 ms end to end.",
        md_table(["mode", "p50 ms", "p95 ms"], rows),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--n", type=int, default=100_000, help="corpus size the store was built from")
    parser.add_argument("--per-set", type=int, default=60)
    args = parser.parse_args()
    data = run(args.db, args.n, args.per_set)
    write_results("search_now", data, render(data))
    print(render(data))


if __name__ == "__main__":
    main()
