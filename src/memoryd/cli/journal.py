"""``memoryd journal``: one day's learning as Markdown."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from memoryd.cli.common import console, engine_from
from memoryd.errors import InvalidInput


def journal(
    ctx: typer.Context,
    day: Optional[str] = typer.Option(
        None, "--day", help="The day as YYYY-MM-DD (default: today, local time)."
    ),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", dir_okay=False, help="File to write (default: stdout)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite --output if it exists."),
    tz_name: Optional[str] = typer.Option(
        None, "--tz", help="IANA time zone of the day, e.g. Europe/Berlin (default: local)."
    ),
) -> None:
    """What was learned, changed and forgotten on one day, as Markdown."""
    from memoryd.dates import parse_day, parse_tz

    try:
        tz = parse_tz(tz_name) if tz_name is not None else None
    except InvalidInput as exc:
        raise typer.BadParameter(str(exc), param_hint="'--tz'") from None
    try:
        chosen = parse_day(day) if day is not None else datetime.now(tz).date()
    except InvalidInput as exc:
        raise typer.BadParameter(str(exc), param_hint="'--day'") from None
    if output is not None and output.exists() and not force:
        raise typer.BadParameter(
            f"{output} exists; pass --force to overwrite it", param_hint="'--output'"
        )
    with engine_from(ctx, allow_model_mismatch=True) as mem:
        markdown = mem.admin.journal(chosen, tz=tz)
    if output is None:
        typer.echo(markdown, nl=False)
        return
    try:
        # "x" refuses a file that appeared since the check above.
        with open(output, "w" if force else "x", encoding="utf-8") as handle:
            handle.write(markdown)
    except OSError as exc:
        typer.echo(f"error: cannot write {output}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None
    console.print(f"journal of {chosen.isoformat()} written to {output}", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach the ``journal`` command to the app."""
    app.command()(journal)
