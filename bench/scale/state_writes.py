"""PostgreSQL: adds under concurrent searches, with and without room for state updates.

    python -m bench.scale.state_writes --n 100000 --rounds 3

Every search records access: a background writer rewrites the scheduling state of the hits,
a batch at a time, under the store's write lock, and an add waits for that lock. On a heap
page with no room left, each updated row moves to another page and every index of
``memories`` gets a new entry (the HNSW index included). Migration 13 sets ``fillfactor = 70``
so that a page keeps room for the updated copy of one of its rows (a heap-only update).

The same code runs on three copies of the scale bench's PostgreSQL store (``scale_<n>``,
built by ``python -m bench.scale``), made fresh for every round, in an order that turns
every round:

- ``packed``: pages full (fillfactor 100, rewritten): the layout before migration 13;
- ``upgraded``: what migration 13 alone gives an existing store (fillfactor 70, pages still
  full until their rows move);
- ``roomy``: pages written with fillfactor 70 (a new store, or an old one after
  ``VACUUM FULL``).

The workload is bench.scale's engine throughput run: one process, ``--clients`` threads
sharing one engine, 90% searches (query vectors given, access recorded) and 10% adds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from bench.common import machine_info, md_table, write_results
from bench.scale.run import STEADY_STATE, log, pg_base_url, throughput, with_database

LAYOUTS = {
    "packed": "ALTER TABLE memoryd.memories SET (fillfactor = 100); VACUUM FULL memoryd.memories",
    "upgraded": "ALTER TABLE memoryd.memories SET (fillfactor = 70)",
    "roomy": "ALTER TABLE memoryd.memories SET (fillfactor = 70); VACUUM FULL memoryd.memories",
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.scale.state_writes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100_000, help="size of the scale_<n> store")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--pg-url", default=None)
    p.add_argument("--name", default=None, help="results file stem (default state_writes_pg)")
    return p.parse_args(argv)


def _admin(base: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def templates(base: str, n: int) -> dict[str, str]:
    """One template database per layout, made from ``scale_<n>`` once and kept."""
    import memoryd
    import psycopg

    source = f"scale_{n}"
    with memoryd.open(with_database(base, source)):
        pass  # run this code's migrations on the source first
    names = {layout: f"state_writes_{layout}_{n}" for layout in LAYOUTS}
    with psycopg.connect(base, autocommit=True) as conn:
        present = {r[0] for r in conn.execute("SELECT datname FROM pg_database")}
    for layout, name in names.items():
        if name in present:
            continue
        rewrite = "VACUUM FULL" in LAYOUTS[layout]
        log(f"template {name}" + (" (rewriting the memories table: minutes)" if rewrite else ""))
        _admin(base, f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
        _admin(with_database(base, name), *LAYOUTS[layout].split("; "))
    return names


def hot_updates(url: str) -> tuple[int, int]:
    """Updates of ``memories`` so far, and how many of them were heap-only."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                           "WHERE schemaname = 'memoryd' AND relname = 'memories'").fetchone()
    return int(row[0]), int(row[1])


def one_run(base: str, template: str, args: argparse.Namespace) -> dict[str, Any]:
    """The throughput run on a fresh copy of ``template``; the copy is dropped after."""
    copy = f"{template}_run"
    _admin(base, f'DROP DATABASE IF EXISTS "{copy}"',
           f'CREATE DATABASE "{copy}" TEMPLATE "{template}"')
    url = with_database(base, copy)
    try:
        before = hot_updates(url)
        load = round(os.getloadavg()[0], 2)
        result = throughput(url, args.clients, 1, args.duration, "engine")
        time.sleep(1.0)  # statistics reach pg_stat_user_tables within a second
        after = hot_updates(url)
    finally:
        _admin(base, f'DROP DATABASE IF EXISTS "{copy}"')
    updates, hot = after[0] - before[0], after[1] - before[1]
    return {**result, "load": load, "updates": updates, "hot_updates": hot,
            "hot_share": round(hot / updates, 3) if updates else None}


