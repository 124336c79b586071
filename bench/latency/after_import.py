"""Searches right after a bulk import, while the automatic domain discovery is due.

    .venv/bin/python -m bench.latency.after_import --previous-ref REF [--rounds 3]

An import that brings a store past the discovery threshold starts a discovery: seconds of
CPU. An agent that goes on searching at once meets it. Each round, for each variant, a
fresh process opens a new SQLite store, imports the peer bench's 5,000 agent memories with
``add_many``, then runs 10 untimed and 150 timed queries, each hybrid then vector, back to
back, as the peer bench does; then it waits for the discovery to finish. Variants: this
checkout, the ``--previous-ref`` version, and this checkout with the automatic discovery
off (``domains_auto=False``). The order flips every round. Reported: the time of the whole
run of searches, and hybrid p50 / p95 over all rounds. Results: results/<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import machine_info, md_table, percentile, write_results
from bench.peer.memories import agent_memories, queries

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN = """
import json, sys, tempfile, threading, time
import memoryd
items, texts, auto = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3] == "1"
with tempfile.TemporaryDirectory() as d, \
        memoryd.open(f"sqlite:///{d}/s.db", domains_auto=auto) as mem:
    mem.warm()
    mem.add_many(items)
    hybrid, started = [], time.perf_counter()
    for q in texts[:10]:
        mem.search(q, 10)
    for q in texts:
        for mode in ("hybrid", "vector"):
            t0 = time.perf_counter()
            mem.search(q, 10, mode=mode)
            if mode == "hybrid":
                hybrid.append((time.perf_counter() - t0) * 1000)
    searches_s = time.perf_counter() - started
    mem.settle()
print(json.dumps({"searches_s": searches_s, "hybrid_ms": hybrid}))
"""


def run(src: Path, items_file: str, texts_file: str, auto: bool) -> dict[str, Any]:
    """One process: import, then search (see the module docstring)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", RUN, items_file, texts_file, str(int(auto))],
                          env=env, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.latency.after_import",
                                description=__doc__)
    p.add_argument("--previous-ref", required=True, help="a git ref to compare with")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--name", default="after_import")
    p.add_argument("--what", default="this checkout", help="which code ran (for the report)")
    args = p.parse_args(argv)
    from bench.latency.ingest_versions import export_ref

    items = [{"content": m["content"], "node_type": m["type"], "tags": m["tags"]}
             for m in agent_memories(5000)]
    files = []
    for data in (items, queries(150)):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(data, f)
        files.append(f.name)
    variants = {"this": (REPO_ROOT / "src", True),
                "previous": (export_ref(args.previous_ref), True),
                "this, discovery off": (REPO_ROOT / "src", False)}
    load0 = os.getloadavg()[0]
    seconds: dict[str, list[float]] = {v: [] for v in variants}
    hybrid: dict[str, list[float]] = {v: [] for v in variants}
    try:
        for r in range(args.rounds):
            for name in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
                src, auto = variants[name]
                out = run(src, files[0], files[1], auto)
                seconds[name].append(round(out["searches_s"], 2))
                hybrid[name] += out["hybrid_ms"]
                print(f"round {r + 1} {name}: {out['searches_s']:.2f} s", flush=True)
    finally:
        for file in files:
            os.unlink(file)
    result = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine_info(), "rounds": args.rounds, "what": args.what,
              "previous_ref": args.previous_ref, "load": [load0, os.getloadavg()[0]],
              "searches_s": seconds,
              "hybrid": {v: {"p50": round(percentile(t, 50), 2), "p95": round(percentile(t, 95), 2)}
                         for v, t in hybrid.items()}}
    rows = [[v, ", ".join(f"{s:.2f}" for s in seconds[v]), result["hybrid"][v]["p50"],
             result["hybrid"][v]["p95"]] for v in variants]
    md = "\n".join([
        "# Searches right after a bulk import", "",
        f"Code: {args.what} (previous: {args.previous_ref}). Run {result['started']} on "
        f"{result['machine']['cpus']} CPUs, "
        f"load average {load0:.1f}-{result['load'][1]:.1f}. Each run: a new SQLite store, "
        "`add_many` of 5,000 agent memories (past the discovery threshold), then 10 untimed "
        "and 150 timed queries, each hybrid then vector, back to back; "
        f"{args.rounds} rounds, the order flipping every round.", "",
        md_table(["variant", "seconds of the 310 searches, by round", "hybrid p50 ms",
                  "hybrid p95 ms"], rows), ""])
    _, path = write_results(args.name, result, md)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
