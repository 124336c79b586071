"""Discovery time at 5k, 20k and 100k memories, sampled (as shipped) against unsampled.

Beyond BEAM's 5,094 messages the set grows synthetically: each extra memory is a noisy
copy of a random real message (its vector plus Gaussian noise, re-normalised, about 0.95
cosine to the original; its text and conversation those of the original). Copies keep
the topic structure but add no new topics, so they test cost, not discovery quality.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from bench.domains.metrics import agreement
from memoryd.domains.assign import classify_many
from memoryd.domains.discover import DiscoveryParams, discover

Log = Callable[[str], None]
NOISE = 0.33  # per-vector noise norm relative to a unit vector: cos(copy, original) ≈ 0.95


def grow(
    vectors: np.ndarray, truth: np.ndarray, texts: list[str], size: int, seed: int
) -> tuple[np.ndarray, np.ndarray, list[str], float]:
    """The real set plus ``size - n`` noisy copies (or its first ``size`` rows), and the
    mean cosine of the copies to their originals (1.0 when nothing was copied)."""
    n = len(vectors)
    if size <= n:
        return vectors[:size], truth[:size], texts[:size], 1.0
    rng = np.random.default_rng(seed)
    origin = rng.integers(0, n, size - n)
    noise = rng.standard_normal((size - n, vectors.shape[1])).astype(np.float32)
    noise *= NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
    copies = vectors[origin] + noise
    copies /= np.linalg.norm(copies, axis=1, keepdims=True)
    cosine = float(np.mean(np.sum(copies * vectors[origin], axis=1)))
    return (
        np.vstack([vectors, copies]),
        np.concatenate([truth, truth[origin]]),
        texts + [texts[i] for i in origin],
        cosine,
    )


def timed_discovery(
    vectors: np.ndarray, texts: list[str], params: DiscoveryParams, repeats: int
) -> tuple[Any, dict[str, float]]:
    """The last discovery and the median of each timing over ``repeats`` runs."""
    runs = []
    found = None
    for _ in range(repeats):
        found = discover(vectors, texts, params)
        runs.append(found.timings)
    medians = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
    return found, medians


def measure(
    vectors: np.ndarray,
    truth: np.ndarray,
    texts: list[str],
    sizes: list[int],
    params: DiscoveryParams,
    *,
    repeats: int,
    full_up_to: int,
    seed: int,
    log: Log,
) -> list[dict[str, Any]]:
    """One row per size: sampled discovery (and unsampled when size <= full_up_to)."""
    rows = []
    for size in sizes:
        grown, labels, words, cosine = grow(vectors, truth, texts, size, seed)
        found, timings = timed_discovery(grown, words, params, repeats)
        t0 = time.perf_counter()
        classify_many(grown, [c.as_domain(f"d{c.index}") for c in found.clusters], found.threshold)
        row: dict[str, Any] = {
            "memories": size,
            "copy_cosine": round(cosine, 4),
            "sampled": found.sampled,
            "sampled_s": timings,
            "classify_all_s": round(time.perf_counter() - t0, 3),
            "sampled_quality": agreement(labels, found.labels),
        }
        if size <= full_up_to and size > params.sample_size:
            full, full_t = timed_discovery(grown, words, replace(params, sample_size=size), repeats)
            row["full_s"] = full_t
            row["full_quality"] = agreement(labels, full.labels)
            row["sampled_vs_full_nmi"] = agreement(full.labels, found.labels)["nmi"]
            row["time_ratio_full_over_sampled"] = round(full_t["total_s"] / timings["total_s"], 2)
        log(
            f"  {size}: sampled {timings['total_s']:.2f}s"
            + (f", full {row['full_s']['total_s']:.2f}s" if "full_s" in row else "")
            + f", classify all {row['classify_all_s']:.2f}s"
            + f", NMI {row['sampled_quality']['nmi']:.3f}"
        )
        rows.append(row)
    return rows


def threads(
    vectors: np.ndarray, texts: list[str], params: DiscoveryParams, repeats: int, log: Log
) -> dict[str, Any]:
    """Discovery on one BLAS/OpenMP thread (as shipped) against the libraries' default,
    alternating the two so that both see the same machine load; medians and their ratio."""
    runs: dict[str, list[dict[str, float]]] = {"one": [], "default": []}
    for _ in range(repeats):
        for name, count in (("one", 1), ("default", None)):
            runs[name].append(discover(vectors, texts, replace(params, threads=count)).timings)
    out: dict[str, Any] = {
        name: {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}
        for name, rows in runs.items()
    }
    out["ratio_default_over_one"] = {
        k: round(out["default"][k] / out["one"][k], 2) for k in out["one"] if out["one"][k] > 0
    }
    one, default = out["one"]["total_s"], out["default"]["total_s"]
    log(f"  one thread {one:.2f}s, default threads {default:.2f}s")
    return out
