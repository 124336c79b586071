"""Codebase memory: patterns and decisions tied to a codebase and its files."""

from __future__ import annotations

from typing import Any

from memoryd.cognition.globs import touches
from memoryd.engine.context import EngineContext
from memoryd.engine.memory.writes import add_many
from memoryd.engine.tasks.intentions import IntentionContext, check_intentions
from memoryd.errors import Forbidden, InvalidInput
from memoryd.models import CodebaseContext, Memory
from memoryd.models.fields import CODEBASE_PATTERN
from memoryd.models.text import compile_pattern

_NAME = compile_pattern(CODEBASE_PATTERN)


def _codebase(ctx: EngineContext, name: str) -> str:
    """A valid codebase name whose scope (``project:<name>``) the caller may use."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInput("codebase must be 1-128 characters of letters, digits, _ . - /")
    if ctx.access.scope not in (None, f"project:{name}"):
        raise Forbidden(f"this key is limited to scope {ctx.access.scope!r}")
    return name


def _files(files: list[str] | None) -> list[str]:
    out = [f.strip() for f in (files or []) if isinstance(f, str) and f.strip()]
    return list(dict.fromkeys(out))


def _store(ctx: EngineContext, content: str, **fields: Any) -> Memory:
    return add_many(ctx, [{"content": content, **fields}])[0]


def remember_pattern(
    ctx: EngineContext, name: str, description: str, files: list[str] | None, codebase: str,
) -> Memory:
    """Store a code pattern of a codebase (node_type ``pattern``, scope ``project:<codebase>``)."""
    codebase = _codebase(ctx, codebase)
    if not name or not name.strip():
        raise InvalidInput("name is empty")
    if not description or not description.strip():
        raise InvalidInput("description is empty")
    return _store(
        ctx,
        f"{name.strip()}: {description.strip()}",
        node_type="pattern",
        summary=name.strip(),
        tags=[f"codebase:{codebase}"],
        scope=f"project:{codebase}",
        metadata={"codebase": codebase, "name": name.strip(), "files": _files(files)},
    )


def remember_decision(
    ctx: EngineContext, decision: str, rationale: str | None, alternatives: list[str] | None,
    files: list[str] | None, codebase: str,
) -> Memory:
    """Store an architectural decision with its rationale and the alternatives considered."""
    codebase = _codebase(ctx, codebase)
    if not decision or not decision.strip():
        raise InvalidInput("decision is empty")
    parts = [decision.strip()]
    rationale = rationale.strip() if rationale and rationale.strip() else None
    if rationale:
        parts.append(f"Rationale: {rationale.strip()}")
    alternatives = [a.strip() for a in alternatives or [] if a and a.strip()]
    if alternatives:
        parts.append("Alternatives considered: " + "; ".join(alternatives))
    return _store(
        ctx,
        "\n".join(parts),
        node_type="decision",
        summary=decision.strip()[:200],
        tags=[f"codebase:{codebase}"],
        scope=f"project:{codebase}",
        importance=0.7,
        metadata={"codebase": codebase, "files": _files(files), "rationale": rationale,
                  "alternatives": alternatives},
    )


def codebase_context(
    ctx: EngineContext, codebase: str, files: list[str] | None = None, limit: int = 10
) -> CodebaseContext:
    """Patterns and decisions of a codebase touching ``files`` (all of them when no files),
    newest first, plus the intentions this context triggers."""
    codebase = _codebase(ctx, codebase)
    if not 1 <= limit <= 200:
        raise InvalidInput("limit must be between 1 and 200")
    wanted = _files(files)
    filters = ctx.filters(node_types=["pattern", "decision"], tags=[f"codebase:{codebase}"])
    now, page, offset = ctx.clock(), 500, 0
    patterns: list[Memory] = []
    decisions: list[Memory] = []
    while len(patterns) < limit or len(decisions) < limit:
        batch = ctx.store.list(filters, now=now, limit=page, offset=offset)
        for memory in batch:
            stored = memory.metadata.get("files") or []
            if wanted and not any(touches(s, f) for s in stored for f in wanted):
                continue
            bucket = patterns if memory.node_type == "pattern" else decisions
            if len(bucket) < limit:
                bucket.append(memory)
        if len(batch) < page:
            break
        offset += page
    intentions = check_intentions(ctx, IntentionContext(codebase=codebase, files=wanted))
    return CodebaseContext(codebase=codebase, files=wanted, patterns=patterns,
                           decisions=decisions, intentions=intentions)
