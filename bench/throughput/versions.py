"""REST search throughput of two versions of memoryd, alternated in one run.

    python -m bench.throughput.versions [--previous-ref main | --previous DIR/src]
        [--memories 20000] [--clients 8,32] [--seconds 12] [--rounds 3]

Two real ``memoryd serve`` processes on 127.0.0.1, one per version (``PYTHONPATH`` = its
``src``; the previous one is exported from git as bench/latency/ingest_versions.py does),
each on its own copy of one SQLite store of ``--memories`` synthetic agent memories
(bench/latency's corpus with its cached vectors, built as bench/throughput builds it).
Every round, each version in turn (the order flips every round) serves every scenario
for ``--seconds``: closed-loop clients (asyncio + httpx, a keep-alive connection each,
bench/throughput's client), each with a session key as an agent has. Only one server is
loaded at a time; the other idles. Medians over rounds, the ratio this/previous, and the
1-minute load average before each run.

After the rounds both servers are stopped with SIGTERM (a clean shutdown) and each store's
access counts are summed: how many of the memories the searches returned were recorded.
Results: results/throughput_versions.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import machine_info, md_table, summarize, write_results
from bench.latency.ingest_versions import REPO_ROOT, export_ref
from bench.latency.stores import store_files
from bench.throughput.run import WORK, _proc_cpu_seconds, build, start_server

SCENARIOS = {  # name: request body besides the query (every client has its own session)
    "search_hybrid": {"limit": 10},
    "search_keyword": {"limit": 10, "mode": "keyword"},
}


async def _client(url: str, key: str, bodies: list[dict[str, Any]], stop_at: float,
                  latencies: list[float], counts: dict[str, int], offset: int) -> None:
    headers = {"Authorization": f"Bearer {key}", "X-Agent-Id": "bench"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        i = offset
        while time.perf_counter() < stop_at:
            body = bodies[i % len(bodies)]
            i += 1
            t0 = time.perf_counter()
            try:
                response = await client.post("/api/v1/search", json=body)
            except httpx.HTTPError:
                counts["errors"] += 1
                continue
            if response.status_code // 100 != 2:
                counts["errors"] += 1
                continue
            latencies.append((time.perf_counter() - t0) * 1000)
            counts["returned"] += len(response.json()["results"])


def run_load(url: str, key: str, pid: int, bodies: list[dict[str, Any]], clients: int,
             seconds: float) -> dict[str, Any]:
    """``clients`` closed-loop clients for ``seconds``; each has its own session key."""
    latencies: list[float] = []
    counts = {"errors": 0, "returned": 0}
    cpu0, t0 = _proc_cpu_seconds(pid), time.perf_counter()

    async def main() -> None:
        stop_at = time.perf_counter() + seconds
        await asyncio.gather(*(
            _client(url, key, [{**b, "session_key": f"agent-{c}"} for b in bodies], stop_at,
                    latencies, counts, offset=c * 97)
            for c in range(clients)))

    asyncio.run(main())
    wall = time.perf_counter() - t0
    return {"requests_per_s": round(len(latencies) / wall, 2), "latency": summarize(latencies),
            "errors": counts["errors"], "returned": counts["returned"],
            "server_cpu_cores": round((_proc_cpu_seconds(pid) - cpu0) / wall, 2)}


def access_total(store: Path) -> int:
    """The sum of every memory's access count."""
    with sqlite3.connect(store) as conn:
        return int(conn.execute("SELECT COALESCE(SUM(access_count), 0) FROM memories")
                   .fetchone()[0])


def copy_store(source: Path, name: str) -> Path:
    """A fresh copy of the store (with its saved vector index) for one version."""
    dest = source.with_name(f"{name}-{source.name}")
    for src, dst in zip(store_files(source), store_files(dest)):
        dst.unlink(missing_ok=True)
        if src.exists():
            shutil.copyfile(src, dst)
    return dest


def run_rounds(servers: dict[str, tuple[Any, str, str]], queries: list[str], clients: list[int],
               seconds: float, rounds: int, log: Any) -> dict[str, Any]:
    """Alternate the versions round by round; every scenario at every client count."""
    samples: dict[str, Any] = {v: {} for v in servers}
    for r in range(rounds):
        order = list(servers) if r % 2 == 0 else list(reversed(servers))
        for version in order:
            proc, url, key = servers[version]
            for scenario, extra in SCENARIOS.items():
                bodies = [{"query": q, **extra} for q in queries]
                for n in clients:
                    load = os.getloadavg()[0]
                    out = run_load(url, key, proc.pid, bodies, n, seconds)
                    out["load_1m_before"] = round(load, 2)
                    samples[version].setdefault(f"{scenario}@{n}", []).append(out)
                    log(f"round {r + 1} {version:8} {scenario}@{n}: "
                        f"{out['requests_per_s']} req/s, p50 {out['latency']['p50_ms']:.0f} ms,"
                        f" load {load:.1f}")
    return samples


