"""What search and list take (filters) and give back (hits), and the candidates a store yields."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models.fields import (
    TIMEFRAMES,
    Category,
    DomainNames,
    Label,
    NodeType,
    Scope,
    Tags,
    Tier,
    Timeframe,
    UTCDateTime,
)
from memoryd.models.memory import Memory
from memoryd.models.text import NOT_BLANK, Matches


class SearchFilters(BaseModel):
    """Filters shared by search and list. Unknown names or values are rejected."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    timeframe: Timeframe | None = Field(None, description="Only memories created within this "
                                        "window: 1h, 24h, 7d, 30d, 90d or all.")
    since: UTCDateTime | None = Field(None, description="Only memories created at or after.")
    until: UTCDateTime | None = Field(None, description="Only memories created at or before.")
    node_types: list[NodeType] | None = Field(None, max_length=64,
                                              description="Only these node types.")
    categories: list[Category] | None = Field(None, max_length=64,
                                              description="Only these categories.")
    tags: Tags | None = Field(None, description="Only memories with these tags.")
    tags_mode: Literal["any", "all"] = Field("any", description="any: one of the tags; all: "
                                             "every tag.")
    scope: Scope | None = None
    agent_id: Label | None = Field(None, description="Only memories stored by this agent.")
    session_id: Label | None = Field(None, description="Only memories of this session.")
    tiers: list[Tier] | None = Field(None, max_length=3,
                                     description="Only these tiers (hot, warm, cold).")
    domains: DomainNames | None = Field(None, description="Only memories in any of these "
                                        "domains.")
    speaker: Annotated[Label, Matches(NOT_BLANK, "speaker must name someone")] | None = Field(
        None, description=(
            "Only memories said by this party: user (or human, me), assistant (or ai, bot, "
            "agent, model), or a name, case-insensitive; a name also finds fuller and shorter "
            "ones ('caroline' finds 'Caroline Smith' and 'Caroline Smith' finds 'Caroline'). "
            "A memory's speaker is its metadata's speaker, role or author, else a 'Name:' "
            "prefix of its content."
        ))
    include_superseded: bool = Field(False, description="Also memories that were superseded "
                                     "or expired.")
    as_of: UTCDateTime | None = Field(None, description="Time travel: only memories recorded by "
                                      "then and valid then (valid_from <= as_of < valid_until), "
                                      "superseded ones included.")
    graph: bool | None = Field(None, description="true: only knowledge-graph nodes; false: "
                               "leave them out.")

    @model_validator(mode="after")
    def _range(self) -> SearchFilters:
        if self.since and self.until and self.since > self.until:
            raise ValueError("since must not be after until")
        return self

    def time_bounds(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """The effective [since, until] window, combining timeframe and explicit bounds."""
        since = self.since
        window = TIMEFRAMES[self.timeframe] if self.timeframe else None
        if window is not None:
            since = max(since, now - window) if since else now - window
        return since, self.until


FILTER_NAMES: frozenset[str] = frozenset(SearchFilters.model_fields)


class SearchHit(BaseModel):
    """One search result: the memory, its final score and the parts it came from."""

    memory: Memory
    score: float
    fused_score: float = 0.0
    keyword_rank: int | None = None
    keyword_score: float | None = None
    semantic_rank: int | None = None
    semantic_similarity: float | None = None
    retention: float | None = None
    association: bool = False


@dataclass(frozen=True)
class KeywordHit:
    """A keyword (BM25) candidate from a store: higher score is better."""

    memory_id: str
    score: float


@dataclass(frozen=True)
class VectorHit:
    """A vector candidate from a store: cosine similarity in [-1, 1]."""

    memory_id: str
    similarity: float
