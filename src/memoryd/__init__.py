"""memoryd: a local-first cognitive memory for AI agents.

>>> import memoryd
>>> with memoryd.open() as mem:
...     mem.add("User prefers TypeScript", node_type="preference", tags=["lang"])
...     hits = mem.search("typescript preferences", limit=5)

Importing memoryd does not load the embedding model; it loads on first use. Every type the
engine's methods take or return is importable from here.
"""

from __future__ import annotations

from memoryd.cognition.extraction import Message
from memoryd.cognition.importance import ImportanceScore
from memoryd.config import Settings
from memoryd.engine import Access, Engine
from memoryd.engine.admin.consolidation import ConsolidationSchedule
from memoryd.engine.admin.transfer import ImportReport
from memoryd.engine.memory.capture import CaptureResult, Skipped
from memoryd.engine.memory.recall import Recalled
from memoryd.errors import (
    ApiKeyError,
    ChatError,
    ContentTooLarge,
    DomainNotFound,
    EmbeddingError,
    EmptyContent,
    Forbidden,
    ImportFormatError,
    InvalidFilter,
    InvalidInput,
    InvalidKey,
    KeyNotFound,
    MaintenanceBusy,
    MemorydError,
    MemoryNotFound,
    ModelMismatch,
    NoKeysConfigured,
    NotAMemorydStore,
    SchemaTooNew,
    SecretDetected,
    SecretInFields,
    StoreError,
    TaskNotFound,
)
from memoryd.keys import CreatedKey
from memoryd.ledger import BrokenLink, LedgerEntry, LedgerReport
from memoryd.models import (
    ApiKey,
    CodebaseContext,
    ConsolidationReport,
    Domain,
    DomainProposal,
    DomainsReport,
    Edge,
    GcReport,
    HistoryEntry,
    IngestResult,
    Intention,
    IntentionTrigger,
    Memory,
    MemoryPatch,
    MemoryStateReport,
    Neighbour,
    Neighbourhood,
    NewMemory,
    PlanStep,
    SchedulingState,
    SearchFilters,
    SearchHit,
    Task,
    TaskMessage,
    TaskOutcome,
    TaskReport,
    WaitInfo,
)
from memoryd.models.views import ChangeFeed, MemoryGraph, Overview, RetentionCurve, Timeline
from memoryd.opening import open
from memoryd.store.base import Actor

__version__ = "0.1.0"

__all__ = [
    "Access", "Actor", "ApiKey", "ApiKeyError", "BrokenLink", "CaptureResult", "ChangeFeed",
    "ChatError", "CodebaseContext", "ConsolidationReport", "ConsolidationSchedule",
    "ContentTooLarge", "CreatedKey", "Domain", "DomainNotFound", "DomainProposal",
    "DomainsReport", "Edge", "EmbeddingError", "EmptyContent", "Engine", "Forbidden",
    "GcReport", "HistoryEntry", "ImportFormatError", "ImportReport", "ImportanceScore",
    "IngestResult", "Intention", "IntentionTrigger", "InvalidFilter", "InvalidInput",
    "InvalidKey", "KeyNotFound", "LedgerEntry", "LedgerReport", "MaintenanceBusy", "Memory",
    "MemoryGraph", "MemoryNotFound", "MemoryPatch", "MemoryStateReport", "MemorydError",
    "Message", "ModelMismatch", "Neighbour", "Neighbourhood", "NewMemory", "NoKeysConfigured",
    "NotAMemorydStore", "Overview", "PlanStep", "Recalled", "RetentionCurve", "SchedulingState",
    "SchemaTooNew", "SearchFilters", "SearchHit", "SecretDetected", "SecretInFields",
    "Settings", "Skipped", "StoreError", "Task", "TaskMessage", "TaskNotFound", "TaskOutcome",
    "TaskReport", "Timeline", "WaitInfo", "open",
]


def __dir__() -> list[str]:
    return sorted(__all__ + ["__version__"])
