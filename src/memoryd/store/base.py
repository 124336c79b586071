"""The store contract: what every backend (SQLite, PostgreSQL) must do.

The engine talks to storage only through this class. A backend keeps memories,
their vectors, a keyword index, scheduling state and a change history consistent
with each other: every write method is one transaction, records one history entry
per memory it touches, appends the matching entry to the hash-chained audit ledger
(:mod:`memoryd.ledger`) and advances the change sequence number (``seq``).

Backends store whatever vectors they are given; embedding happens in the engine.
They do filtering and candidate generation (keyword and vector); fusion and
cognitive re-ranking happen above them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Literal

import numpy as np

from memoryd.ledger import LedgerEntry
from memoryd.models import (
    ApiKey,
    Edge,
    HistoryEntry,
    Intention,
    Memory,
    SchedulingState,
    SearchFilters,
    StoreStats,
)

ListOrder = Literal["created_desc", "created_asc", "updated_desc"]


@dataclass(frozen=True)
class Actor:
    """Who makes a change: recorded in the history of every mutation."""

    name: str | None = None  # e.g. "key:<label>", "cli", "import"
    agent_id: str | None = None
    key_label: str | None = None  # the API key the change came through, if any


@dataclass(frozen=True)
class KeywordHit:
    """A keyword (BM25) candidate: higher score is better."""

    memory_id: str
    score: float


@dataclass(frozen=True)
class VectorHit:
    """A vector candidate: cosine similarity in [-1, 1]."""

    memory_id: str
    similarity: float


class Store(ABC):
    """A memoryd store. Implementations: SQLiteStore, PostgresStore."""

    url: str
    backend: str

    # --- lifecycle -------------------------------------------------------
    @abstractmethod
    def close(self) -> None:
        """Flush caches and release connections."""

    @abstractmethod
    def health(self) -> dict[str, Any]:
        """A cheap check that the store answers; raises StoreError when unusable."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """Group several write calls into one transaction: all of them or none.

        Write methods called inside join it; nesting is allowed.
        """

    # --- embedding model bookkeeping ------------------------------------
    @abstractmethod
    def _meta(self, key: str) -> str | None:
        """A value of the store's meta table (None when unset)."""

    @property
    def embedding_model(self) -> str | None:
        """The model id that made this store's vectors (None while it has none)."""
        return self._meta("embedding_model")

    @property
    def embedding_dims(self) -> int | None:
        """The dimension of this store's vectors."""
        value = self._meta("embedding_dims")
        return int(value) if value else None

    @abstractmethod
    def set_embedding_model(self, model_id: str, dims: int) -> None:
        """Record the model of the store's vectors (only on an empty store or by reembed)."""

    # --- writes ----------------------------------------------------------
    @abstractmethod
    def insert(
        self,
        memories: list[Memory],
        vectors: np.ndarray | None,
        actor: Actor,
        *,
        operation: str = "create",
    ) -> list[Memory]:
        """Insert new memories (and one vector row each) in one transaction."""

    @abstractmethod
    def update(
        self,
        memory_id: str,
        changes: dict[str, Any],
        actor: Actor,
        *,
        vector: np.ndarray | None = None,
        operation: str = "update",
        details: dict[str, Any] | None = None,
    ) -> Memory:
        """Change fields of one memory (and optionally its vector) in one transaction."""

    @abstractmethod
    def update_states(
        self,
        states: dict[str, SchedulingState],
        *,
        record: str | None = None,
        actor: Actor | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Write scheduling state for many memories; history only when ``record`` names an op."""

    @abstractmethod
    def delete(self, memory_id: str, actor: Actor, *, purge: bool = False) -> None:
        """Remove a memory with its vector, keyword entry and edges.

        History keeps a tombstone; ``purge`` also scrubs the content from history.
        """

    @abstractmethod
    def replace_vectors(self, vectors: dict[str, np.ndarray], model_id: str) -> None:
        """Overwrite the vectors of existing memories (re-embedding), one transaction."""

    # --- reads -----------------------------------------------------------
    @abstractmethod
    def get(self, memory_id: str) -> Memory | None:
        """One memory by id, or None."""

    @abstractmethod
    def get_many(self, memory_ids: list[str]) -> dict[str, Memory]:
        """Memories by id (missing ids are left out)."""

    @abstractmethod
    def list(
        self,
        filters: SearchFilters,
        *,
        now: datetime,
        limit: int = 50,
        offset: int = 0,
        order: ListOrder = "created_desc",
    ) -> list[Memory]:
        """Memories matching the filters, paged."""

    @abstractmethod
    def matching_ids(self, memory_ids: list[str], filters: SearchFilters, *, now: datetime) -> set[str]:
        """Which of the given memories pass the filters."""

    @abstractmethod
    def count(self, filters: SearchFilters | None = None, *, now: datetime | None = None) -> int:
        """How many memories match (all when no filters)."""

    @abstractmethod
    def keyword_search(
        self, text: str, filters: SearchFilters, *, now: datetime, limit: int
    ) -> list[KeywordHit]:
        """BM25 candidates for free text (never raises on query syntax)."""

    @abstractmethod
    def vector_search(
        self, vector: np.ndarray, filters: SearchFilters, *, now: datetime, limit: int
    ) -> list[VectorHit]:
        """Nearest neighbours of a unit vector among memories matching the filters."""

    @abstractmethod
    def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the given memories."""

    @abstractmethod
    def iter_memories(self, batch_size: int = 500) -> Iterator[Memory]:
        """Every memory, oldest first (export, re-embedding, consolidation)."""

    @abstractmethod
    def history(self, memory_id: str) -> list[HistoryEntry]:
        """Every recorded change of one memory, oldest first."""

    @abstractmethod
    def changes_since(self, seq: int, limit: int = 1000) -> list[HistoryEntry]:
        """History entries with a sequence number above ``seq``, in order."""

    @abstractmethod
    def changes_between(self, start: datetime, end: datetime, limit: int = 10_000) -> list[HistoryEntry]:
        """History entries recorded at or after ``start`` and before ``end``, in order."""

    # --- audit ledger ----------------------------------------------------
    @abstractmethod
    def ledger_entries(self, after: int = 0, limit: int = 1000) -> list[LedgerEntry]:
        """Ledger entries with a position above ``after``, in order (see memoryd.ledger)."""

    @abstractmethod
    def ledger_head(self) -> LedgerEntry | None:
        """The newest ledger entry (None while the ledger is empty)."""

    @abstractmethod
    def stats(self) -> StoreStats:
        """Counts and facts about the store."""

    # --- maintenance -----------------------------------------------------
    @abstractmethod
    def maintenance_lock(self, name: str) -> AbstractContextManager[bool]:
        """Hold a named lock across processes and servers for a maintenance job.

        Yields True when this caller holds it, False at once (without waiting) when
        another process does, so two servers never consolidate the same store at once.
        """

    @abstractmethod
    def backup(self, path: Path) -> None:
        """Write a consistent copy of the whole store to ``path`` while it stays online."""

    @abstractmethod
    def restore(self, path: Path, *, expect_model: str | None = None) -> None:
        """Replace the store's contents with a backup made by :meth:`backup`.

        Raises ModelMismatch, before changing anything, if the backup's vectors were
        made by a model other than ``expect_model``.
        """

    # --- logical rows (migration between backends) ----------------------
    @abstractmethod
    def export_rows(self, table: str, *, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Rows of a logical table (memoryd.store.rows) after position ``after``, in order.

        Each row carries ``_pos``, the position to pass as ``after`` for the next page.
        """

    @abstractmethod
    def import_rows(self, table: str, rows: list[dict[str, Any]]) -> int:
        """Insert rows exactly as exported (ids, seqs, timestamps kept), skipping rows whose
        key exists; one transaction; records no history. Returns how many were inserted."""

    @abstractmethod
    def finish_import(self) -> None:
        """Bring indexes up to date after import_rows (e.g. rebuild the vector index)."""

    # --- graph -----------------------------------------------------------
    @abstractmethod
    def upsert_edges(self, edges: list[Edge]) -> None:
        """Insert edges, replacing (source, target, type) duplicates; one transaction."""

    @abstractmethod
    def edges_of(self, memory_ids: list[str], *, now: datetime | None = None) -> list[Edge]:
        """Edges touching any of the memories (either direction); valid at ``now`` if given."""

    @abstractmethod
    def expire_edge(self, source_id: str, target_id: str, edge_type: str, at: datetime) -> bool:
        """Set valid_until on one edge; False if there is no such edge."""

    # --- intentions ------------------------------------------------------
    @abstractmethod
    def save_intention(self, intention: Intention) -> None:
        """Insert or replace an intention."""

    @abstractmethod
    def get_intention(self, intention_id: str) -> Intention | None:
        """One intention by id."""

    @abstractmethod
    def list_intentions(self, statuses: list[str] | None = None) -> list[Intention]:
        """Intentions, optionally only those with the given statuses, by due time."""

    # --- API keys --------------------------------------------------------
    @abstractmethod
    def save_key(self, key: ApiKey) -> None:
        """Insert or replace an API key record."""

    @abstractmethod
    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this hash (revoked keys included: the caller checks)."""

    @abstractmethod
    def list_keys(self) -> list[ApiKey]:
        """Every key record, oldest first."""

    @abstractmethod
    def touch_key(self, key_id: str, at: datetime) -> None:
        """Record that a key was used."""

    # --- sessions, watermarks, reports ----------------------------------
    @abstractmethod
    def mark_accessed(self, session_id: str, memory_ids: list[str], at: datetime) -> set[str]:
        """Mark memories as retrieved in a session; return those not marked before."""

    @abstractmethod
    def get_watermark(self, key: str) -> int:
        """A named counter (0 when unset), e.g. how many messages of a session were captured."""

    @abstractmethod
    def set_watermark(self, key: str, value: int) -> None:
        """Set a named counter."""

    @abstractmethod
    def save_report(self, kind: str, body: dict[str, Any], at: datetime) -> int:
        """Keep a report (e.g. of a consolidation run); returns its id."""

    @abstractmethod
    def list_reports(self, kind: str, limit: int = 20) -> list[dict[str, Any]]:
        """The newest reports of a kind, newest first."""
