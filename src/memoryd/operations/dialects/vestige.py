"""Vestige's argument names over memoryd's ``search`` and ``smart_ingest``.

For the MCP ``vestige`` profile and the REST bridge: each input model is memoryd's own
with Vestige's names beside it, and each handler translates those names and calls memoryd's
operation.

===============  ====================  ====================================================
Vestige name     memoryd's operation   translated
===============  ====================  ====================================================
include_types    ``search``            node_types
context_topics   ``search``            words added to the query
retrieval_mode   ``search``            limit: precise ≤ 5, exhaustive × 3 (≤ 100)
min_similarity   ``search``            results less similar (vector side) are dropped
min_retention    ``search``            results retained less are dropped
exclude_types    ``search``            results of these types are dropped
token_budget     ``search``            results cut to about this many tokens
forceCreate      ``smart_ingest``      force_create
===============  ====================  ====================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from memoryd.models import NodeType
from memoryd.operations.memories import IngestInput, IngestOutput, smart_ingest
from memoryd.operations.registry import Caller, operation
from memoryd.operations.search import SearchInput, SearchItem, SearchOutput, search
from memoryd.retrieval.context import CHARS_PER_TOKEN

if TYPE_CHECKING:
    from memoryd.engine import Engine

#: The MCP ``vestige`` profile, and the tool names it binds to these operations.
PROFILE = ("search", "smart_ingest", "memory", "codebase", "intention")
OVERRIDES = {"search": "vestige_search", "smart_ingest": "vestige_ingest", "memory": "memory",
             "codebase": "codebase", "intention": "intention"}
_LIMITS = {"precise": lambda n: min(n, 5), "exhaustive": lambda n: min(100, n * 3)}


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

    def own(self) -> SearchInput:
        """memoryd's arguments for the same search (already valid: not validated again, so a
        query lengthened by its topics is not refused)."""
        given = self.model_fields_set & set(SearchInput.model_fields)
        own = SearchInput.model_construct(_fields_set=given,
                                          **{n: getattr(self, n) for n in SearchInput.model_fields})
        changes: dict[str, object] = {"query": " ".join([self.query, *(self.context_topics or [])])}
        if self.retrieval_mode in _LIMITS:
            changes["limit"] = _LIMITS[self.retrieval_mode](self.limit)
        if self.include_types:
            changes["node_types"] = self.include_types
        return own.model_copy(update=changes)

    def keeps(self, item: SearchItem) -> bool:
        """Whether a result passes the filters memoryd's search has no argument for."""
        return ((self.min_similarity is None or item.semantic_similarity is None
                 or item.semantic_similarity >= self.min_similarity)
                and (self.min_retention is None or (item.retention or 1.0) >= self.min_retention)
                and item.node_type not in (self.exclude_types or []))


@operation("vestige_search", title="Search memories (Vestige names)", input=VestigeSearchInput,
           output=SearchOutput, scope="read", idempotent=True,
           unscreened=("query", "context_topics"))
def vestige_search(engine: Engine, data: VestigeSearchInput, caller: Caller) -> SearchOutput:
    """Search long-term memory by meaning and keywords; accepts Vestige's argument names too."""
    found = search(engine, data.own(), caller)
    items = _within_budget([i for i in found.results if data.keeps(i)], data.token_budget)
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
