"""Re-clustering proposes, never imposes: compare a new clustering with the current domains.

Given the current domains, which of them each memory is assigned to now, and a fresh
:class:`~memoryd.domains.discover.Discovery` over the same memories, :func:`propose`
returns what has changed as data, with the evidence a person needs to decide:

- **split**: one domain's memories now fall into two or more clusters, each holding a
  real share of the domain (``split_share``) and mostly made of it (``purity``);
- **merge**: two or more domains fall mostly (``merge_share``) into one cluster;
- **new**: a cluster no current domain holds a real share of (``new_share``): made of
  unclassified memories, or of memories scattered over domains that each hold little of it
  (new arrivals that were filed under the nearest existing domains).

Nothing is renamed, merged, split or created here; an engine applies a proposal only when
it is accepted. Proposal keys are derived from their content, so the same situation seen
twice gives the same key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memoryd.domains import checks
from memoryd.domains.assign import Domain, unique_ids
from memoryd.domains.discover import Cluster, Discovery
from memoryd.errors import InvalidInput

KINDS = ("split", "merge", "new")


@dataclass(frozen=True)
class ProposalParams:
    """Shares that make a change worth proposing (fractions of member counts)."""

    split_share: float = 0.15
    purity: float = 0.5
    merge_share: float = 0.5
    new_share: float = 0.5

    def __post_init__(self) -> None:
        for name in ("split_share", "purity", "merge_share", "new_share"):
            checks.share(getattr(self, name), name=name)


@dataclass(frozen=True)
class Proposal:
    """A proposed change: its kind, the domains and clusters it concerns, and the evidence."""

    kind: str
    key: str
    domain_ids: tuple[str, ...]
    clusters: tuple[int, ...]
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)


def propose(
    domains: Sequence[Domain],
    assignments: Sequence[Sequence[str]],
    discovery: Discovery,
    params: ProposalParams = ProposalParams(),
) -> list[Proposal]:
    """Proposals (split, then merge, then new) from comparing ``discovery`` with ``domains``.

    ``assignments[i]`` lists the domains memory i is in now, best first (its ``domains``
    field); ``discovery.labels[i]`` is the new cluster of the same memory. A memory counts
    for its first (primary) domain only: with soft assignment many memories also belong to
    a neighbouring domain, and counting those would make every broad domain look split.
    The inputs are only read.

    >>> [p.summary for p in propose(current, assigned, discover(vectors, texts))]  # doctest: +SKIP
    ["split 'dev' into 'rust-cargo' (34) and 'bgp-vlan' (28)", ...]
    """
    overlap, held, unheld = _overlap(domains, assignments, discovery)
    sizes = np.bincount(discovery.labels[discovery.labels >= 0], minlength=len(discovery.clusters))
    context = _Context(list(domains), discovery.clusters, overlap, held, sizes, unheld)
    found = _splits(context, params) + _merges(context, params) + _news(context, params)
    return found


@dataclass(frozen=True, eq=False)
class _Context:
    domains: list[Domain]
    clusters: list[Cluster]
    overlap: np.ndarray  # (domains, clusters): memories in domain d now and in cluster c
    held: np.ndarray  # memories each domain holds now
    sizes: np.ndarray  # memories in each new cluster
    unheld: np.ndarray  # per cluster: its memories that no domain holds now


def _overlap(
    domains: Sequence[Domain], assignments: Sequence[Sequence[str]], discovery: Discovery
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    checks.same_length(
        assignments, discovery.memories, name="assignments", of="memories in the discovery"
    )
    column = {d: i for i, d in enumerate(unique_ids(domains))}
    overlap = np.zeros((len(column), len(discovery.clusters)), dtype=np.int64)
    held = np.zeros(len(column), dtype=np.int64)
    unheld = np.zeros(len(discovery.clusters), dtype=np.int64)
    for i, (names, label) in enumerate(zip(assignments, discovery.labels.tolist(), strict=True)):
        if isinstance(names, str):
            raise InvalidInput(f"assignments[{i}] must be a list of domain ids, not a string")
        unknown = [n for n in names if n not in column]
        if unknown:
            raise InvalidInput(f"assignments[{i}] names unknown domain {unknown[0]!r}")
        if not names:
            if label >= 0:
                unheld[label] += 1
            continue
        primary = column[names[0]]
        held[primary] += 1
        if label >= 0:
            overlap[primary, label] += 1
    return overlap, held, unheld


def _splits(ctx: _Context, params: ProposalParams) -> list[Proposal]:
    out = []
    for d, domain in enumerate(ctx.domains):
        if ctx.held[d] == 0:
            continue
        parts = [
            c
            for c in range(len(ctx.clusters))
            if ctx.overlap[d, c] >= params.split_share * ctx.held[d]
            and ctx.overlap[d, c] >= params.purity * ctx.sizes[c]
        ]
        if len(parts) < 2:
            continue
        names = " and ".join(f"{ctx.clusters[c].label!r} ({ctx.overlap[d, c]})" for c in parts)
        evidence = {
            "domain": _domain_evidence(domain, int(ctx.held[d])),
            "parts": [
                _cluster_evidence(ctx, c, {domain.id: int(ctx.overlap[d, c])}) for c in parts
            ],
        }
        out.append(
            _proposal(
                "split",
                (domain.id,),
                tuple(parts),
                f"split {domain.label!r} into {names}",
                evidence,
            )
        )
    return out


def _merges(ctx: _Context, params: ProposalParams) -> list[Proposal]:
    out = []
    for c, cluster in enumerate(ctx.clusters):
        members = [
            d
            for d in range(len(ctx.domains))
            if ctx.held[d] > 0 and ctx.overlap[d, c] >= params.merge_share * ctx.held[d]
        ]
        if len(members) < 2:
            continue
        ids = tuple(ctx.domains[d].id for d in members)
        centroids = np.stack([ctx.domains[d].centroid for d in members])
        unit = centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
        evidence = {
            "domains": [_domain_evidence(ctx.domains[d], int(ctx.held[d])) for d in members],
            "cluster": _cluster_evidence(
                ctx, c, {ctx.domains[d].id: int(ctx.overlap[d, c]) for d in members}
            ),
            "centroid_similarity": round(
                float((unit @ unit.T)[np.triu_indices(len(members), 1)].min()), 4
            ),
        }
        labels = " and ".join(repr(ctx.domains[d].label) for d in members)
        out.append(
            _proposal("merge", ids, (c,), f"merge {labels} into {cluster.label!r}", evidence)
        )
    return out


def _news(ctx: _Context, params: ProposalParams) -> list[Proposal]:
    out = []
    for c, cluster in enumerate(ctx.clusters):
        size = int(ctx.sizes[c])
        largest = int(ctx.overlap[:, c].max()) if len(ctx.domains) else 0
        if size == 0 or largest >= params.new_share * size:
            continue
        evidence = {
            "cluster": _cluster_evidence(ctx, c, _holders(ctx, c)),
            "unclassified_share": round(float(ctx.unheld[c] / size), 4),
            "largest_domain_share": round(largest / size, 4),
            "nearest_domain": _nearest_domain(ctx, cluster),
        }
        terms = ", ".join(cluster.top_terms[:5])
        summary = f"new domain {cluster.label!r} ({size} memories: {terms})"
        out.append(_proposal("new", (), (c,), summary, evidence))
    return out


def _holders(ctx: _Context, c: int, top: int = 3) -> dict[str, int]:
    """The current domains holding most of cluster c's memories (primary membership)."""
    order = np.argsort(-ctx.overlap[:, c], kind="stable")[:top]
    return {ctx.domains[d].id: int(ctx.overlap[d, c]) for d in order if ctx.overlap[d, c] > 0}


