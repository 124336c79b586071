"""A search query alone on two threads: how much faster, and what concurrent callers see.

    .venv/bin/python -m bench.latency.query_threads [--rounds 5] [--seconds 4]

memoryd embeds a short search query on its int8 copy of the model (memoryd.embed.onnx_int8).
When its search is the only one running and no other inference is in progress, the query
runs on a two-thread session of that copy (``LONE_QUERY_THREADS``); otherwise on one thread.
Both variants run in one process, alternated round by round: ``two threads when alone``
(what ships) and ``one thread`` (the same embedder with the two-thread session taken away).
A search tells the embedder whether it is the only search running (``alone``); the callers
here are counted the same way.

1. One query alone, per query kind (the peer bench's short, question and long queries):
   median milliseconds of ``embed_query``, and the cosine between the two variants' vectors.
2. ``C`` threads embedding queries back to back for ``--seconds`` (C = 1, 2, 4): queries per
   second and median latency, for each variant: what a server's concurrent searches see.

Results: results/embed_query_threads.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import threading
import time
from typing import Any

import numpy as np

from bench.common import machine_info, md_table, write_results
from bench.peer.memories import QUERY_KINDS, queries

VARIANTS = ("two threads when alone", "one thread")
CALLERS = (1, 2, 4)


def embedders() -> dict[str, Any]:
    """The shipped embedder and the same one without its two-thread query session."""
    from memoryd.embed.onnx import OnnxEmbedder

    shipped = OnnxEmbedder.preset("minilm-int8")
    shipped.load()
    if shipped._model.lone is None:
        raise SystemExit("no two-thread query session here (one core, or no int8 copy)")
    single = OnnxEmbedder.preset("minilm-int8")
    single.load()
    single._model = dataclasses.replace(single._model, lone=None)
    return dict(zip(VARIANTS, (shipped, single)))


def alone(ways: dict[str, Any], texts: dict[str, list[str]], rounds: int) -> dict[str, Any]:
    """Median ms of one query at a time, per kind and variant (alternated per round)."""
    times: dict[str, dict[str, list[float]]] = {v: {k: [] for k in texts} for v in ways}
    for r in range(rounds):
        for name in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
            for kind, batch in texts.items():
                for text in batch:
                    t0 = time.perf_counter()
                    ways[name].embed_query(text, alone=True)
                    times[name][kind].append((time.perf_counter() - t0) * 1000)
    tokenizer = ways[VARIANTS[0]]._model.tokenizer
    out: dict[str, Any] = {}
    for kind, batch in texts.items():
        a, b = (np.stack([ways[v].embed_query(t, alone=True) for t in batch]) for v in VARIANTS)
        two, one = (statistics.median(times[v][kind]) for v in VARIANTS)
        out[kind] = {"n": len(batch),
                     "tokens_median": statistics.median(len(tokenizer.encode(t).ids)
                                                        for t in batch),
                     "two_ms": round(two, 3), "one_ms": round(one, 3),
                     "ratio": round(two / one, 3),
                     "cosine_min": round(float((a * b).sum(axis=1).min()), 6)}
    return out


def concurrent(embedder: Any, texts: list[str], callers: int, seconds: float) -> dict[str, Any]:
    """``callers`` threads embedding queries back to back for ``seconds``, each counted as a
    running search, as the engine counts them (only a lone one may take two threads)."""
    from memoryd.engine.memory.running import search_running

    stop = time.perf_counter() + seconds
    latencies: list[list[float]] = [[] for _ in range(callers)]

    def caller(i: int) -> None:
        j = i
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            with search_running() as lone:
                embedder.embed_query(texts[j % len(texts)], alone=lone)
            latencies[i].append((time.perf_counter() - t0) * 1000)
            j += callers

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(callers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    done = [x for lat in latencies for x in lat]
    return {"per_s": len(done) / elapsed, "p50_ms": statistics.median(done)}


def crowd(ways: dict[str, Any], texts: list[str], rounds: int, seconds: float) -> dict[str, Any]:
    """Queries/s and p50 per number of callers and variant: medians over alternated rounds."""
    runs: dict[int, dict[str, list[dict[str, Any]]]] = {c: {v: [] for v in ways} for c in CALLERS}
    for r in range(rounds):
        for callers in CALLERS:
            for name in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
                runs[callers][name].append(concurrent(ways[name], texts, callers, seconds))
    out: dict[str, Any] = {}
    for callers, per in runs.items():
        row = {}
        for name, rs in per.items():
            row[name] = {"per_s": round(statistics.median(x["per_s"] for x in rs), 1),
                         "p50_ms": round(statistics.median(x["p50_ms"] for x in rs), 3)}
        row["per_s_ratio"] = round(row[VARIANTS[0]]["per_s"] / row[VARIANTS[1]]["per_s"], 3)
        out[str(callers)] = row
    return out


def render(r: dict[str, Any]) -> str:
    lines = ["# A search query alone on two threads", "",
             f"Run {r['started']} on {r['machine']['cpus']} CPUs ({r['machine']['cpu_model']}), "
             f"onnxruntime {r['machine']['onnxruntime']}, load average {r['load'][0]:.1f}-"
             f"{r['load'][1]:.1f}. `embed_query` on the int8 copy: shipped (the query of the "
             "only search running takes a two-thread session; overlapping ones keep one thread "
             "each) against the same embedder with one thread only, alternated over "
             f"{r['rounds']} rounds, medians.", "",
             "One query at a time (the peer bench's queries):", "",
             md_table(["kind", "n", "tokens (median)", "two threads ms", "one thread ms",
                       "ratio", "cosine min"],
                      [[k, v["n"], v["tokens_median"], v["two_ms"], v["one_ms"], v["ratio"],
                        v["cosine_min"]] for k, v in r["alone"].items()]), "",
             f"Callers embedding queries back to back ({r['seconds']} s per run, all kinds):", "",
             md_table(["callers", "shipped q/s", "one thread q/s", "ratio", "shipped p50 ms",
                       "one thread p50 ms"],
                      [[c, v[VARIANTS[0]]["per_s"], v[VARIANTS[1]]["per_s"], v["per_s_ratio"],
                        v[VARIANTS[0]]["p50_ms"], v[VARIANTS[1]]["p50_ms"]]
                       for c, v in r["crowd"].items()]), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.latency.query_threads", description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--queries", type=int, default=150)
    args = p.parse_args(argv)
    if (os.cpu_count() or 1) < 2:
        print("one core: every query runs on one thread; nothing to compare")
        return 0
    load0 = os.getloadavg()[0]
    ways = embedders()
    qs = queries(args.queries)
    by_kind = {k: qs[i::len(QUERY_KINDS)] for i, k in enumerate(QUERY_KINDS)}
    for way in ways.values():
        for text in qs[:10]:
            way.embed_query(text, alone=True)
    result = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine_info(), "rounds": args.rounds, "seconds": args.seconds,
              "alone": alone(ways, by_kind, args.rounds),
              "crowd": crowd(ways, qs, args.rounds, args.seconds),
              "load": [load0, os.getloadavg()[0]]}
    _, md = write_results("embed_query_threads", result, render(result))
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
