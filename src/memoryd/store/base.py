"""The store contract: what every backend (SQLite, PostgreSQL) must do.

The engine talks to storage only through this class and the parts it is composed of
(:mod:`memoryd.store.parts`): ``store.work``, ``store.domains``, ``store.graph_files``,
``store.keys``, ``store.bookkeeping`` and ``store.transfer``, each built over the store's
database handle (:class:`memoryd.store.database.Database`). A backend keeps memories,
their vectors, a keyword index, scheduling state and a change history consistent
with each other: every write method is one transaction, records one history entry
per memory it touches, appends the matching entry to the hash-chained audit ledger
(:mod:`memoryd.ledger`) and advances the change sequence number (``seq``).

Backends store whatever vectors they are given; embedding happens in the engine.
They do filtering and candidate generation (keyword and vector); fusion and
cognitive re-ranking happen above them. The keyword index (terms, document frequencies,
lengths) is kept in the same transaction as every memory write and counted once, in
:mod:`memoryd.store.terms`, so that both backends rank keywords by the same BM25.

The policy (which fields a change may set, what history records, what a purge scrubs) is
written once in :mod:`memoryd.store.policy` and the filters once in
:mod:`memoryd.store.filters`; history, edges and the keyword side are read the same way on
every backend (:mod:`memoryd.store.history`, :mod:`memoryd.store.edges`,
:mod:`memoryd.store.keywords`); a backend supplies SQL for the ``_`` hooks below. Every
error its database driver raises (``driver_errors``) reaches callers as :class:`StoreError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Iterator, Literal

import numpy as np

from memoryd.ledger import LedgerEntry
from memoryd.models import (
    Edge,
    HistoryEntry,
    KeywordHit,
    Memory,
    SchedulingState,
    SearchFilters,
    StoreStats,
    VectorHit,
)
from memoryd.retrieval import bm25
from memoryd.retrieval.bm25 import KeywordPool
from memoryd.retrieval.tokens import query_terms
from memoryd.store import edges as edge_sql
from memoryd.store import history as history_sql
from memoryd.store import keywords, policy
from memoryd.store import memories as memory_sql
from memoryd.store.api_keys import ApiKeys
from memoryd.store.bookkeeping import Bookkeeping
from memoryd.store.change import Actor
from memoryd.store.database import Database
from memoryd.store.domains import Assignment, AssignStatement, Domains
from memoryd.store.filters import LIST_ORDERS, where
from memoryd.store.graph_files import GraphFiles
from memoryd.store.keyword_index import KeywordCache
from memoryd.store.terms import FIRST_PASS, CandidateQuery
from memoryd.store.transfer import Transfer
from memoryd.store.translate import _translating
from memoryd.store.work import Work

__all__ = ["Actor", "Assignment", "KeywordHit", "KeywordPool", "ListOrder", "Store", "VectorHit"]

ListOrder = Literal["created_desc", "created_asc", "updated_desc"]


class Store(ABC):
    """A memoryd store: its core (memories, vectors, search, history, edges) and its parts.
    Implementations: SQLiteStore, PostgresStore."""

    url: str
    backend: str
    #: The database, shared by declaration with every part of the store.
    db: Database
    #: Tasks, their messages, wait jobs and intentions (:mod:`memoryd.store.work`).
    work: Work
    #: Domains, the threshold, assignments and proposals (:mod:`memoryd.store.domains`).
    domains: Domains
    #: The mirrored knowledge-graph files (:mod:`memoryd.store.graph_files`).
    graph_files: GraphFiles
    #: API key records (:mod:`memoryd.store.api_keys`).
    keys: ApiKeys
    #: Watermarks and reports (:mod:`memoryd.store.bookkeeping`).
    bookkeeping: Bookkeeping
    #: Export, import, backup and restore (:mod:`memoryd.store.transfer`).
    transfer: Transfer
    #: The database driver's base error classes, mapped to StoreError on every contract call.
    driver_errors: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.driver_errors:
            return
        for name in _TRANSLATED:
            method = getattr(cls, name, None)
            if method is not None and not getattr(method, "__translated__", False):
                setattr(cls, name, _translating(method, cls.driver_errors))

    #: The copy of the keyword postings in memory, when the backend keeps one.
    keyword_cache: KeywordCache | None = None
    #: Whether a search's keyword and vector sides gain from running at once, on two
    #: threads: where their statements run in a server process (PostgreSQL). In process
    #: (SQLite) the threads' hand-offs of the interpreter lock cost more than they overlap.
    overlapping_sides: ClassVar[bool] = False

    def __init__(self, db: Database, *, assign: AssignStatement, transfer: Transfer) -> None:
        """Compose the store over ``db``: every part shares it (and its transactions)."""
        self.db = db
        self.url = db.url
        self.work = Work(db)
        self.domains = Domains(db, assign)
        self.graph_files = GraphFiles(db)
        self.keys = ApiKeys(db)
        self.bookkeeping = Bookkeeping(db)
        self.transfer = transfer

    # --- lifecycle -------------------------------------------------------
    @abstractmethod
    def close(self) -> None:
        """Flush caches and release connections."""

    @abstractmethod
    def health(self) -> dict[str, Any]:
        """A cheap check that the store answers; raises StoreError when unusable."""

    def transaction(self) -> AbstractContextManager[None]:
        """Group several write calls into one transaction: all of them or none.

        Write methods called inside join it, those of the store's parts too; nesting is
        allowed.
        """
        return self.db.transaction()

    # --- embedding model bookkeeping ------------------------------------
    @property
    def embedding_model(self) -> str | None:
        """The model id that made this store's vectors (None while it has none)."""
        return self.db.meta("embedding_model")

    @property
    def embedding_dims(self) -> int | None:
        """The dimension of this store's vectors."""
        value = self.db.meta("embedding_dims")
        return int(value) if value else None

    @abstractmethod
    def set_embedding_model(self, model_id: str, dims: int) -> None:
        """Record the model of the store's vectors (only on an empty store or by reembed)."""

    # --- writes ----------------------------------------------------------
    def insert(
        self,
        memories: list[Memory],
        vectors: np.ndarray | None,
        actor: Actor,
        *,
        operation: str = "create",
    ) -> list[Memory]:
        """Insert new memories (and one vector row each) in one transaction."""
        policy.check_insert(memories, vectors)
        return self._insert(memories, vectors, actor, operation) if memories else []

    @abstractmethod
    def _insert(self, memories: list[Memory], vectors: np.ndarray | None, actor: Actor,
                operation: str) -> list[Memory]:
        """Write a checked batch: rows, vectors, one history and ledger entry each."""

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
        change = policy.Change(memory_id, dict(changes), vector, operation, details)
        policy.check_change(change)
        return self._update(change, actor)

    @abstractmethod
    def _update(self, change: policy.Change, actor: Actor) -> Memory:
        """Apply a checked change; history gets :func:`policy.update_details`."""

    def update_states(
        self,
        states: dict[str, SchedulingState],
        *,
        record: str | None = None,
        actor: Actor | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Write scheduling state for many memories; history only when ``record`` names an op."""
        if states:
            self._update_states(states, record, actor or Actor(), details)

    @abstractmethod
    def _update_states(self, states: dict[str, SchedulingState], record: str | None,
                       actor: Actor, details: dict[str, Any] | None) -> None:
        """Write the states (and, with ``record``, one history entry per memory)."""

    @abstractmethod
    def delete(self, memory_id: str, actor: Actor, *, purge: bool = False) -> None:
        """Remove a memory with its vector, keyword entry and edges.

        History keeps a tombstone; ``purge`` also scrubs the content from history.
        """

    @abstractmethod
    def replace_vectors(self, vectors: dict[str, np.ndarray], model_id: str) -> None:
        """Overwrite the vectors of existing memories (re-embedding), one transaction."""

    # --- reads -----------------------------------------------------------
    def get(self, memory_id: str) -> Memory | None:
        """One memory by id, or None."""
        return memory_sql.by_id(self.db, memory_id)

    def get_many(self, memory_ids: list[str]) -> dict[str, Memory]:
        """Memories by id (missing ids are left out)."""
        return memory_sql.by_ids(self.db, memory_ids)

    def states(self, memory_ids: list[str]) -> dict[str, SchedulingState]:
        """The scheduling states of memories by id (missing ids are left out), without
        reading the memories whole: what recording their retrieval needs."""
        return memory_sql.states_by_ids(self.db, memory_ids)

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
        return memory_sql.matching(self.db, filters, now, f"ORDER BY {LIST_ORDERS[order]}",
                                   [limit, offset])

    def matching_ids(self, memory_ids: list[str], filters: SearchFilters, *, now: datetime) -> set[str]:
        """Which of the given memories pass the filters."""
        return memory_sql.matching_ids(self.db, memory_ids, filters, now)

    def count(self, filters: SearchFilters | None = None, *, now: datetime | None = None) -> int:
        """How many memories match (all when no filters)."""
        return memory_sql.count(self.db, filters, now or datetime.now(timezone.utc))

    # --- keyword index: memoryd's own BM25 (memoryd.store.terms) ---------
    def keyword_candidates(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        *,
        now: datetime,
        limit: int,
        k1: float = bm25.DEFAULT_K1,
        b: float = bm25.DEFAULT_B,
    ) -> KeywordPool:
        """The best ``limit`` memories passing the filters by BM25 over ``terms`` (stemmed, as
        :func:`memoryd.retrieval.tokens.query_terms` gives them), with the corpus statistics.

        Every memory holding at least one of the terms is ranked, on every backend by the same
        formula (:func:`memoryd.retrieval.bm25.bm25_scores`); each candidate carries its
        length and its count of each query term.
        """
        distinct = keywords.term_list(terms)
        cache = self.keyword_cache
        held = (cache.ranked_first_pass(distinct, max(FIRST_PASS, limit), k1=k1, b=b)
                if cache is not None and distinct and limit > 0 else None)
        if held is None:  # no copy in memory (or out of step): the SQL reads and ranks
            stats, query, first = keywords.corpus_stats(self.db, distinct), None, None
        else:
            stats, query, first = held
        if not distinct or limit <= 0 or stats.documents == 0:
            return KeywordPool(stats, [])
        if query is None:
            query = CandidateQuery.of(distinct, stats, k1, b)
        clause, params = where(filters, now, self.db.dialect)
        return KeywordPool(stats, keywords.candidates(self.db, query, clause, params, limit,
                                                      first))

    def corpus_stats(self, terms: Sequence[str]) -> bm25.CorpusStats:
        """N, the average length and the df of each of ``terms`` (as the keyword side reads them)."""
        distinct = keywords.term_list(terms)
        held = self.keyword_cache.corpus_stats(distinct) if self.keyword_cache else None
        return keywords.corpus_stats(self.db, distinct) if held is None else held

    def term_counts(self, memory_ids: Sequence[str], terms: Sequence[str]) -> list[bm25.Candidate]:
        """The given memories' length and counts of ``terms`` (e.g. for vector candidates), in
        the order given (missing ids are left out); the statistics come from :meth:`corpus_stats`."""
        distinct = keywords.term_list(terms)
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        held = self.keyword_cache.term_counts(ids, distinct) if self.keyword_cache else None
        found = {m: bm25.Candidate(m, d.length, d.counts, d.topic)
                 for m, d in (held or {}).items()}
        unknown = [i for i in ids if i not in found]
        if unknown:  # no copy in memory, or memories it has not seen (yet)
            found.update((c.memory_id, c) for c in keywords.frequencies(self.db, unknown,
                                                                        distinct))
        return [found[i] for i in ids if i in found]

    def keyword_search(
        self, text: str, filters: SearchFilters, *, now: datetime, limit: int,
        k1: float = bm25.DEFAULT_K1, b: float = bm25.DEFAULT_B,
    ) -> list[KeywordHit]:
        """BM25 hits for free text, best first (never raises on query syntax).

        >>> [h.memory_id for h in store.keyword_search("deploy day", SearchFilters(),
        ...                                             now=now, limit=5)]  # doctest: +SKIP
        """
        terms = query_terms(text)
        pool = self.keyword_candidates(terms, filters, now=now, limit=limit, k1=k1, b=b)
        scores = bm25.bm25_scores(terms, pool.candidates, pool.stats, k1=k1, b=b)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], pool.candidates[i].memory_id))
        return [KeywordHit(memory_id=pool.candidates[i].memory_id, score=scores[i]) for i in order]

    def cosines(self, memory_ids: Sequence[str], vector: np.ndarray) -> dict[str, float]:
        """Cosine similarity of the given memories' vectors to ``vector`` (e.g. for keyword
        candidates); memories without a vector of its dimension are left out."""
        return cosines_to(self.vectors(list(dict.fromkeys(memory_ids))), vector)

    def vector_search(
        self, vector: np.ndarray, filters: SearchFilters, *, now: datetime, limit: int
    ) -> list[VectorHit]:
        """Nearest neighbours of a unit vector among memories matching the filters."""
        return self._vector_search(vector, filters, now, limit) if limit > 0 else []

    @abstractmethod
    def _vector_search(self, vector: np.ndarray, filters: SearchFilters, now: datetime,
                       limit: int) -> list[VectorHit]:
        """The backend's nearest neighbours, most similar first."""

    @abstractmethod
    def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the given memories."""

    def iter_memories(self, batch_size: int = 500) -> Iterator[Memory]:
        """Every memory, oldest first (export, re-embedding, consolidation)."""
        return memory_sql.every(self.db, batch_size)

    def history(self, memory_id: str) -> list[HistoryEntry]:
        """Every recorded change of one memory, oldest first."""
        return history_sql.of_memory(self.db, memory_id)

    def changes_since(self, seq: int, limit: int = 1000) -> list[HistoryEntry]:
        """History entries with a sequence number above ``seq``, in order."""
        return history_sql.since(self.db, seq, limit)

    def changes_between(self, start: datetime, end: datetime, limit: int = 10_000) -> list[HistoryEntry]:
        """History entries recorded at or after ``start`` and before ``end``, in order."""
        return history_sql.between(self.db, start, end, limit)

    def last_seq(self) -> int:
        """The newest change sequence number (0 while there is no history). Cheap: a cache
        asks it on every read whether anything changed since it was filled."""
        return history_sql.last_seq(self.db)

    # --- audit ledger ----------------------------------------------------
    def ledger_entries(self, after: int = 0, limit: int = 1000) -> list[LedgerEntry]:
        """Ledger entries with a position above ``after``, in order (see memoryd.ledger)."""
        return history_sql.ledger_page(self.db, after, limit)

    def ledger_head(self) -> LedgerEntry | None:
        """The newest ledger entry (None while the ledger is empty)."""
        return history_sql.ledger_head(self.db)

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

    # --- graph -----------------------------------------------------------
    def upsert_edges(self, edges: list[Edge]) -> None:
        """Insert edges, replacing (source, target, type) duplicates; one transaction."""
        edge_sql.upsert(self.db, edges)

    def edges_of(self, memory_ids: list[str], *, now: datetime | None = None) -> list[Edge]:
        """Edges touching any of the memories (either direction); valid at ``now`` if given."""
        return edge_sql.around(self.db, memory_ids, now)

    def expire_edge(self, source_id: str, target_id: str, edge_type: str, at: datetime) -> bool:
        """Set valid_until on one edge; False if there is no such edge."""
        return edge_sql.expire(self.db, source_id, target_id, edge_type, at)

    def edges_from(self, filters: SearchFilters, *, now: datetime) -> list[Edge]:
        """Every edge (expired ones too) whose source memory passes the filters: one query
        for a whole graph, where :meth:`edges_of` would take one per few hundred ids."""
        return edge_sql.from_matching(self.db, filters, now)

    # --- sessions --------------------------------------------------------
    @abstractmethod
    def mark_accessed(self, session_id: str, memory_ids: list[str], at: datetime) -> set[str]:
        """Mark memories as retrieved in a session; return those not marked before."""


# Contract methods whose driver errors become StoreError (generators and context managers
# translate their own: the error surfaces while they run, not when they are called).
_TRANSLATED = (
    "health", "set_embedding_model", "insert", "update", "update_states", "delete",
    "replace_vectors", "get", "get_many", "states", "list", "matching_ids", "count",
    "keyword_candidates", "corpus_stats", "term_counts", "keyword_search", "cosines",
    "vector_search", "vectors",
    "history", "changes_since", "changes_between", "last_seq", "ledger_entries", "ledger_head",
    "stats", "upsert_edges", "edges_of", "expire_edge", "edges_from", "mark_accessed", "close",
)


def cosines_to(vectors: Mapping[str, np.ndarray], vector: np.ndarray) -> dict[str, float]:
    """Cosine similarity of each of ``vectors`` to ``vector``, in one product; vectors of
    another dimension, and zero vectors, are left out."""
    query = np.asarray(vector, dtype=np.float64)
    ids = [i for i, v in vectors.items() if np.shape(v) == query.shape]
    norm = float(np.linalg.norm(query))
    if not ids or norm == 0:
        return {}
    rows = np.asarray([vectors[i] for i in ids], dtype=np.float64)
    lengths = np.linalg.norm(rows, axis=1)
    sims = rows @ query
    return {i: float(sim / (length * norm))
            for i, sim, length in zip(ids, sims, lengths) if length > 0}
