"""Run one packaged model inside its own scratch virtualenv, with no network.

    <venv>/bin/python bench/embedmodels/worker.py probe  MODEL
    <venv>/bin/python bench/embedmodels/worker.py embed  MODEL --texts in.json --role doc --out v.npy
    <venv>/bin/python bench/embedmodels/worker.py speed  MODEL --texts short.json --queries q.json
    <venv>/bin/python bench/embedmodels/worker.py rerank MODEL --pairs pairs.json --out s.json

Every command prints one JSON object on its last stdout line. The driver (``run.py``) starts
this script under ``unshare -n`` with ``HF_HUB_OFFLINE=1``, so a model that tries to
download fails here exactly as it would on an offline machine. Imports nothing from memoryd.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

_T0 = time.perf_counter()  # as close to process start as Python allows

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import adapters  # noqa: E402

PROBE_TEXTS = [
    "Deploys go out on Tuesdays after standup.",
    "When do we ship a release?",
    "My cat likes to sleep on the warm laptop keyboard.",
]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1]) / 1024
    return float("nan")


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return float(line.split()[1]) / 1024
    return float("nan")


def _emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def cmd_probe(name: str) -> dict:
    """Load the model and embed three texts; report dims and whether meaning shows."""
    if name in adapters.RERANKERS:
        score = adapters.RERANKERS[name]()
        loaded = time.perf_counter() - _T0
        s = score(PROBE_TEXTS[1], [PROBE_TEXTS[0], PROBE_TEXTS[2]])
        return {"ok": True, "kind": "reranker", "load_s": round(loaded, 3),
                "scores": [round(float(x), 4) for x in s],
                "paraphrase_first": bool(s[0] > s[1])}
    docs, queries = adapters.EMBEDDERS[name]()
    loaded = time.perf_counter() - _T0
    d = docs([PROBE_TEXTS[0], PROBE_TEXTS[2]])
    q = queries([PROBE_TEXTS[1]])[0]
    sims = d @ q
    return {"ok": True, "kind": "embedder", "dims": int(d.shape[1]), "load_s": round(loaded, 3),
            "cos_paraphrase": round(float(sims[0]), 4), "cos_unrelated": round(float(sims[1]), 4),
            "paraphrase_first": bool(sims[0] > sims[1])}


def cmd_embed(name: str, texts_path: Path, role: str, out: Path) -> dict:
    """Embed the texts of a JSON list (documents or queries) into an .npy file."""
    texts = json.loads(texts_path.read_text(encoding="utf-8"))
    docs, queries = adapters.EMBEDDERS[name]()
    fn = queries if role == "query" else docs
    t0 = time.perf_counter()
    step = 256
    parts = []
    for s in range(0, len(texts), step):
        parts.append(fn(texts[s : s + step]))
        done = min(s + step, len(texts))
        el = time.perf_counter() - t0
        print(f"  {name}: {done}/{len(texts)} {role} texts, {el:.0f}s", file=sys.stderr, flush=True)
    vecs = np.vstack(parts).astype(np.float32) if parts else np.zeros((0, 1), np.float32)
    np.save(out, vecs)
    return {"ok": True, "n": len(texts), "dims": int(vecs.shape[1]),
            "seconds": round(time.perf_counter() - t0, 2)}


def _timed(fn, *args) -> tuple[float, float]:
    """(wall ms, process CPU ms over all threads) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn(*args)
    return (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000


def cmd_speed(name: str, texts_path: Path, queries_path: Path, rounds: int) -> dict:
    """Load time, first query, single-query latency, batch-64 throughput, RSS.

    Wall times and process CPU times (all threads) are both kept: on a machine shared with
    other work the wall times stretch with the load, the CPU times much less.
    """
    rss_before = _rss_mb()
    docs, queries = adapters.EMBEDDERS[name]()
    load_s, load_cpu_s = time.perf_counter() - _T0, time.process_time()
    short = json.loads(texts_path.read_text(encoding="utf-8"))
    qs = json.loads(queries_path.read_text(encoding="utf-8"))
    first_ms, first_cpu_ms = _timed(queries, [qs[0]])
    first_done_wall = time.time()
    rss_loaded = _rss_mb()
    for q in qs[1:11]:  # warm-up
        queries([q])
    timed = [_timed(queries, [q]) for q in qs[11:]]
    lat, lat_cpu = [t[0] for t in timed], [t[1] for t in timed]
    rates, cpu_rates = [], []
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        for s in range(0, len(short), 64):
            docs(short[s : s + 64])
        rates.append(len(short) / (time.perf_counter() - w0))
        cpu_rates.append(len(short) / (time.process_time() - c0))
    return {"ok": True, "load_s": round(load_s, 3), "load_cpu_s": round(load_cpu_s, 3),
            "first_query_ms": round(first_ms, 2), "first_query_cpu_ms": round(first_cpu_ms, 2),
            "query_p50_ms": round(float(np.median(lat)), 3),
            "query_p95_ms": round(float(np.percentile(lat, 95)), 3),
            "query_cpu_p50_ms": round(float(np.median(lat_cpu)), 3), "queries": len(lat),
            "docs_per_s_batch64": round(float(np.median(rates)), 1),
            "docs_per_cpu_s_batch64": round(float(np.median(cpu_rates)), 1),
            "rss_before_load_mb": round(rss_before, 1), "rss_loaded_mb": round(rss_loaded, 1),
            "model_rss_mb": round(rss_loaded - rss_before, 1), "peak_rss_mb": round(_peak_rss_mb(), 1),
            "first_query_done_wall": first_done_wall, "load_average_1m": os.getloadavg()[0]}


def cmd_rerank(name: str, pairs_path: Path, out: Path, timed: int) -> dict:
    """Score each ``{"query", "docs"}`` item of a JSON list; write scores and timings.

    The first ``timed`` items are also scored through the package's own uncached path and
    timed (the latency a query would see); the scores of all items may come from a scorer
    that reuses per-text features (``score.cached``), which changes no score.
    """
    items = json.loads(pairs_path.read_text(encoding="utf-8"))
    score = adapters.RERANKERS[name]()
    load_s = time.perf_counter() - _T0
    ms = []
    score.cached = False  # type: ignore[attr-defined]
    for item in items[:timed]:
        t0 = time.perf_counter()
        score(item["query"], item["docs"])
        ms.append((time.perf_counter() - t0) * 1000)
    score.cached = True  # type: ignore[attr-defined]
    scores = []
    for i, item in enumerate(items):
        scores.append([float(x) for x in score(item["query"], item["docs"])])
        if i % 50 == 0:
            print(f"  {name}: {i}/{len(items)} re-ranked", file=sys.stderr, flush=True)
    out.write_text(json.dumps({"scores": scores, "ms": ms}), encoding="utf-8")
    return {"ok": True, "n": len(items), "timed": len(ms), "load_s": round(load_s, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("command", choices=["probe", "embed", "speed", "rerank"])
    ap.add_argument("model")
    ap.add_argument("--texts", type=Path)
    ap.add_argument("--queries", type=Path)
    ap.add_argument("--pairs", type=Path)
    ap.add_argument("--role", choices=["doc", "query"], default="doc")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timed", type=int, default=30, help="rerank: items timed uncached")
    a = ap.parse_args()
    try:
        if a.command == "probe":
            _emit(cmd_probe(a.model))
        elif a.command == "embed":
            _emit(cmd_embed(a.model, a.texts, a.role, a.out))
        elif a.command == "speed":
            _emit(cmd_speed(a.model, a.texts, a.queries, a.rounds))
        else:
            _emit(cmd_rerank(a.model, a.pairs, a.out, a.timed))
    except BaseException as exc:  # report every failure as data: the driver records it
        _emit({"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:400]}"})
        sys.exit(1)


if __name__ == "__main__":
    main()
