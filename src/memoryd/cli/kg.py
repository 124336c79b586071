"""``memoryd kg ...``: the knowledge graphs from the command line.

The project defaults to the current directory (its graph file is ``.knowledge/graph.json``
there); ``--project`` takes another root directory or a project name.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import typer

from memoryd.cli.common import console, engine_from, print_json
from memoryd.errors import InvalidInput

kg_app = typer.Typer(
    help="Knowledge graphs: the always-loaded core, nodes and edges, archival, graph files.",
    no_args_is_help=True,
)
PROJECT = typer.Option(None, "--project", "-p",
                       help="Project root directory or name (default: the current directory).")
GRAPH = typer.Option(None, "--graph", "-g", help="user or project (default: the project's).")
AS_JSON = typer.Option(False, "--json", help="Print the result as JSON.")


def _project(project: str | None) -> str:
    return project if project is not None else str(Path.cwd())


def _show(result: Any, as_json: bool) -> None:
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        render = getattr(result, "as_text", None)
        typer.echo(render() if callable(render) else result.model_dump_json(indent=2))


def _graph(graph: str | None) -> str | None:
    if graph not in (None, "user", "project"):
        raise typer.BadParameter("--graph is user or project")
    return graph


@kg_app.command("read")
def read(
    ctx: typer.Context,
    project: str | None = PROJECT,
    budget: int | None = typer.Option(None, min=16, help="Tokens at most (default 5000)."),
    as_of: datetime | None = typer.Option(None, "--as-of", help="The graphs as they were then."),
    files: list[str] = typer.Option([], "--file", help="A file being worked on (repeatable)."),
    as_json: bool = AS_JSON,
) -> None:
    """Print the knowledge core: the user and project graphs' active nodes within the budget."""
    from memoryd.operations.graph import KgReadOutput

    with engine_from(ctx) as mem:
        core = mem.kg.read(_project(project), budget=budget, as_of=as_of, files=files)
    _show(KgReadOutput(**core.model_dump()), as_json)


def _write_input(path: Path | None) -> dict[str, Any]:
    raw = sys.stdin.read() if path is None or str(path) == "-" else path.read_text("utf-8")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not valid JSON at line {exc.lineno} column {exc.colno}: "
                           f"{exc.msg}") from exc
    if isinstance(data, list):
        data = {"nodes": data}
    if not isinstance(data, dict):
        raise InvalidInput('give {"nodes": [...], "edges": [...], "remove_edges": [...]}')
    return data


@kg_app.command("write")
def write(
    ctx: typer.Context,
    path: Path | None = typer.Argument(None, help='JSON file ({"nodes": [...], "edges": '
                                          '[...]}, or a list of nodes); default: stdin.'),
    project: str | None = PROJECT,
    graph: str | None = GRAPH,
    as_json: bool = AS_JSON,
) -> None:
    """Add or change nodes and edges of one graph (all or nothing)."""
    from memoryd.operations import Caller, invoke

    data = {**_write_input(path), "project": _project(project), "graph": _graph(graph)}
    with engine_from(ctx) as mem:
        result = invoke(mem, "kg_write", data, Caller.local("cli"))
    _show(result, as_json)


@kg_app.command("search")
def search(
    ctx: typer.Context,
    query: str = typer.Argument(...),
    project: str | None = PROJECT,
    limit: int = typer.Option(10, "-n", min=1, max=100),
    as_json: bool = AS_JSON,
) -> None:
    """Search the graphs' nodes (archived ones included)."""
    from memoryd.operations.graph import KgSearchOutput

    with engine_from(ctx) as mem:
        hits = mem.kg.search(query, project=_project(project), limit=limit)
    _show(KgSearchOutput(query=query, results=hits), as_json)


