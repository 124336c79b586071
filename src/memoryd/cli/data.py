"""Commands that move data: import, export, backup, restore, reembed, config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from memoryd.cli.common import console, engine_from, print_json
from memoryd.config import Settings


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not console.is_terminal,
    )


def _count_lines(path: Path) -> int:
    """Non-blank lines in a file (for the progress bar)."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def import_(
    ctx: typer.Context,
    path: Path = typer.Argument(..., exists=True, dir_okay=False, readable=True),
    skip_errors: bool = typer.Option(False, help="Skip bad lines instead of failing the import."),
    batch_size: int = typer.Option(256, min=1, max=10_000),
) -> None:
    """Import memories from a JSONL file (one memory per line)."""
    total = _count_lines(path)
    with engine_from(ctx) as mem, _progress() as bar:
        task = bar.add_task("importing", total=total)
        report = mem.import_jsonl(path, skip_errors=skip_errors, batch_size=batch_size,
                                  progress=lambda n: bar.advance(task, n))
    for error in report.errors:
        console.print(f"[yellow]skipped[/] {error}", highlight=False)
    console.print(
        f"imported {report.imported}, already present {report.skipped_existing}, "
        f"skipped {len(report.errors)}"
    )


def export(
    ctx: typer.Context,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="File to write (default: stdout)."),
) -> None:
    """Export every memory as JSONL (round-trips with import)."""
    with engine_from(ctx) as mem:
        if output is None:
            mem.export_jsonl(sys.stdout)
            return
        with open(output, "w", encoding="utf-8") as handle:
            count = mem.export_jsonl(handle)
    console.print(f"exported {count} memories to {output}")


def backup(ctx: typer.Context, path: Path = typer.Argument(..., help="Where to write the copy.")) -> None:
    """Write a consistent copy of the store while it stays online."""
    with engine_from(ctx) as mem:
        mem.backup(path)
    console.print(f"backup written to {path}")


def restore(
    ctx: typer.Context,
    path: Path = typer.Argument(..., exists=True, dir_okay=False),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Replace the store's contents with a backup (stop running servers first)."""
    if not yes and not typer.confirm("Replace every memory in the store with the backup?"):
        raise typer.Exit(1)
    with engine_from(ctx) as mem:
        mem.restore(path)
        count = mem.count(include_superseded=True)
    console.print(f"restored {count} memories from {path}")


def reembed(ctx: typer.Context) -> None:
    """Re-embed every memory with the configured embedding model."""
    with engine_from(ctx, allow_model_mismatch=True) as mem, _progress() as bar:
        task = bar.add_task("re-embedding", total=mem.count(include_superseded=True))
        total = mem.reembed(progress=lambda n: bar.advance(task, n))
    console.print(f"re-embedded {total} memories")


def config(as_json: bool = typer.Option(False, "--json")) -> None:
    """Print the effective settings (secrets masked)."""
    data = Settings().masked()
    if as_json:
        print_json(data)
        return
    for key, value in data.items():
        console.print(f"[bold]{key}[/] = {value}", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach these commands to the app."""
    app.command("import")(import_)
    app.command()(export)
    app.command()(backup)
    app.command()(restore)
    app.command()(reembed)
    app.command()(config)
