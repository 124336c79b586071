"""AgentOS's memory tools (also OpenClaw's and memory-lancedb's) over memoryd's own operations.

=============  ===================  ========================================================
tool           memoryd's operation  translated
=============  ===================  ========================================================
memory_store   ``smart_ingest``     detail (or text, or summary) → content; summary kept when
                                    it differs from the content
memory_recall  ``search``           timeframe ``all`` → none; only likely relevant results
                                    (the recall threshold); category: a category glob or a
                                    node type
=============  ===================  ========================================================
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from pydantic import Field, model_validator

from memoryd.models import Strict, Timeframe
from memoryd.models.fields import Category, Importance, QueryText, Summary, Tags
from memoryd.operations.memories import IngestInput, IngestOutput, smart_ingest
from memoryd.operations.registry import Caller, operation
from memoryd.operations.search import SearchInput, SearchOutput, search

if TYPE_CHECKING:
    from memoryd.engine import Engine

STORE, RECALL = "memory_store", "memory_recall"
#: The tools, in the order agents see them (after memoryd's own ``memory``).
TOOLS = (STORE, RECALL)


class MemoryStoreInput(Strict):
    """Arguments of memory_store (the AgentOS / OpenClaw memory tool)."""

    summary: Summary | None = Field(None, description="One line: what to remember.")
    detail: str | None = Field(None, description="The full text (defaults to summary).")
    text: str | None = Field(None, description="Alias of detail (memory-lancedb's name).")
    category: Category | None = Field(None, description="e.g. conversation, diagnosis, error.")
    tags: Tags = Field(default_factory=list)
    importance: Importance | None = None

    @model_validator(mode="after")
    def _some_text(self) -> MemoryStoreInput:
        if not any(v and v.strip() for v in (self.summary, self.detail, self.text)):
            raise ValueError("give summary, detail or text")
        return self

    def own(self) -> IngestInput:
        """memoryd's arguments: the text as content, the summary only when it says more."""
        content = (self.detail or self.text or self.summary or "").strip()
        summary = self.summary.strip() if self.summary and self.summary.strip() != content else None
        given = {"content": content, "summary": summary, "category": self.category,
                 "tags": self.tags, "importance": self.importance}
        # Not validated again: the fields are of smart_ingest's types already; the engine
        # checks the content (EmptyContent when nothing in it shows), as it always did here.
        return IngestInput.model_construct(**{k: v for k, v in given.items() if v is not None})


@operation(STORE, title="Store a memory (AgentOS)", input=MemoryStoreInput, output=IngestOutput,
           scope="write", tools=(STORE,))
def memory_store(engine: Engine, data: MemoryStoreInput, caller: Caller) -> IngestOutput:
    """Explicitly store something important in long-term memory: a summary line plus optional
    detail, a category and tags. Near-duplicates are merged rather than stored twice."""
    return smart_ingest(engine, data.own(), caller)


class MemoryRecallInput(Strict):
    """Arguments of memory_recall (the AgentOS / OpenClaw memory tool)."""

    query: QueryText = Field(description="What to search for.")
    timeframe: Timeframe = Field("all", description="1h, 24h, 7d, 30d, 90d or all.")
    category: str | None = Field(
        None, max_length=128, description="Filter: a category or node type; 'system.*' globs."
    )
    limit: int = Field(6, ge=1, le=50)


@operation(RECALL, title="Recall memories (AgentOS)", input=MemoryRecallInput,
           output=SearchOutput, scope="read", read_only=True, idempotent=True, tools=(RECALL,),
           unscreened=("query",))
def memory_recall(engine: Engine, data: MemoryRecallInput, caller: Caller) -> SearchOutput:
    """Search memory for past events, diagnoses, decisions, errors and preferences, optionally
    within a timeframe (1h..90d, all) and a category (e.g. error, diagnosis, system.*). Only
    memories likely relevant are returned (none when nothing is)."""
    window = {} if data.timeframe == "all" else {"timeframe": data.timeframe}
    fetch = data.limit if data.category is None else min(100, data.limit * 5)
    found = search(engine, SearchInput(query=data.query, limit=fetch, **window,
                                       min_score=engine.settings.recall_threshold), caller)
    items = found.results
    if data.category is not None:
        pattern = data.category.lower()
        items = [i for i in items
                 if fnmatch.fnmatchcase((i.category or "").lower(), pattern)
                 or i.node_type == pattern][: data.limit]
    return SearchOutput.of_items(engine, data.query, items)
