"""Helpers shared by the CLI commands: opening the engine, printing results."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

import typer
from rich.console import Console
from rich.table import Table

from memoryd import Actor, Engine
from memoryd.models import Memory, SearchHit

console = Console()
CLI = Actor("cli")


@contextmanager
def engine_from(ctx: typer.Context, **kwargs: Any) -> Iterator[Engine]:
    """Open the engine named by the global ``--store`` option, acting as ``cli``."""
    from memoryd.opening import open as open_memory

    engine = open_memory((ctx.obj or {}).get("store"), **kwargs)
    try:
        yield engine.acting_as(CLI)
    finally:
        engine.close()


def print_json(data: Any) -> None:
    """Print JSON to stdout without Rich markup."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def memories_table(memories: list[Memory], title: str | None = None) -> Table:
    """A table of memories: id, type, created, tags, content."""
    table = Table(title=title, show_lines=False)
    for column in ("id", "type", "created", "tags", "content"):
        table.add_column(column, overflow="fold" if column == "id" else "ellipsis")
    for m in memories:
        table.add_row(m.id, m.node_type, m.created_at.strftime("%Y-%m-%d %H:%M"),
                      ",".join(m.tags), _short(m.content))
    return table


def hits_table(hits: list[SearchHit]) -> Table:
    """A table of search hits with the parts of their score."""
    table = Table(show_lines=False)
    for column in ("#", "score", "bm25", "cos", "id", "type", "content"):
        table.add_column(column, overflow="fold" if column == "id" else "ellipsis")
    for i, h in enumerate(hits, start=1):
        table.add_row(
            str(i),
            f"{h.score:.3f}" if h.score >= 0.001 else f"{h.score:.0e}",
            "-" if h.keyword_rank is None else f"#{h.keyword_rank}",
            "-" if h.semantic_similarity is None else f"{h.semantic_similarity:.2f}",
            h.memory.id,
            h.memory.node_type,
            _short(h.memory.content),
        )
    return table


def run_operation(ctx: typer.Context, name: str, arguments: dict[str, Any],
                  as_json: bool = False) -> Any:
    """Run one registered operation as the local CLI user and print its result (its text
    rendering, or JSON with ``as_json``); returns the result."""
    from memoryd.operations import Caller, invoke

    with engine_from(ctx) as mem:
        result = invoke(mem, name, arguments, Caller.local("cli"))
    print_result(result, as_json)
    return result


def print_result(result: Any, as_json: bool = False) -> None:
    """An operation's result as its text rendering, or as JSON."""
    from memoryd.operations import as_text

    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        typer.echo(as_text(result))
