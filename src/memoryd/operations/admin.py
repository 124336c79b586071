"""Maintenance and administration: consolidate, gc, stats, health, API keys, audit ledger."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memoryd import __version__
from memoryd.errors import MemorydError
from memoryd.ledger import BrokenLink, LedgerEntry
from memoryd.models import ApiKey, ConsolidationReport, GcReport
from memoryd.keys import AGENT_ID_PATTERN, LABEL_PATTERN, LABEL_RULE
from memoryd.models.fields import DomainNames, Scope
from memoryd.models.text import Matches
from memoryd.operations.registry import Caller, NoInput, Strict, operation

if TYPE_CHECKING:
    from memoryd.engine import Engine


class ConsolidateInput(Strict):
    dry_run: bool = Field(False, description="Report what would change without changing anything.")


@operation(
    "consolidate",
    title="Consolidate memory",
    input=ConsolidateInput,
    output=ConsolidationReport,
    scope=lambda d: "read" if d.dry_run else "write",
    bound_ok=False,
    tools=("consolidate",),
)
def consolidate(engine: Engine, data: ConsolidateInput, caller: Caller) -> ConsolidationReport:
    """Tidy memory like sleep does: move faded memories to colder tiers, merge near-duplicates,
    link related memories. Never deletes (merged memories are archived). Use dry_run to preview."""
    return engine.admin.consolidate(dry_run=data.dry_run)


class GcInput(Strict):
    min_retention: float = Field(0.1, ge=0.0, le=1.0)
    max_age_days: float | None = Field(None, gt=0)
    dry_run: bool = True


@operation(
    "gc",
    title="Garbage-collect faded memories",
    input=GcInput,
    output=GcReport,
    scope="admin",
    destructive=True,
    bound_ok=False,
)
def gc(engine: Engine, data: GcInput, caller: Caller) -> GcReport:
    """Delete memories whose retention fell below min_retention (dry run by default)."""
    return engine.admin.gc(
        min_retention=data.min_retention, max_age_days=data.max_age_days, dry_run=data.dry_run
    )


class StatsOutput(BaseModel):
    """Counts and facts about the store and the embedder."""

    model_config = ConfigDict(extra="allow")

    memories: int
    by_node_type: dict[str, int] = {}
    by_tier: dict[str, int] = {}
    embedding_model: str | None = None
    embedder: dict[str, Any] = {}


@operation(
    "stats",
    title="Memory statistics",
    input=NoInput,
    output=StatsOutput,
    scope="read",
    read_only=True,
    idempotent=True,
    bound_ok=False,
    tools=("stats",),
)
def stats(engine: Engine, data: NoInput, caller: Caller) -> StatsOutput:
    """How many memories there are, by type and tier, and which embedding model is in use."""
    return StatsOutput.model_validate(engine.stats())


class HealthOutput(BaseModel):
    """Whether the store answers and whether the embedding model is loaded."""

    status: Literal["ok", "unhealthy"]
    version: str
    store: dict[str, Any]
    embedder: dict[str, Any]


def health_report(engine: Engine) -> HealthOutput:
    """Deep health: the store answers a query; the embedder's state is reported."""
    embedder = {"model_id": engine.embedder.model_id, "loaded": engine.embedder.loaded}
    try:
        store = engine.admin.health()
    except MemorydError as exc:
        return HealthOutput(
            status="unhealthy",
            version=__version__,
            store={"ok": False, "error": str(exc)},
            embedder=embedder,
        )
    return HealthOutput(status="ok", version=__version__, store=store, embedder=embedder)


def is_ready(engine: Engine) -> bool:
    """Whether a search would answer without waiting: the store answers, its vector index is
    loaded (an SQLite store loads it in the background) and so is the embedding model."""
    try:
        store = engine.admin.health()
    except MemorydError:
        return False
    return engine.embedder.loaded and bool(store.get("vectors_loaded", True))


@operation(
    "health",
    title="Health",
    input=NoInput,
    output=HealthOutput,
    scope="read",
    read_only=True,
    idempotent=True,
    tools=("health",),
)
def health(engine: Engine, data: NoInput, caller: Caller) -> HealthOutput:
    """Whether memoryd's store answers and its embedding model is loaded."""
    return health_report(engine)


# --- keys (admin) -------------------------------------------------------------------
class KeyInfo(BaseModel):
    """An API key as shown to people: never the secret or its hash."""

    id: str
    label: str
    prefix: str
    scopes: list[str]
    memory_scope: str | None
    agent_id: str | None
    domains: list[str] | None = None
    created_at: datetime
    last_used: datetime | None
    revoked_at: datetime | None

    @classmethod
    def of(cls, key: ApiKey) -> KeyInfo:
        return cls.model_validate(key.model_dump(exclude={"key_hash"}))


