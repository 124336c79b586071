"""Commands that move a memory between backends or upgrade its schema."""

from __future__ import annotations

from typing import Any, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memoryd.cli.common import console
from memoryd.config import Settings


def _open(url: str, *, create: bool) -> Any:
    """A store by URL, without loading any embedding model."""
    from memoryd.opening import open_store

    return open_store(url, Settings(), create=create)


def migrate(
    source: str = typer.Option(..., "--from", help="Store to copy from: sqlite:///abs/path.db or postgresql://..."),
    target: str = typer.Option(..., "--to", help="Store to copy into (empty, or an interrupted copy's target)."),
    batch_size: int = typer.Option(1000, min=1, max=100_000, help="Rows per transaction."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Compare counts and checksums afterwards."),
) -> None:
    """Copy everything from one store to another (SQLite <-> PostgreSQL), resumably.

    Memories keep their ids, timestamps, vectors and scheduling state; history,
    edges, keys, intentions, watermarks and reports come along. Re-running an
    interrupted copy continues it; re-running a finished one copies nothing.
    """
    from memoryd.migrate import copy_store

    src = _open(source, create=False)
    try:
        dst = _open(target, create=True)
        try:
            progress = Progress(
                TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=console, disable=not console.is_terminal,
            )
            tasks: dict[str, Any] = {}

            def advance(table: str, n: int, total: int | None) -> None:
                if table not in tasks:
                    tasks[table] = progress.add_task(table, total=total)
                progress.advance(tasks[table], n)

            with progress:
                report = copy_store(src, dst, batch_size=batch_size, verify=verify, progress=advance)
        finally:
            dst.close()
    finally:
        src.close()
    copied = ", ".join(f"{t} {n}" for t, n in report.copied.items())
    verb = "resumed" if report.resumed else "copied"
    console.print(f"{verb} {report.source} -> {report.target}: {copied}", highlight=False)
    if report.cleaned:
        changed = ", ".join(f"{t} {n}" for t, n in report.cleaned.items())
        console.print(f"rows whose text held NUL (U+0000), copied with U+FFFD instead: {changed}",
                      highlight=False)
    if not verify:
        return
    table = Table(title="verification")
    for column in ("table", "source rows", "target rows", "source checksum", "target checksum", ""):
        table.add_column(column)
    for check in report.checks:
        table.add_row(
            check.table, str(check.source_rows), str(check.target_rows), check.source_checksum,
            check.target_checksum, "[green]ok[/]" if check.ok else "[bold red]DIFFERS[/]",
        )
    console.print(table)
    if not report.verified:
        console.print("[bold red]verification failed:[/] the stores differ (see above)")
        raise typer.Exit(1)
    console.print("verified: every table has the same rows in both stores")


def migrate_schema(ctx: typer.Context) -> None:
    """Create or upgrade the store's schema to this memoryd's version, then exit.

    Opening a store does this too; run it once before starting several servers
    against a new PostgreSQL database (it is safe to run from many at once).
    """
    from memoryd.config import mask_url_password

    url = (ctx.obj or {}).get("store") or Settings().resolved_store_url
    store: Optional[Any] = None
    try:
        store = _open(url, create=True)
        version = store.stats().schema_version
    finally:
        if store is not None:
            store.close()
    console.print(f"{mask_url_password(url)}: schema version {version}", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach these commands to the app."""
    app.command("migrate")(migrate)
    app.command("migrate-schema")(migrate_schema)
