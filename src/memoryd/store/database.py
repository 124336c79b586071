"""The database handle a store's core and its parts share: connections, write transactions,
the history every change records, and how logical values are written in one database.

A store is composed of a core (:class:`memoryd.store.base.Store`) and parts (``store.work``,
``store.domains``, ...); each receives this handle when it is built and reaches the database
only through it, so neither reads the other's attributes. A backend subclasses it once
(``store/sqlite/database.py``, ``store/postgres/database.py``) with its connections and
codec; the SQL that reads the same on both databases is written here, once:
:meth:`Database.select` and :meth:`Database.upsert` over the logical tables of
:mod:`memoryd.store.rows`, and :meth:`Database.record` for history and the audit ledger.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar

from memoryd import ledger
from memoryd.models import Memory, SchedulingState
from memoryd.store import policy
from memoryd.store.change import Recorded
from memoryd.store.filters import Dialect
from memoryd.store.rows import TABLES


class Database(ABC):
    """One database, as every part of a store uses it."""

    backend: ClassVar[str]
    #: One parameter placeholder ("?" or "%s").
    mark: ClassVar[str]
    dialect: ClassVar[Dialect]
    #: The column numbering each table's rows in the order they were written.
    position: ClassVar[str]
    #: How many values one ``IN`` list (or array) may take.
    chunk: ClassVar[int]
    #: The larger of two values in SQL (``MAX(a, b)`` / ``greatest(a, b)``).
    greatest: ClassVar[str]
    #: How keyword terms and ids compare (byte by byte on both databases).
    collate: ClassVar[str]
    #: The driver's base error classes (a contract call re-raises them as StoreError).
    driver_errors: ClassVar[tuple[type[BaseException], ...]]
    #: A unique or foreign-key violation.
    constraint_errors: ClassVar[tuple[type[BaseException], ...]]

    #: The columns of ``memories m`` that :meth:`memory` reads, ``m.rowid`` first.
    memory_columns: ClassVar[str]

    url: str
    schema_version: int

    # --- what a backend supplies -------------------------------------------
    @abstractmethod
    def read(self) -> AbstractContextManager[Any]:
        """A connection to read with (this thread's open transaction, if it has one)."""

    @abstractmethod
    def write(self, *, lock: bool = True) -> AbstractContextManager[Any]:
        """One write transaction, yielding something with ``execute`` and ``executemany``.

        Nested calls join the outer transaction. ``lock`` orders it with the other writers
        of history and the ledger (writes that touch neither may pass ``lock=False``).
        """

    @abstractmethod
    def in_transaction(self) -> bool:
        """True while this thread has a write transaction open (its reads see its own
        uncommitted writes)."""

    @abstractmethod
    def close(self) -> None:
        """Release every connection."""

    @abstractmethod
    def encode(self, table: str, field: str, value: Any) -> Any:
        """A logical value (:mod:`memoryd.store.rows`) as the column of ``table`` holds it."""

    @abstractmethod
    def decode(self, table: str, field: str, value: Any) -> Any:
        """The inverse of :meth:`encode`."""

    @abstractmethod
    def memory(self, row: Sequence[Any]) -> Memory:
        """A row of :attr:`memory_columns` as a Memory."""

    @abstractmethod
    def state(self, row: Sequence[Any]) -> SchedulingState:
        """A row of the ``STATE_FIELDS`` columns (memoryd.store.rows) as a SchedulingState."""

    @abstractmethod
    def insert_id(self, tx: Any, statement: str, params: Sequence[Any]) -> int:
        """Run an ``INSERT`` of one row and return the id the database gave it."""

    @abstractmethod
    def insert_many(self, tx: Any, statement: str, rows: list[Sequence[Any]]) -> int:
        """Run one ``INSERT`` per row of parameters; how many rows it inserted."""

    @abstractmethod
    def _history(self, tx: Any, changes: list[Recorded]) -> list[int]:
        """Insert one history row per change, in order; return their sequence numbers."""

    # --- written once --------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several write calls, of the core and of every part, into one transaction."""
        with self.write():
            yield

    def marks(self, n: int) -> str:
        """``n`` placeholders, comma-separated."""
        return ", ".join([self.mark] * n)

    def chunks(self, items: Sequence[Any], lists: int = 1) -> Iterator[list[Any]]:
        """``items`` in slices a statement with ``lists`` ``IN`` lists of them takes."""
        items, size = list(items), self.chunk // lists
        for start in range(0, len(items), size):
            yield items[start : start + size]

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row a query returns."""
        with self.read() as conn:
            return conn.execute(statement, params).fetchall()

    def meta(self, key: str) -> str | None:
        """A value of the store's meta table (None when unset)."""
        found = self.rows(f"SELECT value FROM meta WHERE key = {self.mark}", [key])
        return found[0][0] if found else None

    def encode_row(self, table: str, row: dict[str, Any], columns: Sequence[str]) -> list[Any]:
        """The values of ``columns`` of a logical row, as the database holds them."""
        return [self.encode(table, c, row.get(c)) for c in columns]

    def decode_row(self, table: str, columns: Sequence[str],
                   values: Sequence[Any]) -> dict[str, Any]:
        """A row of ``columns`` as a logical row."""
        return {c: self.decode(table, c, v) for c, v in zip(columns, values)}

    def select(self, table: str, where: str = "", params: Sequence[Any] = (), tail: str = "",
               columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Logical rows of ``table`` (all its columns unless given) passing ``where``."""
        columns = tuple(columns or TABLES[table])
        statement = f"SELECT {', '.join(columns)} FROM {table}"
        if where:
            statement += f" WHERE {where}"
        rows = self.rows(f"{statement} {tail}".rstrip(), params)
        return [self.decode_row(table, columns, r) for r in rows]

    def upsert(self, tx: Any, table: str, rows: list[dict[str, Any]], *,
               key: Sequence[str] = ("id",), guard: str | None = None) -> int:
        """Insert logical rows, updating the row of the same ``key``; with ``guard``, only
        where it holds. Returns the rows changed (of a single row; -1 for several)."""
        columns = TABLES[table]
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
        statement = (f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                     f"({self.marks(len(columns))}) ON CONFLICT ({', '.join(key)}) "
                     f"DO UPDATE SET {updates}" + (f" WHERE {guard}" if guard else ""))
        values = [self.encode_row(table, row, columns) for row in rows]
        if len(values) == 1:
            return int(tx.execute(statement, values[0]).rowcount)
        if values:
            tx.executemany(statement, values)
        return -1

    def record(self, tx: Any, changes: list[Recorded]) -> list[int]:
        """History rows and their ledger entries for ``changes`` (inside ``tx``, which holds
        the write lock); returns the history sequence numbers, in order."""
        if not changes:
            return []
        seqs = self._history(tx, changes)
        self.append_ledger(tx, [policy.pending(c.memory_id, c.operation, c.actor, c.content)
                                for c in changes])
        return seqs

    def append_ledger(self, tx: Any, pending: list[ledger.PendingEntry]) -> None:
        """Seal and append ledger entries (inside ``tx``, which holds the write lock, so
        nobody appends meanwhile)."""
        if not pending:
            return
        head = tx.execute(ledger.HEAD_LINK_SQL).fetchone()
        tx.executemany(ledger.insert_statement(self.mark),
                       ledger.as_rows(ledger.seal(head, pending)))