class KeyList(BaseModel):
    keys: list[KeyInfo]


class KeyCreateInput(Strict):
    label: Annotated[str, Matches(LABEL_PATTERN, LABEL_RULE)] = Field(max_length=128)
    scopes: list[Literal["read", "write", "admin"]] = Field(default=["read", "write"], min_length=1,
                                                            max_length=3)
    memory_scope: Scope | None = Field(
        None, description="Bind the key to 'user' or 'project:<name>'."
    )
    agent_id: Annotated[str, Matches(AGENT_ID_PATTERN, "agent_id must be 1-256 printable "
                                     "ASCII characters without blanks around them")] | None = (
        Field(None, max_length=256, description="Bind the key to an agent."))
    domains: DomainNames | None = Field(
        None, description="Limit the key to memories in these domains (e.g. ['home'])."
    )


class KeyCreated(BaseModel):
    key: KeyInfo
    secret: str = Field(description="The key itself: shown once, store it now.")


class KeyIdInput(Strict):
    id: str = Field(min_length=1, max_length=64)


@operation(
    "keys_list",
    title="List API keys",
    input=NoInput,
    output=KeyList,
    scope="admin",
    read_only=True,
    idempotent=True,
    bound_ok=False,
)
def keys_list(engine: Engine, data: NoInput, caller: Caller) -> KeyList:
    """Every API key (label, prefix, scopes, last use); never the secrets."""
    return KeyList(keys=[KeyInfo.of(k) for k in engine.admin.list_keys()])


@operation(
    "keys_create",
    title="Create an API key",
    input=KeyCreateInput,
    output=KeyCreated,
    scope="admin",
    bound_ok=False,
    tools=("keys_create",),
)
def keys_create(engine: Engine, data: KeyCreateInput, caller: Caller) -> KeyCreated:
    """Create an API key (optionally bound to a scope or agent, or limited to domains); the
    secret is in the response and is never shown again."""
    made = engine.admin.create_key(
        data.label,
        scopes=data.scopes,
        memory_scope=data.memory_scope,
        agent_id=data.agent_id,
        domains=data.domains,
    )
    return KeyCreated(key=KeyInfo.of(made.key), secret=made.secret)


@operation(
    "keys_revoke",
    title="Revoke an API key",
    input=KeyIdInput,
    output=KeyInfo,
    scope="admin",
    destructive=True,
    idempotent=True,
    bound_ok=False,
)
def keys_revoke(engine: Engine, data: KeyIdInput, caller: Caller) -> KeyInfo:
    """Revoke an API key by id or prefix; it stops working immediately."""
    return KeyInfo.of(engine.admin.revoke_key(data.id))


# --- audit ledger -------------------------------------------------------------------
class LedgerPageInput(Strict):
    after: int = Field(0, ge=0, description="Entries after this position.")
    limit: int = Field(100, ge=1, le=1000)


class LedgerPage(BaseModel):
    """Ledger entries (content appears only as its SHA-256)."""

    entries: list[LedgerEntry]


class LedgerVerification(BaseModel):
    """The result of re-hashing the whole chain."""

    ok: bool
    entries: int
    head_seq: int | None
    head_hash: str | None
    broken: BrokenLink | None


@operation(
    "ledger",
    title="Read the audit ledger",
    input=LedgerPageInput,
    output=LedgerPage,
    scope="admin",
    read_only=True,
    idempotent=True,
    bound_ok=False,
)
def ledger_page(engine: Engine, data: LedgerPageInput, caller: Caller) -> LedgerPage:
    """Entries of the hash-chained audit ledger after a position, oldest first."""
    entries = engine.admin.ledger(after=data.after, limit=data.limit)
    return LedgerPage(entries=entries)


@operation(
    "ledger_verify",
    title="Verify the audit ledger",
    input=NoInput,
    output=LedgerVerification,
    scope="admin",
    read_only=True,
    idempotent=True,
    bound_ok=False,
)
def ledger_verify(engine: Engine, data: NoInput, caller: Caller) -> LedgerVerification:
    """Re-hash the whole audit ledger; report the head and the first broken link, if any."""
    report = engine.admin.verify_ledger()
    return LedgerVerification(ok=report.ok, entries=report.entries, head_seq=report.head_seq,
                              head_hash=report.head_hash, broken=report.broken)
