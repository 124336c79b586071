"""Commands on single memories and searches: add, get, delete, list, search, stats."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Optional

import typer

from memoryd.cli.common import console, engine_from, hits_table, memories_table, print_json
from memoryd.errors import InvalidInput
from memoryd.models import TIMEFRAMES

SPEAKER_HELP = "Only memories said by user, assistant or a name."


def _metadata(raw: Optional[str]) -> dict:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--metadata is not valid JSON: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise InvalidInput("--metadata must be a JSON object")
    return value


def add(
    ctx: typer.Context,
    content: str = typer.Argument(..., help="What to remember."),
    node_type: str = typer.Option("fact", "--type", "-t", help="fact, preference, decision, ..."),
    tags: list[str] = typer.Option([], "--tag", help="A tag (repeatable)."),
    category: Optional[str] = typer.Option(None, help="Category label."),
    scope: str = typer.Option("user", help="'user' or 'project:<name>'."),
    importance: float = typer.Option(0.5, min=0.0, max=1.0),
    created_at: Optional[datetime] = typer.Option(None, help="When it happened (ISO date/time)."),
    metadata: Optional[str] = typer.Option(None, help="JSON object of extra fields."),
    as_json: bool = typer.Option(False, "--json", help="Print the memory as JSON."),
) -> None:
    """Store one memory as given."""
    with engine_from(ctx) as mem:
        memory = mem.add(
            content,
            node_type=node_type,
            tags=tags,
            category=category,
            scope=scope,
            importance=importance,
            created_at=created_at,
            metadata=_metadata(metadata),
        )
    if as_json:
        print_json(memory.model_dump(mode="json"))
    else:
        console.print(f"stored [bold]{memory.id}[/]")


def get(
    ctx: typer.Context,
    memory_id: str = typer.Argument(...),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show one memory."""
    with engine_from(ctx) as mem:
        memory = mem.get(memory_id)
    if as_json:
        print_json(memory.model_dump(mode="json"))
    else:
        console.print(memories_table([memory]))
        console.print(memory.content, highlight=False, markup=False)


def delete(ctx: typer.Context, memory_id: str = typer.Argument(...)) -> None:
    """Delete one memory (its history keeps a tombstone)."""
    with engine_from(ctx) as mem:
        mem.delete(memory_id)
    console.print(f"deleted {memory_id}")


def list_memories(
    ctx: typer.Context,
    limit: int = typer.Option(20, min=1, max=1000),
    offset: int = typer.Option(0, min=0),
    node_type: list[str] = typer.Option([], "--type", help="Only these node types."),
    tags: list[str] = typer.Option([], "--tag"),
    timeframe: Optional[str] = typer.Option(None, help=", ".join(TIMEFRAMES)),
    scope: Optional[str] = typer.Option(None),
    speaker: Optional[str] = typer.Option(None, help=SPEAKER_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List memories, newest first."""
    with engine_from(ctx) as mem:
        memories = mem.list(
            limit=limit, offset=offset, node_types=node_type or None, tags=tags or None,
            timeframe=timeframe, scope=scope, speaker=speaker,
        )
    if as_json:
        print_json([m.model_dump(mode="json") for m in memories])
    else:
        console.print(memories_table(memories))


def search(
    ctx: typer.Context,
    query: str = typer.Argument(...),
    limit: int = typer.Option(10, "--limit", "-n", min=1, max=1000),
    mode: str = typer.Option("hybrid", help="hybrid, keyword or vector."),
    timeframe: Optional[str] = typer.Option(None, help=", ".join(TIMEFRAMES)),
    node_type: list[str] = typer.Option([], "--type"),
    tags: list[str] = typer.Option([], "--tag"),
    scope: Optional[str] = typer.Option(None),
    speaker: Optional[str] = typer.Option(None, help=SPEAKER_HELP),
    min_score: Optional[float] = typer.Option(None),
    mmr: bool = typer.Option(False, help="Diversify results (MMR)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Search memories (BM25 + vectors, ranked by relevance; score = how likely relevant)."""
    with engine_from(ctx) as mem:
        hits = mem.search(
            query, limit, mode=mode, timeframe=timeframe, node_types=node_type or None,
            tags=tags or None, scope=scope, speaker=speaker, min_score=min_score, mmr=mmr,
        )
        threshold = mem.settings.recall_threshold
    if as_json:
        print_json([h.model_dump(mode="json") for h in hits])
        return
    console.print(hits_table(hits))
    if hits and all(h.score < threshold for h in hits):
        console.print(f"nothing relevant: no result reaches the recall threshold ({threshold:g})")


def stats(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Counts and facts about the store."""
    with engine_from(ctx) as mem:
        data = mem.stats()
    if as_json:
        print_json(data)
        return
    for key, value in data.items():
        console.print(f"[bold]{key}[/]: {value}", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach these commands to the app."""
    app.command()(add)
    app.command()(get)
    app.command()(delete)
    app.command("list")(list_memories)
    app.command()(search)
    app.command()(stats)
