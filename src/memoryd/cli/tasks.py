"""``memoryd task``: register long-running tasks, record progress, see where they stand."""

from __future__ import annotations

from typing import Optional

import typer

from memoryd.cli.common import run_operation

task_app = typer.Typer(help="Task memory: plans, progress, summaries.", no_args_is_help=True)
JSON = typer.Option(False, "--json", help="Print the result as JSON.")


@task_app.command("register")
def register_task(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A short name of the task."),
    steps: list[str] = typer.Option([], "--step", "-s", help="A plan step (repeatable, in order)."),
    scope: Optional[str] = typer.Option(None, help="'user' or 'project:<name>'."),
    as_json: bool = JSON,
) -> None:
    """Start remembering a task and its plan."""
    run_operation(ctx, "task_register", {"name": name, "plan": steps, "scope": scope}, as_json)


@task_app.command("update")
def update_task(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="The task's id (t_...)."),
    message: Optional[str] = typer.Option(None, "--message", "-m", help="What happened."),
    kind: Optional[str] = typer.Option(None, help="note, progress, decision or blocker."),
    done: Optional[int] = typer.Option(None, "--done", help="A plan step now done (1-based)."),
    add_steps: list[str] = typer.Option([], "--add-step", help="Append a step (repeatable)."),
    pause: bool = typer.Option(False, "--pause", help="Pause the task."),
    resume: bool = typer.Option(False, "--resume", help="Resume a paused task."),
    as_json: bool = JSON,
) -> None:
    """Record a message, a step done, new steps, or pause/resume."""
    status = "paused" if pause else "active" if resume else None
    run_operation(ctx, "task_update", {"id": task_id, "message": message, "kind": kind,
                                       "step_done": done, "add_steps": add_steps,
                                       "status": status}, as_json)


@task_app.command("get")
def get_task(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="The task's id (t_...)."),
    refresh: bool = typer.Option(False, "--refresh", help="Distill a new summary first."),
    as_json: bool = JSON,
) -> None:
    """Where a task stands: step, blockers, decisions, summary, recent messages, waits."""
    run_operation(ctx, "task_get", {"id": task_id, "refresh": refresh}, as_json)


@task_app.command("list")
def list_tasks(
    ctx: typer.Context,
    status: str = typer.Option("open", help="open, all, active, paused, completed, failed."),
    limit: int = typer.Option(50, min=1, max=1000),
    as_json: bool = JSON,
) -> None:
    """Tasks, most recently updated first."""
    run_operation(ctx, "task_list", {"status": status, "limit": limit}, as_json)


@task_app.command("complete")
def complete_task(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="The task's id (t_...)."),
    outcome: Optional[str] = typer.Option(None, help="What was done (or why it failed)."),
    learned: list[str] = typer.Option([], "--learned", help="A lesson (repeatable)."),
    failed: bool = typer.Option(False, "--failed", help="The task failed."),
    as_json: bool = JSON,
) -> None:
    """End a task; a memory of it is stored through smart ingest."""
    run_operation(ctx, "task_complete", {"id": task_id, "outcome": outcome, "learned": learned,
                                         "status": "failed" if failed else "completed"},
                  as_json)


def register(app: typer.Typer) -> None:
    """Attach the ``task`` command group to the app."""
    app.add_typer(task_app, name="task")
