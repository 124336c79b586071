"""``store.work``: the work in progress (tasks, their messages, wait jobs, intentions), with
its policy written once for both backends: how a record becomes a logical row
(:mod:`memoryd.store.rows`) and back, the filters of the list queries, and the rule that a
wait job's final status is never replaced.

The database handle encodes logical values (JSON, timestamps) its own way. A wait job
crosses the contract in the plain-dict form of ``WaitJob.to_dict()`` (epoch seconds for
times), so the store knows nothing of the watcher layer; its ``owner`` object also fills the
indexed ``runner``, ``scope`` and ``agent_id`` columns. None of these writes touch the change
history, so they do not take the history writers' lock.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from memoryd.errors import StoreError
from memoryd.models import Intention, Task, TaskMessage
from memoryd.store.filters import Dialect
from memoryd.store.parts import Part
from memoryd.store.rows import TABLES

TASK_COLUMNS = TABLES["tasks"]
MESSAGE_COLUMNS = TABLES["task_messages"]
WAIT_COLUMNS = TABLES["wait_jobs"]
INTENTION_COLUMNS = TABLES["intentions"]
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


# --- intentions ----------------------------------------------------------------------------
def intention_row(intention: Intention) -> dict[str, Any]:
    """An intention as a logical row (its trigger as a JSON value)."""
    data = intention.model_dump(mode="python", include=set(INTENTION_COLUMNS))
    data["trigger"] = intention.trigger.model_dump(mode="json")
    return data


class Work(Part):
    """Tasks, their messages, wait jobs and intentions."""

    # --- tasks -----------------------------------------------------------
    def save_task(self, task: Task) -> None:
        """Insert or replace a task."""
        with self.db.write(lock=False) as tx:
            self.db.upsert(tx, "tasks", [task_row(task)])

    def get_task(self, task_id: str) -> Task | None:
        """One task by id, or None."""
        found = self.db.select("tasks", f"id = {self.db.mark}", [task_id])
        return row_task(found[0]) if found else None

    def list_tasks(self, *, statuses: list[str] | None = None, scope: str | None = None,
                   agent_id: str | None = None, limit: int = 50) -> list[Task]:
        """Tasks, most recently updated first, optionally of some statuses, a scope, an agent."""
        where, params = task_filters(self.db.dialect, statuses=statuses, scope=scope,
                                     agent_id=agent_id)
        rows = self.db.select("tasks", where, [*params, limit], "ORDER BY updated_at DESC, "
                              f"{self.db.position} DESC LIMIT {self.db.mark}")
        return [row_task(row) for row in rows]

    def add_task_message(self, message: TaskMessage) -> TaskMessage:
        """Append a message to its task (StoreError when the task does not exist); returns it
        with its id, which grows in the order messages are added."""
        row = message_row(message)
        columns = [c for c in MESSAGE_COLUMNS if c != "id"]
        mark = self.db.mark
        with self.db.write(lock=False) as tx:
            touched = tx.execute(
                f"UPDATE tasks SET updated_at = {self.db.greatest}(updated_at, {mark}) "
                f"WHERE id = {mark}",
                (self.db.encode("tasks", "updated_at", row["created_at"]), message.task_id))
            if not touched.rowcount:
                raise StoreError(f"no task with id {message.task_id!r}")
            new_id = self.db.insert_id(
                tx, f"INSERT INTO task_messages ({', '.join(columns)}) "
                    f"VALUES ({self.db.marks(len(columns))})",
                self.db.encode_row("task_messages", row, columns))
        return message.model_copy(update={"id": new_id})

    def task_messages(self, task_id: str, *, after: int = 0, roles: list[str] | None = None,
                      kinds: list[str] | None = None, limit: int = 100,
                      newest_first: bool = True) -> list[TaskMessage]:
        """Messages of a task with an id above ``after``, optionally of some roles and kinds."""
        where, params = message_filters(self.db.dialect, task_id, after=after, roles=roles,
                                        kinds=kinds)
        order = "DESC" if newest_first else "ASC"
        rows = self.db.select("task_messages", where, [*params, limit],
                              f"ORDER BY id {order} LIMIT {self.db.mark}")
        return [row_message(row) for row in rows]

    def count_task_messages(self, task_id: str, *, after: int = 0,
                            roles: list[str] | None = None) -> int:
        """How many messages of a task have an id above ``after`` (optionally of some roles)."""
        where, params = message_filters(self.db.dialect, task_id, after=after, roles=roles)
        return int(self.db.rows(f"SELECT COUNT(*) FROM task_messages WHERE {where}",
                                params)[0][0])

    # --- wait jobs -------------------------------------------------------
    def save_wait_job(self, job: dict[str, Any]) -> bool:
        """Insert or update a wait job given as ``WaitJob.to_dict()`` (times in epoch seconds).

        A job that already ended keeps its final status: an update with another status is
        ignored and False returned (see :data:`WAIT_UPSERT_GUARD`).
        """
        row = wait_row(job)
        with self.db.write(lock=False) as tx:
            return self.db.upsert(tx, "wait_jobs", [row], guard=WAIT_UPSERT_GUARD) > 0

    def get_wait_job(self, job_id: str) -> dict[str, Any] | None:
        """One wait job in its dict form, or None."""
        found = self.db.select("wait_jobs", f"id = {self.db.mark}", [job_id])
        return row_wait(found[0]) if found else None

    def list_wait_jobs(self, *, statuses: list[str] | None = None, runner: str | None = None,
                       scope: str | None = None, agent_id: str | None = None,
                       task_id: str | None = None, updated_after: float | None = None,
                       limit: int = 200) -> list[dict[str, Any]]:
        """Wait jobs, newest first; ``runner``, ``scope`` and ``agent_id`` match the job's
        owner, ``updated_after`` (epoch seconds) its last change."""
        where, params = wait_filters(self.db.dialect, statuses=statuses, runner=runner,
                                     scope=scope, agent_id=agent_id, task_id=task_id,
                                     updated_after=updated_after)
        rows = self.db.select("wait_jobs", where, [*params, limit], "ORDER BY created_at DESC, "
                              f"{self.db.position} DESC LIMIT {self.db.mark}")
        return [row_wait(row) for row in rows]

    # --- intentions ------------------------------------------------------
    def save_intention(self, intention: Intention) -> None:
        """Insert or replace an intention."""
        with self.db.write(lock=False) as tx:
            self.db.upsert(tx, "intentions", [intention_row(intention)])

    def get_intention(self, intention_id: str) -> Intention | None:
        """One intention by id."""
        found = self.db.select("intentions", f"id = {self.db.mark}", [intention_id])
        return Intention.model_validate(found[0]) if found else None

    def list_intentions(self, statuses: list[str] | None = None) -> list[Intention]:
        """Intentions, optionally only those with the given statuses, by due time."""
        where, params = "", []
        if statuses:
            where, params = self.db.dialect.in_list("status", list(statuses))
        rows = self.db.select("intentions", where, params, "ORDER BY COALESCE(due_at, deadline, "
                              f"created_at), created_at, {self.db.position}")
        return [Intention.model_validate(row) for row in rows]
