"""History and the audit ledger in the PostgreSQL store: recording a change (one history row
and its ledger entry, under the write lock) and reading changes back. A mixin of
PostgresStore."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Any, Callable

import psycopg
from psycopg.types.json import Jsonb

from memoryd import ledger
from memoryd.models import HistoryEntry
from memoryd.store import policy
from memoryd.store.base import Actor
from memoryd.store.postgres.codec import dumps, history_entry

_HISTORY = f"SELECT {', '.join(policy.HISTORY_COLUMNS)} FROM history"


class PostgresHistory:
    """Recording changes (history + ledger) and reading them back."""

    _history_seq: str
    _conn: Callable[[], AbstractContextManager[psycopg.Connection[Any]]]  # PostgresStore's

    def _next_seqs(self, cur: psycopg.Cursor[Any], n: int) -> list[int]:
        # Called under the write lock, so these are the next n numbers in commit order.
        rows = cur.execute(
            "SELECT nextval(%s) FROM generate_series(1, %s)", (self._history_seq, n)
        ).fetchall()
        return sorted(int(r[0]) for r in rows)

    def _record_many(
        self,
        cur: psycopg.Cursor[Any],
        entries: list[tuple[str, str, Actor, dict[str, Any] | None, str | None]],
    ) -> list[int]:
        """History rows and their ledger entries for (memory id, operation, actor,
        details, content after the change) tuples; returns the history seqs."""
        if not entries:
            return []
        seqs = self._next_seqs(cur, len(entries))
        at = datetime.now(timezone.utc)
        cur.executemany(
            "INSERT INTO history (seq, memory_id, operation, actor, agent_id, at, details) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (seq, memory_id, op, actor.name, actor.agent_id, at, Jsonb(details or {}, dumps=dumps))
                for seq, (memory_id, op, actor, details, _) in zip(seqs, entries)
            ],
        )
        self._ledger_append(cur, [policy.pending(memory_id, op, actor, content)
                                  for memory_id, op, actor, _, content in entries])
        return seqs

    def _record(
        self, cur: psycopg.Cursor[Any], memory_id: str, operation: str, actor: Actor,
        details: dict[str, Any] | None = None, *, content: str | None = None,
    ) -> int:
        return self._record_many(cur, [(memory_id, operation, actor, details, content)])[0]

    def _ledger_append(self, cur: psycopg.Cursor[Any], pending: list[ledger.PendingEntry]) -> None:
        # Called inside _write(lock=True): the advisory lock orders appends across servers.
        head = cur.execute(ledger.HEAD_LINK_SQL).fetchone()
        cur.executemany(ledger.insert_statement("%s"), ledger.as_rows(ledger.seal(head, pending)))

    def ledger_entries(self, after: int = 0, limit: int = 1000) -> list[ledger.LedgerEntry]:
        with self._conn() as conn:
            rows = conn.execute(ledger.page_statement("%s"), (after, limit)).fetchall()
        return [ledger.entry_from_row(r) for r in rows]

    def ledger_head(self) -> ledger.LedgerEntry | None:
        with self._conn() as conn:
            row = conn.execute(ledger.HEAD_SQL).fetchone()
        return ledger.entry_from_row(row) if row else None

    def history(self, memory_id: str) -> list[HistoryEntry]:
        with self._conn() as conn:
            rows = conn.execute(
                f"{_HISTORY} WHERE memory_id = %s ORDER BY seq",
                (memory_id,),
            ).fetchall()
        return [history_entry(r) for r in rows]

    def changes_between(self, start: datetime, end: datetime, limit: int = 10_000) -> list[HistoryEntry]:
        with self._conn() as conn:
            rows = conn.execute(
                f"{_HISTORY} WHERE at >= %s AND at < %s "
                "ORDER BY seq LIMIT %s",
                (start, end, limit),
            ).fetchall()
        return [history_entry(r) for r in rows]

    def changes_since(self, seq: int, limit: int = 1000) -> list[HistoryEntry]:
        with self._conn() as conn:
            rows = conn.execute(
                f"{_HISTORY} WHERE seq > %s ORDER BY seq LIMIT %s",
                (seq, limit),
            ).fetchall()
        return [history_entry(r) for r in rows]
