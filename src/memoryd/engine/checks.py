"""The checks every write passes, written once: content limits, secret screening, and turning
a caller's fields into a memory ready to store."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Mapping

from pydantic import ValidationError

from memoryd.cognition import scheduling, secrets
from memoryd.engine.context import EngineContext
from memoryd.errors import (
    ContentTooLarge,
    EmptyContent,
    InvalidInput,
    SecretDetected,
    validation_message,
)
from memoryd.models import Memory, NewMemory, RestoredMemory


def utf8(text: str, what: str) -> bytes:
    """``text`` as UTF-8, or InvalidInput (lone surrogates from JSON cannot be stored)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode (unpaired surrogate at {exc.start})") from exc


def check_content(ctx: EngineContext, content: Any) -> str:
    """Content a memory may hold: a non-blank string within the size limit."""
    if not isinstance(content, str):
        raise InvalidInput(f"content must be a string, not {type(content).__name__}")
    if not content.strip():
        raise EmptyContent("content is empty")
    size = len(utf8(content, "content"))
    limit = ctx.settings.max_content_bytes
    if size > limit:
        raise ContentTooLarge(
            f"content is {size} bytes; the limit is {limit} bytes "
            "(set MEMORYD_MAX_CONTENT_BYTES to change it)"
        )
    return content


def screen(ctx: EngineContext, content: str, allow_secrets: bool) -> str:
    """Apply secret scanning to content about to be stored (refuse, redact or allow)."""
    mode = ctx.settings.secrets_mode
    if allow_secrets or mode == "allow":
        return content
    findings = secrets.scan(content)
    if not findings:
        return content
    if mode == "redact":
        return secrets.redact(content, findings)
    raise SecretDetected(list(dict.fromkeys(f.kind for f in findings)))


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
    screened = screen(ctx, new.content, allow_secrets)
    if screened != new.content:
        new = new.model_copy(update={"content": screened, "embed_text": None})
    return ctx.access.stamp(new, ctx.actor)


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
