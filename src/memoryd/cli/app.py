"""The ``memoryd`` command: the Typer app, global options and error handling."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from memoryd.cli.common import make_console
from memoryd.errors import MemorydError

app = typer.Typer(
    name="memoryd",
    help="memoryd: a local-first cognitive memory server for AI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = make_console(stderr=True)


@app.callback()
def main_options(
    ctx: typer.Context,
    store: Optional[str] = typer.Option(
        None,
        "--store",
        envvar="MEMORYD_STORE_URL",
        help="Store URL: sqlite:///abs/path.db or postgresql://... (default: MEMORYD_HOME/memoryd.db).",
    ),
) -> None:
    """Global options."""
    ctx.obj = {"store": store}


def _register() -> None:
    from memoryd.cli import (
        cognition,
        data,
        doctor,
        domains,
        journal,
        keys,
        kg,
        ledger,
        mcp,
        memories,
        server,
    )
    from memoryd.cli import migrate as migrate_cli
    from memoryd.cli import tasks as tasks_cli
    from memoryd.cli import waits as waits_cli

    memories.register(app)
    data.register(app)
    cognition.register(app)
    server.register(app)
    keys.register(app)
    domains.register(app)
    mcp.register(app)
    migrate_cli.register(app)
    ledger.register(app)
    journal.register(app)
    doctor.register(app)
    tasks_cli.register(app)
    waits_cli.register(app)
    kg.register(app)


_register()


def main() -> None:
    """Entry point of the console script: run the app, turning memoryd errors into messages."""
    try:
        app()
    except MemorydError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(1)
