"""Bulk import and query embedding of two versions of memoryd, alternated in one run.

    python -m bench.latency.ingest_versions [--previous-ref main | --previous DIR/src]
        [--bulk 2000] [--queries 200] [--rounds 5]

One worker process per version (``PYTHONPATH`` = its ``src``; the previous one is exported
from git into bench/.cache/versions unless ``--previous`` names a checkout), each with the
default embedder (ONNX int8 all-MiniLM-L6-v2) loaded. Every round, each version in turn (the
order flips every round) ``add_many``\\s ``--bulk`` fresh memories (bench/latency's synthetic
agent memories, different in every round) into a new SQLite store, then embeds ``--queries``
single queries one at a time (``embed_one``: what a search pays for its query vector). The
vectors each version made of the same texts are compared (cosine), and each worker's peak RSS
is read at the end. Results: results/ingest_versions.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import CACHE_DIR, machine_info, md_table, percentile, write_results

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS_DIR = CACHE_DIR / "versions"

WORKER = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
import numpy as np
import memoryd
from memoryd.config import Settings
from memoryd.embed import make_embedder

texts = json.load(open(sys.argv[1]))
embedder = make_embedder(Settings())
embedder.load()
embedder.embed(texts[:64])
print("ready", flush=True)
for line in sys.stdin:
    cmd, a, b = line.split()
    a, b = int(a), int(b)
    if cmd == "bulk":
        with tempfile.TemporaryDirectory() as tmp, \
                memoryd.open(f"sqlite:///{Path(tmp) / 'm.db'}", embedder=embedder) as mem:
            items = [{"content": t} for t in texts[a:b]]
            t0 = time.perf_counter()
            mem.add_many(items)
            out = {"per_s": (b - a) / (time.perf_counter() - t0)}
    elif cmd == "queries":
        ms = []
        for t in texts[a:b]:
            t0 = time.perf_counter()
            embedder.embed_one(t)
            ms.append((time.perf_counter() - t0) * 1000)
        out = {"ms": ms}
    elif cmd == "vectors":
        path = tempfile.mktemp(suffix=".npy")
        np.save(path, embedder.embed(texts[a:b]))
        out = {"path": path}
    else:
        out = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    print(json.dumps(out), flush=True)
"""


def export_ref(ref: str) -> Path:
    """``src/`` of git ``ref`` exported under bench/.cache/versions/<commit> (reused)."""
    commit = subprocess.run(["git", "rev-parse", ref], cwd=REPO_ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    dest = VERSIONS_DIR / commit
    if not (dest / "src" / "memoryd").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit, "src"], cwd=REPO_ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


class Worker:
    """One version's worker process, driven line by line over stdin/stdout."""

    def __init__(self, src: Path, texts_file: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, texts_file], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self._line() != "ready":
            raise RuntimeError(f"the worker for {src} did not start")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def ask(self, cmd: str, a: int = 0, b: int = 0) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{cmd} {a} {b}\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def cosines(a_path: str, b_path: str) -> dict[str, float]:
    """Row-wise cosines of two saved vector matrices: min, 1st percentile, median."""
    import numpy as np

    a, b = np.load(a_path), np.load(b_path)
    c = (a * b).sum(axis=1)
    return {"min": round(float(c.min()), 6), "p1": round(float(np.percentile(c, 1)), 6),
            "median": round(float(np.median(c)), 6), "n": int(len(c))}


def run_rounds(workers: dict[str, Worker], bulk: int, queries: int,
               rounds: int) -> dict[str, dict[str, list[float]]]:
    """Alternate the versions round by round; fresh texts for every bulk."""
    samples: dict[str, dict[str, list[float]]] = {
        n: {"bulk_per_s": [], "query_ms": [], "load": []} for n in workers}
    start = 0
    for r in range(rounds):
        names = list(workers) if r % 2 == 0 else list(reversed(workers))
        for name in names:
            samples[name]["load"].append(os.getloadavg()[0])
            samples[name]["bulk_per_s"].append(
                workers[name].ask("bulk", start, start + bulk)["per_s"])
            start += bulk
        q0 = start
        for name in names:  # the same queries for both
            samples[name]["query_ms"].extend(workers[name].ask("queries", q0, q0 + queries)["ms"])
        start += queries
        print(f"round {r + 1}: " + ", ".join(
            f"{n} {samples[n]['bulk_per_s'][-1]:.0f}/s" for n in workers), flush=True)
    return samples


