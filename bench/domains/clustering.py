"""Which reduction keeps BEAM's conversations apart, and which HDBSCAN settings find them.

Each variant reduces all 5,094 message vectors, clusters them with HDBSCAN and is scored
twice against the conversations: HDBSCAN's own labels (noise = -1) and the labels after
memoryd's step 5 (every message to its nearest centroid in the original space, no
threshold): the latter is what domains end up being built from.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from bench.domains.metrics import agreement
from memoryd.domains.discover import DiscoveryParams, cluster_labels, nearest
from memoryd.domains.reduce import reduce_dimensions

Log = Callable[[str], None]

REDUCTIONS = [
    ("none", 384),
    ("pca", 5),
    ("pca", 10),
    ("pca", 20),
    ("pca", 50),
    ("umap", 5),
    ("umap", 10),
]
GRID_SHARES = [0.0, 0.005, 0.01, 0.02, 0.04]
GRID_MIN_SAMPLES = [5, 10]
GRID_SELECTION = ["eom", "leaf"]


def has_umap() -> bool:
    try:
        import umap  # noqa: F401
    except ImportError:
        return False
    return True


def run_variant(vectors: np.ndarray, truth: np.ndarray, params: DiscoveryParams) -> dict[str, Any]:
    """Reduce, cluster and score one variant on all vectors (no sampling), on
    ``params.threads`` BLAS/OpenMP threads as discovery does."""
    with threadpool_limits(params.threads):
        return _run_variant(vectors, truth, params)


def _run_variant(vectors: np.ndarray, truth: np.ndarray, params: DiscoveryParams) -> dict[str, Any]:
    t0 = time.perf_counter()
    reduced = reduce_dimensions(
        vectors, method=params.reduction, dims=params.dims, seed=params.seed
    )
    t1 = time.perf_counter()
    raw = cluster_labels(reduced, params)
    t2 = time.perf_counter()
    ids = sorted(set(raw.tolist()) - {-1})
    centroids = (
        np.stack([vectors[raw == k].mean(axis=0) for k in ids])
        if ids
        else np.empty((0, vectors.shape[1]))
    )
    assigned = nearest(vectors, centroids, -1.0)
    return {
        "reduction": params.reduction,
        "dims": params.dims,
        "min_cluster_share": params.min_cluster_share,
        "min_samples": params.min_samples,
        "selection": params.selection,
        "min_cluster_size": params.cluster_size(len(vectors)),
        "reduce_s": round(t1 - t0, 3),
        "cluster_s": round(t2 - t1, 3),
        "hdbscan": agreement(truth, raw),
        "centroid": agreement(truth, assigned),
    }


def oracle(vectors: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    """The ceiling of centroid assignment: every message to the nearest of the true
    conversations' mean vectors. No clustering can beat it by assigning to centroids."""
    convs = np.unique(truth)
    centroids = np.stack([vectors[truth == c].mean(axis=0) for c in convs])
    return agreement(truth, convs[nearest(vectors, centroids, -1.0)])


def compare_reductions(
    vectors: np.ndarray,
    truth: np.ndarray,
    base: DiscoveryParams,
    log: Log,
    *,
    skip_raw: bool = False,
) -> list[dict[str, Any]]:
    """:func:`run_variant` for each reduction in REDUCTIONS (UMAP only when installed)."""
    out = []
    for method, dims in REDUCTIONS:
        if method == "umap" and not has_umap():
            log(f"  {method}-{dims}: umap-learn not installed, skipped")
            continue
        if method == "none" and skip_raw:
            continue
        row = run_variant(vectors, truth, replace(base, reduction=method, dims=dims))
        log(
            f"  {method}-{dims}: {row['reduce_s']:.1f}s + {row['cluster_s']:.1f}s, "
            f"{row['hdbscan']['clusters']} clusters, "
            f"noise {row['hdbscan']['unlabelled_share']:.2f}, "
            f"NMI {row['hdbscan']['nmi']:.3f} / centroid NMI {row['centroid']['nmi']:.3f}"
        )
        out.append(row)
    return out


def hdbscan_grid(
    vectors: np.ndarray, truth: np.ndarray, base: DiscoveryParams, log: Log
) -> list[dict[str, Any]]:
    """HDBSCAN settings (smallest cluster as a share, min_samples, selection) on one reduction."""
    out = []
    for share in GRID_SHARES:
        for min_samples in GRID_MIN_SAMPLES:
            for selection in GRID_SELECTION:
                params = replace(
                    base, min_cluster_share=share, min_samples=min_samples, selection=selection
                )
                row = run_variant(vectors, truth, params)
                log(
                    f"  share {share} min_samples {min_samples} {selection}: "
                    f"{row['hdbscan']['clusters']} clusters, "
                    f"centroid NMI {row['centroid']['nmi']:.3f} "
                    f"ARI {row['centroid']['ari']:.3f}"
                )
                out.append(row)
    return out
