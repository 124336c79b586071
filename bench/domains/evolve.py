"""Domains over time on BEAM: running-mean centroid updates and re-clustering proposals.

**Centroid updates.** Domains are discovered on the first half of every conversation;
the second halves then arrive one message at a time (conversations interleaved, seeded
order), each classified on arrival at the discovery's threshold and folded into the
centroids by one of three policies: ``best`` (as shipped: only the best assigned domain
moves), ``all`` (every assigned domain moves) and ``none`` (centroids frozen). Scored:
on-arrival agreement with the conversations and the closest pair of centroids at the end
(``all`` pulls neighbouring domains together).

**Proposals.** Four situations, each a current set of domains with its assignments
against a fresh discovery of all messages: unchanged data re-clustered from another
sample (any proposal is a false alarm), five conversations that arrived after discovery
(expect ``new``), one domain standing for two discovered domains (expect ``split``) and
one discovered domain cut into two halves (expect ``merge``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from bench.domains.metrics import agreement
from memoryd.domains.assign import (
    Classification,
    Domain,
    classify,
    classify_many,
    update_centroids,
)
from memoryd.domains.discover import Discovery, DiscoveryParams, discover
from memoryd.domains.proposals import propose

Log = Callable[[str], None]
POLICIES = ("best", "all", "none")
LATE_FROM = 16  # conversations 16-20 arrive after the first discovery


def halves(truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the first and the second half of each conversation (in order)."""
    early, late = [], []
    for conv in np.unique(truth):
        rows = np.flatnonzero(truth == conv)
        early.extend(rows[: len(rows) // 2])
        late.extend(rows[len(rows) // 2 :])
    return np.array(early), np.array(late)


def stream(
    domains: list[Domain], vectors: np.ndarray, order: np.ndarray, threshold: float, policy: str
) -> tuple[list[Domain], np.ndarray]:
    """Classify rows of ``vectors`` in ``order``, updating centroids by ``policy``;
    returns the final domains and each row's best domain on arrival (-1: none)."""
    best = np.full(len(order), -1)
    index = {d.id: i for i, d in enumerate(domains)}
    for step, row in enumerate(order):
        result = classify(vectors[row], domains, threshold)
        if result.domains:
            best[step] = index[result.domains[0]]
        if policy == "best":
            domains = update_centroids(domains, vectors[row], result)
        elif policy == "all":
            for name in result.domains:
                one = Classification(result.scores, [name])
                domains = update_centroids(domains, vectors[row], one)
    return domains, best


def closest_pair(domains: list[Domain]) -> float:
    """The highest cosine between two different centroids."""
    unit = np.stack([d.centroid / np.linalg.norm(d.centroid) for d in domains])
    sims = unit @ unit.T
    np.fill_diagonal(sims, -1.0)
    return round(float(sims.max()), 4)


def centroid_updates(
    vectors: np.ndarray,
    truth: np.ndarray,
    texts: list[str],
    params: DiscoveryParams,
    seed: int,
    log: Log,
) -> dict[str, Any]:
    """Discover on first halves, stream second halves under each policy (module docstring)."""
    early, late = halves(truth)
    found = discover(vectors[early], [texts[i] for i in early], params)
    start = [c.as_domain(f"d{c.index}") for c in found.clusters]
    order = np.random.default_rng(seed).permutation(late)
    threshold = float(found.threshold or 0.0)
    out: dict[str, Any] = {
        "early": len(early),
        "late": len(late),
        "domains": len(start),
        "threshold": threshold,
        "closest_pair_before": closest_pair(start),
    }
    for policy in POLICIES:
        final, best = stream(start, vectors, order, threshold, policy)
        after = classify_many(vectors[late], final, threshold)
        out[policy] = {
            "on_arrival": agreement(truth[order], best),
            "after": agreement(truth[late], _best_labels(after, final)),
            "closest_pair_after": closest_pair(final),
        }
        log(
            f"  policy {policy}: on-arrival NMI {out[policy]['on_arrival']['nmi']:.3f}, "
            f"closest centroid pair {out[policy]['closest_pair_after']:.3f}"
        )
    return out


def proposal_cases(
    vectors: np.ndarray, truth: np.ndarray, texts: list[str], params: DiscoveryParams, log: Log
) -> dict[str, Any]:
    """The four situations of the module docstring, each with the proposals it gives."""
    base = discover(vectors, texts, params)
    domains = [c.as_domain(f"d{c.index}") for c in base.clusters]
    threshold = float(base.threshold or 0.0)
    other = replace(params, seed=params.seed + 1, sample_size=min(params.sample_size, 4000))
    cases = {"reclustered": _case(domains, vectors, threshold, discover(vectors, texts, other))}
    known = np.flatnonzero(truth < LATE_FROM)
    partial = discover(vectors[known], [texts[i] for i in known], params)
    earlier = [c.as_domain(f"p{c.index}") for c in partial.clusters]
    late = truth >= LATE_FROM
    cases["five_new_conversations"] = _case(
        earlier, vectors, float(partial.threshold or 0.0), base, truth=truth, late=late
    )
    a, b = 0, 1  # the two largest discovered domains
    merged = Domain(id="merged", label="merged", centroid=domains[a].centroid + domains[b].centroid)
    rest = [d for i, d in enumerate(domains) if i not in (a, b)]
    cases["two_domains_as_one"] = _case([merged, *rest], vectors, threshold, base)
    cases["one_domain_in_halves"] = _halves_case(domains, 2, vectors, threshold, base)
    for name, case in cases.items():
        log(f"  {name}: {case['kinds']}")
    return cases


def _case(
    domains: list[Domain],
    vectors: np.ndarray,
    threshold: float,
    fresh: Discovery,
    *,
    truth: np.ndarray | None = None,
    late: np.ndarray | None = None,
) -> dict[str, Any]:
    assignments = [c.domains for c in classify_many(vectors, domains, threshold)]
    found = propose(domains, assignments, fresh)
    out: dict[str, Any] = {
        "domains_before": len(domains),
        "clusters_after": len(fresh.clusters),
        "kinds": {k: sum(p.kind == k for p in found) for k in ("split", "merge", "new")},
        "proposals": [{"kind": p.kind, "summary": p.summary} for p in found],
    }
    if truth is not None and late is not None:
        news = [p for p in found if p.kind == "new"]
        members = [fresh.labels == p.clusters[0] for p in news]
        out["new_mostly_late"] = sum(float(np.mean(late[m])) >= 0.5 for m in members)
        out["late_conversations_found"] = sorted(
            {int(np.bincount(truth[m]).argmax()) for m in members} & set(range(LATE_FROM, 21))
        )
    return out


def _halves_case(
    domains: list[Domain], which: int, vectors: np.ndarray, threshold: float, fresh: Discovery
) -> dict[str, Any]:
    members = np.flatnonzero(fresh.labels == which)
    a, b = members[: len(members) // 2], members[len(members) // 2 :]
    cut = [
        Domain(id="half-a", label="half-a", centroid=vectors[a].mean(axis=0)),
        Domain(id="half-b", label="half-b", centroid=vectors[b].mean(axis=0)),
    ]
    rest = [d for i, d in enumerate(domains) if i != which]
    return _case(cut + rest, vectors, threshold, fresh)


def _best_labels(results: list[Classification], domains: list[Domain]) -> np.ndarray:
    index = {d.id: i for i, d in enumerate(domains)}
    return np.array([index[r.domains[0]] if r.domains else -1 for r in results])
