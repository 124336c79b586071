"""Domains in the PostgreSQL store: the domains (centroids in a pgvector column), the
proposals, the domain settings, and memories' assignments (the ``domains`` array, filtered
through its GIN index). A mixin of PostgresStore."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memoryd.errors import StoreError
from memoryd.models import Domain, DomainProposal
from memoryd.store.postgres.codec import dumps, to_vector, utc
from memoryd.store.rows import TABLES

_DOMAIN_COLS = TABLES["domains"]
_PROPOSAL_COLS = TABLES["domain_proposals"]
_THRESHOLD = "threshold"
_ASSIGN = (
    "UPDATE memories m SET domains = ARRAY(SELECT jsonb_array_elements_text(v.d)), "
    "domain_scores = v.s FROM jsonb_to_recordset(%s) AS v(id text, d jsonb, s jsonb) "
    "WHERE m.id = v.id"
)


class PostgresDomains:
    """list/save domains, the threshold, assignments and proposals of PostgresStore."""

    def _conn(self) -> AbstractContextManager[psycopg.Connection[Any]]:  # provided by PostgresStore
        raise NotImplementedError

    def _write(self, *, lock: bool = True) -> AbstractContextManager[psycopg.Cursor[Any]]:
        raise NotImplementedError

    # --- domains ---------------------------------------------------------
    def list_domains(self) -> list[Domain]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(_DOMAIN_COLS)} FROM domains ORDER BY member_count DESC, name"
            ).fetchall()
        return [_domain(row) for row in rows]

    def save_domains(self, domains: list[Domain], *, remove: list[str] | None = None) -> None:
        cols = ", ".join(_DOMAIN_COLS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _DOMAIN_COLS[1:])
        try:
            with self._write() as cur:
                if remove:
                    cur.execute("DELETE FROM domains WHERE id = ANY(%s)", (list(remove),))
                if not domains:
                    return
                # Renames may swap names: clear the names of the rows being replaced first.
                cur.execute("UPDATE domains SET name = '#' || id WHERE id = ANY(%s)",
                            ([d.id for d in domains],))
                marks = ", ".join(["%s"] * len(_DOMAIN_COLS))
                cur.executemany(
                    f"INSERT INTO domains ({cols}) VALUES ({marks}) "
                    f"ON CONFLICT (id) DO UPDATE SET {updates}",
                    [_domain_row(d) for d in domains],
                )
        except psycopg.errors.UniqueViolation as exc:
            raise StoreError(f"two domains would share a name: {exc}") from exc

    def domain_threshold(self) -> float | None:
        with self._conn() as conn:
            row = conn.execute("SELECT value FROM domain_settings WHERE key = %s",
                               (_THRESHOLD,)).fetchone()
        return float(row[0]) if row else None

    def set_domain_threshold(self, value: float) -> None:
        with self._write(lock=False) as cur:
            cur.execute(
                "INSERT INTO domain_settings (key, value, updated_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (_THRESHOLD, Jsonb(float(value)), datetime.now(timezone.utc)),
            )

    def set_assignments(self, assignments: dict[str, tuple[list[str], dict[str, float]]]) -> int:
        if not assignments:
            return 0
        records = [{"id": i, "d": list(d), "s": s} for i, (d, s) in assignments.items()]
        with self._write() as cur:
            cur.execute(_ASSIGN, (Jsonb(records, dumps=dumps),))
            return max(cur.rowcount, 0)

    # --- proposals -------------------------------------------------------
    def save_proposals(self, proposals: list[DomainProposal]) -> None:
        if not proposals:
            return
        cols = ", ".join(_PROPOSAL_COLS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _PROPOSAL_COLS[1:])
        with self._write(lock=False) as cur:
            cur.executemany(
                f"INSERT INTO domain_proposals ({cols}) "
                f"VALUES ({', '.join(['%s'] * len(_PROPOSAL_COLS))}) "
                f"ON CONFLICT (id) DO UPDATE SET {updates}",
                [(p.id, p.kind, p.status, p.summary, Jsonb(p.domain_ids),
                  Jsonb(p.evidence, dumps=dumps), Jsonb(p.payload, dumps=dumps), p.created_at,
                  p.decided_at, p.decided_by) for p in proposals],
            )

    def list_proposals(self, statuses: list[str] | None = None) -> list[DomainProposal]:
        statement = f"SELECT {', '.join(_PROPOSAL_COLS)} FROM domain_proposals"
        params: list[Any] = []
        if statuses:
            statement += " WHERE status = ANY(%s::text[])"
            params = [list(statuses)]
        with self._conn() as conn:
            rows = conn.execute(statement + " ORDER BY created_at DESC, pos DESC", params)
            return [_proposal(r) for r in rows.fetchall()]

    def get_proposal(self, proposal_id: str) -> DomainProposal | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {', '.join(_PROPOSAL_COLS)} FROM domain_proposals WHERE id = %s",
                (proposal_id,),
            ).fetchone()
        return _proposal(row) if row else None


def _domain_row(d: Domain) -> tuple[Any, ...]:
    centroid = None if d.centroid is None else to_vector(d.centroid)
    return (d.id, d.name, centroid, d.member_count, Jsonb(d.top_terms), d.suggested_name,
            d.origin, d.created_at, d.updated_at, d.renamed_at)


def _domain(row: tuple[Any, ...]) -> Domain:
    data = dict(zip(_DOMAIN_COLS, row))
    centroid = data.pop("centroid")
    for name in ("created_at", "updated_at", "renamed_at"):
        data[name] = utc(data[name])
    return Domain(**data, centroid=None if centroid is None else to_vector(centroid))


def _proposal(row: tuple[Any, ...]) -> DomainProposal:
    data = dict(zip(_PROPOSAL_COLS, row))
    data["created_at"], data["decided_at"] = utc(data["created_at"]), utc(data["decided_at"])
    return DomainProposal(**data)
