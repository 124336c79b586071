"""Emergent domains on BEAM: discovery quality, reduction, threshold, scale, evolution.

    .venv/bin/python -m bench.domains            # full run; writes bench/results/domains.{json,md}
    .venv/bin/python -m bench.domains --quick    # smoke run: no raw/UMAP, small grid, 5k and 20k

Data: the 20 BEAM conversations (5,094 messages) read in place from
``$MEMORYD_BEAM_DIR`` or ``../shared/data/beam``; when absent the run prints a message and
exits 0. Every message is one memory; the conversation it came from is the reference
topic. Vectors are all-MiniLM-L6-v2 (memoryd's LocalEmbedder), cached in bench/.cache/domains.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402
    RESULTS_DIR,
    machine_info,
    other_load,
    source_fingerprint,
    write_results,
)
from bench.domains import clustering, evolve, report, scale, threshold  # noqa: E402
from bench.domains.data import Corpus, load_corpus, pair_texts  # noqa: E402
from bench.domains.metrics import agreement  # noqa: E402
from memoryd.domains.discover import Discovery, DiscoveryParams, discover  # noqa: E402

Log = Callable[[str], None]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.domains", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="smoke run; writes domains_quick.*")
    parser.add_argument("--sizes", default="5094,20000,100000", help="memories for the timing rows")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed discoveries per size (median)"
    )
    parser.add_argument(
        "--full-up-to",
        type=int,
        default=20000,
        help="also time unsampled discovery up to this size",
    )
    parser.add_argument("--pairs", type=int, default=300, help="mixed and same-domain paired texts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--render-only", action="store_true", help="re-write the markdown from the last JSON"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    log = print
    if args.render_only:
        name = "domains_quick" if args.quick else "domains"
        results = json.loads((RESULTS_DIR / f"{name}.json").read_text())
        (RESULTS_DIR / f"{name}.md").write_text(report.render(results).rstrip() + "\n")
        return
    corpus = load_corpus(log)
    if corpus is None:
        print("BEAM data not found (../shared/data/beam or $MEMORYD_BEAM_DIR): nothing to measure")
        return
    started = time.perf_counter()
    params = DiscoveryParams(seed=args.seed)
    results: dict[str, Any] = {
        "machine": machine_info(),
        "other_load_cores_at_start": other_load(),
        "source": source_fingerprint(REPO_ROOT / "src" / "memoryd" / "domains"),
        "data": {
            "messages": len(corpus.texts),
            "conversations": len(corpus.topics),
            "pairs": args.pairs,
            "topics": corpus.topics,
        },
        "params": asdict(params),
    }
    results["oracle"] = clustering.oracle(corpus.vectors, corpus.labels)
    log(f"oracle (true conversation centroids): NMI {results['oracle']['nmi']}")
    log("reductions (all messages, no sampling):")
    results["reductions"] = clustering.compare_reductions(
        corpus.vectors, corpus.labels, params, log, skip_raw=args.quick
    )
    log("HDBSCAN settings (PCA to 10 dimensions):")
    grid = not args.quick
    results["grid"] = (
        clustering.hdbscan_grid(corpus.vectors, corpus.labels, params, log) if grid else []
    )
    found = discover(corpus.vectors, corpus.texts, params)
    results["shipped"] = shipped(found, corpus)
    log("thresholds:")
    results["thresholds"] = thresholds(found, corpus, args, log)
    log("scale:")
    sizes = [int(s) for s in args.sizes.split(",")] if not args.quick else [5094, 20000]
    results["scale"] = scale.measure(
        corpus.vectors,
        corpus.labels,
        corpus.texts,
        sizes,
        params,
        repeats=1 if args.quick else args.repeats,
        full_up_to=args.full_up_to,
        seed=args.seed,
        log=log,
    )
    log("threads:")
    results["threads"] = scale.threads(
        corpus.vectors, corpus.texts, params, 3 if args.quick else 7, log
    )
    log("centroid updates:")
    results["centroid_updates"] = evolve.centroid_updates(
        corpus.vectors, corpus.labels, corpus.texts, params, args.seed, log
    )
    log("proposals:")
    results["proposals"] = evolve.proposal_cases(
        corpus.vectors, corpus.labels, corpus.texts, params, log
    )
    results["wall_s"] = round(time.perf_counter() - started, 1)
    name = "domains_quick" if args.quick else "domains"
    paths = write_results(name, results, report.render(results))
    log(f"wrote {paths[0]} and {paths[1]}")


def thresholds(
    found: Discovery, corpus: Corpus, args: argparse.Namespace, log: Log
) -> dict[str, Any]:
    """The suggested threshold, a sweep around it, and what mixed texts would need."""
    domains = [c.as_domain(f"d{c.index}") for c in found.clusters]
    pairs = pair_texts(
        corpus, threshold.best_domains(domains, corpus.vectors), args.pairs, args.seed, log
    )
    suggested = float(found.threshold or 0.0)
    rows = threshold.sweep(domains, corpus.vectors, corpus.labels, pairs, threshold.SWEEP)
    chosen = threshold.sweep(domains, corpus.vectors, corpus.labels, pairs, [suggested])[0]
    log(
        f"  suggested {suggested}: unclassified {chosen['unclassified']}, multi-domain "
        f"{chosen['multi_domain']}, mixed both {chosen['mixed_both']}, same-domain pairs multi "
        f"{chosen['same_multi']}"
    )
    return {
        "rule": threshold.__doc__.split("\n\n")[1],
        "chosen": chosen,
        "rows": rows,
        "needed_for_75pct_mixed_both": threshold.needed_for(rows, 0.75),
        "needed_for_90pct_mixed_both": threshold.needed_for(rows, 0.90),
    }


def shipped(found: Discovery, corpus: Corpus) -> dict[str, Any]:
    """Discovery with the shipped defaults: agreement and one row per domain."""
    domains = []
    for c in found.clusters:
        members = corpus.labels[found.labels == c.index]
        main = int(np.bincount(members).argmax()) if members.size else 0
        domains.append(
            {
                "label": c.label,
                "members": c.member_count,
                "sample_members": c.sample_members,
                "top_terms": list(c.top_terms),
                "main_conversation": main,
                "main_title": corpus.topics.get(main, ""),
                "purity": round(float(np.mean(members == main)), 3) if members.size else 0.0,
            }
        )
    return {
        "timings": {k: round(v, 3) for k, v in found.timings.items()},
        "sampled": found.sampled,
        "threshold": found.threshold,
        "agreement": agreement(corpus.labels, found.labels),
        "domains": domains,
    }


if __name__ == "__main__":
    main()
