"""Operations under other systems' names, so agents built for them switch to memoryd unchanged.

* OpenClaw's memory tools (what its Active Memory sub-agent and memory plugins call):
  ``memory_search``, ``memory_get``, ``memory_forget`` (``memory_store`` is in
  :mod:`memoryd.operations.memories`). A memory appears as the file ``memoryd/<id>.md``.
* Vestige's argument names on ``search`` and ``smart_ingest`` (``min_similarity``,
  ``include_types``, ``exclude_types``, ``token_budget``, ``min_retention``,
  ``forceCreate``, ...), for the MCP ``vestige`` profile and the REST bridge.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models import NodeType, Strict
from memoryd.models.fields import QueryText
from memoryd.models.rules import Rules
from memoryd.operations.memories import IngestInput, IngestOutput, smart_ingest
from memoryd.operations.registry import Caller, operation
from memoryd.operations.search import SearchInput, SearchItem, SearchOutput
from memoryd.retrieval.context import CHARS_PER_TOKEN

if TYPE_CHECKING:
    from memoryd.engine import Engine

PATH_PREFIX = "memoryd/"
_PATH = re.compile(r"^(?:memoryd/)?([A-Za-z0-9_.:\-]{1,256}?)(?:\.md)?$")
SNIPPET_CHARS = 700


def memory_path(memory_id: str) -> str:
    """The path under which OpenClaw sees a memory."""
    return f"{PATH_PREFIX}{memory_id}.md"


# --- OpenClaw ------------------------------------------------------------------------
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
    hits = engine.search(data.query, data.maxResults, min_score=data.minScore or None)
    results = []
    for hit in hits:
        path = memory_path(hit.memory.id)
        text = hit.memory.content
        results.append(MemorySearchResult(
            path=path, startLine=1, endLine=text.count("\n") + 1, score=round(hit.score, 6),
            snippet=text[:SNIPPET_CHARS], citation=f"{path}#L1"))
    return MemorySearchOutput(results=results)


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
    match = _PATH.match(data.path.strip())
    text = ""
    if match:
        found = engine.find(match.group(1))
        if found is not None:
            lines = found.content.splitlines()
            start = (data.from_ or 1) - 1
            end = start + data.lines if data.lines else len(lines)
            text = "\n".join(lines[start:end])
    return MemoryGetOutput(path=data.path, text=text)


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
    memory_id = None
    if data.memoryId is not None:
        match = _PATH.match(data.memoryId.strip())
        memory_id = match.group(1) if match else data.memoryId
    deleted, candidates = engine.forget(memory_id=memory_id, query=data.query)
    return MemoryForgetOutput(deleted=deleted, candidates=[
        MemorySearchResult(path=memory_path(h.memory.id), startLine=1,
                           endLine=h.memory.content.count("\n") + 1, score=round(h.score, 6),
                           snippet=h.memory.content[:SNIPPET_CHARS],
                           citation=f"{memory_path(h.memory.id)}#L1")
        for h in candidates])


# --- Vestige -------------------------------------------------------------------------
class VestigeSearchInput(SearchInput):
    """Arguments of search, also under Vestige's names."""

    min_similarity: float | None = Field(None, ge=-1.0, le=1.0,
                                         description="Drop vector matches less similar than this.")
    min_retention: float | None = Field(None, ge=0.0, le=1.0,
                                        description="Drop memories retained less than this.")
    include_types: list[NodeType] | None = Field(None, max_length=64,
                                                 description="Same as node_types.")
    exclude_types: list[NodeType] | None = Field(None, max_length=64,
                                                 description="Leave out these types.")
    token_budget: int | None = Field(None, ge=50, le=100_000,
                                     description="Cut the results to about this many tokens.")
    context_topics: list[str] | None = Field(None, max_length=20,
                                             description="Topics added to the query.")
    retrieval_mode: Literal["precise", "balanced", "exhaustive"] | None = Field(
        None, description="precise: top few; balanced: the default; exhaustive: more results.")


@operation("vestige_search", title="Search memories (Vestige names)", input=VestigeSearchInput,
           output=SearchOutput, scope="read", idempotent=True,
           unscreened=("query", "context_topics"))
def vestige_search(engine: Engine, data: VestigeSearchInput, caller: Caller) -> SearchOutput:
    """Search long-term memory by meaning and keywords; accepts Vestige's argument names too."""
    query = " ".join([data.query, *(data.context_topics or [])])
    limit = {"precise": min(data.limit, 5), "exhaustive": min(100, data.limit * 3)}.get(
        data.retrieval_mode or "", data.limit)
    filters = data.filters()
    if data.include_types:
        filters = filters.model_copy(update={"node_types": data.include_types})
    hits = engine.search(query, limit, filters=filters, mode=data.mode, min_score=data.min_score,
                         mmr=data.mmr, session_key=data.session_key)
    hits = [h for h in hits
            if (data.min_similarity is None or h.semantic_similarity is None
                or h.semantic_similarity >= data.min_similarity)
            and (data.min_retention is None or (h.retention or 1.0) >= data.min_retention)
            and h.memory.node_type not in (data.exclude_types or [])]
    items = _within_budget([SearchItem.of(h, data.detail_level) for h in hits], data.token_budget)
    return SearchOutput.of_items(engine, data.query, items)


def _within_budget(items: list[SearchItem], budget: int | None) -> list[SearchItem]:
    if budget is None:
        return items
    kept, used = [], 0
    for item in items:
        used += len(item.content) // CHARS_PER_TOKEN + 20
        if used > budget and kept:
            break
        kept.append(item)
    return kept


class VestigeIngestInput(IngestInput):
    """Arguments of smart_ingest, also under Vestige's names."""

    forceCreate: bool | None = Field(None, description="Same as force_create.")


@operation("vestige_ingest", title="Store a memory (Vestige names)", input=VestigeIngestInput,
           output=IngestOutput, scope="write")
def vestige_ingest(engine: Engine, data: VestigeIngestInput, caller: Caller) -> IngestOutput:
    """Store something worth remembering (smart ingest); accepts Vestige's argument names too."""
    force = data.force_create or bool(data.forceCreate)
    fields = data.model_dump(exclude={"forceCreate"}, exclude_unset=True) | {"force_create": force}
    return smart_ingest(engine, IngestInput.model_validate(fields), caller)
