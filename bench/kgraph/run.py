"""Knowledge-graph bench: core rendering and archival at 500 / 5,000 / 50,000 nodes, token
counting accuracy against cl100k, a simulated project history comparing weightings, and
kg_read / kg_write / kg_archive through the engine on real stores (SQLite, PostgreSQL).

    nice -n 10 .venv/bin/python -m bench.kgraph            # everything (~15-25 min on 2 busy cores)
    .venv/bin/python -m bench.kgraph --quick               # smoke run (~1 min)
    .venv/bin/python -m bench.kgraph --only speed,tokens   # a subset
    nice -n 10 .venv/bin/python -m bench.kgraph --only engine --backends sqlite,postgresql

Speed, per size: a generated project graph (bench/kgraph/generate.py) plus a 40-node
user graph. ``overfull``: every node active (archival has not run yet); ``steady``: after
archival brought the active nodes under the 5,000-token budget (what kg_read sees in
practice). build_core is timed with the cl100k tokenizer and with the estimator (the two
variants of the same run, as a ratio); compact (the archival run) from the overfull state,
planned with cl100k and with the estimator (ratio);
graph.json write and read. Medians and p95 over repeated calls.

Engine (bench/kgraph/engine.py): the same graphs as node memories in a real store; kg_read
cold (a new engine) and warm (the cache), before and after the archival run, and right
after a kg_write; the archival run's time.
Results: bench/results/kgraph.json and kgraph.md.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import memoryd.graph
from bench.common import (
    RESULTS_DIR,
    machine_info,
    other_load,
    source_fingerprint,
    summarize,
    write_results,
)
from bench.kgraph import engine, simulate, tokenizer
from bench.kgraph.generate import NOW, generate_graph, generate_user_graph
from bench.kgraph.report import render
from memoryd.graph.archival import score_nodes
from memoryd.graph.compact import compact
from memoryd.graph.core import build_core
from memoryd.graph.jsonfile import dumps_graph, loads_graph
from memoryd.graph.tokens import get_counter

BUDGET = 5000
ALL_PARTS = {"speed", "tokens", "simulate", "engine"}


def log(msg: str) -> None:
    """Progress line with a timestamp."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def timings(fn: Callable[[], Any], repeats: int, warmup: int = 2) -> dict[str, float]:
    """summarize() of ``repeats`` timed calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(1000 * (time.perf_counter() - t0))
    return summarize(samples)


def speed(sizes: list[int], log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Core rendering, scoring, archival and file round trip at each size."""
    cl100k, estimate = get_counter("cl100k"), get_counter("estimate")
    user = generate_user_graph()
    rows = []
    for n in sizes:
        repeats = 30 if n <= 5000 else 7
        project = generate_graph(n)
        t0 = time.perf_counter()
        compacted = compact([user, project], now=NOW, budget=BUDGET, counter=cl100k)
        compact_first_ms = 1000 * (time.perf_counter() - t0)
        steady = compacted.graphs
        row: dict[str, Any] = {
            "nodes": n + len(user.nodes),
            "edges": len(project.edges) + len(user.edges),
            "archived_after_compact": len(compacted.archived),
            "compact_rounds": compacted.rounds,
        }
        for state, graphs in (("overfull", [user, project]), ("steady", steady)):
            view = build_core(graphs, now=NOW, budget=BUDGET, counter=cl100k)
            row[f"{state}_core"] = {
                "tokens": view.tokens,
                "included": len(view.included),
                "active": view.active,
                "traces": view.traces,
            }
            for name, counter in (("cl100k", cl100k), ("estimate", estimate)):
                row[f"{state}_build_core_{name}"] = timings(
                    lambda g=graphs, c=counter: build_core(g, now=NOW, budget=BUDGET, counter=c),
                    repeats,
                )
                p50 = row[f"{state}_build_core_{name}"]["p50_ms"]
                log(f"speed {n}: {state} build_core ({name}) p50 {p50:.1f} ms")
            row[f"{state}_estimate_vs_cl100k_p50_ratio"] = round(
                row[f"{state}_build_core_estimate"]["p50_ms"]
                / row[f"{state}_build_core_cl100k"]["p50_ms"],
                3,
            )
        both = [user, project]
        row["score_nodes"] = timings(lambda g=both: score_nodes(g, NOW), repeats)
        compact_repeats = 3 if n <= 5000 else 1
        row["compact"] = timings(
            lambda g=both: compact(g, now=NOW, budget=BUDGET, counter=cl100k),
            compact_repeats,
            warmup=0,
        )
        row["compact"]["first_run_ms"] = round(compact_first_ms, 1)
        row["compact_estimate"] = timings(
            lambda g=both: compact(g, now=NOW, budget=BUDGET, counter=estimate),
            compact_repeats,
            warmup=0,
        )
        row["compact_estimate_vs_cl100k_p50_ratio"] = round(
            row["compact_estimate"]["p50_ms"] / row["compact"]["p50_ms"], 3
        )
        text = dumps_graph(steady[1])
        row["file_bytes"] = len(text.encode())
        row["file_write_dumps"] = timings(
            lambda g=steady[1]: dumps_graph(g), max(3, repeats // 3), warmup=1
        )
        row["file_read_loads"] = timings(
            lambda t=text: loads_graph(t), max(3, repeats // 3), warmup=1
        )
        megabytes = row["file_bytes"] / 1e6
        log(f"speed {n}: compact p50 {row['compact']['p50_ms']:.0f} ms, file {megabytes:.1f} MB")
        rows.append(row)
    return rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(prog="python -m bench.kgraph", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one seed, 40 days")
    p.add_argument(
        "--only", default=",".join(sorted(ALL_PARTS)), help="comma-separated parts to run"
    )
    p.add_argument("--sizes", default="500,5000,50000")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--days", type=int, default=180)
    p.add_argument("--backends", default="sqlite,postgresql", help="for the engine part")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run the chosen parts and write bench/results/kgraph{,_quick}.{json,md}."""
    args = parse_args(argv)
    parts = set(args.only.split(","))
    sizes = [500, 2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    seeds = (1,) if args.quick else tuple(int(s) for s in args.seeds.split(","))
    days = 40 if args.quick else args.days
    data: dict[str, Any] = {
        "machine": machine_info(),
        "other_load_start": other_load(),
        "source": source_fingerprint(_graph_dir()),
        "budget": BUDGET,
        "quick": args.quick,
    }
    started = time.perf_counter()
    if "speed" in parts:
        data["speed"] = speed(sizes, log)
    if "tokens" in parts:
        data["tokens"] = tokenizer.run(log, beam_limit=600 if args.quick else None)
    if "simulate" in parts:
        data["simulate"] = simulate.run(log, seeds=seeds, days=days, budget=BUDGET)
    if "engine" in parts:
        data["engine"] = engine.run(log, sizes, args.backends.split(","))
    data["other_load_end"] = other_load()
    data["seconds"] = round(time.perf_counter() - started, 1)
    name = "kgraph_quick" if args.quick else "kgraph"
    previous = RESULTS_DIR / f"{name}.json"
    if previous.exists() and parts != ALL_PARTS:  # a partial run keeps the other parts' results
        old = json.loads(previous.read_text())
        for part in ("speed", "tokens", "simulate", "engine"):
            if part not in data and part in old:
                data[part] = old[part]
                data.setdefault("kept_from_previous_run", []).append(part)
    jpath, mpath = write_results(name, data, render(data))
    log(f"wrote {jpath} and {mpath}")


def _graph_dir() -> Path:
    """The measured package, for the source fingerprint."""
    return Path(memoryd.graph.__file__).parent


if __name__ == "__main__":
    main()
