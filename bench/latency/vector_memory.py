"""The vector index's memory, search time and recall at 100k vectors: this version against a
previous one, alternated in one run.

    python -m bench.latency.vector_memory [--previous-ref main] [--vectors 100000]
        [--queries 200] [--rounds 3]

The vectors are synthetic (384 dimensions, unit length, drawn around 2,000 centres so the
HNSW graph has neighbourhoods to find), made once and saved under bench/.cache/vector_memory,
with the graph each version's code builds of them. Each round, each version in a fresh process (the order flips every
round) does what opening a store with a saved graph does: fills a ``VectorIndex`` from the
vectors without building, loads and checks the saved graph, then drops its own copy of the
input. It reports the index's resident memory (RSS after, minus RSS before the vectors were
read), the process's peak, and search times: unfiltered top 50 (the graph) and top 10 among
2,000 and 25,000 allowed keys (the exact path a filtered search takes; 25,000 is the most it
serves at 100k), each with its recall@10 against exact search over the float32 vectors.
Results: results/vector_memory.{json,md}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import CACHE_DIR, machine_info, md_table, percentile, write_results
from bench.latency.ingest_versions import export_ref

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = CACHE_DIR / "vector_memory"
DIMS = 384

WORKER = r"""
import gc, json, sys, time
from pathlib import Path
import numpy as np
from memoryd.store.sqlite.vector_index import VectorIndex, _usearch_index

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

vectors_file, graph_file, queries_file, allowed_file = sys.argv[1:5]
_usearch_index()  # the graph library is loaded before the baseline
base = rss_mb()
vectors = np.load(vectors_file)
n = len(vectors)
index = VectorIndex(vectors.shape[1], hnsw_threshold=20_000)
if hasattr(index, "reserve"):
    index.reserve(n)
