"""The policy of the work tables (tasks, task messages, wait jobs), written once for both
backends: how a record becomes a logical row (:mod:`memoryd.store.rows`) and back, the
filters of the list queries, and the rule that a wait job's final status is never replaced.

Backends only encode logical values (JSON, timestamps) their own way and run the SQL.
A wait job crosses the contract in the plain-dict form of ``WaitJob.to_dict()`` (epoch
seconds for times), so the store knows nothing of the watcher layer; its ``owner`` object
also fills the indexed ``runner``, ``scope`` and ``agent_id`` columns.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from memoryd.errors import StoreError
from memoryd.models import Task, TaskMessage
from memoryd.store.filters import Dialect
from memoryd.store.rows import TABLES

TASK_COLUMNS = TABLES["tasks"]
MESSAGE_COLUMNS = TABLES["task_messages"]
WAIT_COLUMNS = TABLES["wait_jobs"]
WAIT_TIMES = ("created_at", "updated_at", "deadline", "resolved_at")
# Columns of wait_jobs filled from the job's owner object (not keys of the job dict).
_FROM_OWNER = ("runner", "scope", "agent_id")
JOB_KEYS = frozenset(WAIT_COLUMNS) - frozenset(_FROM_OWNER)
# An upsert changes a stored job only while it is watching, or when the incoming job has
# the same status (a wake attempt recorded after the end): the first final status wins, so
# a cancel from one process is never undone by another's late progress save.
WAIT_UPSERT_GUARD = "wait_jobs.status = 'watching' OR wait_jobs.status = excluded.status"
WAIT_STATUSES = ("watching", "resolved", "timeout", "error", "cancelled")


def _epoch_to_dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(float(value), tz=timezone.utc)


def _dt_to_epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


# --- tasks ------------------------------------------------------------------------------
def task_row(task: Task) -> dict[str, Any]:
    """A task as a logical row (plan and metadata as JSON values)."""
    data = task.model_dump(mode="python", include=set(TASK_COLUMNS))
    data["plan"] = [step.model_dump(mode="json") for step in task.plan]
    return data


def row_task(row: dict[str, Any]) -> Task:
    """The inverse of :func:`task_row`."""
    return Task.model_validate({k: row[k] for k in TASK_COLUMNS})


def message_row(message: TaskMessage) -> dict[str, Any]:
    """A task message as a logical row; id None lets the database number it."""
    data = message.model_dump(mode="python", include=set(MESSAGE_COLUMNS))
    data["id"] = message.id or None
    return data


def row_message(row: dict[str, Any]) -> TaskMessage:
    """The inverse of :func:`message_row`."""
    return TaskMessage.model_validate({k: row[k] for k in MESSAGE_COLUMNS})


def task_filters(dialect: Dialect, *, statuses: list[str] | None, scope: str | None,
                 agent_id: str | None) -> tuple[str, list[Any]]:
    """WHERE clause (without the keyword) and parameters of a task list."""
    clauses, params = [], []
    if statuses:
        clause, args = dialect.in_list("status", list(statuses))
        clauses.append(clause)
        params.extend(args)
    for column, value in (("scope", scope), ("agent_id", agent_id)):
        if value is not None:
            clauses.append(f"{column} = {dialect.mark}")
            params.append(value)
    return " AND ".join(clauses) or dialect.true, params


def message_filters(dialect: Dialect, task_id: str, *, after: int, roles: list[str] | None,
                    kinds: list[str] | None = None) -> tuple[str, list[Any]]:
    """WHERE clause (without the keyword) and parameters of a task's messages after ``after``."""
    clauses, params = [f"task_id = {dialect.mark}", f"id > {dialect.mark}"], [task_id, after]
    for column, values in (("role", roles), ("kind", kinds)):
        if values:
            clause, args = dialect.in_list(column, list(values))
            clauses.append(clause)
            params.extend(args)
    return " AND ".join(clauses), params


# --- wait jobs ----------------------------------------------------------------------------
def wait_row(job: dict[str, Any]) -> dict[str, Any]:
    """A job dict (``WaitJob.to_dict()``) as a logical row; StoreError when it is malformed."""
    missing = {"id", "target", "criteria", "timeout_s", "created_at", "deadline",
               "status"} - set(job)
    unknown = set(job) - JOB_KEYS
    if missing or unknown:
        raise StoreError(f"not a wait job: missing {sorted(missing)}, unknown {sorted(unknown)}")
    if job["status"] not in WAIT_STATUSES:
        raise StoreError(f"not a wait status: {job['status']!r}")
    owner = job.get("owner") or {}
    row: dict[str, Any] = {name: job.get(name) for name in JOB_KEYS}
    row.update(owner=owner, runner=owner.get("runner"), scope=owner.get("scope") or "user",
               agent_id=owner.get("agent_id"), checks=int(job.get("checks") or 0),
               cursor=job.get("cursor") or {}, wake_attempts=list(job.get("wake_attempts") or []))
    row["updated_at"] = job.get("updated_at") or job["created_at"]
    for name in WAIT_TIMES:
        row[name] = _epoch_to_dt(row[name])
    return row


def row_wait(row: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`wait_row`: the job dict, times in epoch seconds."""
    job = {name: row[name] for name in JOB_KEYS}
    for name in WAIT_TIMES:
        job[name] = _dt_to_epoch(job[name])
    return job


def wait_filters(dialect: Dialect, *, statuses: list[str] | None, runner: str | None,
                 scope: str | None, agent_id: str | None, task_id: str | None,
                 updated_after: float | None) -> tuple[str, list[Any]]:
    """WHERE clause (without the keyword) and parameters of a wait-job list."""
    clauses, params = [], []
    if statuses:
        clause, args = dialect.in_list("status", list(statuses))
        clauses.append(clause)
        params.extend(args)
    for column, value in (("runner", runner), ("scope", scope), ("agent_id", agent_id),
                          ("task_id", task_id)):
        if value is not None:
            clauses.append(f"{column} = {dialect.mark}")
            params.append(value)
    if updated_after is not None:
        clauses.append(f"updated_at > {dialect.mark}")
        params.append(dialect.time(_epoch_to_dt(updated_after)))  # type: ignore[arg-type]
    return " AND ".join(clauses) or dialect.true, params
