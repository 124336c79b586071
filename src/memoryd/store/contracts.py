"""Parts of the store contract kept beside :class:`~memoryd.store.base.Store` (which
inherits them): the knowledge graphs' mirrored files, task memory and wait jobs, and
domains. The backends implement tasks and waits in ``sqlite_work`` / ``postgres_work`` and
domains in ``sqlite_domains`` / ``postgres_domains``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from memoryd.models import Domain, DomainProposal, GraphFileState, Task, TaskMessage

#: A memory's domains (best first) and its similarity to every domain's centroid.
Assignment = tuple[list[str], dict[str, float]]


class GraphFileTables(ABC):
    """What the store remembers of each mirrored graph file (its merge base and signature)."""

    @abstractmethod
    def graph_file(self, path: str) -> GraphFileState | None:
        """What the store remembers of the mirrored graph file at ``path`` (None if nothing)."""

    @abstractmethod
    def graph_files(self, scope: str) -> list[GraphFileState]:
        """Every graph file mirroring ``scope``, the most recently synced first."""

    @abstractmethod
    def save_graph_file(self, state: GraphFileState) -> None:
        """Insert or replace the state of one graph file (keyed by its path)."""


class WorkTables(ABC):
    """Tasks, their messages, and smart-wait jobs."""

    # --- tasks -----------------------------------------------------------
    @abstractmethod
    def save_task(self, task: Task) -> None:
        """Insert or replace a task."""

    @abstractmethod
    def get_task(self, task_id: str) -> Task | None:
        """One task by id, or None."""

    @abstractmethod
    def list_tasks(self, *, statuses: list[str] | None = None, scope: str | None = None,
                   agent_id: str | None = None, limit: int = 50) -> list[Task]:
        """Tasks, most recently updated first, optionally of some statuses, a scope, an agent."""

    @abstractmethod
    def add_task_message(self, message: TaskMessage) -> TaskMessage:
        """Append a message to its task (StoreError when the task does not exist); returns it
        with its id, which grows in the order messages are added."""

    @abstractmethod
    def task_messages(self, task_id: str, *, after: int = 0, roles: list[str] | None = None,
                      kinds: list[str] | None = None, limit: int = 100,
                      newest_first: bool = True) -> list[TaskMessage]:
        """Messages of a task with an id above ``after``, optionally of some roles and kinds."""

    @abstractmethod
    def count_task_messages(self, task_id: str, *, after: int = 0,
                            roles: list[str] | None = None) -> int:
        """How many messages of a task have an id above ``after`` (optionally of some roles)."""

    # --- wait jobs -------------------------------------------------------
    @abstractmethod
    def save_wait_job(self, job: dict[str, Any]) -> bool:
        """Insert or update a wait job given as ``WaitJob.to_dict()`` (times in epoch seconds).

        A job that already ended keeps its final status: an update with another status is
        ignored and False returned (see :data:`memoryd.store.work.WAIT_UPSERT_GUARD`).
        """

    @abstractmethod
    def get_wait_job(self, job_id: str) -> dict[str, Any] | None:
        """One wait job in its dict form, or None."""

    @abstractmethod
    def list_wait_jobs(self, *, statuses: list[str] | None = None, runner: str | None = None,
                       scope: str | None = None, agent_id: str | None = None,
                       task_id: str | None = None, updated_after: float | None = None,
                       limit: int = 200) -> list[dict[str, Any]]:
        """Wait jobs, newest first; ``runner``, ``scope`` and ``agent_id`` match the job's
        owner, ``updated_after`` (epoch seconds) its last change."""


class DomainTables(ABC):
    """Domains, the assignment threshold, memories' assignments, re-clustering proposals."""

    # --- domains -----------------------------------------------------------
    @abstractmethod
    def list_domains(self) -> list[Domain]:
        """Every domain with its centroid (a float32 array), most members first, then by name."""

    @abstractmethod
    def save_domains(self, domains: list[Domain], *, remove: list[str] | None = None) -> None:
        """Insert or replace domains by id, and delete the domains whose ids are in ``remove``;
        one transaction. A name another remaining domain has is a StoreError."""

    @abstractmethod
    def domain_threshold(self) -> float | None:
        """The active assignment threshold (None until one is set)."""

    @abstractmethod
    def set_domain_threshold(self, value: float) -> None:
        """Set the active assignment threshold."""

    @abstractmethod
    def set_assignments(self, assignments: dict[str, Assignment]) -> int:
        """Set the ``domains`` and ``domain_scores`` of memories, one transaction; returns how
        many of them exist. Records no history and keeps ``seq`` and ``updated_at``: an
        assignment is derived from the vector and the centroids, not a change of the memory."""

    @abstractmethod
    def save_proposals(self, proposals: list[DomainProposal]) -> None:
        """Insert or replace proposals by id; one transaction."""

    @abstractmethod
    def list_proposals(self, statuses: list[str] | None = None) -> list[DomainProposal]:
        """Proposals (optionally only those with the given statuses), newest first."""

    @abstractmethod
    def get_proposal(self, proposal_id: str) -> DomainProposal | None:
        """One proposal by id."""
