"""Exceptions raised by memoryd, named after the condition.

    MemorydError
    ├── InvalidInput            bad arguments from a caller (ValueError)
    │   ├── EmptyContent
    │   ├── ContentTooLarge
    │   ├── InvalidFilter       an unknown or malformed search/list filter
    │   ├── ImportFormatError   a JSONL import line that cannot be read (has line_number)
    │   └── SecretDetected      content that looks like a credential
    ├── MemoryNotFound          no memory with that id (LookupError)
    ├── StoreError              the store cannot be used as asked
    │   ├── NotAMemorydStore    the path/URL is not a memoryd store
    │   ├── SchemaTooNew        written by a newer memoryd
    │   ├── ModelMismatch       vectors were made by another embedding model
    │   └── MaintenanceBusy     another process holds a maintenance lock
    └── EmbeddingError          the embedding provider failed
"""

from __future__ import annotations


class MemorydError(Exception):
    """Base class of every error memoryd raises on purpose."""


class InvalidInput(MemorydError, ValueError):
    """The caller passed something memoryd cannot accept."""


class EmptyContent(InvalidInput):
    """Memory content was empty or only whitespace."""


class ContentTooLarge(InvalidInput):
    """Memory content exceeded the configured size limit."""


class InvalidFilter(InvalidInput):
    """A search or list filter had an unknown name or an invalid value."""


class ImportFormatError(InvalidInput):
    """A line of an import file could not be read."""

    def __init__(self, message: str, line_number: int) -> None:
        super().__init__(f"line {line_number}: {message}")
        self.line_number = line_number


class SecretDetected(InvalidInput):
    """Content looked like it contained a credential."""

    def __init__(self, kinds: list[str]) -> None:
        names = ", ".join(kinds)
        super().__init__(
            f"content appears to contain a secret ({names}); remove it, or pass "
            "allow_secrets=true if storing it is intended"
        )
        self.kinds = kinds


class MemoryNotFound(MemorydError, LookupError):
    """No memory has the given id."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"no memory with id {memory_id!r}")
        self.memory_id = memory_id


class StoreError(MemorydError):
    """The store cannot be opened or used as asked."""


class NotAMemorydStore(StoreError):
    """The file or database exists but is not a memoryd store."""


class SchemaTooNew(StoreError):
    """The store was written by a newer version of memoryd."""


class ModelMismatch(StoreError):
    """The store's vectors were made by a different embedding model."""

    def __init__(self, store_model: str, configured_model: str) -> None:
        super().__init__(
            f"this store's vectors were made by {store_model!r}, but the configured "
            f"embedder is {configured_model!r}; mixing models would make old memories "
            f"invisible to semantic search. Run `memoryd reembed` to re-embed every "
            f"memory with {configured_model!r}, or configure {store_model!r} again."
        )
        self.store_model = store_model
        self.configured_model = configured_model


class MaintenanceBusy(StoreError):
    """Another process is running the same maintenance job on this store."""


class EmbeddingError(MemorydError):
    """The embedding provider failed or returned unusable vectors."""