def _nearest_domain(ctx: _Context, cluster: Cluster) -> dict[str, Any] | None:
    if not ctx.domains:
        return None
    centroids = np.stack([d.centroid for d in ctx.domains])
    unit = centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
    sims = unit @ (cluster.centroid / np.linalg.norm(cluster.centroid))
    best = int(sims.argmax())
    return {"id": ctx.domains[best].id, "similarity": round(float(sims[best]), 4)}


def _domain_evidence(domain: Domain, held: int) -> dict[str, Any]:
    return {
        "id": domain.id,
        "label": domain.label,
        "members": held,
        "top_terms": list(domain.top_terms[:10]),
    }


def _cluster_evidence(ctx: _Context, c: int, overlap: dict[str, int]) -> dict[str, Any]:
    cluster = ctx.clusters[c]
    return {
        "cluster": c,
        "label": cluster.label,
        "members": int(ctx.sizes[c]),
        "top_terms": list(cluster.top_terms),
        "overlap": overlap,
    }


def _proposal(
    kind: str,
    ids: tuple[str, ...],
    clusters: tuple[int, ...],
    summary: str,
    evidence: dict[str, Any],
) -> Proposal:
    terms = [" ".join(e.get("top_terms", [])[:3]) for e in _cluster_parts(evidence)]
    digest = hashlib.sha1("\x1f".join([kind, *ids, *terms]).encode()).hexdigest()[:12]
    return Proposal(kind, f"{kind}-{digest}", ids, clusters, summary, evidence)


def _cluster_parts(evidence: dict[str, Any]) -> list[dict[str, Any]]:
    if "parts" in evidence:
        return list(evidence["parts"])
    return [evidence["cluster"]]
