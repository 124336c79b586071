"""Domains: groups of memories on one broad subject that memoryd finds by clustering, and the
proposals that change them (a split, a merge, a new domain, a new name) once accepted.

A domain's ``name`` is what memories (``Memory.domains``), search filters and API keys carry;
its ``id`` never changes, so proposals and history keep pointing at it across renames.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

DomainOrigin = Literal["discovered", "split", "merged", "new"]
ProposalKind = Literal["split", "merge", "new", "rename"]
ProposalStatus = Literal["proposed", "accepted", "rejected", "expired"]
PROPOSAL_STATUSES: tuple[str, ...] = ("proposed", "accepted", "rejected", "expired")


class Domain(BaseModel):
    """A domain: its name, how many memories have it as their best domain, the terms that
    describe it, and (store side only) its centroid."""

    id: str = Field(description="Stable id (never changes, also across renames).")
    name: str = Field(description="The name memories, filters and keys use, e.g. 'home'.")
    member_count: int = Field(0, ge=0, description="Memories whose best domain this is.")
    top_terms: list[str] = Field(default_factory=list, description="Words that describe it.")
    suggested_name: str = Field(description="The name discovery suggested from its terms.")
    origin: DomainOrigin = "discovered"
    created_at: datetime
    updated_at: datetime
    renamed_at: datetime | None = Field(None, description="When a person last named it.")
    #: The mean of its members' vectors (a float32 numpy array); never serialised.
    centroid: SkipJsonSchema[Any] = Field(None, exclude=True, repr=False)


class DomainProposal(BaseModel):
    """A change that re-clustering found, with its evidence; applied only when accepted."""

    id: str = Field(description="Derived from the content: the same situation, the same id.")
    kind: ProposalKind
    status: ProposalStatus = "proposed"
    summary: str
    domain_ids: list[str] = Field(default_factory=list, description="The domains it concerns.")
    evidence: dict[str, Any] = Field(default_factory=dict,
                                     description="Member counts, top terms and overlaps.")
    created_at: datetime
    decided_at: datetime | None = None
    decided_by: str | None = None
    #: What accepting needs (new centroids, names); never serialised.
    payload: SkipJsonSchema[dict[str, Any]] = Field(default_factory=dict, exclude=True,
                                                    repr=False)


DomainAction = Literal["discovered", "proposed", "skipped", "renamed", "merged", "split", "created",
                       "rejected", "rethresholded"]


class DomainsReport(BaseModel):
    """What a domain operation did: the domains afterwards, the proposals it recorded or
    decided, and how memories were assigned."""

    action: DomainAction
    domains: list[Domain] = Field(default_factory=list, description="The domains now.")
    proposals: list[DomainProposal] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list, description="Names no longer in use.")
    threshold: float | None = Field(None, description="The active assignment threshold.")
    assigned: int = Field(0, description="Memories with at least one domain.")
    unclassified: int = Field(0, description="Memories with no domain.")
    skipped: str | None = Field(None, description="Why nothing was done, when nothing was.")
