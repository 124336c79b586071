"""Plain writes: add memories as given, change fields of one, delete one."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from pydantic import ValidationError

from memoryd.cognition import injection
from memoryd.engine.checks import build, check_content, new_memory, screen_fields
from memoryd.engine.context import EngineContext
from memoryd.engine.domains.assign import (
    check_lands,
    classify_changed,
    classify_new,
    save_assignment,
)
from memoryd.engine.memory.links import session_edges
from memoryd.errors import Forbidden, InvalidInput, validation_message
from memoryd.models import Memory, MemoryPatch, NewMemory, SearchHit
from memoryd.models.fields import check_validity


def add_many(
    ctx: EngineContext,
    items: Iterable[NewMemory | Mapping[str, Any]],
    *,
    batch_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    allow_secrets: bool = False,
) -> list[Memory]:
    """Store memories as given, embedding them in batches; each batch is one transaction.

    Every item is validated (and screened for secrets) before anything is written, so a bad
    item fails the whole call with nothing stored; for a caller limited to some domains, so
    does an item that would land outside them. New memories are classified into domains.
    Consecutive memories of one session are linked by ``follows`` edges.
    """
    news = [new_memory(ctx, item, allow_secrets) for item in items]
    batch = batch_size or ctx.settings.embed_batch_size * 4
    embedded: dict[int, Any] = {}
    if ctx.access.domains is not None:  # refuse before the first batch is written
        for start in range(0, len(news), batch):
            embedded[start] = _embed(ctx, news[start : start + batch])
            check_lands(ctx, embedded[start])
    out: list[Memory] = []
    for start in range(0, len(news), batch):
        chunk = news[start : start + batch]
        now = ctx.clock()
        vectors = embedded.pop(start, None)
        if vectors is None:
            vectors = _embed(ctx, chunk)
        memories = [build(ctx, n, now) for n in chunk]
        with ctx.store.transaction():
            memories = classify_new(ctx, memories, vectors)
            stored = ctx.store.insert(memories, vectors, ctx.actor)
            ctx.store.upsert_edges(session_edges(ctx, stored))
        out.extend(stored)
        if progress:
            progress(len(chunk))
    return out


def _embed(ctx: EngineContext, news: list[NewMemory]) -> Any:
    return ctx.embedder.embed([n.embed_text or n.content for n in news])


def update(ctx: EngineContext, memory_id: str, changes: Mapping[str, Any],
           allow_secrets: bool = False) -> Memory:
    """Change fields of a memory the caller may see; new content is re-embedded."""
    if isinstance(changes, Mapping) and isinstance(changes.get("content"), str):
        check_content(ctx, changes["content"])  # EmptyContent or ContentTooLarge first
    try:
        patch = changes if isinstance(changes, MemoryPatch) else MemoryPatch.model_validate(
            dict(changes))
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc)) from exc
    data = patch.changes()
    if not data:
        raise InvalidInput("nothing to update: pass at least one field")
    current = ctx.get(memory_id)
    try:
        check_validity(data.get("valid_from", current.valid_from),
                       data.get("valid_until", current.valid_until))
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    if "scope" in data and ctx.access.scope not in (None, data["scope"]):
        raise Forbidden(f"this key cannot move a memory out of scope {ctx.access.scope!r}")
    ctx.check_writes_to(data.get("scope", current.scope))
    vector = None
    if "content" in data:
        check_content(ctx, data["content"])
    data = screen_fields(ctx, data, allow_secrets)
    if "content" in data:
        vector = ctx.embedder.embed([data["content"]])[0]
        metadata = dict(data.get("metadata", current.metadata))
        if injection.is_suspect(data["content"]):
            metadata["suspect_instruction"] = True
        else:
            metadata.pop("suspect_instruction", None)
        if metadata != current.metadata:
            data["metadata"] = metadata
    data["updated_at"] = ctx.clock()
    if vector is None:
        return ctx.store.update(memory_id, data, ctx.actor)
    changed = classify_changed(ctx, current.model_copy(update=data), vector)
    with ctx.store.transaction():
        updated = ctx.store.update(memory_id, data, ctx.actor, vector=vector)
        save_assignment(ctx, changed)
    return updated.model_copy(update={"domains": changed.domains,
                                      "domain_scores": changed.domain_scores})


def delete(ctx: EngineContext, memory_id: str) -> None:
    """Delete a memory the caller may see, with its vector, keyword entry and edges."""
    ctx.get(memory_id)
    ctx.store.delete(memory_id, ctx.actor)


FORGET_SIMILARITY = 0.9  # how clearly a query must match the one memory it deletes


def forget(ctx: EngineContext, memory_id: str | None, query: str | None,
           search: Callable[[str, int], list[SearchHit]]) -> tuple[str | None, list[SearchHit]]:
    """Delete a memory by id, or the one memory that clearly matches ``query`` (a single hit
    whose semantic similarity is at least FORGET_SIMILARITY). Returns (deleted id, candidates
    shown instead when the query matched no single memory clearly)."""
    if memory_id is not None:
        delete(ctx, memory_id)
        return memory_id, []
    if not query or not query.strip():
        raise InvalidInput("give a memory id or a query")
    hits = search(query, 5)
    clear = [h for h in hits if (h.semantic_similarity or 0.0) >= FORGET_SIMILARITY]
    if len(clear) == 1:
        delete(ctx, clear[0].memory.id)
        return clear[0].memory.id, []
    return None, hits
