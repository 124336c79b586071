"""Commands of the cognitive layer: feedback, state, history, consolidation, forgetting."""

from __future__ import annotations

from typing import Optional

import typer

from memoryd.cli.common import console, engine_from, print_json


def promote(ctx: typer.Context, memory_id: str, reason: Optional[str] = typer.Option(None)) -> None:
    """Mark a memory as helpful / correct (strengthens it)."""
    with engine_from(ctx) as mem:
        memory = mem.promote(memory_id, reason=reason)
    console.print(f"promoted {memory.id}")


def demote(ctx: typer.Context, memory_id: str, reason: Optional[str] = typer.Option(None)) -> None:
    """Mark a memory as wrong or stale (weakens it; it stays stored)."""
    with engine_from(ctx) as mem:
        memory = mem.demote(memory_id, reason=reason)
    console.print(f"demoted {memory.id}")


def state(ctx: typer.Context, memory_id: str) -> None:
    """Show a memory's retention, strengths, state and tier."""
    with engine_from(ctx) as mem:
        print_json(mem.views.memory_state(memory_id).model_dump(mode="json"))


def history(ctx: typer.Context, memory_id: str) -> None:
    """Show every recorded change of a memory."""
    with engine_from(ctx) as mem:
        print_json([h.model_dump(mode="json") for h in mem.history(memory_id)])


def consolidate(ctx: typer.Context, dry_run: bool = typer.Option(False, "--dry-run")) -> None:
    """Re-tier memories, merge near-duplicates, link recent ones (never deletes)."""
    with engine_from(ctx) as mem:
        report = mem.admin.consolidate(dry_run=dry_run)
    print_json(report.model_dump(mode="json"))


def gc(
    ctx: typer.Context,
    min_retention: float = typer.Option(0.1, min=0.0, max=1.0),
    max_age_days: Optional[float] = typer.Option(None, min=0.0),
    apply: bool = typer.Option(False, "--apply", help="Delete; without it, only list."),
) -> None:
    """List (or with --apply, delete) memories whose retention fell below a floor."""
    with engine_from(ctx) as mem:
        report = mem.admin.gc(min_retention=min_retention, max_age_days=max_age_days,
                              dry_run=not apply)
    print_json(report.model_dump(mode="json"))


def purge(
    ctx: typer.Context,
    memory_id: str,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Remove a memory for good, scrubbing its content from history."""
    if not yes and not typer.confirm(f"Purge {memory_id} for good?"):
        raise typer.Exit(1)
    with engine_from(ctx) as mem:
        mem.admin.purge(memory_id)
    console.print(f"purged {memory_id}")


def register(app: typer.Typer) -> None:
    """Attach these commands to the app."""
    for command in (promote, demote, state, history, consolidate, gc, purge):
        app.command()(command)
