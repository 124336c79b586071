"""Search latency of two versions of memoryd on the same store, in the same run.

    .venv/bin/python -m bench.latency.search_versions --previous ../other-checkout/src
    .venv/bin/python -m bench.latency.search_versions --previous-ref main \
        --url postgresql://... --query-vector --name search_versions_pg

Builds (or reuses) the scale bench's SQLite store of ``--size`` memories (bench/.cache/scale;
``--synthetic-beyond``: only that many texts are embedded, the rest get noisy copies of their
vectors), or opens the store at ``--url`` (any backend, already filled; the queries then
come from the scale bench's corpus of ``--size``, as when it was built), then starts one
worker process per version (``PYTHONPATH`` = its ``src``; ``--previous-ref`` exports a git
ref), each with the store open and the model loaded, and sends every query to both in turn,
one query at a time, so load changes on a shared machine hit both alike. Each worker times
``Engine.search(query, 10)`` in its own process: end to end (the query embedded), or with
``--query-vector`` given the query's vector, embedded beforehand. Reports p50 / p95 per
version and their ratio. Writes bench/results/<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import machine_info, write_results

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = """
import json, sys, time
import memoryd
url, queries, given = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3] == "1"
with memoryd.open(url) as mem:
    mem.warm()
    vectors = mem.embedder.embed(queries) if given else [None] * len(queries)
    keyword_cache = getattr(mem.store, "keyword_cache", None)  # versions that keep one
    if keyword_cache is not None:
        keyword_cache.wait()  # what a long-running server has loaded
    for q in queries[:10]:
        mem.search(q, 10, record_access=False)
    print("ready", flush=True)
    for line in sys.stdin:
        i = int(line)
        t0 = time.perf_counter()
        mem.search(queries[i], 10, query_vector=vectors[i], record_access=False)
        print((time.perf_counter() - t0) * 1000, flush=True)
"""


def start(src: Path, url: str, queries_file: str, given: bool) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.Popen([sys.executable, "-c", WORKER, url, queries_file, str(int(given))],
                            env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"the worker for {src} did not start")
    return proc


def ask(proc: subprocess.Popen[str], i: int) -> float:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{i}\n")
    proc.stdin.flush()
    return float(proc.stdout.readline())


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2), "n": len(ordered)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.latency.search_versions")
    previous = p.add_mutually_exclusive_group(required=True)
    previous.add_argument("--previous", type=Path, help="src/ of the previous version")
    previous.add_argument("--previous-ref", help="a git ref (exported) as the previous version")
    p.add_argument("--url", help="an already filled store (any backend) instead of the SQLite one")
    p.add_argument("--query-vector", action="store_true",
                   help="give each search its query's vector (embedded beforehand)")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--synthetic-beyond", type=int, default=10_000)
    p.add_argument("--per-set", type=int, default=60)
    p.add_argument("--name", default="search_versions")
    args = p.parse_args(argv)
    from bench.latency.corpus import generate_queries
    from bench.latency.ingest_versions import export_ref
    from bench.scale.run import build, corpus_and_vectors, url_for
    from memoryd.embed import OnnxEmbedder

    embedder = OnnxEmbedder.preset("minilm-int8")
    corpus, vectors = corpus_and_vectors(args.size, args.synthetic_beyond, embedder)
    url = args.url or url_for("sqlite", args.size, None)
    if not args.url:
        build("sqlite", url, corpus, vectors, embedder, False)
    queries = [q for kind in ("short", "question", "long")
               for q, _ in generate_queries(corpus, args.per_set, kind)]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(queries, f)
    previous_src = args.previous.resolve() if args.previous else export_ref(args.previous_ref)
    versions = {"previous": previous_src, "this": REPO_ROOT / "src"}
    procs = {name: start(src, url, f.name, args.query_vector) for name, src in versions.items()}
    times: dict[str, list[float]] = {name: [] for name in procs}
    load_before = os.getloadavg()
    try:
        for i in range(len(queries)):
            order = list(procs) if i % 2 == 0 else list(reversed(procs))
            for name in order:
                times[name].append(ask(procs[name], i))
    finally:
        for proc in procs.values():
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(timeout=60)
    backend = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
    out: dict[str, Any] = {"backend": backend, "query_vector_given": args.query_vector,
                           "previous_ref": args.previous_ref,
                           "size": args.size, "synthetic_beyond": args.synthetic_beyond,
                           "queries": len(queries), "machine": machine_info(),
                           "load_before": load_before, "load_after": os.getloadavg(),
                           "versions": {k: str(v) for k, v in versions.items()},
                           "latency": {k: summary(v) for k, v in times.items()}}
    lat = out["latency"]
    out["ratio_p50_this_over_previous"] = round(lat["this"]["p50_ms"] / lat["previous"]["p50_ms"], 3)
    how = "query vector given" if args.query_vector else "end to end"
    embedded = ("every text embedded" if args.synthetic_beyond >= args.size else
                f"the first {args.synthetic_beyond:,} texts embedded, the rest noisy copies of "
                "their vectors")
    store = (f"{backend}, {args.size:,} memories ({embedded})" if not args.url else
             f"{backend} store `{args.url}` ({_count(args.url):,} memories)")
    md = [f"# Engine.search {how}: this version against the previous, same run", "",
          f"{store}, {len(queries)} queries (short, question, long; from the synthetic corpus of "
          f"{args.size:,}), each sent to both versions in turn (previous: "
          f"{args.previous_ref or previous_src}); load average before "
          f"{load_before[0]:.1f}, after {out['load_after'][0]:.1f} (2 cores, shared).", "",
          "| version | p50 ms | p95 ms |", "|---|---:|---:|",
          *[f"| {k} | {v['p50_ms']} | {v['p95_ms']} |" for k, v in lat.items()], "",
          f"Ratio of p50, this over previous: {out['ratio_p50_this_over_previous']}.", ""]
    write_results(args.name, out, "\n".join(md))


def _count(url: str) -> int:
    """How many memories the store at ``url`` holds."""
    import memoryd

    with memoryd.open(url) as mem:
        return mem.store.count()


if __name__ == "__main__":
    main()
