"""``engine.codebase``: codebase memory — the patterns and decisions of a codebase, and
what touches given files of it.

    >>> mem.codebase.remember_decision("Use SQLite WAL", "readers never block", None,
    ...                                ["src/db.py"], "shop")
    >>> mem.codebase.context("shop", ["src/db.py"]).decisions
"""

from __future__ import annotations

from memoryd.engine.codebase import memory as codebase_memory
from memoryd.engine.context import EngineContext
from memoryd.models import CodebaseContext, Memory


class Codebase:
    """Codebase memory of one engine, as its caller sees it."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx

    def remember_pattern(self, name: str, description: str, files: list[str] | None,
                         codebase: str) -> Memory:
        """Record a code pattern of a codebase."""
        return codebase_memory.remember_pattern(self._ctx, name, description, files, codebase)

    def remember_decision(self, decision: str, rationale: str | None,
                          alternatives: list[str] | None, files: list[str] | None,
                          codebase: str) -> Memory:
        """Record an architectural decision with its rationale and alternatives."""
        return codebase_memory.remember_decision(self._ctx, decision, rationale, alternatives,
                                                 files, codebase)

    def context(self, codebase: str, files: list[str] | None = None,
                limit: int = 10) -> CodebaseContext:
        """Patterns, decisions and intentions that touch the given files of a codebase."""
        return codebase_memory.codebase_context(self._ctx, codebase, files, limit)