threshold, index.hnsw_threshold = index.hnsw_threshold, 0
index.upsert(range(n), vectors)
index.hnsw_threshold = threshold
loaded = index.load_hnsw(Path(graph_file))
del vectors
gc.collect()
index_mb = rss_mb() - base
queries = np.load(queries_file)
allowed = json.load(open(allowed_file))
out = {"graph_loaded": loaded, "index_mb": index_mb, "peak_mb": peak_mb(), "ms": {}, "top": {}}
cases = {"unfiltered_top50": (50, None)}
cases.update({f"allowed_{len(a)}_top10": (10, np.asarray(a, np.int64)) for a in allowed})
for name, (k, keys) in cases.items():
    for q in queries[:10]:
        index.search(q, k, allowed=keys)
    times, tops = [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = index.search(q, k, allowed=keys)
        times.append((time.perf_counter() - t0) * 1000)
        tops.append([key for key, _ in hits[:10]])
    out["ms"][name] = times
    out["top"][name] = tops
print(json.dumps(out))
"""


BUILD = r"""
import sys
from pathlib import Path
import numpy as np
from memoryd.store.sqlite.vector_index import VectorIndex

vectors = np.load(sys.argv[1])
index = VectorIndex(vectors.shape[1], hnsw_threshold=len(vectors))
index.upsert(range(len(vectors)), vectors)  # reaches the threshold: builds on every core
index.save_hnsw(Path(sys.argv[2]))
"""


def graph_for(src: Path, files: dict[str, Path]) -> Path:
    """The graph ``src``'s code builds of the vectors, saved once per version of its index."""
    code = (src / "memoryd" / "store" / "sqlite" / "vector_index.py").read_bytes()
    path = files["vectors"].with_suffix(f".{hashlib.sha256(code).hexdigest()[:12]}.usearch")
    if not path.exists():
        env = {**os.environ, "PYTHONPATH": str(src)}
        subprocess.run([sys.executable, "-c", BUILD, str(files["vectors"]), str(path)],
                       env=env, check=True)
    return path


def make_data(n: int, queries: int, *, seed: int = 7) -> dict[str, Path]:
    """The vectors, the queries and the allowed sets (made once)."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    files = {"vectors": DATA_DIR / f"vectors_{n}.npy",
             "queries": DATA_DIR / f"queries_{n}_{queries}.npy",
             "allowed": DATA_DIR / f"allowed_{n}.json"}
    if all(p.exists() for p in files.values()):
        return files
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(2000, DIMS)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.normal(size=(n, DIMS))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    picks = vectors[rng.integers(0, n, queries)] + 0.3 * rng.normal(size=(queries, DIMS))
    picks = (picks / np.linalg.norm(picks, axis=1, keepdims=True)).astype(np.float32)
    np.save(files["vectors"], vectors)
    np.save(files["queries"], picks)
    allowed = [sorted(rng.choice(n, size, replace=False).tolist()) for size in (2_000, 25_000)]
    files["allowed"].write_text(json.dumps(allowed))
    return files


def run_worker(src: Path, graph: Path, files: dict[str, Path]) -> dict[str, Any]:
    """One fresh process of one version (with the graph its code built); its measurements."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    args = [str(files["vectors"]), str(graph), str(files["queries"]), str(files["allowed"])]
    done = subprocess.run([sys.executable, "-c", WORKER, *args], env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout)


def exact_tops(files: dict[str, Path]) -> dict[str, list[list[int]]]:
    """Exact top 10 of every query and case, over the float32 vectors."""
    vectors, queries = np.load(files["vectors"]), np.load(files["queries"])
    sims = queries @ vectors.T
    out = {"unfiltered_top50": np.argsort(-sims, axis=1)[:, :10].tolist()}
    for allowed in json.loads(files["allowed"].read_text()):
        keys = np.asarray(allowed)
        order = np.argsort(-sims[:, keys], axis=1)[:, :10]
        out[f"allowed_{len(allowed)}_top10"] = keys[order].tolist()
    return out


def recall(tops: list[list[int]], exact: list[list[int]]) -> float:
    """Mean share of the exact top 10 found."""
    return round(statistics.mean(len(set(t) & set(e)) / len(e) for t, e in zip(tops, exact)), 4)


def summarize(runs: dict[str, list[dict[str, Any]]],
              exact: dict[str, list[list[int]]]) -> dict[str, Any]:
    """Medians per version, ratios this/previous, recall@10 against exact search."""
    out: dict[str, Any] = {}
    for name, rs in runs.items():
        cases = rs[0]["ms"]
        out[name] = {"graph_loaded": all(r["graph_loaded"] for r in rs),
                     "index_mb": round(statistics.median(r["index_mb"] for r in rs), 1),
                     "peak_mb": round(statistics.median(r["peak_mb"] for r in rs), 1),
                     **{f"{c}_p50_ms": round(percentile([t for r in rs for t in r["ms"][c]], 50), 3)
                        for c in cases},
                     **{f"{c}_p95_ms": round(percentile([t for r in rs for t in r["ms"][c]], 95), 3)
                        for c in cases}}
    this, prev = out["this"], out["previous"]
    out["ratios_this_over_previous"] = {k: round(this[k] / prev[k], 3) for k in this
                                        if k != "graph_loaded" and prev[k]}
    out["recall_at_10"] = {name: {case: recall(rs[0]["top"][case], exact[case])
                                  for case in rs[0]["top"]} for name, rs in runs.items()}
    return out


def render(result: dict[str, Any]) -> str:
    """The markdown summary."""
    s = result["summary"]
    keys = [k for k in s["this"] if k != "graph_loaded"]
    rows = [[k, s["previous"][k], s["this"][k], s["ratios_this_over_previous"].get(k, "")]
            for k in keys]
    return "\n".join([
        "# The vector index at 100k: an int8 graph re-scored from the matrix", "",
        f"Run {result['started']} with `python -m bench.latency.vector_memory --vectors "
        f"{result['vectors']} --queries {result['queries']} --rounds {result['rounds']}` on "
        f"{result['machine']['cpus']} CPUs, shared with other work (1-minute load average "
        f"{min(result['load']):.1f}-{max(result['load']):.1f}). Previous: `{result['previous']}` "
        "(a float32 matrix grown by half each time, beside a float16 HNSW graph whose "
        "similarities are returned); this: the matrix sized once on load, an int8 graph, its "
        "candidates re-scored from the matrix. Each version in a fresh process per round, order alternating; medians over "
        "the rounds (times over every query of every round).", "",
        md_table(["measure", "previous", "this", "this/previous"], rows), "",
        md_table(["recall@10 against exact", *s["recall_at_10"]["this"]],
                 [[name, *s["recall_at_10"][name].values()] for name in ("previous", "this")]),
        "", "`index_mb` is resident memory held by the index after loading (RSS after minus "
        "RSS before the vectors were read); `peak_mb` the process's peak, input included.",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--previous-ref", default="main")
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    files = make_data(args.vectors, args.queries)
    sources = {"this": REPO_ROOT / "src", "previous": export_ref(args.previous_ref)}
    graphs = {name: graph_for(src, files) for name, src in sources.items()}
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in sources}
    load = []
    for r in range(args.rounds):
        for name in (list(sources) if r % 2 == 0 else list(reversed(sources))):
            load.append(os.getloadavg()[0])
            runs[name].append(run_worker(sources[name], graphs[name], files))
    result = {"started": started, "vectors": args.vectors, "queries": args.queries,
              "rounds": args.rounds, "previous": args.previous_ref, "load": load,
              "machine": machine_info(), "summary": summarize(runs, exact_tops(files))}
    write_results("vector_memory", result, render(result))
    print(render(result))


if __name__ == "__main__":
    main()
