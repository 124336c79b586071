"""Domain operations: list and show domains (read), discover, rename, merge, split, set the
threshold, and decide proposals (admin). REST routes bind each one; MCP offers them as one
``domains`` tool (admin profile) with an ``action``."""

from __future__ import annotations

from typing import Annotated, TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.keys import KeyScope
from memoryd.models import Domain, DomainProposal, DomainsReport, Strict
from memoryd.models.fields import DomainName
from memoryd.models.rules import Rules, When
from memoryd.operations.registry import Caller, NoInput, operation

if TYPE_CHECKING:
    from memoryd.engine import Engine

Ident = Field(min_length=1, max_length=64, description="A domain's name or id.")
ProposalId = Field(min_length=1, max_length=64, description="A proposal's id.")


def _lines(domains: list[Domain]) -> str:
    return "\n".join(f"{d.name} ({d.member_count}): {', '.join(d.top_terms[:6])}"
                     for d in domains) or "No domains yet."


class DomainList(BaseModel):
    """The domains (most members first) and the active assignment threshold."""

    domains: list[Domain]
    threshold: float | None = None

    def as_text(self) -> str:
        return _lines(self.domains)


class ProposalList(BaseModel):
    """Domain proposals, newest first."""

    proposals: list[DomainProposal]

    def as_text(self) -> str:
        return "\n".join(f"{p.id} [{p.status}] {p.summary}" for p in self.proposals) or \
            "No proposals."


def _report_text(report: DomainsReport) -> str:
    head = f"{report.action}: {report.skipped}" if report.skipped else report.action
    decided = "".join(f"\n{p.id} [{p.status}] {p.summary}" for p in report.proposals)
    return f"{head}{decided}\n{_lines(report.domains)}"


class Report(DomainsReport):
    def as_text(self) -> str:
        return _report_text(self)


# --- reading ---------------------------------------------------------------------------
@operation("domains_list", title="List domains", input=NoInput, output=DomainList,
           scope="read", read_only=True, idempotent=True)
def domains_list(engine: Engine, data: NoInput, caller: Caller) -> DomainList:
    """The domains memory has found (a key limited to domains sees only those), with their
    member counts and top terms."""
    return DomainList(domains=engine.domains.list(), threshold=engine.domains.threshold())


class DomainIdInput(Strict):
    id: str = Ident


@operation("domain_show", title="Show a domain", input=DomainIdInput, output=Domain,
           scope="read", read_only=True, idempotent=True)
def domain_show(engine: Engine, data: DomainIdInput, caller: Caller) -> Domain:
    """One domain by name or id: members, top terms, origin, when it was created and named."""
    return engine.domains.get(data.id)


class ProposalsInput(Strict):
    status: Literal["proposed", "accepted", "rejected", "expired", "all"] = Field(
        "proposed", description="Which proposals (default: those awaiting a decision).")


@operation("domain_proposals", title="Domain proposals", input=ProposalsInput,
           output=ProposalList, scope="read", read_only=True, idempotent=True, bound_ok=False)
def domain_proposals(engine: Engine, data: ProposalsInput, caller: Caller) -> ProposalList:
    """What re-clustering proposes (split, merge, new, rename) with its evidence; nothing
    changes until a proposal is accepted."""
    status = None if data.status == "all" else data.status
    return ProposalList(proposals=engine.domains.proposals(status))


# --- changing (admin) ------------------------------------------------------------------
class DiscoverInput(Strict):
    force: bool = Field(False, description="Run below the accumulation threshold too.")
    replace: bool = Field(False, description="Start over: replace the current domains.")


@operation("domains_discover", title="Discover domains", input=DiscoverInput, output=Report,
           scope="admin", bound_ok=False)
def domains_discover(engine: Engine, data: DiscoverInput, caller: Caller) -> Report:
    """Cluster memories into domains now. With domains already there, re-cluster and record
    proposals instead (nothing changes until one is accepted), unless replace is set."""
    return Report(**engine.domains.discover(force=data.force, replace=data.replace)
                  .model_dump())


class RenameInput(Strict):
    id: str = Ident
    name: DomainName


@operation("domain_rename", title="Rename a domain", input=RenameInput, output=Report,
           scope="admin", idempotent=True, bound_ok=False)
def domain_rename(engine: Engine, data: RenameInput, caller: Caller) -> Report:
    """Give a domain a new name; its memories keep their assignments and keys limited to it
    follow the new name."""
    return Report(**engine.domains.rename(data.id, data.name).model_dump())


class MergeInput(Strict):
    ids: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        min_length=2, max_length=32, description="Domains to merge (names or ids).")
    into: str | None = Field(None, max_length=64, description="The one to keep (default: the "
                             "largest).")


@operation("domains_merge", title="Merge domains", input=MergeInput, output=Report,
           scope="admin", destructive=True, bound_ok=False)
def domains_merge(engine: Engine, data: MergeInput, caller: Caller) -> Report:
    """Merge domains into one; every memory is re-assigned (no memory is changed otherwise)."""
    return Report(**engine.domains.merge(data.ids, into=data.into).model_dump())


