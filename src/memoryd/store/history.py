"""The change history and the audit ledger, read back the same way on every backend: one
memory's history, the changes after a sequence number or between two times, and pages of
the ledger. Writing them is :meth:`memoryd.store.database.Database.record`."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd import ledger
from memoryd.models import HistoryEntry
from memoryd.store import policy

if TYPE_CHECKING:
    from memoryd.store.database import Database

_SELECT = f"SELECT {', '.join(policy.HISTORY_COLUMNS)} FROM history"


def _entries(db: Database, where: str, params: list[Any]) -> list[HistoryEntry]:
    rows = db.rows(f"{_SELECT} WHERE {where}", params)
    return [policy.history_entry(r, lambda v: db.decode("history", "at", v),
                                 lambda v: db.decode("history", "details", v)) for r in rows]


def of_memory(db: Database, memory_id: str) -> list[HistoryEntry]:
    """Every recorded change of one memory, oldest first."""
    return _entries(db, f"memory_id = {db.mark} ORDER BY seq", [memory_id])


def since(db: Database, seq: int, limit: int) -> list[HistoryEntry]:
    """Changes with a sequence number above ``seq``, in order."""
    return _entries(db, f"seq > {db.mark} ORDER BY seq LIMIT {db.mark}", [seq, limit])


def between(db: Database, start: datetime, end: datetime, limit: int) -> list[HistoryEntry]:
    """Changes recorded at or after ``start`` and before ``end``, in order."""
    at = [db.encode("history", "at", start), db.encode("history", "at", end)]
    return _entries(db, f"at >= {db.mark} AND at < {db.mark} ORDER BY seq LIMIT {db.mark}",
                    [*at, limit])


def last_seq(db: Database) -> int:
    """The newest change sequence number (0 while there is no history)."""
    return int(db.rows("SELECT COALESCE(MAX(seq), 0) FROM history")[0][0])


def ledger_page(db: Database, after: int, limit: int) -> list[ledger.LedgerEntry]:
    """Ledger entries with a position above ``after``, in order."""
    return [ledger.entry_from_row(r)
            for r in db.rows(ledger.page_statement(db.mark), [after, limit])]


def ledger_head(db: Database) -> ledger.LedgerEntry | None:
    """The newest ledger entry (None while the ledger is empty)."""
    rows = db.rows(ledger.HEAD_SQL)
    return ledger.entry_from_row(rows[0]) if rows else None
