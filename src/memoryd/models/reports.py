"""Reports and records beside the memories: store statistics, consolidation and garbage
collection reports, codebase context, API keys."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from memoryd.models.intentions import Intention
from memoryd.models.memory import Memory

class StoreStats(BaseModel):
    """Counts and facts about a store."""

    url: str
    backend: str
    memories: int
    by_node_type: dict[str, int]
    by_tier: dict[str, int]
    vectors: int
    embedding_model: str | None
    embedding_dims: int | None
    last_seq: int
    schema_version: int
    size_bytes: int | None = None


class ApiKey(BaseModel):
    """A stored API key: only its hash is kept."""

    id: str
    label: str
    prefix: str
    key_hash: str
    scopes: list[Literal["read", "write", "admin"]]
    memory_scope: str | None = None
    agent_id: str | None = None
    domains: list[str] | None = None  # the domains it is limited to; None = every domain
    created_at: datetime
    last_used: datetime | None = None
    revoked_at: datetime | None = None


class ConsolidationReport(BaseModel):
    """What a consolidation run changed (or would change, in a dry run)."""

    dry_run: bool
    started_at: datetime
    finished_at: datetime
    examined: int = 0
    tier_changes: dict[str, int] = Field(default_factory=dict)
    archived: list[str] = Field(default_factory=list)
    merged: list[list[str]] = Field(default_factory=list)
    new_edges: int = 0
    domain_proposals: list[str] = Field(default_factory=list, description="Proposals this run's "
                                        "re-clustering recorded (every Nth run; never applied).")
    report_id: int | None = None


class GcReport(BaseModel):
    """Memories a garbage collection removed (or would remove)."""

    dry_run: bool
    min_retention: float
    max_age_days: float | None
    candidates: list[str]
    deleted: int


class CodebaseContext(BaseModel):
    """Patterns and decisions recorded for a codebase, relevant to some files."""

    codebase: str
    files: list[str]
    patterns: list[Memory]
    decisions: list[Memory]
    intentions: list[Intention]
