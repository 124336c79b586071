"""``memoryd domains``: the topic groups memory sorted itself into, and the proposals that
change them (list, show, rename, merge, split, discover, proposals, accept, reject,
threshold)."""

from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from memoryd.cli.common import console, engine_from, print_json
from memoryd.models import Domain, DomainProposal, DomainsReport

domains_app = typer.Typer(help="Domains: topic groups found by clustering (see docs/domains.md).",
                          no_args_is_help=True)
JSON = typer.Option(False, "--json", help="Print JSON.")


def _table(domains: list[Domain], threshold: float | None = None) -> Table:
    table = Table(title=None if threshold is None else f"threshold {threshold:.2f}")
    for column in ("name", "members", "top terms", "origin", "id"):
        table.add_column(column)
    for d in domains:
        named = "" if d.renamed_at is None else " (named)"
        table.add_row(d.name, str(d.member_count), ", ".join(d.top_terms[:6]),
                      d.origin + named, d.id)
    return table


def _proposals(proposals: list[DomainProposal]) -> Table:
    table = Table()
    for column in ("id", "kind", "status", "summary"):
        table.add_column(column, overflow="fold" if column == "summary" else "ellipsis")
    for p in proposals:
        table.add_row(p.id, p.kind, p.status, p.summary)
    return table


def _report(report: DomainsReport, as_json: bool) -> None:
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    if report.skipped:
        console.print(f"nothing done: {report.skipped}", highlight=False)
    else:
        console.print(f"{report.action}: {report.assigned} memories in a domain, "
                      f"{report.unclassified} unclassified", highlight=False)
    if report.removed:
        console.print(f"no longer in use: {', '.join(report.removed)}", highlight=False)
    if report.proposals:
        console.print(_proposals(report.proposals))
    console.print(_table(report.domains, report.threshold))


@domains_app.command("list")
def list_(ctx: typer.Context, as_json: bool = JSON) -> None:
    """The domains, most members first, with their top terms."""
    with engine_from(ctx) as mem:
        domains, threshold = mem.domains.list(), mem.domains.threshold()
    if as_json:
        print_json({"threshold": threshold,
                    "domains": [d.model_dump(mode="json") for d in domains]})
    elif not domains:
        console.print("no domains yet: they are discovered once the store holds enough "
                      "memories (or run `memoryd domains discover --force`)")
    else:
        console.print(_table(domains, threshold))


@domains_app.command("show")
def show(ctx: typer.Context, domain: str = typer.Argument(..., help="Name or id."),
         as_json: bool = JSON) -> None:
    """One domain: members, top terms, origin, when it was created and named."""
    with engine_from(ctx) as mem:
        found = mem.domains.get(domain)
    if as_json:
        print_json(found.model_dump(mode="json"))
        return
    console.print(_table([found]))


@domains_app.command("rename")
def rename(ctx: typer.Context, domain: str = typer.Argument(..., help="Name or id."),
           name: str = typer.Argument(..., help="The new name, e.g. home."),
           as_json: bool = JSON) -> None:
    """Rename a domain; its memories keep their assignments, keys limited to it follow."""
    with engine_from(ctx) as mem:
        _report(mem.domains.rename(domain, name), as_json)


@domains_app.command("merge")
def merge(ctx: typer.Context,
          domains: list[str] = typer.Argument(..., help="Two or more names or ids."),
          into: Optional[str] = typer.Option(None, "--into", help="The one to keep (default: "
                                             "the largest)."),
          as_json: bool = JSON) -> None:
    """Merge domains into one; every memory is re-assigned."""
    with engine_from(ctx) as mem:
        _report(mem.domains.merge(domains, into=into), as_json)


@domains_app.command("split")
def split(ctx: typer.Context, domain: str = typer.Argument(..., help="Name or id."),
          as_json: bool = JSON) -> None:
    """Re-cluster one domain's memories and replace it by the groups found."""
    with engine_from(ctx) as mem:
        _report(mem.domains.split(domain), as_json)


@domains_app.command("discover")
def discover(ctx: typer.Context,
             force: bool = typer.Option(False, "--force", help="Run below the accumulation "
                                        "threshold too."),
             replace: bool = typer.Option(False, "--replace", help="Start over: replace the "
                                          "current domains."),
             as_json: bool = JSON) -> None:
    """Discover domains now; with domains already there, re-cluster and record proposals."""
    with engine_from(ctx) as mem:
        _report(mem.domains.discover(force=force, replace=replace), as_json)


@domains_app.command("proposals")
def proposals(ctx: typer.Context,
              status: str = typer.Option("proposed", "--status", help="proposed, accepted, "
                                         "rejected, expired or all."),
              as_json: bool = JSON) -> None:
    """What re-clustering proposes; nothing changes until one is accepted."""
    with engine_from(ctx) as mem:
        found = mem.domains.proposals(None if status == "all" else status)
    if as_json:
        print_json([p.model_dump(mode="json") for p in found])
    elif not found:
        console.print("no proposals")
    else:
        console.print(_proposals(found))


@domains_app.command("accept")
def accept(ctx: typer.Context, proposal: str = typer.Argument(..., help="Proposal id."),
           as_json: bool = JSON) -> None:
    """Apply exactly this proposal."""
    with engine_from(ctx) as mem:
        _report(mem.domains.accept(proposal), as_json)


@domains_app.command("reject")
def reject(ctx: typer.Context, proposal: str = typer.Argument(..., help="Proposal id."),
           as_json: bool = JSON) -> None:
    """Reject a proposal; it is not proposed again."""
    with engine_from(ctx) as mem:
        _report(mem.domains.reject(proposal), as_json)


@domains_app.command("threshold")
def threshold(ctx: typer.Context,
              value: float = typer.Argument(..., help="Cosine similarity in [-1, 1]."),
              as_json: bool = JSON) -> None:
    """Set the assignment threshold; every memory is re-thresholded (nothing re-embedded)."""
    with engine_from(ctx) as mem:
        _report(mem.domains.set_threshold(value), as_json)


def register(app: typer.Typer) -> None:
    """Attach the ``domains`` command group to the app."""
    app.add_typer(domains_app, name="domains")
