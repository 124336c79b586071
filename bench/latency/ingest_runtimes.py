"""Ingest with the two runtimes of the default model, interleaved in one run.

    python -m bench.latency.ingest_runtimes [--bulk 1000] [--single 100] [--rounds 3]

Each round writes ``--bulk`` fresh memories with ``add_many`` into a new SQLite store, then
``--single`` more one ``add`` at a time, once with the ONNX Runtime build (the default) and once
with torch (``MEMORYD_EMBEDDER=local``), the two taking turns; texts are bench/latency's
synthetic agent memories, different in every round. Results: results/ingest_runtimes.{json,md}.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import machine_info, md_table, summarize, write_results

RUNTIMES = ("onnx", "local")


def one_round(embedder, corpus, start: int, bulk: int, single: int) -> dict[str, Any]:
    """Bulk then single writes into a fresh store; memories/s and per-call latency."""
    import memoryd

    with tempfile.TemporaryDirectory() as tmp, \
            memoryd.open(f"sqlite:///{Path(tmp) / 'm.db'}", embedder=embedder) as mem:
        items = [{"content": corpus.texts[i], "node_type": corpus.node_types[i],
                  "tags": corpus.tags[i]} for i in range(start, start + bulk)]
        t0 = time.perf_counter()
        mem.add_many(items)
        bulk_s = time.perf_counter() - t0
        calls = []
        for i in range(start + bulk, start + bulk + single):
            t0 = time.perf_counter()
            mem.add(corpus.texts[i], node_type=corpus.node_types[i])
            calls.append((time.perf_counter() - t0) * 1000)
    return {"bulk_per_s": round(bulk / bulk_s, 1), "single_ms": calls}


def render(r: dict[str, Any]) -> str:
    """The markdown summary."""
    rows = [[name, s["bulk_per_s_median"], s["bulk_per_s_rounds"], s["single"]["p50_ms"],
             s["single"]["p95_ms"]] for name, s in r["runtimes"].items()]
    onnx, torch = (r["runtimes"][n] for n in ("onnx", "local"))
    return "\n".join([
        "# Ingest: ONNX Runtime vs torch for the default model", "",
        f"Run {r['started']} with `{r['command']}` on {r['machine']['cpus']} CPUs "
        f"({r['machine']['cpu_model']}), shared with other work. Fresh SQLite store per round; "
        "the runtimes take turns round by round. Budget (DESIGN.md §6): bulk import >= 300 "
        "memories/s with embeddings, one smart ingest <= 30 ms.", "",
        md_table(["runtime", "add_many memories/s (median)", "per round", "add p50 ms",
                  "add p95 ms"], rows), "",
        f"ONNX over torch: bulk x{round(onnx['bulk_per_s_median'] / torch['bulk_per_s_median'], 2)}, "
        f"single add p50 x{round(onnx['single']['p50_ms'] / torch['single']['p50_ms'], 2)}.", ""])


def main(argv: list[str] | None = None) -> None:
    """Run the rounds and write results/ingest_runtimes.{json,md}."""
    p = argparse.ArgumentParser(prog="python -m bench.latency.ingest_runtimes", description=__doc__)
    p.add_argument("--bulk", type=int, default=1000)
    p.add_argument("--single", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    from bench.latency.corpus import ingest_texts
    from bench.latency.stores import isolate_settings
    from memoryd.config import Settings
    from memoryd.embed import make_embedder

    isolate_settings()
    per_round = args.bulk + args.single
    corpus = ingest_texts(per_round * args.rounds * len(RUNTIMES))
    embedders = {name: make_embedder(Settings(embedder=name)) for name in RUNTIMES}
    for e in embedders.values():
        e.load()
    samples: dict[str, dict[str, list]] = {n: {"bulk": [], "single": []} for n in RUNTIMES}
    start = 0
    for _ in range(args.rounds):
        for name, embedder in embedders.items():
            out = one_round(embedder, corpus, start, args.bulk, args.single)
            samples[name]["bulk"].append(out["bulk_per_s"])
            samples[name]["single"].extend(out["single_ms"])
            start += per_round
    result = {
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python -m bench.latency.ingest_runtimes " + " ".join(argv),
        "machine": machine_info(),
        "runtimes": {n: {"bulk_per_s_median": statistics.median(s["bulk"]),
                         "bulk_per_s_rounds": s["bulk"], "single": summarize(s["single"])}
                     for n, s in samples.items()},
    }
    write_results("ingest_runtimes", result, render(result))
    print(render(result))


if __name__ == "__main__":
    main()
