"""``store.domains``: the domains memories are grouped into (each with its centroid), the
assignment threshold, each memory's assignment, and re-clustering proposals.

Written once for both backends; only the assignment of many memories at once is a
statement of each backend's own (``assign``), handed to :class:`Domains` when the store is
built. An assignment is derived from a memory's vector and the centroids, not a change of
the memory: it records no history and keeps ``seq`` and ``updated_at``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from memoryd.errors import StoreError
from memoryd.models import Domain, DomainProposal
from memoryd.store.database import Database
from memoryd.store.parts import Part

#: A memory's domains (best first) and its similarity to every domain's centroid.
Assignment = tuple[list[str], dict[str, float]]
#: Set the ``domains`` and ``domain_scores`` of memories inside a write transaction; returns
#: how many of them exist.
AssignStatement = Callable[[Any, dict[str, Assignment]], int]
_THRESHOLD = "threshold"


class Domains(Part):
    """Domains, the threshold, memories' assignments and proposals."""

    def __init__(self, db: Database, assign: AssignStatement) -> None:
        super().__init__(db)
        self._assign = assign

    # --- domains ---------------------------------------------------------
    def list_domains(self) -> list[Domain]:
        """Every domain with its centroid (a float32 array), most members first, then by name."""
        return [Domain(**row) for row in
                self.db.select("domains", tail="ORDER BY member_count DESC, name")]

    def save_domains(self, domains: list[Domain], *, remove: list[str] | None = None) -> None:
        """Insert or replace domains by id, and delete the domains whose ids are in ``remove``;
        one transaction. A name another remaining domain has is a StoreError."""
        in_list = self.db.dialect.in_list
        try:
            with self.db.write() as tx:
                if remove:
                    clause, params = in_list("id", list(remove))
                    tx.execute(f"DELETE FROM domains WHERE {clause}", params)
                if domains:
                    # Renames may swap names: clear the names of the rows being replaced first.
                    clause, params = in_list("id", [d.id for d in domains])
                    tx.execute(f"UPDATE domains SET name = '#' || id WHERE {clause}", params)
                    self.db.upsert(tx, "domains",
                                   [{**d.model_dump(), "centroid": d.centroid} for d in domains])
        except self.db.constraint_errors as exc:
            raise StoreError(f"two domains would share a name: {exc}") from exc

    def domain_threshold(self) -> float | None:
        """The active assignment threshold (None until one is set)."""
        found = self.db.select("domain_settings", f"key = {self.db.mark}", [_THRESHOLD],
                               columns=("value",))
        return float(found[0]["value"]) if found else None

    def set_domain_threshold(self, value: float) -> None:
        """Set the active assignment threshold."""
        row = {"key": _THRESHOLD, "value": float(value), "updated_at": datetime.now(timezone.utc)}
        with self.db.write(lock=False) as tx:
            self.db.upsert(tx, "domain_settings", [row], key=("key",))

    def set_assignments(self, assignments: dict[str, Assignment]) -> int:
        """Set the ``domains`` and ``domain_scores`` of memories, one transaction; returns how
        many of them exist. Records no history and keeps ``seq`` and ``updated_at``: an
        assignment is derived from the vector and the centroids, not a change of the memory."""
        if not assignments:
            return 0
        with self.db.write() as tx:
            return self._assign(tx, assignments)

    # --- proposals -------------------------------------------------------
    def save_proposals(self, proposals: list[DomainProposal]) -> None:
        """Insert or replace proposals by id; one transaction."""
        if not proposals:
            return
        with self.db.write(lock=False) as tx:
            self.db.upsert(tx, "domain_proposals",
                           [{**p.model_dump(), "payload": p.payload} for p in proposals])

    def list_proposals(self, statuses: list[str] | None = None) -> list[DomainProposal]:
        """Proposals (optionally only those with the given statuses), newest first."""
        where, params = self.db.dialect.in_list("status", list(statuses)) if statuses else ("", [])
        rows = self.db.select("domain_proposals", where, params,
                              f"ORDER BY created_at DESC, {self.db.position} DESC")
        return [DomainProposal(**row) for row in rows]

    def get_proposal(self, proposal_id: str) -> DomainProposal | None:
        """One proposal by id."""
        found = self.db.select("domain_proposals", f"id = {self.db.mark}", [proposal_id])
        return DomainProposal(**found[0]) if found else None
