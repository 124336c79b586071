"""``engine.domains``: list and show domains, discover them, re-cluster, rename, merge,
split, set the threshold, and decide proposals. See docs/domains.md.

    >>> [(d.name, d.member_count) for d in mem.domains.list()]
    [('bgp-vlan', 47), ('solar-battery', 31)]
"""

from __future__ import annotations

from memoryd.engine.context import EngineContext
from memoryd.engine.domains import changes, discovery
from memoryd.engine.moved import warn_moved
from memoryd.errors import InvalidFilter, InvalidInput
from memoryd.models import Domain, DomainProposal, DomainsReport, SearchFilters
from memoryd.models.domains import PROPOSAL_STATUSES


class Domains:
    """The domains of one engine, as its caller sees them."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx

    def __call__(self) -> list[Domain]:
        """Deprecated: ``engine.domains()`` was a method; use ``engine.domains.list()``."""
        warn_moved("domains()", "domains.list()")
        return self.list()

    def list(self) -> list[Domain]:
        """The domains this engine may see, most members first.

        >>> [(d.name, d.member_count, d.top_terms[:3]) for d in mem.domains.list()]
        [('bgp-vlan', 47, ['bgp', 'vlan', 'sonic']), ('solar-battery', 31, [...])]
        """
        return changes.visible(self._ctx)

    def get(self, ident: str) -> Domain:
        """One domain by name or id; raises DomainNotFound."""
        return changes.find(changes.visible(self._ctx), ident)

    def threshold(self) -> float | None:
        """The active assignment threshold (None before the first discovery)."""
        return self._ctx.store.domains.domain_threshold()

    def discover(self, *, force: bool = False, replace: bool = False) -> DomainsReport:
        """Discover the first domains (from ``domains_min_memories`` memories on, or earlier
        with ``force``); with domains already there, re-cluster and record proposals instead,
        unless ``replace`` starts over.

        >>> mem.domains.discover().action
        'discovered'
        """
        return discovery.discover(self._ctx, force=force, replace=replace)

    def recluster(self) -> list[DomainProposal]:
        """Re-cluster and record proposals (split, merge, new, rename); changes nothing else."""
        return discovery.recluster(self._ctx)

    def rename(self, ident: str, name: str) -> DomainsReport:
        """Give a domain a new name; its memories keep their assignments, keys follow it."""
        return changes.rename(self._ctx, ident, name)

    def merge(self, idents: list[str], *, into: str | None = None) -> DomainsReport:
        """Merge domains into one (``into``, else the largest); memories are re-assigned."""
        return changes.merge(self._ctx, idents, into)

    def split(self, ident: str) -> DomainsReport:
        """Re-cluster one domain's memories and replace it by the groups found."""
        return changes.split(self._ctx, ident)

    def set_threshold(self, threshold: float) -> DomainsReport:
        """Re-threshold every memory from its stored scores (nothing is re-embedded)."""
        return changes.set_threshold(self._ctx, threshold)

    def proposals(self, status: str | None = "proposed") -> list[DomainProposal]:
        """Proposals with a status (proposed, accepted, rejected, expired; None: all)."""
        self._ctx.access.require_unrestricted("domain proposals")
        if status is not None and status not in PROPOSAL_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(PROPOSAL_STATUSES)}")
        return self._ctx.store.domains.list_proposals([status] if status else None)

    def accept(self, proposal_id: str) -> DomainsReport:
        """Apply exactly this proposal (rename, merge, split or new domain)."""
        return changes.accept(self._ctx, proposal_id)

    def reject(self, proposal_id: str) -> DomainsReport:
        """Reject a proposal; re-clustering will not propose it again."""
        return changes.reject(self._ctx, proposal_id)


def reading(ctx: EngineContext, filters: SearchFilters) -> SearchFilters:
    """A reader's filters: the default domains when they name none, narrowed to what the
    caller may see; a domain nobody has is InvalidFilter naming the domains there are.
    A bound caller (scope, agent or domains) learns of no names: a domain it names that
    nobody has matches nothing (domain names come from every scope's memories)."""
    access = ctx.access
    out = access.with_default(filters)
    asked = filters.domains is not None or bool(access.default_domains)
    if not access.restricted and asked and out.domains:
        known = {d.name for d in ctx.store.domains.list_domains()}
        unknown = [n for n in out.domains if n not in known]
        if unknown:
            listed = ", ".join(sorted(known)) or "none yet"
            raise InvalidFilter(f"no domain named {', '.join(unknown)}; domains: {listed}")
    return out
