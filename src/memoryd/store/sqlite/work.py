"""SQLite tables of the work in progress: tasks, task messages and wait jobs.

A mixin of SQLiteStore. The policy (rows, filters, the final-status guard) is in
:mod:`memoryd.store.work`; this file encodes values the SQLite way (JSON as sorted text,
times as epoch seconds) and runs the SQL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from memoryd.errors import StoreError
from memoryd.models import Task, TaskMessage
from memoryd.store import work
from memoryd.store.rows import JSON_FIELDS, TIME_FIELDS
from memoryd.store.sqlite.codec import DIALECT, dt, ts


def _encode(table: str, row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in row.items():
        if value is not None and name in JSON_FIELDS[table]:
            value = json.dumps(value, ensure_ascii=False, sort_keys=True)
        elif name in TIME_FIELDS:
            value = ts(value)
        out[name] = value
    return out


def _decoder(table: str, columns: tuple[str, ...]) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    """A row reader for ``columns`` of ``table`` (JSON text and epoch seconds decoded)."""
    convert = [json.loads if c in JSON_FIELDS[table] else dt if c in TIME_FIELDS else None
               for c in columns]

    def decode(values: tuple[Any, ...]) -> dict[str, Any]:
        return {name: fn(value) if fn is not None and value is not None else value
                for name, fn, value in zip(columns, convert, values)}

    return decode


_TASK_ROW = _decoder("tasks", work.TASK_COLUMNS)
_MESSAGE_ROW = _decoder("task_messages", work.MESSAGE_COLUMNS)
_WAIT_ROW = _decoder("wait_jobs", work.WAIT_COLUMNS)


def _upsert(table: str, columns: tuple[str, ...], guard: str | None = None) -> str:
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "id")
    sql = (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
           f"ON CONFLICT(id) DO UPDATE SET {updates}")
    return sql + (f" WHERE {guard}" if guard else "")


_TASK_UPSERT = _upsert("tasks", work.TASK_COLUMNS)
_WAIT_UPSERT = _upsert("wait_jobs", work.WAIT_COLUMNS, work.WAIT_UPSERT_GUARD)


class SQLiteWorkTables:
    """Tasks, task messages and wait jobs."""

    _conn: sqlite3.Connection

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:  # provided by SQLiteStore
        raise NotImplementedError

    # --- tasks -----------------------------------------------------------
    def save_task(self, task: Task) -> None:
        row = _encode("tasks", work.task_row(task))
        with self._write() as conn:
            conn.execute(_TASK_UPSERT, [row[c] for c in work.TASK_COLUMNS])

    def _tasks(self, where: str, params: list[Any], tail: str = "") -> list[Task]:
        rows = self._conn.execute(
            f"SELECT {', '.join(work.TASK_COLUMNS)} FROM tasks WHERE {where} {tail}", params
        ).fetchall()
        return [work.row_task(_TASK_ROW(r)) for r in rows]

    def get_task(self, task_id: str) -> Task | None:
        found = self._tasks("id = ?", [task_id])
        return found[0] if found else None

    def list_tasks(self, *, statuses: list[str] | None = None, scope: str | None = None,
                   agent_id: str | None = None, limit: int = 50) -> list[Task]:
        where, params = work.task_filters(DIALECT, statuses=statuses, scope=scope,
                                          agent_id=agent_id)
        return self._tasks(where, [*params, limit], "ORDER BY updated_at DESC, rowid DESC LIMIT ?")

    def add_task_message(self, message: TaskMessage) -> TaskMessage:
        row = _encode("task_messages", work.message_row(message))
        columns = [c for c in work.MESSAGE_COLUMNS if c != "id"]
        with self._write() as conn:
            touched = conn.execute("UPDATE tasks SET updated_at = MAX(updated_at, ?) WHERE id = ?",
                                   (row["created_at"], message.task_id)).rowcount
            if not touched:
                raise StoreError(f"no task with id {message.task_id!r}")
            cur = conn.execute(
                f"INSERT INTO task_messages ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})", [row[c] for c in columns])
            new_id = int(cur.lastrowid)  # type: ignore[arg-type]
        return message.model_copy(update={"id": new_id})

    def task_messages(self, task_id: str, *, after: int = 0, roles: list[str] | None = None,
                      kinds: list[str] | None = None, limit: int = 100,
                      newest_first: bool = True) -> list[TaskMessage]:
        where, params = work.message_filters(DIALECT, task_id, after=after, roles=roles,
                                             kinds=kinds)
        order = "DESC" if newest_first else "ASC"
        rows = self._conn.execute(
            f"SELECT {', '.join(work.MESSAGE_COLUMNS)} FROM task_messages "
            f"WHERE {where} ORDER BY id {order} LIMIT ?", [*params, limit]
        ).fetchall()
        return [work.row_message(_MESSAGE_ROW(r)) for r in rows]

    def count_task_messages(self, task_id: str, *, after: int = 0,
                            roles: list[str] | None = None) -> int:
        where, params = work.message_filters(DIALECT, task_id, after=after, roles=roles)
        (count,) = self._conn.execute(
            f"SELECT COUNT(*) FROM task_messages WHERE {where}", params
        ).fetchone()
        return int(count)

    # --- wait jobs -------------------------------------------------------
    def save_wait_job(self, job: dict[str, Any]) -> bool:
        row = _encode("wait_jobs", work.wait_row(job))
        with self._write() as conn:
            cur = conn.execute(_WAIT_UPSERT, [row[c] for c in work.WAIT_COLUMNS])
            return cur.rowcount > 0

    def _waits(self, where: str, params: list[Any], tail: str = "") -> list[dict[str, Any]]:
        rows = self._conn.execute(
            f"SELECT {', '.join(work.WAIT_COLUMNS)} FROM wait_jobs WHERE {where} {tail}", params
        ).fetchall()
        return [work.row_wait(_WAIT_ROW(r)) for r in rows]

    def get_wait_job(self, job_id: str) -> dict[str, Any] | None:
        found = self._waits("id = ?", [job_id])
        return found[0] if found else None

    def list_wait_jobs(self, *, statuses: list[str] | None = None, runner: str | None = None,
                       scope: str | None = None, agent_id: str | None = None,
                       task_id: str | None = None, updated_after: float | None = None,
                       limit: int = 200) -> list[dict[str, Any]]:
        where, params = work.wait_filters(DIALECT, statuses=statuses, runner=runner, scope=scope,
                                          agent_id=agent_id, task_id=task_id,
                                          updated_after=updated_after)
        return self._waits(where, [*params, limit],
                           "ORDER BY created_at DESC, rowid DESC LIMIT ?")
