"""Markdown summary of a kgraph bench run (bench/results/kgraph.md)."""

from __future__ import annotations

from typing import Any

from bench.common import md_table


def _speed(rows: list[dict[str, Any]]) -> str:
    table = []
    for r in rows:
        table.append(
            [
                f"{r['nodes']:,}",
                f"{r['steady_core']['active']:,} / {r['steady_core']['traces']}",
                r["steady_build_core_cl100k"]["p50_ms"],
                r["steady_build_core_cl100k"]["p95_ms"],
                r["steady_build_core_estimate"]["p50_ms"],
                r["steady_estimate_vs_cl100k_p50_ratio"],
                r["overfull_build_core_cl100k"]["p50_ms"],
                r["score_nodes"]["p50_ms"],
                r["compact"]["p50_ms"],
                r["compact_estimate_vs_cl100k_p50_ratio"],
                f"{r['archived_after_compact']:,} ({r['compact_rounds']})",
                f"{r['file_bytes'] / 1e6:.2f}",
                r["file_write_dumps"]["p50_ms"],
                r["file_read_loads"]["p50_ms"],
            ]
        )
    head = [
        "nodes",
        "steady: active / traces in core",
        "kg_read core p50 ms (cl100k)",
        "p95",
        "core p50 (estimator)",
        "estimator / cl100k",
        "overfull core p50",
        "score_nodes p50",
        "archival run p50 ms",
        "archival estimator / cl100k",
        "archived (rounds)",
        "graph.json MB",
        "write p50",
        "read p50",
    ]
    return md_table(head, table)


def _tokens(data: dict[str, Any]) -> str:
    parts = []
    for name, res in data["sets"].items():
        rows = [
            [
                c,
                m["mean_signed_pct"],
                m["median_abs_pct"],
                m["p95_abs_pct"],
                m["under_counted_share"],
                m["total_ratio"],
            ]
            for c, m in res.items()
            if isinstance(m, dict)
        ]
        parts.append(
            f"**{name}** ({res['real_tokens']:,} cl100k tokens"
            f"{', held-out half' if res['held_out_half'] else ''})\n\n"
            + md_table(
                [
                    "counter",
                    "mean signed error %",
                    "median |error| %",
                    "p95 |error| %",
                    "share under-counted",
                    "total / real",
                ],
                rows,
            )
        )
    speed = md_table(
        ["counter", "µs per text", "MB/s"],
        [[k, v["us_per_text"], v["mb_per_s"]] for k, v in data["speed"].items()],
    )
    coef = ", ".join(f"{k} {v}" for k, v in data["coefficients_refit"].items())
    return (
        "\n\n".join(parts)
        + "\n\nCounting speed (BEAM messages + graph blocks):\n\n"
        + speed
        + f"\n\nEstimator refit on this run: {coef}."
    )


def _simulate(data: dict[str, Any]) -> str:
    rows = [
        [
            s["variant"],
            s["hit_rate_mean"],
            f"{s['hit_rate_min']}–{s['hit_rate_max']}",
            *[s["by_kind"][k] for k in ("module", "recent", "neighbour", "foundational", "any")],
            s["hub_share_of_core"],
            f"{s['archived_at_end']} / {s['nodes_at_end']}",
        ]
        for s in sorted(data["summary"], key=lambda s: -s["hit_rate_mean"])
    ]
    head = [
        "weighting",
        "hit rate (mean)",
        "range over seeds",
        "module",
        "recent",
        "neighbour",
        "foundational",
        "any",
        "top-5%-degree share of core",
        "archived / nodes at end",
    ]
    mix = ", ".join(f"{k} {v}%" for k, v in data["need_mix"].items())
    return (
        f"{data['days']} days, 2 sessions a day, seeds {data['seeds']}, budget {data['budget']} "
        f"tokens, needs drawn as {mix}; the first {data['warmup_days']} days not counted.\n\n"
        + md_table(head, rows)
    )


def _engine(rows: list[dict[str, Any]]) -> str:
    table = []
    for r in rows:
        o, s = r["overfull"], r["steady"]
        table.append([
            r["backend"], f"{r['nodes']:,}", r["load_s"], r["first_read_with_file_ms"],
            r["file_mb"], o["cold"]["p50_ms"], o["warm"]["p50_ms"], o["warm"]["p95_ms"],
            o["warm_vs_cold_p50_ratio"], r["archive"]["seconds"],
            f"{r['archive']['archived']:,}", s["cold"]["p50_ms"], s["warm"]["p50_ms"],
            f"{s['core']['shown']} / {s['core']['traces']}", r["write"]["p50_ms"],
            r["read_after_write"]["p50_ms"],
        ])
    head = ["backend", "nodes", "load s", "first read (writes graph.json) ms", "graph.json MB",
            "kg_read cold p50 ms", "warm p50 ms", "warm p95 ms", "warm / cold",
            "kg_archive s", "archived", "after archival: cold p50 ms", "warm p50 ms",
            "shown / traces", "kg_write p50 ms", "kg_read after a write p50 ms"]
    return md_table(head, table)


def render(data: dict[str, Any]) -> str:
    """The whole markdown file; the findings paragraph is written by hand in findings.md."""
    from pathlib import Path

    findings = Path(__file__).with_name("findings.md")
    out = ["# Knowledge graphs: core, archival, token counting", ""]
    if findings.exists():
        out += [findings.read_text().strip(), ""]
    m = data["machine"]
    out += [
        f"Machine: {m['cpus']} cores ({m['cpu_model']}), Python {m['python']}; "
        "other processes used "
        f"{data['other_load_start']} → {data['other_load_end']} cores; {data['seconds']} s in all. "
        f"Source {data['source']['sha256']}."
        + (
            f" Kept from the previous run: {', '.join(data['kept_from_previous_run'])}."
            if data.get("kept_from_previous_run")
            else ""
        ),
        "",
    ]
    if "speed" in data:
        out += [
            "## Speed (budget 5,000 tokens, medians over repeated calls)",
            "",
            _speed(data["speed"]),
            "",
        ]
    if "engine" in data:
        out += [
            "## Through the engine (real stores, budget 5,000 tokens)",
            "",
            "Cold: the first kg_read of a new engine (graph read from the store, file checked, "
            "core rendered); warm: the same call again (cache). Overfull: every node active; "
            "after archival: kg_archive brought the active nodes under the budget.",
            "",
            _engine(data["engine"]),
            "",
        ]
    if "tokens" in data:
        out += ["## Token counts against cl100k", "", _tokens(data["tokens"]), ""]
    if "simulate" in data:
        out += [
            "## Was the needed node in the core? (simulated project history)",
            "",
            _simulate(data["simulate"]),
            "",
        ]
    return "\n".join(out)
