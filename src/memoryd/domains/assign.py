"""Soft assignment: every memory's cosine similarity to every domain centroid.

A memory's ``domain_scores`` hold its similarity to each centroid; its ``domains`` are
those scoring at or above a threshold, best first: possibly several (a memory about a
Rust tool that reads BGP state belongs to both), possibly none (unclassified). There is
no "closest wins" rule. Because the scores are kept, a new threshold re-thresholds every
memory without embedding anything again (:func:`rethreshold`).

New memories move the centroid of the domain they fit best by a running mean
(:func:`update_centroids`); mixed memories do not pull the other domains' centroids, so
neighbouring domains do not drift into each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import takewhile

import numpy as np

from memoryd.domains import checks
from memoryd.errors import InvalidInput

#: For all-MiniLM-L6-v2 when no discovery has suggested one: what :func:`suggest_threshold`
#: gives on BEAM and on short hand-written memories alike (bench/results/domains.md).
DEFAULT_THRESHOLD = 0.30
#: The share of memories that may stay unclassified when a threshold is suggested.
MAX_UNCLASSIFIED = 0.10


@dataclass(frozen=True, eq=False)
class Domain:
    """A domain: a stable id, a name, its centroid (the mean of its members' vectors),
    the terms that describe it and how many memories its centroid averages."""

    id: str
    label: str
    centroid: np.ndarray
    top_terms: tuple[str, ...] = ()
    memory_count: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise InvalidInput("a domain needs a non-empty id")
        centroid = np.asarray(self.centroid, dtype=np.float32)
        checks.unit_vector(centroid, name=f"centroid of domain {self.id!r}")
        checks.count(self.memory_count, name="memory_count", minimum=0)
        object.__setattr__(self, "centroid", centroid)
        object.__setattr__(self, "top_terms", tuple(self.top_terms))


@dataclass(frozen=True)
class Classification:
    """One memory's similarity to every domain and the domains it is assigned to (best first)."""

    scores: dict[str, float] = field(default_factory=dict)
    domains: list[str] = field(default_factory=list)


def score_matrix(vectors: np.ndarray, domains: Sequence[Domain]) -> np.ndarray:
    """Cosine similarity of each vector (rows) to each domain's centroid (columns)."""
    centroids = _centroids(domains)
    rows = checks.unit_rows(vectors, dims=centroids.shape[1])
    return rows @ centroids.T


def classify(
    vector: np.ndarray, domains: Sequence[Domain], threshold: float = DEFAULT_THRESHOLD
) -> Classification:
    """Score one memory's vector against every domain and threshold the scores.

    With no domains yet (still accumulating) the result is empty.

    >>> c = classify(vec, [dev, infra, home], threshold=0.35)   # doctest: +SKIP
    >>> c.scores, c.domains
    ({'dev': 0.52, 'infra': 0.41, 'home': 0.08}, ['dev', 'infra'])
    """
    return classify_many(np.asarray(vector, dtype=np.float32)[None, :], domains, threshold)[0]


def classify_many(
    vectors: np.ndarray, domains: Sequence[Domain], threshold: float = DEFAULT_THRESHOLD
) -> list[Classification]:
    """:func:`classify` for each row of ``vectors`` (one matrix product for all)."""
    threshold = checks.threshold(threshold)
    if not domains:
        checks.unit_rows(vectors)
        return [Classification() for _ in range(len(vectors))]
    ids = [d.id for d in domains]
    scores = np.round(score_matrix(vectors, domains).astype(np.float64), 4)
    # best first, ties by name (as rethreshold orders them): a stable sort over name order
    by_name = sorted(range(len(ids)), key=ids.__getitem__)
    names = [ids[i] for i in by_name]
    ranked = scores[:, by_name]
    order = np.argsort(-ranked, axis=1, kind="stable")
    out = []
    for row, ranked_row, best in zip(scores.tolist(), ranked.tolist(), order.tolist(), strict=True):
        kept = takewhile(lambda j, r=ranked_row: r[j] >= threshold, best)
        out.append(Classification(dict(zip(ids, row, strict=True)), [names[j] for j in kept]))
    return out


def rethreshold(scores: Mapping[str, float], threshold: float) -> list[str]:
    """The domains of stored ``domain_scores`` under a new threshold, best first.

    >>> rethreshold({"dev": 0.52, "infra": 0.41, "home": 0.08}, 0.45)
    ['dev']
    """
    threshold = checks.threshold(threshold)
    for name, value in scores.items():
        if not isinstance(value, (int, float)) or not np.isfinite(value):
            raise InvalidInput(f"score of domain {name!r} is not a finite number: {value!r}")
    kept = [(name, value) for name, value in scores.items() if value >= threshold]
    return [name for name, _ in sorted(kept, key=lambda kv: (-kv[1], kv[0]))]


def suggest_threshold(best_scores: np.ndarray, max_unclassified: float = MAX_UNCLASSIFIED) -> float:
    """The highest threshold (a multiple of 0.01) that leaves at most ``max_unclassified`` of
    the memories below every domain, given each memory's best score.

    Cosine scales differ between embedding models and between kinds of text, so the
    threshold is taken from the memories themselves rather than fixed; the higher it is,
    the fewer extra domains memories get.

    >>> suggest_threshold(np.array([0.2, 0.35, 0.4, 0.5, 0.6, 0.62, 0.7, 0.71, 0.8, 0.9]), 0.1)
    0.35
    """
    checks.share(max_unclassified, name="max_unclassified")
    best = np.asarray(best_scores, dtype=np.float64)
    if best.ndim != 1 or best.size == 0 or not np.isfinite(best).all():
        raise InvalidInput("best_scores must be a non-empty 1-D array of finite numbers")
    allowed = int(np.floor(max_unclassified * best.size))
    cut = np.sort(best)[allowed]  # every score at or above it: at most `allowed` fall below
    return float(np.clip(np.floor(round(cut * 100, 6)) / 100, -1.0, 1.0))


def update_centroids(
    domains: Sequence[Domain], vector: np.ndarray, classification: Classification
) -> list[Domain]:
    """Domains after a new memory joined: the best assigned domain's centroid moves by a
    running mean ``(c * n + v) / (n + 1)`` and its count grows; the others are unchanged.

    An unclassified memory changes nothing. The inputs are not modified.
    """
    if not classification.domains:
        return list(domains)
    best = classification.domains[0]
    by_id = {d.id: d for d in domains}
    if best not in by_id:
        raise InvalidInput(f"classification names domain {best!r}, which is not among the domains")
    target = by_id[best]
    v = checks.unit_vector(vector, dims=target.centroid.shape[0])
    n = target.memory_count
    moved = replace(target, centroid=(target.centroid * n + v) / (n + 1), memory_count=n + 1)
    return [moved if d.id == best else d for d in domains]


def unique_ids(domains: Iterable[Domain]) -> list[str]:
    """The domain ids in order; refuses duplicates."""
    ids = [d.id for d in domains]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InvalidInput(f"domain id {dup!r} appears more than once")
    return ids


def _centroids(domains: Sequence[Domain]) -> np.ndarray:
    unique_ids(domains)
    if not domains:
        raise InvalidInput("no domains to score against")
    dims = {d.centroid.shape[0] for d in domains}
    if len(dims) > 1:
        raise InvalidInput(f"domain centroids have different dimensions: {sorted(dims)}")
    return checks.unit_rows(np.stack([d.centroid for d in domains]), name="centroids")