def main(argv: list[str] | None = None) -> None:
    """Run the layouts in turn; write results/state_writes_pg.{json,md}."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    from bench.latency.stores import isolate_settings

    isolate_settings()
    os.environ.update(STEADY_STATE)
    base = pg_base_url(args.pg_url)
    names = templates(base, args.n)
    runs: dict[str, list[dict[str, Any]]] = {layout: [] for layout in LAYOUTS}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    order = list(LAYOUTS)
    for i in range(args.rounds):
        for layout in order[i % len(order):] + order[: i % len(order)]:
            runs[layout].append(one_run(base, names[layout], args))
            r = runs[layout][-1]
            log(f"round {i + 1} {layout}: {r['requests_per_s']} req/s, add p50 "
                f"{r['add']['p50_ms']:.0f} ms, search p50 {r['search']['p50_ms']:.0f} ms, "
                f"heap-only {r['hot_share']}")
    medians = {layout: _medians(rs) for layout, rs in runs.items()}
    result = {"benchmark": "state_writes_pg", "started": started, "n": args.n,
              "clients": args.clients, "duration_s": args.duration, "rounds": args.rounds,
              "command": "python -m bench.scale.state_writes " + " ".join(argv),
              "machine": machine_info(), "medians": medians, "runs": runs}
    write_results(args.name or "state_writes_pg", result, report(result))


def _medians(rs: list[dict[str, Any]]) -> dict[str, float]:
    def med(get) -> float:
        return round(statistics.median(get(r) for r in rs), 2)

    return {"requests_per_s": med(lambda r: r["requests_per_s"]),
            "searches_per_s": med(lambda r: r["searches_per_s"]),
            "adds_per_s": med(lambda r: r["adds_per_s"]),
            "search_p50_ms": med(lambda r: r["search"]["p50_ms"]),
            "search_p95_ms": med(lambda r: r["search"]["p95_ms"]),
            "add_p50_ms": med(lambda r: r["add"]["p50_ms"]),
            "add_p95_ms": med(lambda r: r["add"]["p95_ms"]),
            "hot_share": med(lambda r: r["hot_share"] or 0.0),
            "errors": sum(r["errors"] for r in rs)}


def report(result: dict[str, Any]) -> str:
    """The markdown summary: medians per layout and each against ``packed`` as a ratio."""
    m = result["medians"]
    rows = []
    for layout, v in m.items():
        base = m["packed"]
        rows.append([layout, v["searches_per_s"], v["adds_per_s"], v["search_p50_ms"],
                     v["search_p95_ms"],
                     v["add_p50_ms"], v["add_p95_ms"],
                     round(v["add_p50_ms"] / base["add_p50_ms"], 3), v["hot_share"], v["errors"]])
    loads = [r["load"] for rs in result["runs"].values() for r in rs]
    return "\n".join([
        "# PostgreSQL: adds under concurrent searches, by heap page room", "",
        f"Run {result['started']} with `{result['command']}` on {result['machine']['cpus']} CPUs "
        f"(1-minute load {min(loads)}-{max(loads)}): {result['n']:,} memories, "
        f"{result['clients']} clients for {result['duration_s']:.0f} s per run, "
        f"{result['rounds']} rounds, medians over rounds.", "",
        md_table(["layout", "searches/s", "adds/s", "search p50 ms", "search p95 ms", "add p50 ms",
                  "add p95 ms", "add p50 / packed", "heap-only updates", "errors"], rows), "",
        "- packed: pages full (fillfactor 100), the layout before migration 13.",
        "- upgraded: migration 13 on an existing store (fillfactor 70, old pages still full). "
        "A row moves on its first update, to a page with room, and stays there on the next: "
        "the memories that searches keep returning soon have room.",
        "- roomy: pages written with fillfactor 70: a new store, or an old one after "
        "`VACUUM FULL memoryd.memories`.",
        "- heap-only updates: the share of row updates of `memories` during the run that "
        "stayed on their page (no index entry written).",
        "- The clients run in a closed loop on two cores: a client no longer waiting for the "
        "write lock searches instead, so more searches share the CPU and each takes longer; "
        "searches/s is the measure of what the server does.",
        "- Each run works on a fresh copy of its layout's template, so earlier runs' adds "
        "and moved rows do not carry over.",
    ])


if __name__ == "__main__":
    main()