@operation("domain_split", title="Split a domain", input=DomainIdInput, output=Report,
           scope="admin", destructive=True, bound_ok=False)
def domain_split(engine: Engine, data: DomainIdInput, caller: Caller) -> Report:
    """Re-cluster one domain's memories and replace it by the groups found."""
    return Report(**engine.domains.split(data.id).model_dump())


class ThresholdInput(Strict):
    threshold: float = Field(ge=-1.0, le=1.0, description="Cosine similarity a memory needs "
                             "to a domain's centroid to belong to it.")


@operation("domains_threshold", title="Set the domain threshold", input=ThresholdInput,
           output=Report, scope="admin", idempotent=True, bound_ok=False)
def domains_threshold(engine: Engine, data: ThresholdInput, caller: Caller) -> Report:
    """Re-threshold every memory from its stored scores (nothing is re-embedded)."""
    return Report(**engine.domains.set_threshold(data.threshold).model_dump())


class ProposalIdInput(Strict):
    id: str = ProposalId


@operation("domain_accept", title="Accept a domain proposal", input=ProposalIdInput,
           output=Report, scope="admin", bound_ok=False)
def domain_accept(engine: Engine, data: ProposalIdInput, caller: Caller) -> Report:
    """Apply exactly this proposal (a rename, merge, split or new domain)."""
    return Report(**engine.domains.accept(data.id).model_dump())


@operation("domain_reject", title="Reject a domain proposal", input=ProposalIdInput,
           output=Report, scope="admin", idempotent=True, bound_ok=False)
def domain_reject(engine: Engine, data: ProposalIdInput, caller: Caller) -> Report:
    """Reject a proposal; it changes nothing and is not proposed again."""
    return Report(**engine.domains.reject(data.id).model_dump())


# --- the MCP tool ----------------------------------------------------------------------
_READS = ("list", "show", "proposals")
_NEEDS_ID = ("show", "rename", "split", "accept", "reject")


_TOOL_NEEDS = Rules(when=(
    *(When("action", (a,), f"{a} needs id", needs=("id",)) for a in _NEEDS_ID),
    When("action", ("rename",), "rename needs name", needs=("name",)),
    When("action", ("merge",), "merge needs ids", needs=("ids",)),
    When("action", ("threshold",), "threshold needs threshold", needs=("threshold",)),
))


class ToolDomainsInput(Strict):
    """Arguments of domains."""

    model_config = ConfigDict(json_schema_extra=_TOOL_NEEDS.schema)

    action: Literal["list", "show", "proposals", "discover", "rename", "merge", "split",
                    "accept", "reject", "threshold"] = Field(
        "list", description="list/show/proposals read; the others change domains (admin).")
    id: str | None = Field(None, max_length=64,
                           description="The domain (show, rename, split) or proposal (accept, "
                           "reject).")
    name: DomainName | None = Field(None, description="New name (rename).")
    ids: list[str] | None = Field(None, min_length=2, max_length=32,
                                  description="Domains to merge (merge).")
    threshold: float | None = Field(None, ge=-1.0, le=1.0, description="New threshold.")

    @model_validator(mode="after")
    def _needs(self) -> ToolDomainsInput:
        _TOOL_NEEDS.check(self)
        return self


class ToolDomainsOutput(BaseModel):
    domains: list[Domain] = []
    proposals: list[DomainProposal] = []
    report: Report | None = None

    def as_text(self) -> str:
        if self.report is not None:
            return self.report.as_text()
        if self.proposals:
            return ProposalList(proposals=self.proposals).as_text()
        return _lines(self.domains)


def _tool_scope(data: ToolDomainsInput) -> KeyScope:
    return "read" if data.action in _READS else "admin"


@operation("tool_domains", title="Domains", input=ToolDomainsInput, output=ToolDomainsOutput,
           scope=_tool_scope, tools=("domains",))
def tool_domains(engine: Engine, data: ToolDomainsInput, caller: Caller) -> ToolDomainsOutput:
    """The topic groups memory sorted itself into (e.g. home, infra): list them, show one,
    read re-clustering's proposals; with an admin key also discover, rename, merge, split,
    accept or reject a proposal, or set the threshold. Search takes domains=[...] to look in
    some domains only."""
    a = data.action
    if a == "list":
        return ToolDomainsOutput(domains=engine.domains.list())
    if a == "show":
        return ToolDomainsOutput(domains=[engine.domains.get(data.id or "")])
    if a == "proposals":
        return ToolDomainsOutput(proposals=engine.domains.proposals())
    caller.require("admin")
    done = {
        "discover": lambda: engine.domains.discover(),
        "rename": lambda: engine.domains.rename(data.id or "", data.name or ""),
        "merge": lambda: engine.domains.merge(data.ids or []),
        "split": lambda: engine.domains.split(data.id or ""),
        "accept": lambda: engine.domains.accept(data.id or ""),
        "reject": lambda: engine.domains.reject(data.id or ""),
        "threshold": lambda: engine.domains.set_threshold(data.threshold or 0.0),
    }[a]()
    return ToolDomainsOutput(report=Report(**done.model_dump()))