@kg_app.command("recall")
def recall(
    ctx: typer.Context,
    node_id: str = typer.Argument(..., metavar="ID"),
    project: str | None = PROJECT,
    graph: str | None = GRAPH,
    as_json: bool = AS_JSON,
) -> None:
    """Bring a node back into the core (counts as a use)."""
    from memoryd.operations.graph import KgRecallOutput

    with engine_from(ctx) as mem:
        result = mem.kg.recall(node_id, project=_project(project), graph=_graph(graph))  # type: ignore[arg-type]
    _show(KgRecallOutput(**result.model_dump()), as_json)


@kg_app.command("archive")
def archive(
    ctx: typer.Context,
    project: str | None = PROJECT,
    apply: bool = typer.Option(False, "--apply", help="Archive (default: a dry run)."),
    remove_orphans: bool = typer.Option(False, "--remove-orphans",
                                        help="With --apply: also remove the orphans listed."),
    budget: int | None = typer.Option(None, min=16),
    as_json: bool = AS_JSON,
) -> None:
    """List orphans and the nodes archival would take out of the core (--apply to do it)."""
    from memoryd.operations.graph import KgArchiveOutput

    with engine_from(ctx) as mem:
        report = mem.kg.archive(_project(project), dry_run=not apply, budget=budget,
                                remove_orphans=remove_orphans)
    _show(KgArchiveOutput(**report.model_dump()), as_json)


@kg_app.command("sync")
def sync(
    ctx: typer.Context,
    since: int = typer.Option(0, "--since", min=0, help="A seq from kg read or the last sync."),
    project: str | None = PROJECT,
    as_json: bool = AS_JSON,
) -> None:
    """Changes to the graphs since a change sequence number."""
    from memoryd.operations.graph import KgSyncOutput

    with engine_from(ctx) as mem:
        changes = mem.kg.sync(since, project=_project(project))
    _show(KgSyncOutput(**changes.model_dump()), as_json)


@kg_app.command("export")
def export(
    ctx: typer.Context,
    project: str | None = PROJECT,
    graph: str | None = GRAPH,
    output: Path | None = typer.Option(None, "--output", "-o", help="Default: stdout."),
) -> None:
    """Write one graph as graph.json text."""
    with engine_from(ctx) as mem:
        exported = mem.kg.export(_project(project), graph=_graph(graph))  # type: ignore[arg-type]
    if output is None:
        typer.echo(exported.text, nl=False)
    else:
        output.write_text(exported.text, encoding="utf-8")
        console.print(f"exported {exported.nodes} nodes, {exported.edges} edges to {output}")


@kg_app.command("import")
def import_(
    ctx: typer.Context,
    path: Path = typer.Argument(..., exists=True, dir_okay=False, readable=True),
    project: str | None = PROJECT,
    graph: str | None = GRAPH,
    as_json: bool = AS_JSON,
) -> None:
    """Merge a graph file into one graph (adds nodes and edges; removes nothing)."""
    from memoryd.operations.graph import KgWriteOutput

    text = path.read_bytes().decode("utf-8", errors="strict")
    with engine_from(ctx) as mem:
        result = mem.kg.import_text(text, project=_project(project), graph=_graph(graph),  # type: ignore[arg-type]
                                    source=str(path))
    _show(KgWriteOutput(**result.model_dump()), as_json)


@kg_app.command("scan")
def scan(
    ctx: typer.Context,
    root: Path = typer.Argument(Path("."), exists=True, file_okay=False,
                                help="The project's root directory."),
    as_json: bool = AS_JSON,
) -> None:
    """Record the project's structure as nodes of its graph (scanning again updates them).

    Languages, entry points, test layout, build and test commands, conventions from config
    files."""
    with engine_from(ctx) as mem:
        report = mem.kg.scan(root.resolve())
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    for warning in report.warnings:
        console.print(f"[yellow]warning[/] {warning}", highlight=False)
    console.print(f"{report.scope}: {report.files_seen} files seen, {len(report.created)} nodes "
                  f"created, {len(report.updated)} updated, {len(report.unchanged)} unchanged")


def register(app: typer.Typer) -> None:
    """Attach ``memoryd kg`` to the app."""
    app.add_typer(kg_app, name="kg")
