"""JSONL import and export: one memory per line, round-tripping with each other.

An export line is a full memory record. An import line needs only ``content``;
the other fields of a memory are optional, and an exported record imports back
unchanged: content, metadata, timestamps, id, tier, supersession and scheduling state. Import reads and validates the
whole file before writing anything, so a bad line (invalid UTF-8, malformed JSON,
an invalid field) fails the import with its line number and nothing stored,
unless ``skip_errors`` is set. Memories whose id already exists are skipped, so
re-running an interrupted import completes it without duplicates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterator

from pydantic import ValidationError

from memoryd.engine.checks import new_memory
from memoryd.engine.context import EngineContext
from memoryd.engine.memory.writes import add_many
from memoryd.errors import ImportFormatError, InvalidInput, validation_message
from memoryd.models import Memory, RestoredMemory, SearchFilters

# Fields of an exported record that belong to the exporting store; import drops them
# (vectors are re-made by this store's model, and seq is this store's own counter).
_STORE_LOCAL = {"seq", "embedding_model"}


@dataclass
class ImportReport:
    """What an import did."""

    imported: int = 0
    skipped_existing: int = 0
    errors: list[str] = field(default_factory=list)


def parse_line(raw: bytes, line_number: int, ctx: EngineContext) -> RestoredMemory | None:
    """One JSONL line to a memory to import (None for a blank line).

    Validates the fields, the content limits and secret scanning; raises
    ImportFormatError with the line number.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"invalid UTF-8 at byte {exc.start}", line_number) from exc
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"malformed JSON ({exc.msg} at column {exc.colno})", line_number) from exc
    if not isinstance(data, dict):
        raise ImportFormatError("each line must be a JSON object", line_number)
    for name in _STORE_LOCAL:
        data.pop(name, None)
    try:
        new = RestoredMemory.model_validate(data)
        checked = new_memory(ctx, new)
    except ValidationError as exc:
        raise ImportFormatError(validation_message(exc), line_number) from exc
    except InvalidInput as exc:
        raise ImportFormatError(str(exc), line_number) from exc
    return checked  # type: ignore[return-value]


def import_jsonl(
    ctx: EngineContext,
    path: Path,
    *,
    skip_errors: bool = False,
    batch_size: int = 256,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import a JSONL file into the store (see the module docstring)."""
    report = ImportReport()
    items: list[RestoredMemory] = []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                item = parse_line(raw, number, ctx)
            except ImportFormatError as exc:
                if not skip_errors:
                    raise
                report.errors.append(str(exc))
                continue
            if item is not None:
                items.append(item)
    known = ctx.store.get_many([i.id for i in items if i.id])
    fresh = []
    for item in items:
        if item.id and item.id in known:
            report.skipped_existing += 1
        else:
            fresh.append(item)
    ids = [i.id for i in fresh if i.id]
    if len(ids) != len(set(ids)):
        raise InvalidInput("the import file repeats a memory id")
    for start in range(0, len(fresh), batch_size):
        chunk = fresh[start : start + batch_size]
        add_many(ctx, chunk, batch_size=batch_size)
        report.imported += len(chunk)
        if progress:
            progress(len(chunk))
    return report


def export_jsonl(ctx: EngineContext, out: IO[str], *, filters: SearchFilters | None = None) -> int:
    """Write every memory the caller may see (or those matching ``filters``), oldest first,
    as JSONL."""
    count = 0
    for memory in _memories(ctx, filters):
        out.write(json.dumps(memory.model_dump(mode="json"), ensure_ascii=False) + "\n")
        count += 1
    return count


def _memories(ctx: EngineContext, filters: SearchFilters | None) -> Iterator[Memory]:
    if filters is None and not ctx.access.restricted:
        yield from ctx.store.iter_memories()
        return
    filters = ctx.filters(filters or SearchFilters(include_superseded=True))
    now, offset, page = ctx.clock(), 0, 1000
    while True:
        batch = ctx.store.list(filters, now=now, limit=page, offset=offset, order="created_asc")
        yield from batch
        if len(batch) < page:
            return
        offset += page
