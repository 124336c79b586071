"""Medians over the alternated rounds, ratios memoryd/peer, and the markdown page."""

from __future__ import annotations

import statistics
from typing import Any

from bench.common import md_table, percentile

SYSTEMS = ("memoryd", "peer")
#: (label, memoryd's figure, the peer's figure, higher is better)
COMPARISONS = (
    ("search p50 ms, each system's default (memoryd hybrid, peer semantic)",
     "search hybrid p50_ms", "search semantic p50_ms", False),
    ("search p95 ms, each system's default", "search hybrid p95_ms", "search semantic p95_ms",
     False),
    ("search p50 ms, hybrid against hybrid", "search hybrid p50_ms", "search hybrid p50_ms", False),
    ("search p95 ms, hybrid against hybrid", "search hybrid p95_ms", "search hybrid p95_ms", False),
    ("search p50 ms, vector only (memoryd mode=vector, peer semantic)", "search vector p50_ms",
     "search semantic p50_ms", False),
    ("batch ingest, memories/s", "ingest_per_s", "ingest_per_s", True),
    ("peak RSS MB (model + ingest + searches)", "peak_rss_mb", "peak_rss_mb", False),
    ("RSS growth during the batch ingest, MB", "ingest_growth_mb", "ingest_growth_mb", False),
    ("RSS with the model loaded, empty store, MB", "rss_loaded_mb", "rss_loaded_mb", False),
    ("cold start to first result, s", "cold_first_s", "cold_first_s", False),
    ("cold start to first result by meaning, s", "cold_meaning_s", "cold_meaning_s", False),
)


def round_figures(run: dict[str, Any], cold: dict[str, Any]) -> dict[str, float]:
    """One system's figures in one round, from its worker's answers."""
    startup = cold["wall_s"] - cold["answer_s"]  # process start to the worker's first line
    out = {"ingest_per_s": run["stored"] / run["ingest_s"], "peak_rss_mb": run["peak_rss_mb"],
           "rss_loaded_mb": run["rss_loaded_mb"],
           "ingest_growth_mb": run["rss_ingested_mb"] - run["rss_loaded_mb"],
           "cold_first_s": startup + cold["first_result_s"],
           "cold_meaning_s": startup + cold["first_by_meaning_s"]}
    for mode, ms in run["search_ms"].items():
        out[f"search {mode} p50_ms"] = percentile(ms, 50)
        out[f"search {mode} p95_ms"] = percentile(ms, 95)
    return out


def medians(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per system, the median of each figure over the rounds."""
    out: dict[str, dict[str, float]] = {}
    for system in SYSTEMS:
        keys = rounds[0][system].keys()
        out[system] = {k: round(statistics.median(r[system][k] for r in rounds), 3) for k in keys}
    return out


def ratios(med: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """Each comparison: both medians, memoryd/peer, and which way is better."""
    rows = []
    for label, ours, theirs, higher_better in COMPARISONS:
        a, b = med["memoryd"].get(ours), med["peer"].get(theirs)
        if a is None or b is None or b == 0:
            continue
        ratio = a / b
        better = ratio if higher_better else (1 / ratio if ratio else float("inf"))
        rows.append({"measure": label, "memoryd": round(a, 2), "peer": round(b, 2),
                     "memoryd_over_peer": round(ratio, 3), "memoryd_advantage": round(better, 2)})
    return rows


def summarize(rounds: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Medians and ratios of one size's rounds."""
    med = medians(rounds)
    return {"rounds": rounds, "medians": med, "ratios": ratios(med)}


def render(result: dict[str, Any]) -> str:
    """The markdown page."""
    loads = result["load_average_1m"]
    lines = [
        "# memoryd beside mcp-memory-service, same run", "",
        f"Run {result['started']} with `{result['command']}` on {result['machine']['cpus']} CPUs "
        f"({result['machine']['cpu_model']}), shared with other work: 1-minute load average "
        f"{min(loads):.1f}-{max(loads):.1f} during the run. Peer: mcp-memory-service "
        f"{result['peer']['version']} (SqliteVecMemoryStorage, its ONNX MiniLM) in its own venv "
        f"({result['peer']['python']}); memoryd {result['machine'].get('memoryd', '?')} "
        f"(Python {result['machine']['python']}). Both embed with the same int8 all-MiniLM-L6-v2 "
        f"file and the same token ids: vectors of {result['vectors']['n']} texts agree at cosine "
        f"min {result['vectors']['min']} (median {result['vectors']['median']}). "
        f"Each system runs in its own processes, offline ({result['peer']['offline']}); the two "
        f"take turns, the order flipping every round; figures are medians over "
        f"{result['rounds']} rounds.", "",
        "Ratios are memoryd / peer: below 1 for times and memory means memoryd is lower; "
        "'advantage' is how many times faster (or smaller) memoryd is.", ""]
    for size, section in result["sizes"].items():
        rows = [[r["measure"], r["memoryd"], r["peer"], r["memoryd_over_peer"],
                 f"x{r['memoryd_advantage']}"] for r in section["ratios"]]
        lines += [f"## {int(size):,} memories", "",
                  md_table(["measure", "memoryd", "peer", "memoryd/peer", "advantage"], rows), ""]
    lines += ["## How", "", *[f"- {note}" for note in result["method"]], ""]
    return "\n".join(lines)