def summarize_versions(samples: dict[str, Any]) -> dict[str, Any]:
    """Per version and scenario: median req/s and p50/p95 over rounds; ratios this/previous."""
    out: dict[str, Any] = {}
    for version, by_case in samples.items():
        out[version] = {case: {
            "req_per_s_median": round(statistics.median(s["requests_per_s"] for s in runs), 2),
            "req_per_s_rounds": [s["requests_per_s"] for s in runs],
            "p50_ms_median": round(statistics.median(s["latency"]["p50_ms"] for s in runs), 1),
            "p95_ms_median": round(statistics.median(s["latency"]["p95_ms"] for s in runs), 1),
            "errors": sum(s["errors"] for s in runs),
            "server_cores_median": statistics.median(s["server_cpu_cores"] for s in runs),
        } for case, runs in by_case.items()}
    out["ratio_this_over_previous"] = {case: {
        "req_per_s": round(out["this"][case]["req_per_s_median"]
                           / out["previous"][case]["req_per_s_median"], 2),
        "p50": round(out["this"][case]["p50_ms_median"] / out["previous"][case]["p50_ms_median"],
                     2),
        "p95": round(out["this"][case]["p95_ms_median"] / out["previous"][case]["p95_ms_median"],
                     2),
    } for case in out["this"]}
    return out


def render(r: dict[str, Any]) -> str:
    """The markdown summary."""
    s = r["summary"]
    rows = []
    for case, ratio in s["ratio_this_over_previous"].items():
        prev, this = s["previous"][case], s["this"][case]
        rows.append([case, prev["req_per_s_median"], this["req_per_s_median"],
                     f"x{ratio['req_per_s']}", prev["p50_ms_median"], this["p50_ms_median"],
                     prev["p95_ms_median"], this["p95_ms_median"],
                     prev["errors"] + this["errors"]])
    loads = r["load_1m"]
    rec = r["access_recorded"]
    return "\n".join([
        "# REST search throughput: this version against the previous, same run", "",
        f"Run {r['started']} with `{r['command']}` on {r['machine']['cpus']} CPUs "
        f"({r['machine']['cpu_model']}), shared with other work (and with the load generator): "
        f"1-minute load average {min(loads):.1f}-{max(loads):.1f} before the runs. Previous: "
        f"`{r['previous']}`. Two `memoryd serve` processes on 127.0.0.1, one per version, each "
        f"on its own copy of a {r['memories']:,}-memory SQLite store; {r['rounds']} rounds, "
        f"the version order flipped every round, {r['seconds']:.0f} s per scenario; "
        "closed-loop clients, each with its own session key. Medians over rounds.", "",
        md_table(["scenario@clients", "previous req/s", "this req/s", "this/previous",
                  "previous p50 ms", "this p50 ms", "previous p95 ms", "this p95 ms",
                  "errors"], rows), "",
        "Access recording after a clean stop (SIGTERM) of each server: memories returned by "
        "the searches (warm-up included) against the sum of access counts written: "
        + "; ".join(f"{v} {rec[v]['recorded']:,} of {rec[v]['returned']:,}"
                    for v in ("previous", "this")) + ".", "",
        "`search_hybrid` ranks keyword and vector candidates; `search_keyword` keyword "
        "candidates only. Both embed the query (the answer score needs its cosines), one "
        "inference at a time on the shared cores. A difference of the returned and recorded "
        "counts is retrievals lost to concurrent searches of the same memory writing states "
        "read before the other's write.", "",
        *([f"What differs between the versions: {r['what']}", ""] if r.get("what") else [])])


def main(argv: list[str] | None = None) -> None:
    """Run the rounds and write results/throughput_versions.{json,md}."""
    p = argparse.ArgumentParser(prog="python -m bench.throughput.versions", description=__doc__)
    p.add_argument("--previous", type=Path, help="src/ of the previous version")
    p.add_argument("--previous-ref", default="main", help="git ref to export when no --previous")
    p.add_argument("--memories", type=int, default=20_000)
    p.add_argument("--clients", default="8,32")
    p.add_argument("--seconds", type=float, default=12.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--name", default="throughput_versions")
    p.add_argument("--what", default="", help="what differs between the versions (for the report)")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    log = print
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    base, queries = build(args.memories, log)
    sources = {"previous": args.previous or export_ref(args.previous_ref),
               "this": REPO_ROOT / "src"}
    servers, stores, before = {}, {}, {}
    for version, src in sources.items():
        stores[version] = copy_store(base, version)
        servers[version] = start_server(stores[version], log, {"PYTHONPATH": str(src)})
        time.sleep(2)  # the start-up search's recording lands (not counted)
        before[version] = access_total(stores[version])
    clients = [int(c) for c in args.clients.split(",")]
    returned = {v: 0 for v in servers}
    try:
        for version, (proc, url, key) in servers.items():  # warm-up: both scenarios
            for extra in SCENARIOS.values():
                returned[version] += run_load(url, key, proc.pid,
                                              [{"query": q, **extra} for q in queries],
                                              4, 3.0)["returned"]
        samples = run_rounds(servers, queries, clients, args.seconds, args.rounds, log)
    finally:
        for proc, _, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=60)
    for version, by_case in samples.items():
        returned[version] += sum(s["returned"] for runs in by_case.values() for s in runs)
    result = {
        "benchmark": "throughput_versions", "started": started,
        "command": "python -m bench.throughput.versions " + " ".join(argv),
        "previous": str(args.previous or args.previous_ref), "memories": args.memories,
        "clients": clients, "seconds": args.seconds, "rounds": args.rounds,
        "what": args.what, "machine": machine_info(),
        "load_1m": [s["load_1m_before"] for by_case in samples.values()
                    for runs in by_case.values() for s in runs],
        "access_recorded": {v: {"returned": returned[v], "recorded": access_total(stores[v]) - before[v]}
                            for v in servers},
        "summary": summarize_versions(samples), "samples": samples,
    }
    for version in stores:
        for f in store_files(stores[version]):
            f.unlink(missing_ok=True)
    jpath, mpath = write_results(args.name, result, render(result))
    log(f"wrote {jpath} and {mpath}")


if __name__ == "__main__":
    main()
