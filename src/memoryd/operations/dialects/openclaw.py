"""OpenClaw's memory tools over memoryd's own operations.

What OpenClaw's Active Memory sub-agent and its memory plugins call. A memory appears as the
file ``memoryd/<id>.md``; ``memory_store`` is AgentOS's (:mod:`.agentos`).

============  ===================  =========================================================
tool          memoryd's verb       translated
============  ===================  =========================================================
memory_search ``search``           maxResults → limit, minScore → min_score; results as files
memory_get    ``engine.find``      a path → an id; lines ``from`` .. ``from + lines``
memory_forget ``engine.forget``    a path → an id; candidates as files
============  ===================  =========================================================
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models import Strict
from memoryd.models.fields import QueryText
from memoryd.models.rules import Rules
from memoryd.operations.registry import Caller, operation
from memoryd.operations.search import SearchInput, search

if TYPE_CHECKING:
    from memoryd.engine import Engine

#: The MCP ``openclaw`` profile: OpenClaw's memory tools (``memory_store`` is AgentOS's).
PROFILE = ("memory_search", "memory_get", "memory_store", "memory_forget")
PATH_PREFIX = "memoryd/"
_PATH = re.compile(r"^(?:memoryd/)?([A-Za-z0-9_.:\-]{1,256}?)(?:\.md)?$")
SNIPPET_CHARS = 700


def memory_path(memory_id: str) -> str:
    """The path under which OpenClaw sees a memory."""
    return f"{PATH_PREFIX}{memory_id}.md"


def memory_id(path: str) -> str | None:
    """The id of the memory a path (or an id) names; None when it names none."""
    match = _PATH.match(path.strip())
    return match.group(1) if match else None


class MemorySearchInput(Strict):
    """Arguments of memory_search (OpenClaw)."""

    query: QueryText = Field(description="What to look for.")
    maxResults: int = Field(6, ge=1, le=50, description="How many results at most.")
    minScore: float = Field(0.0, ge=0.0, le=1.0,
                            description="Drop results with a relevance score below this (0..1).")
    corpus: Literal["memory", "all"] | None = Field(
        None, description="Accepted for compatibility; memoryd searches its memories.")


class MemorySearchResult(BaseModel):
    path: str
    startLine: int
    endLine: int
    score: float
    snippet: str
    source: str = "memory"
    citation: str

    @classmethod
    def of(cls, memory_id: str, content: str, score: float) -> MemorySearchResult:
        """A memory as a file: its whole content is the file, its start the snippet."""
        path = memory_path(memory_id)
        return cls(path=path, startLine=1, endLine=content.count("\n") + 1,
                   score=round(score, 6), snippet=content[:SNIPPET_CHARS],
                   citation=f"{path}#L1")


class MemorySearchOutput(BaseModel):
    """Results as OpenClaw's memory tools return them."""

    results: list[MemorySearchResult]

    def as_text(self) -> str:
        if not self.results:
            return "No memories found."
        return "\n".join(f"{r.path} ({r.score:.2f}): {r.snippet}" for r in self.results)


@operation("memory_search", title="Search memory (OpenClaw)", input=MemorySearchInput,
           output=MemorySearchOutput, scope="read", idempotent=True, tools=("memory_search",),
           unscreened=("query",))
def memory_search(engine: Engine, data: MemorySearchInput, caller: Caller) -> MemorySearchOutput:
    """Search long-term memory; each result is a memory shown as a file path with a snippet.
    Read the whole memory with memory_get."""
    own = SearchInput(query=data.query, limit=data.maxResults, min_score=data.minScore or None,
                      detail_level="full")
    found = search(engine, own, caller)
    return MemorySearchOutput(results=[MemorySearchResult.of(item.id, item.content, item.score)
                                       for item in found.results])


class MemoryGetInput(Strict):
    """Arguments of memory_get (OpenClaw)."""

    path: str = Field(min_length=1, max_length=300,
                      description="A path from memory_search (memoryd/<id>.md) or a memory id.")
    from_: int | None = Field(None, alias="from", ge=1, description="First line (1-based).")
    lines: int | None = Field(None, ge=1, le=10_000, description="How many lines.")

    model_config = Strict.model_config | {"populate_by_name": True}


class MemoryGetOutput(BaseModel):
    path: str
    text: str

    def as_text(self) -> str:
        return self.text


@operation("memory_get_path", title="Read a memory (OpenClaw)", input=MemoryGetInput,
           output=MemoryGetOutput, scope="read", read_only=True, idempotent=True,
           tools=("memory_get",))
def memory_get_path(engine: Engine, data: MemoryGetInput, caller: Caller) -> MemoryGetOutput:
    """The text of a memory by the path memory_search gave (empty text when there is none)."""
    named = memory_id(data.path)
    found = engine.find(named) if named is not None else None
    if found is None:
        return MemoryGetOutput(path=data.path, text="")
    lines = found.content.splitlines()
    start = (data.from_ or 1) - 1
    end = start + data.lines if data.lines else len(lines)
    return MemoryGetOutput(path=data.path, text="\n".join(lines[start:end]))


_ONE_OF = Rules(exactly_one=("memoryId", "query"), message="give memoryId or query")


class MemoryForgetInput(Strict):
    """Arguments of memory_forget (OpenClaw, memory-lancedb)."""

    model_config = ConfigDict(json_schema_extra=_ONE_OF.schema)

    memoryId: str | None = Field(None, min_length=1, max_length=300,
                                 description="The memory to delete (an id or memoryd/<id>.md).")
    query: str | None = Field(None, min_length=1, max_length=4096,
                              description="Delete the one memory that clearly matches this.")

    @model_validator(mode="after")
    def _one(self) -> MemoryForgetInput:
        _ONE_OF.check(self)
        return self


class MemoryForgetOutput(BaseModel):
    deleted: str | None = Field(description="The id of the deleted memory, if one was deleted.")
    candidates: list[MemorySearchResult] = Field(
        description="When the query matched no single memory clearly: the closest ones.")

    def as_text(self) -> str:
        if self.deleted:
            return f"Deleted {memory_path(self.deleted)}."
        if not self.candidates:
            return "No matching memory."
        return "Several memories match; forget one by memoryId:\n" + "\n".join(
            f"{c.path}: {c.snippet[:120]}" for c in self.candidates)


@operation("memory_forget", title="Forget a memory (OpenClaw)", input=MemoryForgetInput,
           output=MemoryForgetOutput, scope="write", destructive=True,
           tools=("memory_forget",), unscreened=("query",))
def memory_forget(engine: Engine, data: MemoryForgetInput, caller: Caller) -> MemoryForgetOutput:
    """Delete a memory by id, or the single memory that clearly matches a query (otherwise the
    closest ones are listed and nothing is deleted)."""
    given = data.memoryId
    target = None if given is None else (memory_id(given) or given)
    deleted, candidates = engine.forget(memory_id=target, query=data.query)
    return MemoryForgetOutput(deleted=deleted, candidates=[
        MemorySearchResult.of(h.memory.id, h.memory.content, h.score) for h in candidates])
