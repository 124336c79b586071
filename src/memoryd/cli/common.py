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

#: Width of the output when it goes to a file or a pipe: wide enough that no command or id a
#: user copies from it is split over two lines (Rich would wrap at 80 columns).
PIPE_WIDTH = 4096


def make_console(*, stderr: bool = False) -> Console:
    """A console whose plain lines are never wrapped by memoryd (a terminal wraps them on
    screen, and copying gives the whole line back); tables fit a terminal's width, and take
    their natural width when the output is not a terminal."""
    out = Console(stderr=stderr, soft_wrap=True)
    if not out.is_terminal:
        out.width = PIPE_WIDTH
    return out


console = make_console()
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


def _id_column(table: Table, ids: list[str]) -> None:
    """An id column that a narrow terminal never splits (the other columns give way)."""
    table.add_column("id", no_wrap=True, min_width=max((len(i) for i in ids), default=2))


def memories_table(memories: list[Memory], title: str | None = None) -> Table:
    """A table of memories: id, type, created, tags, content."""
    table = Table(title=title, show_lines=False)
    _id_column(table, [m.id for m in memories])
    for column in ("type", "created", "tags"):
        table.add_column(column, overflow="ellipsis")
    table.add_column("content", overflow="ellipsis", min_width=12)
    for m in memories:
        table.add_row(m.id, m.node_type, m.created_at.strftime("%Y-%m-%d %H:%M"),
                      ",".join(m.tags), _short(m.content))
    return table


def hits_table(hits: list[SearchHit]) -> Table:
    """A table of search hits with the parts of their score."""
    table = Table(show_lines=False)
    for column in ("#", "score", "bm25", "cos"):
        table.add_column(column, no_wrap=True)
    _id_column(table, [h.memory.id for h in hits])
    table.add_column("type", overflow="ellipsis")
    table.add_column("content", overflow="ellipsis", min_width=12)
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
