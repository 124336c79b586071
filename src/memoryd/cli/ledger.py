"""``memoryd ledger``: verify and read the hash-chained audit ledger."""

from __future__ import annotations

import json

import typer

from memoryd.cli.common import console, engine_from, print_json

ledger_app = typer.Typer(help="The hash-chained audit ledger of every change.", no_args_is_help=True)


@ledger_app.command("verify")
def verify(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Re-hash every entry; name the first broken link (exit code 1 if there is one)."""
    with engine_from(ctx, allow_model_mismatch=True) as mem:
        report = mem.admin.verify_ledger()
    if as_json:
        print_json(report.to_dict())
    elif report.ok:
        head = f"; head {report.head_seq} {report.head_hash}" if report.head_seq else ""
        console.print(f"[green]ledger ok[/]: {report.entries} entries verified{head}",
                      highlight=False)
    else:
        assert report.broken is not None
        console.print(
            f"[bold red]ledger broken at entry {report.broken.seq}[/]: {report.broken.reason}. "
            f"{report.entries} entries before it verified.",
            highlight=False,
        )
    if not report.ok:
        raise typer.Exit(1)


@ledger_app.command("head")
def head(ctx: typer.Context) -> None:
    """Print the newest entry's position and hash (keep it elsewhere to detect truncation)."""
    with engine_from(ctx, allow_model_mismatch=True) as mem:
        entry = mem.admin.ledger_head()
    if entry is None:
        console.print("the ledger is empty")
        return
    typer.echo(f"{entry.seq} {entry.hash}")


@ledger_app.command("show")
def show(
    ctx: typer.Context,
    after: int = typer.Option(0, min=0, help="Entries after this position."),
    limit: int = typer.Option(50, min=1, max=10_000),
) -> None:
    """Print ledger entries as JSON lines, oldest first."""
    with engine_from(ctx, allow_model_mismatch=True) as mem:
        entries = mem.admin.ledger(after=after, limit=limit)
    for entry in entries:
        typer.echo(json.dumps(entry.to_dict(), ensure_ascii=False))


def register(app: typer.Typer) -> None:
    """Add the ``ledger`` command group."""
    app.add_typer(ledger_app, name="ledger")
