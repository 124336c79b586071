"""Changing the domains: rename, merge, split, a new threshold, and accepting or rejecting a
proposal. Each change is one transaction under the store's ``domains`` lock, keeps an audit
report, and leaves every memory's domains consistent with the domains that exist.

* **rename** changes a name everywhere it is used (domains, memories' ``domains`` and
  ``domain_scores``, keys limited to it) and nothing else: assignments are kept as they are.
* **merge** keeps one domain (``into``, or the largest) with the mean of the centroids, drops
  the others and re-assigns every memory.
* **split** re-clusters one domain's memories; two or more groups replace it.
* **threshold** re-thresholds every memory from its stored scores (nothing is re-embedded).
* **accept** applies exactly the one proposal; **reject** only records the decision.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from memoryd.domains.assign import rethreshold
from memoryd.engine.context import EngineContext
from memoryd.engine.domains.assign import (
    current,
    reassign_all,
    rewrite_all,
    with_counts,
)
from memoryd.engine.domains.discovery import audit, cluster, draw, locked, new_id, params
from memoryd.errors import DomainNotFound, Forbidden, InvalidInput
from memoryd.models import Domain, DomainProposal, DomainsReport, Memory, check_domain_name


# --- reading -------------------------------------------------------------------------
def visible(ctx: EngineContext) -> list[Domain]:
    """The domains the caller may see: all of them, or those a key is limited to. Callers
    bound to a scope or agent see none (domain terms come from every scope's memories)."""
    access = ctx.access
    if access.scope is not None or access.agent_id is not None:
        raise Forbidden("domains span every scope and agent: not available to a key bound to a "
                        "scope or agent")
    domains = ctx.store.domains.list_domains()
    if access.domains is not None:
        domains = [d for d in domains if d.name in access.domains]
    return domains


def find(domains: list[Domain], ident: str) -> Domain:
    """A domain by name or id; DomainNotFound otherwise."""
    for domain in domains:
        if ident in (domain.name, domain.id):
            return domain
    raise DomainNotFound(f"no domain named {ident!r}")


def find_proposal(ctx: EngineContext, proposal_id: str) -> DomainProposal:
    """A proposal by id; DomainNotFound otherwise."""
    proposal = ctx.store.domains.get_proposal(proposal_id)
    if proposal is None:
        raise DomainNotFound(f"no domain proposal {proposal_id!r}")
    return proposal


# --- direct changes --------------------------------------------------------------------
def rename(ctx: EngineContext, ident: str, new_name: str) -> DomainsReport:
    """Give a domain a new name; every assignment is kept (see the module docstring)."""
    ctx.access.require_unrestricted("renaming a domain")
    name = _name(new_name)
    with locked(ctx):
        return _rename(ctx, find(ctx.store.domains.list_domains(), ident), name)


def _rename(ctx: EngineContext, domain: Domain, name: str,
            extra: dict[str, Any] | None = None) -> DomainsReport:
    domains = ctx.store.domains.list_domains()
    if name != domain.name and any(d.name == name for d in domains):
        raise InvalidInput(f"a domain named {name!r} exists already; merge them instead")
    old, now = domain.name, ctx.clock()

    def renamed(memory: Memory) -> tuple[list[str], dict[str, float]] | None:
        if old not in memory.domains and old not in memory.domain_scores:
            return None
        return ([name if d == old else d for d in memory.domains],
                {(name if k == old else k): v for k, v in memory.domain_scores.items()})

    with ctx.store.transaction():
        ctx.store.domains.save_domains([domain.model_copy(update={
            "name": name, "renamed_at": now, "updated_at": now, **(extra or {})})])
        best = rewrite_all(ctx, renamed)
        for key in ctx.store.keys.list_keys():
            if key.domains and old in key.domains:
                ctx.store.keys.save_key(key.model_copy(update={
                    "domains": sorted({name if d == old else d for d in key.domains})}))
    audit(ctx, "renamed", {"id": domain.id, "from": old, "to": name})
    return _report(ctx, "renamed", best, removed=[old] if old != name else [])


def merge(ctx: EngineContext, idents: list[str], into: str | None = None) -> DomainsReport:
    """Merge two or more domains into one (``into``, else the largest); see the docstring."""
    ctx.access.require_unrestricted("merging domains")
    with locked(ctx):
        domains = ctx.store.domains.list_domains()
        chosen = list({d.id: d for d in (find(domains, i) for i in idents)}.values())
        if len(chosen) < 2:
            raise InvalidInput("name at least two different domains to merge")
        keeper = find(chosen, into) if into else max(chosen, key=lambda d: d.member_count)
        return _merge(ctx, keeper, chosen, None)


def _merge(ctx: EngineContext, keeper: Domain, chosen: list[Domain],
           cluster_: dict[str, Any] | None) -> DomainsReport:
    weights = np.array([max(d.member_count, 1) for d in chosen], dtype=np.float32)
    centroid = (np.stack([d.centroid for d in chosen]) * weights[:, None]).sum(0) / weights.sum()
    terms = (cluster_ or {}).get("top_terms") or _interleave([d.top_terms for d in chosen])
    merged = keeper.model_copy(update={
        "centroid": (np.asarray(cluster_["centroid"], np.float32) if cluster_ else centroid),
        "top_terms": list(terms)[:10], "origin": "merged", "updated_at": ctx.clock()})
    others = [d for d in chosen if d.id != keeper.id]
    report = _restructure(ctx, [merged], others, "merged")
    audit(ctx, "merged", {"into": keeper.name, "merged": [d.name for d in others]})
    return report


def split(ctx: EngineContext, ident: str) -> DomainsReport:
    """Re-cluster one domain's memories (those whose best domain it is); two or more groups
    replace it. InvalidInput when they form a single group."""
    ctx.access.require_unrestricted("splitting a domain")
    with locked(ctx):
        domain = find(ctx.store.domains.list_domains(), ident)
        sample = draw(ctx, params(ctx).sample_size,
                      lambda m: bool(m.domains) and m.domains[0] == domain.name)
        if len(sample.ids) < 2 * params(ctx).min_cluster_size:
            raise InvalidInput(f"domain {domain.name!r} has too few memories to split "
                               f"({len(sample.ids)})")
        found = cluster(sample.vectors, sample.texts, params(ctx))
        if len(found.clusters) < 2:
            raise InvalidInput(f"domain {domain.name!r} forms a single group; nothing to split")
        parts = [{"name": c.label, "top_terms": list(c.top_terms), "centroid": c.centroid}
                 for c in found.clusters]
        return _split(ctx, domain, parts)


def _split(ctx: EngineContext, domain: Domain, parts: list[dict[str, Any]]) -> DomainsReport:
    taken = {d.name for d in ctx.store.domains.list_domains() if d.id != domain.id}
    now, made = ctx.clock(), []
    for part in parts:
        name = _free(part["name"], taken)
        taken.add(name)
        made.append(Domain(id=new_id(), name=name, centroid=np.asarray(part["centroid"],
                                                                       np.float32),
                           top_terms=list(part["top_terms"]), suggested_name=name,
                           origin="split", created_at=now, updated_at=now))
    report = _restructure(ctx, made, [domain], "split")
    audit(ctx, "split", {"domain": domain.name, "into": [d.name for d in made]})
    return report


def create(ctx: EngineContext, part: dict[str, Any]) -> DomainsReport:
    """A new domain from a proposal's cluster; every memory is re-assigned."""
    name = _free(part["name"], {d.name for d in ctx.store.domains.list_domains()})
    now = ctx.clock()
    made = Domain(id=new_id(), name=name, centroid=np.asarray(part["centroid"], np.float32),
                  top_terms=list(part["top_terms"]), suggested_name=name, origin="new",
                  created_at=now, updated_at=now)
    report = _restructure(ctx, [made], [], "created")
    audit(ctx, "created", {"domain": name})
    return report


def set_threshold(ctx: EngineContext, threshold: float) -> DomainsReport:
    """Re-threshold every memory from its stored scores; nothing is re-embedded."""
    ctx.access.require_unrestricted("the domain threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
            or not -1.0 <= threshold <= 1.0:
        raise InvalidInput(f"threshold must be a number in [-1, 1], got {threshold!r}")
    with locked(ctx):
        with ctx.store.transaction():
            ctx.store.domains.set_domain_threshold(float(threshold))
            best = rewrite_all(ctx, lambda m: (rethreshold(m.domain_scores, threshold),
                                               m.domain_scores))
            ctx.store.domains.save_domains(with_counts(ctx.store.domains.list_domains(), best, ctx))
        audit(ctx, "rethresholded", {"threshold": threshold})
        return _report(ctx, "rethresholded", best)


# --- proposals -----------------------------------------------------------------------
def accept(ctx: EngineContext, proposal_id: str) -> DomainsReport:
    """Apply exactly this proposal (and mark it accepted), in one transaction."""
    ctx.access.require_unrestricted("accepting a domain proposal")
    with locked(ctx):
        proposal = _pending(ctx, proposal_id, "accepted")
        by_id = {d.id: d for d in ctx.store.domains.list_domains()}
        gone = [i for i in proposal.domain_ids if i not in by_id]
        if gone:
            raise InvalidInput(f"proposal {proposal.id} concerns a domain that no longer exists "
                               f"({', '.join(gone)}); re-cluster for fresh proposals")
        chosen = [by_id[i] for i in proposal.domain_ids]
        clusters = proposal.payload.get("clusters") or [{}]
        with ctx.store.transaction():
            if proposal.kind == "split":
                report = _split(ctx, chosen[0], clusters)
            elif proposal.kind == "merge":
                keeper = max(chosen, key=lambda d: d.member_count)
                report = _merge(ctx, keeper, chosen, clusters[0])
            elif proposal.kind == "new":
                report = create(ctx, clusters[0])
            else:
                report = _rename(ctx, chosen[0], _name(proposal.payload.get("name", "")),
                                 {"top_terms": proposal.payload.get("top_terms")
                                  or chosen[0].top_terms})
            decided = _decide(ctx, proposal, "accepted")
        return report.model_copy(update={"proposals": [decided]})


def reject(ctx: EngineContext, proposal_id: str) -> DomainsReport:
    """Record that a proposal is rejected (re-clustering will not propose it again)."""
    ctx.access.require_unrestricted("rejecting a domain proposal")
    with locked(ctx):
        decided = _decide(ctx, _pending(ctx, proposal_id, "rejected"), "rejected")
        audit(ctx, "rejected", {"proposal": decided.id})
        return DomainsReport(action="rejected", domains=ctx.store.domains.list_domains(),
                             proposals=[decided], threshold=ctx.store.domains.domain_threshold())


def _pending(ctx: EngineContext, proposal_id: str, verb: str) -> DomainProposal:
    proposal = find_proposal(ctx, proposal_id)
    if proposal.status != "proposed":
        raise InvalidInput(f"proposal {proposal.id} is {proposal.status}; only a proposed one "
                           f"can be {verb}")
    return proposal


def _decide(ctx: EngineContext, proposal: DomainProposal, status: str) -> DomainProposal:
    decided = proposal.model_copy(update={"status": status, "decided_at": ctx.clock(),
                                          "decided_by": ctx.actor.name})
    ctx.store.domains.save_proposals([decided])
    return decided


# --- shared steps --------------------------------------------------------------------
def _restructure(ctx: EngineContext, save: list[Domain], remove: list[Domain],
                 action: str) -> DomainsReport:
    """Save and remove domains and re-assign every memory, in one transaction."""
    with ctx.store.transaction():
        ctx.store.domains.save_domains(save, remove=[d.id for d in remove])
        found = current(ctx)
        best = reassign_all(ctx, found)
        ctx.store.domains.save_domains(with_counts(found.records, best, ctx))
    gone = {d.name for d in remove} - {d.name for d in save}
    return _report(ctx, action, best, removed=sorted(gone))


def _report(ctx: EngineContext, action: str, best: Counter[str], *,
            removed: list[str] | None = None) -> DomainsReport:
    assigned = sum(best.values())
    domains = ctx.store.domains.list_domains()
    return DomainsReport(action=action, domains=domains,  # type: ignore[arg-type]
                         removed=removed or [], threshold=ctx.store.domains.domain_threshold(),
                         assigned=assigned, unclassified=ctx.store.count() - assigned)


def _name(value: Any) -> str:
    try:
        return check_domain_name(value)
    except (ValueError, AttributeError) as exc:
        raise InvalidInput(str(exc)) from exc


def _free(name: str, taken: set[str]) -> str:
    base, n = name, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def _interleave(lists: list[list[str]]) -> list[str]:
    out: list[str] = []
    for row in zip(*lists):
        out += [t for t in row if t not in out]
    return out or [t for terms in lists for t in terms]
