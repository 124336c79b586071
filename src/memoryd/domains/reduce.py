"""Dimension reduction before clustering: PCA (default) or UMAP (optional package).

HDBSCAN's cost grows steeply with dimensions: on raw 384-d vectors it needs minutes at
20k points on two cores, and density in 384 dimensions is nearly flat. A reduction to
about ten dimensions keeps the topic structure (bench/results/domains.md compares PCA
and UMAP on BEAM) and makes clustering take seconds.
"""

from __future__ import annotations

import warnings

import numpy as np

from memoryd.domains import checks
from memoryd.errors import InvalidInput

METHODS = ("pca", "umap", "none")


def reduce_dimensions(
    vectors: np.ndarray, *, method: str = "pca", dims: int = 10, seed: int = 0
) -> np.ndarray:
    """``vectors`` (n, d) projected to (n, dims) by ``method``; ``"none"`` returns them as is.

    PCA is deterministic and needs only scikit-learn. UMAP (15 neighbours, cosine metric,
    as BERTopic uses it) needs the ``umap-learn`` package; without it this raises
    InvalidInput saying so. ``dims`` is capped by what the data can give (n - 1, d).

    >>> reduce_dimensions(np.eye(4, 8, dtype=np.float32), dims=2).shape
    (4, 2)
    """
    if method not in METHODS:
        raise InvalidInput(f"unknown reduction {method!r}; choose one of {', '.join(METHODS)}")
    checks.count(dims, name="dims", minimum=1)
    if method == "none":
        return vectors
    dims = min(dims, vectors.shape[1], max(1, vectors.shape[0] - 1))
    if method == "pca":
        return _pca(vectors, dims, seed)
    return _umap(vectors, dims, seed)


def _pca(vectors: np.ndarray, dims: int, seed: int) -> np.ndarray:
    from sklearn.decomposition import PCA

    return PCA(n_components=dims, random_state=seed).fit_transform(vectors).astype(np.float32)


def _umap(vectors: np.ndarray, dims: int, seed: int) -> np.ndarray:
    try:
        import umap  # type: ignore[import-not-found]
    except ImportError:
        raise InvalidInput(
            "reduction 'umap' needs the umap-learn package (pip install umap-learn)"
        ) from None
    neighbours = min(15, vectors.shape[0] - 1)
    model = umap.UMAP(
        n_neighbors=neighbours, n_components=dims, metric="cosine", min_dist=0.0, random_state=seed
    )
    with warnings.catch_warnings():
        # a fixed seed makes UMAP single-threaded, and it says so on every call
        warnings.filterwarnings("ignore", message="n_jobs value", category=UserWarning)
        return np.asarray(model.fit_transform(vectors), dtype=np.float32)
