"""REST search throughput and latency under concurrency, against a real `memoryd serve`.

    .venv/bin/python -m bench.throughput            # 10k memories, 20 clients, 30 s per scenario
    .venv/bin/python -m bench.throughput --quick         # 2k memories, 10 clients, 8 s

What it does:

1. Builds a 10k-memory store from the shared synthetic corpus (bench/latency/corpus.py)
   with its cached vectors (bench/.cache/, git-ignored): no re-embedding after the first run.
2. Creates an API key and starts `memoryd serve` as a separate process on a free port
   (the real console script: uvicorn, auth middleware, the operation registry, the engine).
3. Waits until the model is loaded, warms up, then for each scenario runs N concurrent
   clients (asyncio + httpx, one keep-alive connection each) for D seconds, every client
   sending its next request as soon as the previous answer arrives (closed loop).
4. Records requests/s, latency p50/p95/p99, errors (non-2xx or transport failures), the
   server's CPU use, and how busy the machine was with other work.

Scenarios: hybrid search (query embedded per request, the realistic path), keyword-only
search (no embedding: the store and HTTP overhead alone), and the gateway's /recall.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    CACHE_DIR,
    machine_info,
    md_table,
    other_load,
    raise_priority,
    summarize,
    wait_quiet,
    write_results,
)

WORK = CACHE_DIR / "work" / "throughput"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def build(n: int, log: Any) -> tuple[Path, list[str]]:
    """The n-memory store (built once from cached vectors) and a query mix from its corpus."""
    from bench.latency.corpus import embedded_corpus, generate_queries
    from bench.latency.stores import build_store, isolate_settings
    from memoryd.embed import LocalEmbedder

    isolate_settings()
    path = WORK / f"store-{n}.db"
    embedder = LocalEmbedder()
    corpus, vectors, _ = embedded_corpus(n, embedder, log=log)
    if not path.exists():
        log(f"building a {n}-memory store at {path}")
        build_store(path, corpus, vectors, embedder, log=log)
    queries = [
        q for kind in ("short", "question", "long") for q, _ in generate_queries(corpus, 300, kind)
    ]
    random.Random(1).shuffle(queries)
    return path, queries


def start_server(
    store: Path, log: Any, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str, str]:
    """`memoryd serve` on a free port with a fresh key; returns (process, url, key)."""
    import memoryd

    with memoryd.open(f"sqlite:///{store}") as mem:
        key = mem.create_key("bench-throughput", scopes=["read", "write"]).secret
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(
        MEMORYD_HOME=str(WORK / "home"),
        MEMORYD_STORE_URL=f"sqlite:///{store}",
        MEMORYD_CONFIG=str(CACHE_DIR / "no-such-config.toml"),
        **(extra_env or {}),
    )
    memoryd_bin = Path(sys.executable).parent / "memoryd"
    proc = subprocess.Popen(
        [str(memoryd_bin), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                # The first hybrid search waits for the model to load.
                httpx.post(f"{url}/api/v1/search", json={"query": "warm up"}, timeout=300,
                           headers={"Authorization": f"Bearer {key}"}).raise_for_status()
                log(f"server ready on {url} (pid {proc.pid})")
                return proc, url, key
        except (httpx.HTTPError, ValueError):
            pass
        if proc.poll() is not None:
            raise RuntimeError("memoryd serve exited during start-up")
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("memoryd serve did not become ready")


async def _client(
    url: str,
    key: str,
    path: str,
    bodies: list[dict[str, Any]],
    stop_at: float,
    latencies: list[float],
    errors: dict[str, int],
    offset: int,
) -> None:
    headers = {"Authorization": f"Bearer {key}", "X-Agent-Id": "bench"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        i = offset
        while time.perf_counter() < stop_at:
            body = bodies[i % len(bodies)]
            i += 1
            t0 = time.perf_counter()
            try:
                response = await client.post(path, json=body)
                elapsed = (time.perf_counter() - t0) * 1000
                if response.status_code // 100 == 2:
                    latencies.append(elapsed)
                else:
                    errors[str(response.status_code)] = errors.get(str(response.status_code), 0) + 1
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1


def run_scenario(
    url: str,
    key: str,
    pid: int,
    path: str,
    bodies: list[dict[str, Any]],
    clients: int,
    seconds: float,
) -> dict[str, Any]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    cpu0 = _proc_cpu_seconds(pid)
    t0 = time.perf_counter()

    async def main() -> None:
        stop_at = time.perf_counter() + seconds
        await asyncio.gather(
            *(
                _client(url, key, path, bodies, stop_at, latencies, errors, offset=i * 97)
                for i in range(clients)
            )
        )

    asyncio.run(main())
    wall = time.perf_counter() - t0
    server_cpu = _proc_cpu_seconds(pid) - cpu0
    out = {
        "path": path,
        "clients": clients,
        "seconds": round(wall, 2),
        "requests": len(latencies),
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "requests_per_s": round(len(latencies) / wall, 1),
        "latency": summarize(latencies),
        "server_cpu_cores": round(server_cpu / wall, 2),
    }
    return out


def run_config(
    args: Any, store: Path, scenarios: dict[str, Any], extra_env: dict[str, str], log: Any
) -> dict[str, Any]:
    """Start a server with ``extra_env``, warm it up, run every scenario, stop it."""
    proc, url, key = start_server(store, log, extra_env)
    results: dict[str, Any] = {}
    try:
        for path, bodies, _, _ in scenarios.values():  # warm-up: every code path
            run_scenario(url, key, proc.pid, path, bodies, min(4, args.clients), 2.0)
        for name, (path, bodies, clients, seconds) in scenarios.items():
            load_before = wait_quiet(args.quiet_wait, log=log)
            log(f"{name}: {clients} clients for {seconds:.0f}s ...")
            result = run_scenario(url, key, proc.pid, path, bodies, clients, seconds)
            result["other_load_before"] = load_before
            result["other_load_after"] = other_load(1.0)
            results[name] = result
            lat = result["latency"]
            log(
                f"  {result['requests_per_s']} req/s, p50 {lat['p50_ms']} ms, "
                f"p99 {lat['p99_ms']} ms, errors {result['errors']}"
            )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--quick", action="store_true", help="2k memories, 10 clients, 8 s")
    parser.add_argument("--quiet-wait", type=float, default=60.0)
    parser.add_argument(
        "--torch-threads",
        default="1,2",
        help="server configurations to run: comma-separated intra-op thread counts",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.memories, args.clients, args.seconds = 2_000, 10, 8.0
    log = print
    niceness = raise_priority(-10)
    store, queries = build(args.memories, log)
    hybrid = [{"query": q, "limit": 10} for q in queries]
    scenarios = {  # name: (route, bodies, clients, seconds)
        "search_hybrid": ("/api/v1/search", hybrid, args.clients, args.seconds),
        "search_keyword": (
            "/api/v1/search",
            [{"query": q, "limit": 10, "mode": "keyword"} for q in queries],
            args.clients,
            args.seconds,
        ),
        "recall": (
            "/recall",
            [{"prompt": q, "session_key": f"bench-{i % 50}"} for i, q in enumerate(queries)],
            args.clients,
            args.seconds,
        ),
        "search_hybrid_1_client": ("/api/v1/search", hybrid, 1, min(10.0, args.seconds)),
    }
    # torch's intra-op threads per inference, set with OMP_NUM_THREADS (`memoryd serve`
    # defaults to 1 when it is unset; 2 = one per core here, torch's own default).
    configs = {t: {"OMP_NUM_THREADS": t} for t in args.torch_threads.split(",")}
    results: dict[str, dict[str, Any]] = {}
    for config, extra_env in configs.items():
        log(f"server with torch threads: {config}")
        results[config] = run_config(args, store, scenarios, extra_env, log)
    data = {
        "benchmark": "throughput",
        "memories": args.memories,
        "clients": args.clients,
        "seconds_per_scenario": args.seconds,
        "queries": {"count": len(queries), "kinds": ["short", "question", "long"]},
        "server": "memoryd serve (uvicorn, 1 process), SQLite store, all-MiniLM-L6-v2 on CPU",
        "load_generator": "asyncio + httpx in a separate process, closed loop, keep-alive",
        "niceness": niceness,
        "machine": machine_info(),
        "results": results,
    }
    name = "throughput_quick" if args.quick else "throughput"
    rows = [
        [
            config,
            k,
            r["path"],
            r["clients"],
            r["requests_per_s"],
            r["latency"]["p50_ms"],
            r["latency"]["p95_ms"],
            r["latency"]["p99_ms"],
            r["errors"],
            r["server_cpu_cores"],
            r["other_load_before"],
        ]
        for config, by_scenario in results.items()
        for k, r in by_scenario.items()
    ]
    table = md_table(
        [
            "torch threads",
            "scenario",
            "route",
            "clients",
            "req/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "errors",
            "server cores",
            "other load",
        ],
        rows,
    )
    markdown = f"""# REST throughput under concurrency

