"""The checks every write passes, written once: content limits, secret screening, and turning
a caller's fields into a memory ready to store."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Mapping

from pydantic import ValidationError

from memoryd.cognition import injection, scheduling, secrets
from memoryd.engine.context import EngineContext
from memoryd.errors import (
    ContentTooLarge,
    EmptyContent,
    InvalidFilter,
    InvalidInput,
    validation_message,
)
from memoryd.models import FILTER_NAMES, Memory, NewMemory, RestoredMemory, SearchFilters
from memoryd.models.text import has_visible

def utf8(text: str, what: str) -> bytes:
    """``text`` as UTF-8, or InvalidInput (lone surrogates from JSON cannot be stored)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode (unpaired surrogate at {exc.start})") from exc


def check_content(ctx: EngineContext, content: Any) -> str:
    """Content a memory may hold: a string with something visible in it, within the size limit."""
    if not isinstance(content, str):
        raise InvalidInput(f"content must be a string, not {type(content).__name__}")
    if not has_visible(content):
        raise EmptyContent("content is empty (or only invisible characters)")
    size = len(utf8(content, "content"))
    limit = ctx.settings.max_content_bytes
    if size > limit:
        raise ContentTooLarge(
            f"content is {size} bytes; the limit is {limit} bytes "
            "(set MEMORYD_MAX_CONTENT_BYTES to change it)"
        )
    return content


def screen(ctx: EngineContext, text: str, allow_secrets: bool, field: str = "content") -> str:
    """Apply secret scanning to one text about to be stored (refuse, redact or allow)."""
    return screen_fields(ctx, {field: text}, allow_secrets)[field]


def screen_fields(ctx: EngineContext, fields: dict[str, Any], allow_secrets: bool) -> dict[str, Any]:
    """Every text in ``fields`` (strings, lists and JSON objects, keys included) scanned for
    credentials: refused naming kinds and fields (never the value), redacted, or allowed, as
    the settings say."""
    mode = ctx.settings.secrets_mode
    if allow_secrets or mode == "allow":
        return fields
    if mode == "redact":
        return secrets.redact_fields(fields)[0]
    secrets.ensure_no_secrets_in_fields(fields)
    return fields


def new_memory(
    ctx: EngineContext, item: NewMemory | Mapping[str, Any], allow_secrets: bool = False
) -> NewMemory:
    """A validated, screened memory to create, stamped with the caller's scope and agent."""
    if isinstance(item, NewMemory):
        new = item
    else:
        try:
            new = NewMemory.model_validate(dict(item))
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from exc
    check_content(ctx, new.content)
    # Every field, not a list of the ones that hold free text: a field left off such a list
    # (session_id was) keeps a pasted credential. Dates and numbers are not scanned.
    texts = {name: value for name, value in new if value}
    screened = screen_fields(ctx, texts, allow_secrets)
    changed = {k: v for k, v in screened.items() if v != texts[k]}
    if changed:
        new = new.model_copy(update={**changed, "embed_text": None})
    if injection.is_suspect(new.content):
        new = new.model_copy(update={"metadata": {**new.metadata, "suspect_instruction": True}})
    stamped = ctx.access.stamp(new, ctx.actor)
    ctx.check_writes_to(stamped.scope)
    return stamped


def build(ctx: EngineContext, new: NewMemory, now: datetime) -> Memory:
    """The stored form of a new memory: id, times, model and initial scheduling state."""
    created = new.created_at or now
    fields = new.model_dump(include=set(NewMemory.model_fields)
                            - {"content", "created_at", "id", "embed_text"})
    memory = Memory(
        id=new.id or str(uuid.uuid4()),
        content=new.content,
        created_at=created,
        updated_at=created,
        embedding_model=ctx.embedder.model_id,
        state=scheduling.initial_state(new.importance, created),
        **fields,
    )
    if isinstance(new, RestoredMemory):
        memory = memory.model_copy(update=new.restored_fields())
    return memory


def check_query(query: Any, limit: Any, mode: Any) -> None:
    """A search query, limit and mode the engine accepts (InvalidInput otherwise)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty")
    utf8(query, "query")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidInput("limit must be between 1 and 1000")
    if mode not in ("hybrid", "keyword", "vector"):
        raise InvalidInput("mode must be hybrid, keyword or vector")


def check_min_score(value: Any) -> None:
    """A ``min_score`` (a relevance probability): None or a number in [0, 1]."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidInput("min_score must be a number between 0 and 1 (a relevance)")


def parse_filters(filters: SearchFilters | Mapping[str, Any] | None,
                  **kwargs: Any) -> SearchFilters:
    """Filters from a model or a mapping plus keyword overrides; unknown names are refused."""
    given = {k: v for k, v in kwargs.items() if v is not None}
    if isinstance(filters, SearchFilters):
        if not given:
            return filters  # already validated
        data = filters.model_dump(exclude_unset=True)
    else:
        data = dict(filters or {})
    unknown = set(data) | set(given)
    unknown -= FILTER_NAMES
    if unknown:
        raise InvalidFilter(f"unknown filter(s): {', '.join(sorted(unknown))}; "
                            f"known: {', '.join(sorted(FILTER_NAMES))}")
    data.update(given)
    try:
        return SearchFilters.model_validate(data)
    except ValidationError as exc:
        raise InvalidFilter(validation_message(exc)) from exc
