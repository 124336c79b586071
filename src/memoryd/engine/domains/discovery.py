"""Discovering domains and re-clustering: sample the store, cluster it (:mod:`memoryd.domains`),
then either create the first domains or record proposals.

* :func:`discover` on a store without domains (or with ``replace``): below
  ``domains_min_memories`` it does nothing unless forced; otherwise it clusters a sample of at
  most 5,000 memories, creates one domain per cluster (named from its top terms), sets the
  suggested threshold and assigns every memory. On a store that has domains it re-clusters.
* :func:`recluster` compares a fresh clustering with the current domains and records
  proposals (split, merge, new, rename) with their evidence; it changes no domain and no
  memory. A proposal seen before keeps its decision: a rejected one is not proposed again.

Both hold the store's ``domains`` maintenance lock, so two processes never change the domains
at once, and keep an audit report (kind ``domains``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.engine.context import EngineContext
from memoryd.engine.domains.assign import DomainSet, current, reassign_all, with_counts
from memoryd.errors import MaintenanceBusy
from memoryd.models import Domain, DomainProposal, DomainsReport, Memory

if TYPE_CHECKING:  # clustering loads scikit-learn: only when discovery runs, not on import
    from memoryd.domains.discover import Discovery, DiscoveryParams
    from memoryd.domains.proposals import Proposal

LOCK = "domains"


@dataclass(frozen=True, eq=False)
class Sample:
    """Memories drawn for clustering: their vectors, texts and current domains."""

    ids: list[str]
    vectors: np.ndarray
    texts: list[str]
    assignments: list[list[str]]
    total: int  # how many memories it was drawn from


def params(ctx: EngineContext) -> DiscoveryParams:
    """Discovery settings: the shipped defaults, with the store's accumulation threshold."""
    from memoryd.domains.discover import DiscoveryParams

    return DiscoveryParams(min_memories=ctx.settings.domains_min_memories)


def cluster(vectors: np.ndarray, texts: list[str], p: DiscoveryParams) -> Discovery:
    """:func:`memoryd.domains.discover.discover` (forced: the caller checked the counts)."""
    from memoryd.domains.discover import discover as run

    return run(vectors, texts, p, force=True)


@contextmanager
def locked(ctx: EngineContext) -> Iterator[None]:
    """Hold the ``domains`` maintenance lock, or raise MaintenanceBusy."""
    with ctx.store.maintenance_lock(LOCK) as mine:
        if not mine:
            raise MaintenanceBusy("another process is changing this store's domains; try again")
        yield


def draw(ctx: EngineContext, size: int, keep: Callable[[Memory], bool] | None = None) -> Sample:
    """A uniform, seeded sample of at most ``size`` memories (those ``keep`` accepts)."""
    ids = [m.id for m in ctx.store.iter_memories() if keep is None or keep(m)]
    total = len(ids)
    if total > size:
        picked = np.sort(np.random.default_rng(0).choice(total, size=size, replace=False))
        ids = [ids[i] for i in picked]
    memories = ctx.store.get_many(ids)
    vectors = ctx.store.vectors(ids)
    kept = [i for i in ids if i in vectors and i in memories]
    matrix = (np.stack([vectors[i] for i in kept]) if kept
              else np.empty((0, ctx.embedder.dims), np.float32))
    return Sample(kept, matrix, [memories[i].content for i in kept],
                  [list(memories[i].domains) for i in kept], total)


def discover(ctx: EngineContext, *, force: bool = False, replace: bool = False) -> DomainsReport:
    """Create the first domains (or re-cluster when there are some); see the module docstring."""
    ctx.access.require_unrestricted("domain discovery")
    with locked(ctx):
        existing = ctx.store.domains.list_domains()
        if existing and not replace:
            made = _recluster(ctx)
            return DomainsReport(action="proposed", domains=existing, proposals=made,
                                 threshold=ctx.store.domains.domain_threshold())
        p = params(ctx)
        total = ctx.store.count()
        if total < p.min_memories and not force:
            return DomainsReport(action="skipped", domains=existing, skipped=(
                f"{total} memories; discovery starts at {p.min_memories} (or force it)"))
        sample = draw(ctx, p.sample_size)
        found = cluster(sample.vectors, sample.texts, p)
        if not found.clusters:
            return DomainsReport(action="skipped", domains=existing, skipped=found.skipped)
        return _create(ctx, found, existing)


def _create(ctx: EngineContext, found: Discovery, existing: list[Domain]) -> DomainsReport:
    now = ctx.clock()
    threshold = float(found.threshold if found.threshold is not None else 0.3)
    records = [Domain(id=new_id(), name=c.label, centroid=c.centroid, top_terms=list(c.top_terms),
                      suggested_name=c.label, member_count=c.member_count, created_at=now,
                      updated_at=now) for c in found.clusters]
    with ctx.store.transaction():
        ctx.store.domains.save_domains(records, remove=[d.id for d in existing])
        ctx.store.domains.set_domain_threshold(threshold)
        best = reassign_all(ctx, DomainSet.of(records, threshold))
        records = with_counts(records, best, ctx)
        ctx.store.domains.save_domains(records)
    total = ctx.store.count()
    audit(ctx, "discovered", {"domains": [r.name for r in records], "threshold": threshold,
                              "replaced": [d.name for d in existing]})
    return DomainsReport(action="discovered", domains=ctx.store.domains.list_domains(),
                         removed=[d.name for d in existing if d.name not in
                                  {r.name for r in records}],
                         threshold=threshold, assigned=sum(best.values()),
                         unclassified=total - sum(best.values()))


