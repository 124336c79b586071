"""memoryd: a local-first cognitive memory for AI agents.

>>> import memoryd
>>> with memoryd.open() as mem:
...     mem.add("User prefers TypeScript", node_type="preference", tags=["lang"])
...     hits = mem.search("typescript preferences", limit=5)

Importing memoryd does not load the embedding model; it loads on first use.
"""

from __future__ import annotations


from memoryd.config import Settings
from memoryd.engine import Engine
from memoryd.errors import (
    ContentTooLarge,
    EmbeddingError,
    EmptyContent,
    ImportFormatError,
    InvalidFilter,
    InvalidInput,
    MaintenanceBusy,
    MemorydError,
    MemoryNotFound,
    ModelMismatch,
    NotAMemorydStore,
    SchemaTooNew,
    SecretDetected,
    StoreError,
)
from memoryd.models import HistoryEntry, Memory, SearchFilters, SearchHit
from memoryd.opening import open

__version__ = "0.1.0"

__all__ = [
    "ContentTooLarge",
    "EmbeddingError",
    "EmptyContent",
    "Engine",
    "HistoryEntry",
    "ImportFormatError",
    "InvalidFilter",
    "InvalidInput",
    "MaintenanceBusy",
    "Memory",
    "MemoryNotFound",
    "MemorydError",
    "ModelMismatch",
    "NotAMemorydStore",
    "SchemaTooNew",
    "SearchFilters",
    "SearchHit",
    "SecretDetected",
    "Settings",
    "StoreError",
    "open",
]


def __dir__() -> list[str]:
    return sorted(__all__ + ["__version__"])


