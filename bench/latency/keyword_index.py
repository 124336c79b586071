"""The keyword side's first pass from SQL against the in-memory postings, same store, same run.

    python -m bench.latency.keyword_index [--url sqlite:///bench/.cache/scale/sqlite-100000.db]
        [--rounds 5] [--name keyword_index]

Opens the store twice in one process, once with ``keyword_index=False`` (the SQL computes
the first pass over every posting of the query terms) and once with the in-memory copy
(:mod:`memoryd.store.keyword_index`), and times, round after round with the order
flipped each round: the store's ``keyword_candidates`` (limit 50, the search path's pool)
and ``Engine.search`` with the query vector given (hybrid, no access recording). Also: the
copy's load time and size, and whether the two return the same candidates in the same order.
Also ``Engine.search`` end to end (the query embedded), which the budgets name.
``--url`` takes any store URL (a PostgreSQL one too). Writes bench/results/<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import machine_info, md_table, summarize, write_results
from bench.peer.memories import queries as make_queries

VARIANTS = ("sql", "memory")


def _load_avg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def run(url: str, n_queries: int, rounds: int) -> dict[str, Any]:
    import memoryd
    from memoryd.models import SearchFilters
    from memoryd.retrieval.tokens import query_terms

    queries = make_queries(n_queries)
    engines = {v: memoryd.open(url, keyword_index=(v == "memory")) for v in VARIANTS}
    t0 = time.perf_counter()
    engines["memory"].store.keyword_cache.wait()
    cache = engines["memory"].store.keyword_cache
    out: dict[str, Any] = {"backend": engines["sql"].store.backend,
                           "queries": len(queries), "rounds": rounds,
                           "memories": engines["sql"].store.count(),
                           "load_s": round(time.perf_counter() - t0, 2),
                           "index_mb": round(cache._index.nbytes() / 2**20, 1)
                           if cache._index is not None else None}
    engines["sql"].warm()
    vectors = engines["sql"].embedder.embed(queries)
    now, filters = datetime.now(timezone.utc), SearchFilters()
    same = 0
    for q in queries:
        terms = query_terms(q)
        found = [[c.memory_id for c in engines[v].store.keyword_candidates(
            terms, filters, now=now, limit=50, k1=2.0, b=1.0).candidates] for v in VARIANTS]
        same += found[0] == found[1]
    out["identical_candidates"] = same
    calls = {
        "keyword candidates": lambda e, i: e.store.keyword_candidates(
            query_terms(queries[i]), filters, now=now, limit=50, k1=2.0, b=1.0),
        "search, query vector given": lambda e, i: e.search(
            queries[i], 10, query_vector=vectors[i], record_access=False),
        "search end to end (query embedded)": lambda e, i: e.search(
            queries[i], 10, record_access=False),
    }
    times: dict[str, dict[str, list[float]]] = {c: {v: [] for v in VARIANTS} for c in calls}
    medians: dict[str, dict[str, list[float]]] = {c: {v: [] for v in VARIANTS} for c in calls}
    loads = []
    for r in range(rounds):
        order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
        loads.append(_load_avg())
        for name, call in calls.items():
            for v in order:
                e = engines[v]
                for i in range(5):
                    call(e, i)
                sample = []
                for i in range(len(queries)):
                    t = time.perf_counter()
                    call(e, i)
                    sample.append((time.perf_counter() - t) * 1000.0)
                times[name][v].extend(sample)
                medians[name][v].append(statistics.median(sample))
    out["calls"] = {name: {v: {**summarize(times[name][v]),
                               "round_medians": [round(m, 2) for m in medians[name][v]]}
                           for v in VARIANTS} for name in calls}
    out["load_average"] = [min(loads), max(loads)]
    out["machine"] = machine_info()
    for e in engines.values():
        e.close()
    return out


def render(d: dict[str, Any]) -> str:
    rows = []
    for name, by in d["calls"].items():
        sql, mem = by["sql"], by["memory"]
        rows.append([name, sql["p50_ms"], sql["p95_ms"], mem["p50_ms"], mem["p95_ms"],
                     f"x{mem['p50_ms'] / sql['p50_ms']:.2f}"])
    return "\n\n".join([
        "# Keyword first pass: SQL against the in-memory postings",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `python -m "
        f"bench.latency.keyword_index --rounds {d['rounds']}` on a {d['memories']:,}-memory "
        f"{d['backend']} store; 2 CPUs shared with other work (1-minute load average "
        f"{d['load_average'][0]:.1f}-{d['load_average'][1]:.1f}); {d['queries']} queries "
        "(short, question, long) per round, both variants in one process, order flipped every "
        "round; ms over all rounds.",
        md_table(["call", "SQL p50", "SQL p95", "memory p50", "memory p95",
                  "memory/SQL p50"], rows),
        f"Same candidates in the same order for {d['identical_candidates']} of "
        f"{d['queries']} queries. The in-memory postings took {d['load_s']} s to load (on a "
        f"thread of their own; searches use SQL until then) and hold {d['index_mb']} MiB.",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="sqlite:///" + str(
        Path("bench/.cache/scale/sqlite-100000.db").resolve()))
    parser.add_argument("--name", default="keyword_index")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    data = run(args.url, args.queries, args.rounds)
    write_results(args.name, data, render(data))
    print(render(data))


if __name__ == "__main__":
    main()
