"""Exceptions raised by memoryd, named after the condition.

    MemorydError
    ├── InvalidInput            bad arguments from a caller (ValueError)
    │   ├── EmptyContent
    │   ├── ContentTooLarge
    │   ├── InvalidFilter       an unknown or malformed search/list filter
    │   ├── ImportFormatError   a JSONL import line that cannot be read (has line_number)
    │   ├── Conflict            valid, but not in the state it is in (a task that already ended)
    │   ├── PathNotFound        a directory it names does not exist (LookupError)
    │   └── SecretDetected      content that looks like a credential
    │       └── SecretInFields  ... naming each field and kind (never the value)
    ├── Forbidden               the caller may not do this, or not to that memory (PermissionError)
    ├── MemoryNotFound          no memory with that id (LookupError)
    │   └── NodeNotFound        no knowledge-graph node with that id in the caller's graphs
    ├── TaskNotFound            no task with that id that the caller may see (LookupError)
    ├── IntentionNotFound       no intention with that id that the caller may see (LookupError)
    ├── DomainNotFound          no domain or proposal with that id or name (LookupError)
    ├── ApiKeyError
    │   ├── InvalidKey          a presented key is unknown, malformed or revoked
    │   ├── KeyNotFound         no key has that id or prefix (LookupError)
    │   └── NoKeysConfigured    a server would start that nobody could use
    ├── StoreError              the store cannot be used as asked
    │   ├── NotAMemorydStore    the path/URL is not a memoryd store
    │   ├── SchemaTooNew        written by a newer memoryd
    │   ├── ModelMismatch       vectors were made by another embedding model
    │   └── MaintenanceBusy     another process holds a maintenance lock
    ├── EmbeddingError          the embedding provider failed
    └── ChatError               an optional chat model (LLM) failed or answered unusably
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


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


class Conflict(InvalidInput):
    """The request is valid, but what it acts on is not in a state that allows it (a task that
    already ended): HTTP 409."""


class PathNotFound(InvalidInput, LookupError):
    """A directory the request names (a project's root) does not exist: HTTP 404."""


class SecretDetected(InvalidInput):
    """A field looked like it contained a credential (the message never repeats it)."""

    def __init__(self, kinds: list[str], fields: list[str] | None = None) -> None:
        names = ", ".join(kinds)
        where = ", ".join(fields or ["content"])
        super().__init__(
            f"{where} appears to contain a secret ({names}); remove it, or pass "
            "allow_secrets=true if storing it is intended"
        )
        self.kinds = kinds
        self.fields = fields or ["content"]


class SecretInFields(SecretDetected):
    """A write carried suspected credentials; the message names each kind and field, never
    the value (``findings`` keeps the details: field path, kind, span)."""

    def __init__(self, findings: list[Any]) -> None:
        super().__init__(list(dict.fromkeys(f.kind for f in findings)),
                         list(dict.fromkeys(f.field for f in findings)))
        self.findings = findings
        places = list(dict.fromkeys(f"{f.field} ({f.kind})" for f in findings))
        listed = ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")
        self.args = (
            f"{listed}: looks like a secret; remove it, or pass allow_secrets=true if storing "
            "it is intended",
        )


class Forbidden(MemorydError, PermissionError):
    """The caller's key does not allow this operation (or this scope/agent)."""


class MemoryNotFound(MemorydError, LookupError):
    """No memory has the given id."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"no memory with id {memory_id!r}")
        self.memory_id = memory_id


class TaskNotFound(MemorydError, LookupError):
    """No task has the given id (or the caller may not see it)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"no task with id {task_id!r}")
        self.task_id = task_id


class IntentionNotFound(MemorydError, LookupError):
    """No intention has the given id (or the caller may not see it)."""

    def __init__(self, intention_id: str) -> None:
        super().__init__(f"no intention with id {intention_id!r}")
        self.intention_id = intention_id


class NodeNotFound(MemoryNotFound):
    """No knowledge-graph node has the given id in the graphs the caller sees."""

    def __init__(self, node_id: str, scopes: list[str]) -> None:
        MemorydError.__init__(self, f"no node {node_id!r} in {', '.join(scopes) or 'any graph'}")
        self.memory_id = node_id


class DomainNotFound(MemorydError, LookupError):
    """No domain (or domain proposal) has the given id or name."""


class ApiKeyError(MemorydError):
    """Base of the API key errors."""


class InvalidKey(ApiKeyError):
    """The presented key is unknown, malformed or revoked."""


class KeyNotFound(ApiKeyError, LookupError):
    """No key has that id or prefix."""


class NoKeysConfigured(ApiKeyError):
    """A server would start with no usable key and without the anonymous opt-in."""

    def __init__(self) -> None:
        super().__init__(
            "no API key exists and anonymous access is off, so nobody could use this server. "
            "Create a key with `memoryd keys create --label <name>` (it is printed once), or "
            "set MEMORYD_ALLOW_ANONYMOUS=true to allow unauthenticated access explicitly."
        )


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


def validation_message(exc: ValidationError) -> str:
    """A one-line, field-naming summary of a pydantic validation error."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "input"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class ChatError(MemorydError):
    """The chat endpoint failed or answered with something unusable."""
