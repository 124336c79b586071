"""Codebase memory: patterns and decisions tied to a codebase and its files."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memoryd.cognition.globs import touches
from memoryd.cognition.intentions import IntentionContext, check_intentions
from memoryd.errors import InvalidInput
from memoryd.models import CodebaseContext, Memory, SearchFilters
from memoryd.store.base import Actor

if TYPE_CHECKING:
    from memoryd.engine import Engine

_NAME = re.compile(r"^[A-Za-z0-9_.\-/]{1,128}$")


def _codebase(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInput("codebase must be 1-128 characters of letters, digits, _ . - /")
    return name


def _files(files: list[str] | None) -> list[str]:
    out = [f.strip() for f in (files or []) if isinstance(f, str) and f.strip()]
    return list(dict.fromkeys(out))


def remember_pattern(
    engine: Engine, name: str, description: str, files: list[str] | None, codebase: str,
    *, actor: Actor | None = None,
) -> Memory:
    """Store a code pattern of a codebase (node_type ``pattern``, scope ``project:<codebase>``)."""
    codebase = _codebase(codebase)
    if not name or not name.strip():
        raise InvalidInput("name is empty")
    return engine.add(
        f"{name.strip()}: {description.strip()}",
        node_type="pattern",
        summary=name.strip(),
        tags=[f"codebase:{codebase}"],
        scope=f"project:{codebase}",
        metadata={"codebase": codebase, "name": name.strip(), "files": _files(files)},
        actor=actor,
    )


def remember_decision(
    engine: Engine, decision: str, rationale: str | None, alternatives: list[str] | None,
    files: list[str] | None, codebase: str, *, actor: Actor | None = None,
) -> Memory:
    """Store an architectural decision with its rationale and the alternatives considered."""
    codebase = _codebase(codebase)
    if not decision or not decision.strip():
        raise InvalidInput("decision is empty")
    parts = [decision.strip()]
    if rationale:
        parts.append(f"Rationale: {rationale.strip()}")
    alternatives = [a.strip() for a in alternatives or [] if a and a.strip()]
    if alternatives:
        parts.append("Alternatives considered: " + "; ".join(alternatives))
    return engine.add(
        "\n".join(parts),
        node_type="decision",
        summary=decision.strip()[:200],
        tags=[f"codebase:{codebase}"],
        scope=f"project:{codebase}",
        importance=0.7,
        metadata={"codebase": codebase, "files": _files(files), "rationale": rationale,
                  "alternatives": alternatives},
        actor=actor,
    )


def codebase_context(
    engine: Engine, codebase: str, files: list[str] | None = None, limit: int = 10
) -> CodebaseContext:
    """Patterns and decisions of a codebase touching ``files`` (all of them when no files),
    newest first, plus the intentions this context triggers."""
    codebase = _codebase(codebase)
    if not 1 <= limit <= 200:
        raise InvalidInput("limit must be between 1 and 200")
    wanted = _files(files)
    filters = SearchFilters(node_types=["pattern", "decision"], tags=[f"codebase:{codebase}"])
    now, page, offset = engine.clock(), 500, 0
    patterns: list[Memory] = []
    decisions: list[Memory] = []
    while len(patterns) < limit or len(decisions) < limit:
        batch = engine.store.list(filters, now=now, limit=page, offset=offset)
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
    intentions = check_intentions(engine, IntentionContext(codebase=codebase, files=wanted))
    return CodebaseContext(codebase=codebase, files=wanted, patterns=patterns,
                           decisions=decisions, intentions=intentions)
