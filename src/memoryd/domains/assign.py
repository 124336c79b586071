"""Soft assignment: every memory's cosine similarity to every domain centroid.

A memory's ``domain_scores`` hold its similarity to each centroid. Its ``domains`` are
decided relative to its best domain, best first: possibly several (a memory about a Rust
tool that reads BGP state belongs to both), possibly none (unclassified):

- it is classified when its **strength**, the length of its projection on its two best
  domains (``sqrt(s1² + s2²)``), reaches the threshold. A memory on two topics splits its
  vector between them, so it scores lower on each than a memory on one (about 0.7 of it when
  balanced); its strength does not drop, so one threshold serves both kinds. A memory on an
  unknown topic scores low on every domain and stays unclassified;
- it belongs to its best domain, and to every other domain scoring at least ``RELATIVE``
  (0.7) of the best score: a memory plainly about one topic does not pick up a weak second.

There is no "closest wins" rule. Because the scores are kept, a new threshold
re-thresholds every memory without embedding anything again (:func:`rethreshold`).
Measured on labelled memories in bench/results/domains_assignment.md.

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

#: For all-MiniLM-L6-v2 when no discovery has suggested one: about what
#: :func:`suggest_threshold` gives on BEAM and on short hand-written memories
#: (bench/results/domains.md, bench/results/domains_assignment.md).
DEFAULT_THRESHOLD = 0.30
#: The share of memories that may stay unclassified when a threshold is suggested.
MAX_UNCLASSIFIED = 0.10
#: A memory's further domains score at least this share of its best domain's score.
RELATIVE = 0.7


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
    vector: np.ndarray, domains: Sequence[Domain], threshold: float = DEFAULT_THRESHOLD,
    relative: float = RELATIVE,
) -> Classification:
    """Score one memory's vector against every domain and decide its domains (see the
    module: strength against ``threshold``, further domains ``relative`` to the best).

    With no domains yet (still accumulating) the result is empty.

    >>> c = classify(vec, [dev, infra, home], threshold=0.35)   # doctest: +SKIP
    >>> c.scores, c.domains
    ({'dev': 0.52, 'infra': 0.41, 'home': 0.08}, ['dev', 'infra'])
    """
    return classify_many(np.asarray(vector, dtype=np.float32)[None, :], domains, threshold,
                         relative)[0]


def classify_many(
    vectors: np.ndarray, domains: Sequence[Domain], threshold: float = DEFAULT_THRESHOLD,
    relative: float = RELATIVE,
) -> list[Classification]:
    """:func:`classify` for each row of ``vectors`` (one matrix product for all)."""
    threshold = checks.threshold(threshold)
    relative = checks.share(relative, name="relative")
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
        kept = _kept([ranked_row[j] for j in best], threshold, relative)
        out.append(Classification(dict(zip(ids, row, strict=True)),
                                  [names[j] for j in best[:kept]]))
    return out


def _kept(descending: Sequence[float], threshold: float, relative: float) -> int:
    """How many of a memory's scores, best first, are its domains."""
    if not descending or strength(descending) < threshold:
        return 0
    top = descending[0]
    floor = relative * top if top > 0 else top
    return 1 + sum(1 for _ in takewhile(lambda s: s >= floor, descending[1:]))


def strength(scores: Iterable[float]) -> float:
    """The length of a memory's projection on its two best domains, ``sqrt(s1² + s2²)``
    (negative scores count as 0): what the threshold is compared with.

    >>> round(strength([0.39, 0.36, 0.08]), 3)   # a memory on two topics
    0.531
    """
    top = sorted((max(float(s), 0.0) for s in scores), reverse=True)[:2]
    return float(np.sqrt(sum(s * s for s in top)))


def strengths(scores: np.ndarray) -> np.ndarray:
    """:func:`strength` of each row of a (memories, domains) score matrix."""
    top = -np.sort(-np.clip(np.asarray(scores, dtype=np.float64), 0.0, None), axis=1)[:, :2]
    return np.sqrt((top * top).sum(axis=1))


def rethreshold(scores: Mapping[str, float], threshold: float,
                relative: float = RELATIVE) -> list[str]:
    """The domains of stored ``domain_scores`` under a new threshold, best first (the rule
    of :func:`classify`).

    >>> rethreshold({"dev": 0.52, "infra": 0.41, "home": 0.08}, 0.45)
    ['dev', 'infra']
    >>> rethreshold({"dev": 0.72, "infra": 0.41, "home": 0.08}, 0.45)
    ['dev']
    >>> rethreshold({"dev": 0.52, "infra": 0.41, "home": 0.08}, 0.7)
    []
    """
    threshold = checks.threshold(threshold)
    relative = checks.share(relative, name="relative")
    for name, value in scores.items():
        if not isinstance(value, (int, float)) or not np.isfinite(value):
            raise InvalidInput(f"score of domain {name!r} is not a finite number: {value!r}")
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    kept = _kept([value for _, value in ranked], threshold, relative)
    return [name for name, _ in ranked[:kept]]


def suggest_threshold(scores: np.ndarray, max_unclassified: float = MAX_UNCLASSIFIED) -> float:
    """The highest threshold (a multiple of 0.01) that leaves at most ``max_unclassified`` of
    the memories unclassified, given their scores (memories, domains): the threshold is
    compared with each memory's :func:`strength`.

    Cosine scales differ between embedding models and between kinds of text, so the
    threshold is taken from the memories themselves rather than fixed. Strength, not the
    best score: on very uniform memories the best scores of one-topic memories are high, and
    a cut under 90% of them would leave out every memory on two topics.

    >>> suggest_threshold(np.array([[0.2], [0.35], [0.4], [0.5], [0.6], [0.62], [0.7], [0.71],
    ...                             [0.8], [0.9]]), 0.1)
    0.35
    """
    checks.share(max_unclassified, name="max_unclassified")
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2 or matrix.size == 0 or not np.isfinite(matrix).all():
        raise InvalidInput("scores must be a non-empty (memories, domains) array of finite "
                           "numbers")
    best = strengths(matrix)
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