{args.memories:,} memories (synthetic corpus of bench/latency), {args.clients} concurrent clients,
{args.seconds:.0f} s per scenario, closed loop (each client sends its next request when the
previous answer arrives), against `memoryd serve` in its own process (one uvicorn worker).
Queries: a shuffled mix of {len(queries)} short, question and long queries built from corpus
memories. Machine: {data["machine"]["cpus"]} cores ({data["machine"]["cpu_model"]}); the load
generator shares them. `other load` = cores kept busy by other processes just before the run.

{table}

- `search_hybrid`: BM25 + vector search; the query is embedded on every request (MiniLM on CPU,
  one inference at a time). This is the cost an agent's search pays.
- `search_keyword`: `mode=keyword`, no embedding: HTTP, auth, the registry, FTS5 and ranking.
- `recall`: the gateway route: hybrid search with MMR over twice `max_items` candidates, the
  testing effect recorded per session, then the `<system_memory>` block.
- `search_hybrid_1_client`: the same hybrid search from one client: latency without queueing.

Every search records the access (the testing effect: a write transaction per request, two
with a session key), so part of the server's time is SQLite writes serialised by the store.

`torch threads`: the server's `OMP_NUM_THREADS`: 1 (what `memoryd serve` uses unless told
otherwise) or 2 (one per core, torch's own default). When the cores are busy (other processes,
the load generator, other requests), a two-thread forward pass of a short query waits at every
parallel region for its second thread to be scheduled: compare `search_hybrid_1_client`.

With a closed loop, latency = concurrency / throughput: {args.clients} clients queue behind a
server that embeds one query at a time, so p50 under load is mostly waiting.
"""
    jpath, mpath = write_results(name, data, markdown)
    log(f"wrote {jpath} and {mpath}")
