"""Domain discovery: accumulate, then cluster the memories' vectors into domains.

Below ``min_memories`` (default 150) nothing is classified: the result says so and holds
no clusters. From there on, or when forced, discovery

1. draws a uniform sample of at most ``sample_size`` vectors (a fixed seed, so the same
   store gives the same domains), since clustering cost grows faster than linearly;
2. reduces the sample to ``dims`` dimensions (PCA by default; see :mod:`.reduce`);
3. clusters it with HDBSCAN; points in no dense region are noise. The smallest cluster
   is a share of the sample (``min_cluster_share``, at least ``min_cluster_size``), so a
   domain is a sizeable part of the memory, not a handful of near-duplicates;
4. takes each cluster's centroid in the original space (the mean of its members);
5. scores every memory, sampled or not, against every centroid and, unless a
   ``member_threshold`` is given, suggests the assignment threshold from those scores:
   the highest that leaves at most ``max_unclassified`` (10%) of the memories without a
   domain, judged by each memory's strength (:func:`~memoryd.domains.assign.suggest_threshold`);
6. labels every memory with its most similar centroid when that reaches the threshold
   (else -1), so member counts cover all memories;
7. names each cluster by c-TF-IDF over its sampled members' texts, each cut to its
   first ``TERM_CHARS`` characters (:mod:`.terms`).

HDBSCAN's hard labels only define centroids; which domains a memory belongs to is
decided by soft assignment (:mod:`.assign`). Nothing here reads or writes a store.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from memoryd.domains import checks, terms
from memoryd.domains.assign import MAX_UNCLASSIFIED, Domain, strengths, suggest_threshold
from memoryd.domains.reduce import METHODS, reduce_dimensions
from memoryd.errors import InvalidInput

#: Terms come from the start of each text: long texts (pasted code, whole documents) would
#: otherwise dominate their cluster's words and the cost (bench: same top terms, 40% less time).
TERM_CHARS = 2000


@dataclass(frozen=True)
class DiscoveryParams:
    """Settings of one discovery run; the defaults are the ones measured on BEAM."""

    min_memories: int = 150
    sample_size: int = 5000
    reduction: str = "pca"
    dims: int = 10
    min_cluster_size: int = 10
    min_cluster_share: float = 0.01
    min_samples: int = 5
    selection: str = "eom"
    member_threshold: float | None = None  # None: suggested from the scores (step 5)
    max_unclassified: float = MAX_UNCLASSIFIED
    n_terms: int = 10
    seed: int = 0
    threads: int | None = 1  # BLAS/OpenMP threads; None leaves the libraries' default

    def __post_init__(self) -> None:
        checks.count(self.min_memories, name="min_memories", minimum=0)
        checks.count(self.min_cluster_size, name="min_cluster_size", minimum=2)
        checks.count(self.sample_size, name="sample_size", minimum=self.min_cluster_size)
        checks.count(self.dims, name="dims", minimum=1)
        checks.count(self.min_samples, name="min_samples", minimum=1)
        checks.count(self.n_terms, name="n_terms", minimum=1)
        if self.threads is not None:
            checks.count(self.threads, name="threads", minimum=1)
        checks.share(self.min_cluster_share, name="min_cluster_share")
        checks.share(self.max_unclassified, name="max_unclassified")
        if self.member_threshold is not None:
            checks.threshold(self.member_threshold, name="member_threshold")
        if self.reduction not in METHODS:
            raise InvalidInput(
                f"unknown reduction {self.reduction!r}; choose one of {', '.join(METHODS)}"
            )
        if self.selection not in ("eom", "leaf"):
            raise InvalidInput(f"selection must be 'eom' or 'leaf', got {self.selection!r}")

    def cluster_size(self, sampled: int) -> int:
        """The smallest cluster HDBSCAN may report for a sample of ``sampled`` points."""
        return max(self.min_cluster_size, math.ceil(self.min_cluster_share * sampled))


@dataclass(frozen=True, eq=False)
class Cluster:
    """One discovered cluster: a candidate domain."""

    index: int
    centroid: np.ndarray  # mean of the sampled members' vectors, original space, not normalised
    sample_members: int  # HDBSCAN members in the sample
    member_count: int  # memories whose nearest centroid this is, at or above the threshold
    top_terms: tuple[str, ...]
    label: str  # suggested name from top_terms, unique within the discovery

    def as_domain(self, domain_id: str | None = None, label: str | None = None) -> Domain:
        """This cluster as a :class:`Domain` (id and label default to the suggested label)."""
        return Domain(
            id=domain_id or self.label,
            label=label or self.label,
            centroid=self.centroid,
            top_terms=self.top_terms,
            memory_count=self.member_count,
        )


@dataclass(frozen=True, eq=False)
class Discovery:
    """The result of :func:`discover`. ``labels[i]`` is the cluster index of memory i or -1."""

    clusters: list[Cluster]
    labels: np.ndarray
    memories: int
    sampled: int = 0
    threshold: float | None = None  # the assignment threshold used for labels (step 5)
    skipped: str | None = None  # why nothing was clustered, when nothing was
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def unclustered_share(self) -> float:
        """Share of memories far from every centroid (label -1)."""
        return float(np.mean(self.labels < 0)) if self.memories else 0.0


def discover(
    vectors: np.ndarray,
    texts: Sequence[str],
    params: DiscoveryParams = DiscoveryParams(),
    *,
    force: bool = False,
) -> Discovery:
    """Cluster memories into candidate domains (see the module docstring).

    ``vectors`` (n, d) and ``texts`` (n) describe the same memories in the same order.
    Below ``params.min_memories`` nothing is clustered unless ``force``; with fewer
    memories than one cluster needs, nothing is clustered either way. Runs on
    ``params.threads`` BLAS/OpenMP threads (one by default: it is background work, and on a
    busy two-core machine threaded BLAS made it slower, see bench/results/domains.md).

    >>> found = discover(vectors, texts)                      # doctest: +SKIP
    >>> [(c.label, c.member_count, c.top_terms[:3]) for c in found.clusters]
    [('bgp-vlan', 47, ('bgp', 'vlan', 'sonic')), ('solar-battery', 31, ...)]
    """
    rows = checks.unit_rows(vectors)
    checks.same_length(texts, len(rows), name="texts", of="vectors")
    n = len(rows)
    if n < params.min_memories and not force:
        return _nothing(n, f"{n} memories, discovery starts at {params.min_memories}")
    if n < params.min_cluster_size:
        return _nothing(
            n, f"{n} memories, fewer than one cluster needs ({params.min_cluster_size})"
        )
    with threadpool_limits(params.threads):
        return _discover(rows, texts, params)


def _discover(rows: np.ndarray, texts: Sequence[str], params: DiscoveryParams) -> Discovery:
    n = len(rows)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    sample = _sample(n, params.sample_size, params.seed)
    reduced = reduce_dimensions(
        rows[sample], method=params.reduction, dims=params.dims, seed=params.seed
    )
    timings["reduce_s"] = time.perf_counter() - started
    raw = cluster_labels(reduced, params)
    timings["cluster_s"] = time.perf_counter() - started - timings["reduce_s"]
    ids = sorted(set(raw.tolist()) - {-1}, key=lambda k: -int(np.sum(raw == k)))
    if not ids:
        return _nothing(n, "no dense group found: HDBSCAN saw only noise", len(sample))
    centroids = np.stack([rows[sample[raw == k]].mean(axis=0) for k in ids])
    threshold, labels = _labels(rows, centroids, params)
    timings["label_s"] = time.perf_counter() - started - timings["reduce_s"] - timings["cluster_s"]
    clusters = _describe(texts, sample, raw, ids, centroids, labels, params)
    timings["total_s"] = time.perf_counter() - started
    timings["terms_s"] = timings["total_s"] - sum(
        timings[k] for k in ("reduce_s", "cluster_s", "label_s")
    )
    return Discovery(clusters, labels, n, len(sample), threshold, timings=timings)


def cluster_labels(points: np.ndarray, params: DiscoveryParams) -> np.ndarray:
    """HDBSCAN labels (-1 = noise) of already reduced ``points``."""
    from sklearn.cluster import HDBSCAN

    size = min(params.cluster_size(len(points)), len(points))
    model = HDBSCAN(
        min_cluster_size=max(2, size),
        min_samples=min(params.min_samples, len(points)),
        cluster_selection_method=params.selection,
        copy=True,
    )
    return model.fit_predict(points.astype(np.float64))


def nearest(rows: np.ndarray, centroids: np.ndarray, threshold: float) -> np.ndarray:
    """Index of the most similar centroid per row, or -1 when the row's strength
    (:func:`~memoryd.domains.assign.strength`) is below ``threshold`` (it is unclassified)."""
    if len(centroids) == 0:
        return np.full(len(rows), -1, dtype=np.int64)
    sims = rows @ _unit(centroids).T
    return np.where(strengths(sims) >= threshold, sims.argmax(axis=1), -1)


def _labels(
    rows: np.ndarray, centroids: np.ndarray, params: DiscoveryParams
) -> tuple[float, np.ndarray]:
    threshold = params.member_threshold
    if threshold is None:
        threshold = suggest_threshold(rows @ _unit(centroids).T, params.max_unclassified)
    return threshold, nearest(rows, centroids, threshold)


def _describe(
    texts: Sequence[str],
    sample: np.ndarray,
    raw: np.ndarray,
    ids: list[int],
    centroids: np.ndarray,
    labels: np.ndarray,
    params: DiscoveryParams,
) -> list[Cluster]:
    member_texts = [[texts[i][:TERM_CHARS] for i in sample[raw == k]] for k in ids]
    background = [texts[i][:TERM_CHARS] for i in sample[raw == -1]]
    words = terms.top_terms(member_texts, background=background, n_terms=params.n_terms)
    counts = np.bincount(labels[labels >= 0], minlength=len(ids))
    clusters: list[Cluster] = []
    taken: set[str] = set()
    for index, k in enumerate(ids):
        label = terms.suggest_label(words[index], taken)
        taken.add(label)
        clusters.append(
            Cluster(
                index=index,
                centroid=centroids[index].astype(np.float32),
                sample_members=int(np.sum(raw == k)),
                member_count=int(counts[index]),
                top_terms=tuple(words[index]),
                label=label,
            )
        )
    return clusters


def _unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _sample(n: int, size: int, seed: int) -> np.ndarray:
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def _nothing(n: int, reason: str, sampled: int = 0) -> Discovery:
    return Discovery([], np.full(n, -1, dtype=np.int64), n, sampled, skipped=reason)