def new_id() -> str:
    """A new domain id."""
    return uuid.uuid4().hex[:12]


def recluster(ctx: EngineContext) -> list[DomainProposal]:
    """Re-cluster and record proposals (nothing else changes); see the module docstring."""
    ctx.access.require_unrestricted("re-clustering")
    with locked(ctx):
        return _recluster(ctx)


def _recluster(ctx: EngineContext) -> list[DomainProposal]:
    found = current(ctx)
    if not found.records:
        return []
    sample = draw(ctx, params(ctx).sample_size)
    if not found.fits(sample.vectors):
        return []
    from memoryd.domains.proposals import propose

    fresh = cluster(sample.vectors, sample.texts, params(ctx))
    known = set(found.by_name())
    assigned = [[n for n in a if n in known] for a in sample.assignments]
    made: list[DomainProposal] = []
    if fresh.clusters:
        now = ctx.clock()
        made = [_stored(p, fresh, found, now) for p in propose(found.pure, assigned, fresh)]
        made += _renames(found, assigned, fresh, now)
    kept = _record(ctx, made)
    audit(ctx, "reclustered", {"proposals": [p.id for p in kept], "sampled": len(sample.ids)})
    return kept


def _stored(p: Proposal, fresh: Discovery, found: DomainSet, now: Any) -> DomainProposal:
    by_name = found.by_name()
    clusters = [_cluster_payload(fresh, c) for c in p.clusters]
    summary = p.summary
    if p.kind == "merge":  # the merged domain keeps the name of the largest of them
        names = sorted(p.domain_ids, key=lambda n: -by_name[n].member_count)
        summary = f"merge {' and '.join(repr(n) for n in p.domain_ids)} into {names[0]!r}"
    return DomainProposal(id=p.key, kind=p.kind, summary=summary,  # type: ignore[arg-type]
                          domain_ids=[by_name[n].id for n in p.domain_ids],
                          evidence=p.evidence, created_at=now, payload={"clusters": clusters})


def _cluster_payload(fresh: Discovery, c: int) -> dict[str, Any]:
    cluster_ = fresh.clusters[c]
    return {"name": cluster_.label, "top_terms": list(cluster_.top_terms),
            "members": cluster_.member_count,
            "centroid": [float(x) for x in np.asarray(cluster_.centroid, np.float32)]}


def _renames(found: DomainSet, assigned: list[list[str]], fresh: Discovery,
             now: Any) -> list[DomainProposal]:
    """A domain nobody named that re-clustering finds whole under another suggested name."""
    names = set(found.by_name())
    out = []
    for record in found.records:
        if record.renamed_at is not None:
            continue
        mine = np.array([bool(a) and a[0] == record.name for a in assigned])
        if not mine.any():
            continue
        labels = fresh.labels[mine]
        labels = labels[labels >= 0]
        if labels.size == 0:
            continue
        c = int(np.bincount(labels).argmax())
        overlap = int(np.sum(labels == c))
        size = int(np.sum(fresh.labels == c))
        label = fresh.clusters[c].label
        if overlap * 2 < int(mine.sum()) or overlap * 2 < size or label in names:
            continue
        digest = hashlib.sha1(f"rename\x1f{record.id}\x1f{label}".encode()).hexdigest()[:12]
        evidence = {"domain": {"id": record.id, "name": record.name, "members": int(mine.sum()),
                               "top_terms": record.top_terms[:10]},
                    "cluster": {"label": label, "members": size, "overlap": overlap,
                                "top_terms": list(fresh.clusters[c].top_terms)}}
        out.append(DomainProposal(
            id=f"rename-{digest}", kind="rename", summary=f"rename {record.name!r} to {label!r}",
            domain_ids=[record.id], evidence=evidence, created_at=now,
            payload={"name": label, "top_terms": list(fresh.clusters[c].top_terms)}))
    return out


def _record(ctx: EngineContext, made: list[DomainProposal]) -> list[DomainProposal]:
    """Store new proposals, refresh pending ones seen again, expire pending ones not seen; a
    decided proposal (accepted or rejected) stays decided."""
    before = {p.id: p for p in ctx.store.domains.list_proposals()}
    now = ctx.clock()
    kept: list[DomainProposal] = []
    for proposal in made:
        old = before.get(proposal.id)
        if old is not None and old.status in ("accepted", "rejected"):
            continue
        if old is not None:
            proposal = proposal.model_copy(update={"created_at": old.created_at})
        kept.append(proposal)
    seen = {p.id for p in kept}
    expired = [p.model_copy(update={"status": "expired", "decided_at": now,
                                    "decided_by": "re-clustering"})
               for p in before.values() if p.status == "proposed" and p.id not in seen]
    ctx.store.domains.save_proposals(kept + expired)
    return kept


def audit(ctx: EngineContext, action: str, details: dict[str, Any]) -> None:
    """Keep a report of a change to the domains (``list_reports("domains")``)."""
    ctx.store.bookkeeping.save_report("domains",
                                      {"action": action, "actor": ctx.actor.name, **details},
                          ctx.clock())
