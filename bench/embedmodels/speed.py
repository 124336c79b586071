"""Speed and memory of each model in a fresh process, and what they imply for the budgets.

``worker.py speed`` runs in the model's scratch venv (no network): model load time from
process start (imports included), the first query, single-query latency (p50/p95 over 200
short questions, after 10 warm-up queries), throughput on short synthetic memories in batches
of 64, and RSS before and after loading. The models are run in turn, ``rounds`` times
(interleaved, so load on the shared machine hits them alike), and medians are reported.

Budget projections (DESIGN.md §6) combine these with memoryd's own measurements at 100k
memories (``bench/results/scale.json`` and ``latency.json``): search end to end = search with
a precomputed vector + one query embedding; bulk import = store writes and embedding in series;
RSS = the 100k process with MiniLM, less MiniLM's runtime, plus this model's runtime.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any, Callable, Sequence

from bench.common import RESULTS_DIR

Runner = Callable[[list[str]], dict[str, Any]]

BUDGET_SEARCH_MS = 30.0
BUDGET_IMPORT_PER_S = 300.0
BUDGET_RSS_MB = 600.0
BUDGET_FIRST_SEARCH_S = 1.5


def measure(models: Sequence[str], run: Callable[[str, list[str]], dict[str, Any]],
            texts: str, queries: str, rounds: int, log: Callable[[str], None],
            checkpoint: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Medians over ``rounds`` interleaved fresh-process runs of ``worker.py speed`` per model
    (``checkpoint`` gets the medians so far after every sample)."""
    samples: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
    errors: dict[str, str] = {}
    for r in range(rounds):
        for m in models:
            if m in errors:
                continue
            spawned = time.time()
            res = run(m, ["speed", m, "--texts", texts, "--queries", queries, "--rounds", "1"])
            if not res.get("ok"):
                errors[m] = str(res.get("error"))
                continue
            res["spawn_to_first_query_s"] = round(res.pop("first_query_done_wall") - spawned, 3)
            samples[m].append(res)
            if checkpoint:
                checkpoint(_medians(samples, errors))
            log(f"  speed round {r + 1} {m}: load {res['load_s']}s (CPU {res['load_cpu_s']}s), "
                f"query p50 {res['query_p50_ms']} ms (CPU {res['query_cpu_p50_ms']}), "
                f"{res['docs_per_s_batch64']}/s ({res['docs_per_cpu_s_batch64']}/CPU-s), "
                f"model RSS {res['model_rss_mb']} MB")
    return _medians(samples, errors)


def _medians(samples: dict[str, list[dict[str, Any]]], errors: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m, runs in samples.items():
        if not runs:
            out[m] = {"error": errors.get(m, "not measured")}
            continue
        keys = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        out[m] = {k: round(statistics.median(r[k] for r in runs), 3) for k in keys}
        out[m]["runs"] = len(runs)
    return out


def _store_numbers() -> dict[str, float]:
    """memoryd's own 100k SQLite numbers: search w/o embedding, store writes/s, RSS parts."""
    scale = json.loads((RESULTS_DIR / "scale.json").read_text())
    latency = json.loads((RESULTS_DIR / "latency.json").read_text())
    row = next(r for r in _scale_rows(scale) if r.get("backend") == "sqlite" and r.get("n") == 100_000)
    rss = latency["sizes"]["100000"]["rss"]
    return {
        "search_p50_ms_no_embedding": float(row["search_p50_ms"]),
        "store_add_many_per_s": float(row["add_many_per_s"]),
        "rss_100k_with_minilm_mb": float(rss["rss_mb"]),
        "rss_100k_model_part_mb": float(rss["stages_mb"]["plus_model_loaded"]
                                        - rss["stages_mb"]["store_open_model_not_loaded"]),
    }


def _scale_rows(scale: dict[str, Any]) -> list[dict[str, Any]]:
    """bench/results/scale.json's single-client rows, as written by bench.scale.summary:
    [memories, backend, insert s, index s, disk MiB, keyword top50, vector top50,
    search top10, search p95, hybrid SQL top10, add one, add_many /s, open s]."""
    rows = []
    for r in scale.get("latency", []):
        rows.append({"n": int(str(r[0]).replace(",", "")), "backend": r[1],
                     "search_p50_ms": r[7], "add_many_per_s": r[11]})
    return rows


def projections(speed: dict[str, Any], baseline: str) -> dict[str, Any]:
    """Per model: projected search p50, bulk import rate, RSS and first query at 100k.

    Built from CPU times, not wall times: on this shared machine the wall times of one run
    stretch with other people's load, the CPU a call needs much less. A query's CPU time stands
    in for its wall time on an idle core; bulk import assumes one core for the model
    (conservative: two threads can do up to twice that on an idle 2-core machine).
    """
    try:
        ref = _store_numbers()
    except (OSError, KeyError, StopIteration, TypeError, ValueError) as exc:
        return {"error": f"memoryd's 100k numbers not readable: {type(exc).__name__}: {exc}"}
    base = speed.get(baseline, {})
    out: dict[str, Any] = {"reference": ref}
    for m, s in speed.items():
        if "error" in s:
            continue
        query_ms = s.get("query_cpu_p50_ms", s["query_p50_ms"])
        per_s = s.get("docs_per_cpu_s_batch64", s["docs_per_s_batch64"])
        first_s = s.get("load_cpu_s", s["load_s"]) + s.get("first_query_cpu_ms", 0.0) / 1000
        search = ref["search_p50_ms_no_embedding"] + query_ms
        rate = 1.0 / (1.0 / ref["store_add_many_per_s"] + 1.0 / per_s)
        rss = ref["rss_100k_with_minilm_mb"] - base.get("model_rss_mb", 0.0) + s["model_rss_mb"]
        out[m] = {
            "search_p50_ms": round(search, 1), "search_ok": search <= BUDGET_SEARCH_MS,
            "import_per_s": round(rate, 1), "import_ok": rate >= BUDGET_IMPORT_PER_S,
            "rss_mb": round(rss, 1), "rss_ok": rss <= BUDGET_RSS_MB,
            "first_query_cpu_s": round(first_s, 3),
            "first_query_ok": first_s <= BUDGET_FIRST_SEARCH_S,
        }
    return out
