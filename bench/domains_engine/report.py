"""The markdown of bench/results/domains_engine.md: the hand-written findings, then tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import md_table

FINDINGS = Path(__file__).resolve().parent / "findings.md"


def markdown(data: dict[str, Any]) -> str:
    runs = data["runs"]
    parts = ["# Domains in the store and the engine", ""]
    if FINDINGS.exists():
        parts += [FINDINGS.read_text().strip(), ""]
    parts += [
        f"Run took {data['seconds']} s on {data['machine'].get('cpu_model', '')} "
        f"({data['machine'].get('cpus', '?')} cores, shared: other processes kept "
        f"{', '.join(str(r['load_before']) for r in runs)} cores busy as each run started). "
        "Sizes past 5,094 grow by noisy copies of real BEAM vectors (~0.95 cosine to their "
        "originals, texts copied).", "",
        "## Discovery through the engine", "",
        "Sample (at most 5,000), PCA + HDBSCAN, create the domains, set the threshold and assign "
        "every memory, in one transaction. NMI/ARI: each memory's best domain against the "
        "conversation it came from (unclassified as one label).", "",
        md_table(["backend", "memories", "seconds", "domains", "threshold", "unclassified",
                  "multi-domain", "NMI", "ARI"],
                 [[r["backend"], r["memories"], r["discovery"]["seconds"],
                   r["discovery"]["domains"], r["discovery"]["threshold"],
                   r["discovery"]["unclassified_share"], r["discovery"]["multi_share"],
                   r["discovery"]["nmi"], r["discovery"]["ari"]] for r in runs]), "",
        "## The write path: one memory per transaction", "",
        "Insert alone against classify (cosine to every centroid, running mean of the best "
        "domain, one domain row written) + insert, interleaved; milliseconds. The embedding "
        "model's time (the same either way) is not included.", "",
        _pair_table(runs, "writes", "insert", "classify_insert"), "",
        "## Search in one domain", "",
        "`Engine.search` (hybrid, query vector given, limit 10) over every memory against the "
        "same query limited to the domain of the message it came from, interleaved; "
        "milliseconds.", "",
        _pair_table(runs, "search", "all", "one_domain"), "",
        "## Changes to the domains (seconds)", "",
        md_table(["backend", "memories", "rename (rewrite all)", "threshold (rewrite all)",
                  "merge (re-assign all)"],
                 [[r["backend"], r["memories"], r["changes"]["rename_s"],
                   r["changes"]["threshold_s"], r["changes"]["merge_s"]] for r in runs]),
    ]
    return "\n".join(parts)


def _pair_table(runs: list[dict[str, Any]], key: str, base: str, other: str) -> str:
    rows = []
    for r in runs:
        m = r[key]
        rows.append([r["backend"], r["memories"], m[base]["p50_ms"], m[base]["p95_ms"],
                     m[other]["p50_ms"], m[other]["p95_ms"], m["ratio_p50"], m["ratio_p95"],
                     m["median_pair_ratio"]])
    return md_table(["backend", "memories", f"{base} p50", f"{base} p95", f"{other} p50",
                     f"{other} p95", "ratio p50", "ratio p95", "median pair ratio"], rows)
