"""``memoryd wait``: start, follow, list and cancel smart waits.

Waits are run by the memoryd process of this host that holds its wait lock (``memoryd
serve``); these commands record and read them through the store, so they work while that
server runs.
"""

from __future__ import annotations

import json
import time
from typing import Any, Optional

import typer

from memoryd.cli.common import engine_from, print_result, run_operation

wait_app = typer.Typer(help="Smart waits: watch files, terminals, processes, URLs, windows.",
                       no_args_is_help=True)
JSON = typer.Option(False, "--json", help="Print the result as JSON.")


def _criteria(raw: str) -> Any:
    """A JSON object on the command line is criteria fields; anything else is text."""
    if raw.lstrip().startswith("{"):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _follow(ctx: typer.Context, wait_id: str, seconds: float, as_json: bool) -> None:
    """Long-poll until the wait ends (or ``seconds`` pass); exit 0 when it resolved."""
    from memoryd.operations import Caller, invoke

    deadline = time.monotonic() + seconds
    with engine_from(ctx) as mem:
        while True:
            block = max(0.0, min(60.0, deadline - time.monotonic()))
            result = invoke(mem, "wait_status", {"id": wait_id, "block_s": block},
                            Caller.local("cli"))
            if result.status != "watching" or block <= 0:
                break
    print_result(result, as_json)
    raise typer.Exit(0 if result.status == "resolved" else 1)


@wait_app.command("start")
def start(
    ctx: typer.Context,
    target: str = typer.Argument(..., help="file:/path, tmux:S:W.P, pid:N, http(s)://..., "
                                           "window:TITLE, screen, command:CMD, pty:CMD."),
    criteria: str = typer.Argument(..., help='Text, /regex/, exit, exit:N, status:N, or JSON.'),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds (1 to 604800)."),
    task_id: Optional[str] = typer.Option(None, "--task", help="The task it belongs to."),
    wake: Optional[str] = typer.Option(None, "--wake", help="openclaw or webhook."),
    follow: bool = typer.Option(False, "--follow", help="Wait here until it ends (exit 0 when "
                                                         "resolved, 1 otherwise)."),
    as_json: bool = JSON,
) -> None:
    """Start a wait (run by the memoryd server of this host) and print its id."""
    result = run_operation(ctx, "smart_wait", {
        "target": target, "criteria": _criteria(criteria), "timeout_s": timeout,
        "task_id": task_id, "wake": {"to": wake} if wake else None}, as_json)
    if follow:
        _follow(ctx, result.id, timeout + 5, as_json)


@wait_app.command("status")
def status(
    ctx: typer.Context,
    wait_id: str = typer.Argument(..., help="The wait's id (w_...)."),
    block: float = typer.Option(0.0, "--block", min=0, max=300,
                                help="Wait up to this many seconds for it to end."),
    as_json: bool = JSON,
) -> None:
    """How a wait stands."""
    run_operation(ctx, "wait_status", {"id": wait_id, "block_s": block}, as_json)


@wait_app.command("list")
def list_waits(
    ctx: typer.Context,
    status: Optional[str] = typer.Option(None, help="watching, resolved, timeout, error, "
                                                    "cancelled."),
    task_id: Optional[str] = typer.Option(None, "--task"),
    limit: int = typer.Option(50, min=1, max=1000),
    as_json: bool = JSON,
) -> None:
    """Waits, newest first."""
    run_operation(ctx, "wait_list", {"status": status, "task_id": task_id, "limit": limit},
                  as_json)


@wait_app.command("cancel")
def cancel(ctx: typer.Context, wait_id: str = typer.Argument(...), as_json: bool = JSON) -> None:
    """Stop a wait."""
    run_operation(ctx, "wait_cancel", {"id": wait_id}, as_json)


def register(app: typer.Typer) -> None:
    """Attach the ``wait`` command group to the app."""
    app.add_typer(wait_app, name="wait")