def summarize(samples: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """Medians per version and the ratios this/previous."""
    out: dict[str, Any] = {}
    for name, s in samples.items():
        out[name] = {"bulk_per_s_median": round(statistics.median(s["bulk_per_s"]), 1),
                     "bulk_per_s_rounds": [round(x, 1) for x in s["bulk_per_s"]],
                     "query_p50_ms": round(percentile(s["query_ms"], 50), 2),
                     "query_p95_ms": round(percentile(s["query_ms"], 95), 2),
                     "queries": len(s["query_ms"]),
                     "load_average_1m": [round(x, 2) for x in s["load"]]}
    this, prev = out["this"], out["previous"]
    out["ratios_this_over_previous"] = {
        "bulk_per_s": round(this["bulk_per_s_median"] / prev["bulk_per_s_median"], 2),
        "query_p50": round(this["query_p50_ms"] / prev["query_p50_ms"], 2),
        "query_p95": round(this["query_p95_ms"] / prev["query_p95_ms"], 2)}
    return out


def render(r: dict[str, Any]) -> str:
    """The markdown summary."""
    s = r["summary"]
    rows = [[n, s[n]["bulk_per_s_median"], s[n]["bulk_per_s_rounds"], s[n]["query_p50_ms"],
             s[n]["query_p95_ms"], r["peak_rss_mb"][n]] for n in ("previous", "this")]
    ratio = s["ratios_this_over_previous"]
    loads = s["this"]["load_average_1m"] + s["previous"]["load_average_1m"]
    cos = r["vector_cosine_this_vs_previous"]
    return "\n".join([
        "# Bulk import with embeddings: this version against the previous, same run", "",
        f"Run {r['started']} with `{r['command']}` on {r['machine']['cpus']} CPUs "
        f"({r['machine']['cpu_model']}), shared with other work: 1-minute load average "
        f"{min(loads):.1f}-{max(loads):.1f} during the rounds. Previous: `{r['previous']}`. "
        f"Each round, each version (order flipped every round) `add_many`s {r['bulk']:,} fresh "
        f"synthetic agent memories into a new SQLite store, then embeds {r['queries']} single "
        "queries (`embed_one`, the query vector of a search). Budget: bulk import >= 300 "
        "memories/s with embeddings.", "",
        md_table(["version", "add_many memories/s (median)", "per round", "query embed p50 ms",
                  "p95 ms", "peak RSS MB"], rows), "",
        f"This over previous (medians, same run): add_many x{ratio['bulk_per_s']}, query "
        f"embed p50 x{ratio['query_p50']}, p95 x{ratio['query_p95']}.", "",
        f"Vectors of the same {cos['n']:,} texts, this vs previous: cosine min {cos['min']}, "
        f"1st percentile {cos['p1']}, median {cos['median']}.", ""])


def main(argv: list[str] | None = None) -> None:
    """Run the rounds and write results/ingest_versions.{json,md}."""
    p = argparse.ArgumentParser(prog="python -m bench.latency.ingest_versions", description=__doc__)
    p.add_argument("--previous", type=Path, help="src/ of the previous version")
    p.add_argument("--previous-ref", default="main", help="git ref to export when no --previous")
    p.add_argument("--bulk", type=int, default=2000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--name", default="ingest_versions")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    from bench.latency.corpus import ingest_texts

    previous = (args.previous or export_ref(args.previous_ref)).resolve()
    total = (args.bulk * 2 + args.queries) * args.rounds + args.bulk
    texts = ingest_texts(total).texts[:total]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(texts, f)
    workers = {"previous": Worker(previous, f.name), "this": Worker(REPO_ROOT / "src", f.name)}
    try:
        samples = run_rounds(workers, args.bulk, args.queries, args.rounds)
        tail = total - args.bulk
        vec = {n: w.ask("vectors", tail, total)["path"] for n, w in workers.items()}
        peak = {n: round(w.ask("rss")["peak_rss_mb"], 1) for n, w in workers.items()}
    finally:
        for w in workers.values():
            w.stop()
    result = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python -m bench.latency.ingest_versions " + " ".join(argv),
              "machine": machine_info(), "previous": args.previous_ref if not args.previous
              else str(args.previous), "bulk": args.bulk, "queries": args.queries,
              "rounds": args.rounds, "summary": summarize(samples), "peak_rss_mb": peak,
              "vector_cosine_this_vs_previous": cosines(vec["this"], vec["previous"])}
    write_results(args.name, result, render(result))
    print(render(result))


if __name__ == "__main__":
    main()
