"""PostgreSQL tables of the work in progress: tasks, task messages and wait jobs.

A mixin of PostgresStore. The policy (rows, filters, the final-status guard) is in
:mod:`memoryd.store.work`; this file encodes values the PostgreSQL way (JSON as jsonb,
times as timestamptz in UTC) and runs the SQL. None of these writes touch the change
history, so they do not take the history writers' lock.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memoryd.errors import StoreError
from memoryd.models import Task, TaskMessage
from memoryd.store import work
from memoryd.store.postgres.codec import DIALECT, dumps, utc
from memoryd.store.rows import JSON_FIELDS


def _encode(table: str, row: dict[str, Any]) -> dict[str, Any]:
    json_fields = JSON_FIELDS[table]
    return {name: Jsonb(value, dumps=dumps) if value is not None and name in json_fields
            else value for name, value in row.items()}


def _decode(columns: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    return {name: utc(value) if hasattr(value, "astimezone") else value
            for name, value in zip(columns, values)}


def _upsert(table: str, columns: tuple[str, ...], guard: str | None = None) -> str:
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "id")
    sql = (f"INSERT INTO {table} ({', '.join(columns)}) "
           f"VALUES ({', '.join(['%s'] * len(columns))}) ON CONFLICT (id) DO UPDATE SET {updates}")
    return sql + (f" WHERE {guard}" if guard else "")


_TASK_UPSERT = _upsert("tasks", work.TASK_COLUMNS)
_WAIT_UPSERT = _upsert("wait_jobs", work.WAIT_COLUMNS, work.WAIT_UPSERT_GUARD)
_MESSAGE_INSERT_COLUMNS = tuple(c for c in work.MESSAGE_COLUMNS if c != "id")


class PostgresWorkTables:
    """Tasks, task messages and wait jobs."""

    def _conn(self) -> AbstractContextManager[psycopg.Connection[Any]]:  # provided by PostgresStore
        raise NotImplementedError

    def _write(self, *, lock: bool = True) -> AbstractContextManager[psycopg.Cursor[Any]]:
        raise NotImplementedError

    def _work_rows(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    # --- tasks -----------------------------------------------------------
    def save_task(self, task: Task) -> None:
        row = _encode("tasks", work.task_row(task))
        with self._write(lock=False) as cur:
            cur.execute(_TASK_UPSERT, [row[c] for c in work.TASK_COLUMNS])

    def _tasks(self, where: str, params: list[Any], tail: str = "") -> list[Task]:
        rows = self._work_rows(
            f"SELECT {', '.join(work.TASK_COLUMNS)} FROM tasks WHERE {where} {tail}", params)
        return [work.row_task(_decode(work.TASK_COLUMNS, r)) for r in rows]

    def get_task(self, task_id: str) -> Task | None:
        found = self._tasks("id = %s", [task_id])
        return found[0] if found else None

    def list_tasks(self, *, statuses: list[str] | None = None, scope: str | None = None,
                   agent_id: str | None = None, limit: int = 50) -> list[Task]:
        where, params = work.task_filters(DIALECT, statuses=statuses, scope=scope,
                                          agent_id=agent_id)
        return self._tasks(where, [*params, limit], "ORDER BY updated_at DESC, pos DESC LIMIT %s")

    def add_task_message(self, message: TaskMessage) -> TaskMessage:
        row = _encode("task_messages", work.message_row(message))
        with self._write(lock=False) as cur:
            cur.execute("UPDATE tasks SET updated_at = greatest(updated_at, %s) WHERE id = %s",
                        (row["created_at"], message.task_id))
            if not cur.rowcount:
                raise StoreError(f"no task with id {message.task_id!r}")
            (new_id,) = cur.execute(
                f"INSERT INTO task_messages ({', '.join(_MESSAGE_INSERT_COLUMNS)}) "
                f"VALUES ({', '.join(['%s'] * len(_MESSAGE_INSERT_COLUMNS))}) RETURNING id",
                [row[c] for c in _MESSAGE_INSERT_COLUMNS]).fetchone()  # type: ignore[misc]
        return message.model_copy(update={"id": int(new_id)})

    def task_messages(self, task_id: str, *, after: int = 0, roles: list[str] | None = None,
                      kinds: list[str] | None = None, limit: int = 100,
                      newest_first: bool = True) -> list[TaskMessage]:
        where, params = work.message_filters(DIALECT, task_id, after=after, roles=roles,
                                             kinds=kinds)
        order = "DESC" if newest_first else "ASC"
        rows = self._work_rows(
            f"SELECT {', '.join(work.MESSAGE_COLUMNS)} FROM task_messages "
            f"WHERE {where} ORDER BY id {order} LIMIT %s", [*params, limit])
        return [work.row_message(_decode(work.MESSAGE_COLUMNS, r)) for r in rows]

    def count_task_messages(self, task_id: str, *, after: int = 0,
                            roles: list[str] | None = None) -> int:
        where, params = work.message_filters(DIALECT, task_id, after=after, roles=roles)
        [(count,)] = self._work_rows(
            f"SELECT COUNT(*) FROM task_messages WHERE {where}", params)
        return int(count)

    # --- wait jobs -------------------------------------------------------
    def save_wait_job(self, job: dict[str, Any]) -> bool:
        row = _encode("wait_jobs", work.wait_row(job))
        with self._write(lock=False) as cur:
            cur.execute(_WAIT_UPSERT, [row[c] for c in work.WAIT_COLUMNS])
            return cur.rowcount > 0

    def _waits(self, where: str, params: list[Any], tail: str = "") -> list[dict[str, Any]]:
        rows = self._work_rows(
            f"SELECT {', '.join(work.WAIT_COLUMNS)} FROM wait_jobs WHERE {where} {tail}", params)
        return [work.row_wait(_decode(work.WAIT_COLUMNS, r)) for r in rows]

    def get_wait_job(self, job_id: str) -> dict[str, Any] | None:
        found = self._waits("id = %s", [job_id])
        return found[0] if found else None

    def list_wait_jobs(self, *, statuses: list[str] | None = None, runner: str | None = None,
                       scope: str | None = None, agent_id: str | None = None,
                       task_id: str | None = None, updated_after: float | None = None,
                       limit: int = 200) -> list[dict[str, Any]]:
        where, params = work.wait_filters(DIALECT, statuses=statuses, runner=runner, scope=scope,
                                          agent_id=agent_id, task_id=task_id,
                                          updated_after=updated_after)
        return self._waits(where, [*params, limit], "ORDER BY created_at DESC, pos DESC LIMIT %s")
