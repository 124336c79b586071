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
    source: str = typer.Argument(..., help="FILE.jsonl, or claude-code / openclaw.", metavar="SOURCE"),
    path: Optional[Path] = typer.Argument(
        None, help="claude-code: the projects directory (default ~/.claude/projects); "
        "openclaw: the agent's workspace."),
    skip_errors: bool = typer.Option(False, help="Skip bad lines instead of failing the import."),
    batch_size: int = typer.Option(256, min=1, max=10_000),
    scope: Optional[str] = typer.Option(
        None, help="claude-code: one scope for every session (default project:<directory>); "
        "openclaw: the scope (default user)."),
) -> None:
    """Import memories: a JSONL file (one memory per line), Claude Code transcripts
    (`import claude-code`) or an OpenClaw workspace's memory files (`import openclaw DIR`)."""
    if source in ("claude-code", "openclaw"):
        import_transcripts(ctx, source, path, scope)
        return
    file = Path(source)
    if not file.is_file():
        raise typer.BadParameter(f"File '{source}' does not exist.", param_hint="'SOURCE'")
    total = _count_lines(file)
    with engine_from(ctx) as mem, _progress() as bar:
        task = bar.add_task("importing", total=total)
        report = mem.admin.import_jsonl(file, skip_errors=skip_errors, batch_size=batch_size,
                                        progress=lambda n: bar.advance(task, n))
    for error in report.errors:
        console.print(f"[yellow]skipped[/] {error}", highlight=False)
    console.print(
        f"imported {report.imported}, already present {report.skipped_existing}, "
        f"skipped {len(report.errors)}"
    )


def import_transcripts(ctx: typer.Context, source: str, path: Optional[Path],
                       scope: Optional[str]) -> None:
    """Import Claude Code sessions or OpenClaw memory files, one file at a time, with a bar."""
    if source == "openclaw" and path is None:
        raise typer.BadParameter("name the OpenClaw workspace directory", param_hint="'PATH'")
    if path is not None and not path.is_dir():
        raise typer.BadParameter(f"Directory '{path}' does not exist.", param_hint="'PATH'")
    with engine_from(ctx) as mem, _progress() as bar:
        task = bar.add_task(f"importing {source}", total=None)

        def advance(n: int) -> None:
            bar.advance(task, n)

        if source == "claude-code":
            files = mem.kg.claude_code_sessions(path)
            bar.update(task, total=len(files))
            report = mem.kg.import_claude_code(scope=scope, files=files, progress=advance)
        else:
            report = mem.kg.import_openclaw(path, scope=scope or "user", progress=advance)
    for problem in report.problems[:20]:
        console.print(f"[yellow]skipped[/] {problem}", highlight=False)
    console.print(
        f"{report.files} files, {report.items} items: imported {report.imported}, already "
        f"present {report.skipped_existing}, skipped as credentials {report.skipped_secrets}, "
        f"problems {len(report.problems)}"
    )


def export(
    ctx: typer.Context,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="File to write (default: stdout)."),
) -> None:
    """Export every memory as JSONL (round-trips with import)."""
    with engine_from(ctx) as mem:
        if output is None:
            mem.admin.export_jsonl(sys.stdout)
            return
        with open(output, "w", encoding="utf-8") as handle:
            count = mem.admin.export_jsonl(handle)
    console.print(f"exported {count} memories to {output}")


def backup(ctx: typer.Context, path: Path = typer.Argument(..., help="Where to write the copy.")) -> None:
    """Write a consistent copy of the store while it stays online."""
    with engine_from(ctx) as mem:
        mem.admin.backup(path)
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
        mem.admin.restore(path)
        count = mem.count(include_superseded=True)
    console.print(f"restored {count} memories from {path}")


def reembed(ctx: typer.Context) -> None:
    """Re-embed every memory with the configured embedding model."""
    with engine_from(ctx, allow_model_mismatch=True) as mem, _progress() as bar:
        task = bar.add_task("re-embedding", total=mem.count(include_superseded=True))
        total = mem.admin.reembed(progress=lambda n: bar.advance(task, n))
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
