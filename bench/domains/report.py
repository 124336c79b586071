"""The markdown summary of a domains run (bench/results/domains.md).

The findings at the top are hand-written in bench/domains/findings.md (update them when
the numbers change); everything below is generated from the JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import md_table

FINDINGS = Path(__file__).resolve().parent / "findings.md"


def render(r: dict[str, Any]) -> str:
    parts = ["# Emergent domains on BEAM", ""]
    if FINDINGS.is_file():
        parts += [FINDINGS.read_text().strip(), ""]
    data = r["data"]
    parts += [
        f"Data: {data['messages']} BEAM messages from {data['conversations']} conversations "
        "(one memory each; the conversation is the reference topic), "
        f"{data['pairs']} mixed and {data['pairs']} same-domain paired texts. "
        f"Machine: {r['machine']['cpus']} cores, other processes kept "
        f"{r['other_load_cores_at_start']} cores busy at the start. Run took {r['wall_s']} s.",
        "",
    ]
    parts += _reductions(r["reductions"], r["oracle"]) + _grid(r["grid"]) + _shipped(r["shipped"])
    parts += _thresholds(r["thresholds"]) + _scale(r["scale"]) + _threads(r["threads"])
    parts += _updates(r["centroid_updates"])
    parts += _proposals(r["proposals"])
    return "\n".join(parts)


def _variant_row(v: dict[str, Any]) -> list[Any]:
    h, c = v["hdbscan"], v["centroid"]
    return [
        f"{v['reduction']}-{v['dims']}",
        v["reduce_s"],
        v["cluster_s"],
        h["clusters"],
        h["unlabelled_share"],
        h["nmi"],
        h["ari"],
        c["nmi"],
        c["ari"],
    ]


def _reductions(rows: list[dict[str, Any]], oracle: dict[str, Any]) -> list[str]:
    head = [
        "reduction",
        "reduce s",
        "HDBSCAN s",
        "clusters",
        "noise",
        "NMI",
        "ARI",
        "NMI (centroids)",
        "ARI (centroids)",
    ]
    return [
        "## Reduction before HDBSCAN (all messages, no sampling)",
        "",
        "NMI/ARI of HDBSCAN's labels (noise as one label) and after every message goes to its "
        "nearest centroid in the original 384-d space (what domains are built from). Ceiling of "
        f"centroid assignment (the true conversations' centroids): NMI {oracle['nmi']}, "
        f"ARI {oracle['ari']}.",
        "",
        md_table(head, [_variant_row(v) for v in rows]),
        "",
    ]


def _grid(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    head = [
        "min cluster share",
        "min size",
        "min_samples",
        "selection",
        "clusters",
        "noise",
        "NMI (centroids)",
        "ARI (centroids)",
    ]
    body = [
        [
            v["min_cluster_share"],
            v["min_cluster_size"],
            v["min_samples"],
            v["selection"],
            v["hdbscan"]["clusters"],
            v["hdbscan"]["unlabelled_share"],
            v["centroid"]["nmi"],
            v["centroid"]["ari"],
        ]
        for v in rows
    ]
    return ["## HDBSCAN settings (PCA-10)", "", md_table(head, body), ""]


def _shipped(s: dict[str, Any]) -> list[str]:
    a = s["agreement"]
    body = [
        [
            d["label"],
            d["members"],
            ", ".join(d["top_terms"][:6]),
            d["main_conversation"],
            d["main_title"],
            d["purity"],
        ]
        for d in s["domains"]
    ]
    return [
        "## Discovery as shipped",
        "",
        f"Sample {s['sampled']}, {len(s['domains'])} domains in {s['timings']['total_s']} s; "
        f"NMI {a['nmi']}, ARI {a['ari']} (all messages, unclustered as one label), "
        f"NMI {a['nmi_classified']}, ARI {a['ari_classified']} "
        f"over the {1 - a['unlabelled_share']:.1%} "
        f"at or above the suggested threshold ({s['threshold']}).",
        "",
        md_table(
            ["suggested name", "members", "top terms", "conv", "conversation title", "purity"], body
        ),
        "",
    ]


def _thresholds(t: dict[str, Any]) -> list[str]:
    head = [
        "threshold",
        "unclassified",
        "multi-domain",
        "mean domains",
        "mixed both",
        "same-domain pairs multi",
        "NMI",
        "ARI",
    ]
    rows = [t["chosen"]] + t["rows"]
    body = [
        [
            r["threshold"],
            r["unclassified"],
            r["multi_domain"],
            r["mean_domains"],
            r["mixed_both"],
            r["same_multi"],
            r["nmi"],
            r["ari"],
        ]
        for r in rows
    ]
    body[0][0] = f"**{body[0][0]}** (suggested)"
    c = t["chosen"]
    need = [
        f"{int(p * 100)}% of mixed texts get both domains from {r['threshold']} down "
        f"(there {r['multi_domain']:.0%} of all memories get two or more)"
        for p, r in (
            (0.75, t["needed_for_75pct_mixed_both"]),
            (0.9, t["needed_for_90pct_mixed_both"]),
        )
        if r
    ]
    return [
        "## Assignment threshold",
        "",
        t["rule"].replace("\n", " "),
        "",
        (
            f"Suggested: **{c['threshold']}**: unclassified {c['unclassified']:.1%}, multi-domain "
            f"{c['multi_domain']:.1%}, mixed texts with both domains {c['mixed_both']:.1%} "
            f"(same-domain pairs given two or more: {c['same_multi']:.1%}). "
            + "; ".join(need)
            + "."
        ),
        "",
        md_table(head, body),
        "",
    ]


def _scale(rows: list[dict[str, Any]]) -> list[str]:
    head = [
        "memories",
        "copy cos",
        "sampled",
        "reduce s",
        "cluster s",
        "score + threshold s",
        "terms s",
        "total s",
        "classify all s",
        "NMI",
        "unsampled total s",
        "unsampled NMI",
        "full / sampled time",
        "NMI sampled vs unsampled",
    ]
    body = []
    for r in rows:
        full = r.get("full_s", {})
        body.append(
            [
                r["memories"],
                r["copy_cosine"],
                r["sampled"],
                r["sampled_s"]["reduce_s"],
                r["sampled_s"]["cluster_s"],
                r["sampled_s"]["label_s"],
                r["sampled_s"]["terms_s"],
                r["sampled_s"]["total_s"],
                r["classify_all_s"],
                r["sampled_quality"]["nmi"],
                full.get("total_s", "-"),
                r.get("full_quality", {}).get("nmi", "-"),
                r.get("time_ratio_full_over_sampled", "-"),
                r.get("sampled_vs_full_nmi", "-"),
            ]
        )
    return [
        "## Discovery time (medians)",
        "",
        "Past 5,094 the set grows by noisy copies of real messages (see bench/domains/scale.py). "
        "Discovery as shipped samples 5,000; *unsampled* clusters every memory. *Classify all*: "
        "`classify_many` over every memory afterwards (scores and domains for each).",
        "",
        md_table(head, body),
        "",
    ]


def _threads(t: dict[str, Any]) -> list[str]:
    keys = ["reduce_s", "cluster_s", "label_s", "terms_s", "total_s"]
    body = [[name] + [t[name][k] for k in keys] for name in ("one", "default")]
    body.append(["default / one"] + [t["ratio_default_over_one"].get(k, "-") for k in keys])
    return [
        "## BLAS/OpenMP threads (5,094 memories, medians, interleaved runs)",
        "",
        md_table(
            ["threads", "reduce s", "cluster s", "score + threshold s", "terms s", "total s"], body
        ),
        "",
    ]


def _updates(u: dict[str, Any]) -> list[str]:
    body = [
        [
            p,
            u[p]["on_arrival"]["nmi"],
            u[p]["on_arrival"]["ari"],
            u[p]["after"]["nmi"],
            u[p]["closest_pair_after"],
        ]
        for p in ("best", "all", "none")
    ]
    return [
        "## Centroid updates (running mean)",
        "",
        f"Discovered on the first halves ({u['early']} messages, {u['domains']} domains), then "
        f"{u['late']} messages streamed in at threshold {u['threshold']}. "
        f"Closest centroid pair before: {u['closest_pair_before']}.",
        "",
        md_table(
            ["policy", "on-arrival NMI", "on-arrival ARI", "NMI after", "closest pair after"], body
        ),
        "",
    ]


def _proposals(cases: dict[str, Any]) -> list[str]:
    lines = ["## Re-clustering proposals", ""]
    for name, case in cases.items():
        kinds = ", ".join(f"{k} {v}" for k, v in case["kinds"].items())
        lines.append(f"- **{name}**: {kinds}")
        lines += [f"  - {p['summary']}" for p in case["proposals"][:6]]
    return lines + [""]
