"""Domains in the SQLite store: the domains (centroids as float32 blobs), the proposals, the
domain settings, and memories' assignments. A mixin of SQLiteStore.

``memory_domains`` (one row per memory and domain) is kept by triggers on ``memories``
(see ``m007_domains``), so assignments written here are filterable at once.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from memoryd.errors import StoreError
from memoryd.models import Domain, DomainProposal
from memoryd.store.rows import TABLES
from memoryd.store.sqlite.codec import dt, ts

_DOMAIN_COLS = TABLES["domains"]
_PROPOSAL_COLS = TABLES["domain_proposals"]
_THRESHOLD = "threshold"


class SQLiteDomains:
    """list/save domains, the threshold, assignments and proposals of SQLiteStore."""

    _conn: sqlite3.Connection

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:  # provided by SQLiteStore
        raise NotImplementedError

    # --- domains ---------------------------------------------------------
    def list_domains(self) -> list[Domain]:
        rows = self._conn.execute(
            f"SELECT {', '.join(_DOMAIN_COLS)} FROM domains ORDER BY member_count DESC, name"
        ).fetchall()
        return [_domain(row) for row in rows]

    def save_domains(self, domains: list[Domain], *, remove: list[str] | None = None) -> None:
        marks = ", ".join("?" * len(_DOMAIN_COLS))
        updates = ", ".join(f"{c} = excluded.{c}" for c in _DOMAIN_COLS[1:])
        with self._write() as conn:
            conn.executemany("DELETE FROM domains WHERE id = ?", [(i,) for i in remove or []])
            # Renames may swap names: clear the names of the rows being replaced first.
            conn.executemany("UPDATE domains SET name = '#' || id WHERE id = ?",
                             [(d.id,) for d in domains])
            try:
                conn.executemany(
                    f"INSERT INTO domains ({', '.join(_DOMAIN_COLS)}) VALUES ({marks}) "
                    f"ON CONFLICT(id) DO UPDATE SET {updates}",
                    [_domain_row(d) for d in domains],
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"two domains would share a name: {exc}") from exc

    def domain_threshold(self) -> float | None:
        row = self._conn.execute("SELECT value FROM domain_settings WHERE key = ?",
                                 (_THRESHOLD,)).fetchone()
        return float(json.loads(row[0])) if row else None

    def set_domain_threshold(self, value: float) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO domain_settings (key, value, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (_THRESHOLD, json.dumps(float(value)), time.time()),
            )

    def set_assignments(self, assignments: dict[str, tuple[list[str], dict[str, float]]]) -> int:
        changed = 0
        with self._write() as conn:
            for memory_id, (domains, scores) in assignments.items():
                cur = conn.execute(
                    "UPDATE memories SET domains = ?, domain_scores = ? WHERE id = ?",
                    (json.dumps(list(domains), ensure_ascii=False),
                     json.dumps(scores, ensure_ascii=False, sort_keys=True), memory_id),
                )
                changed += cur.rowcount
        return changed

    # --- proposals -------------------------------------------------------
    def save_proposals(self, proposals: list[DomainProposal]) -> None:
        marks = ", ".join("?" * len(_PROPOSAL_COLS))
        with self._write() as conn:
            conn.executemany(
                f"INSERT OR REPLACE INTO domain_proposals ({', '.join(_PROPOSAL_COLS)}) "
                f"VALUES ({marks})",
                [(p.id, p.kind, p.status, p.summary, json.dumps(p.domain_ids),
                  json.dumps(p.evidence, ensure_ascii=False, sort_keys=True, default=str),
                  json.dumps(p.payload, ensure_ascii=False, sort_keys=True), ts(p.created_at),
                  ts(p.decided_at), p.decided_by) for p in proposals],
            )

    def list_proposals(self, statuses: list[str] | None = None) -> list[DomainProposal]:
        sql = f"SELECT {', '.join(_PROPOSAL_COLS)} FROM domain_proposals"
        params: list[Any] = []
        if statuses:
            sql += f" WHERE status IN ({', '.join('?' * len(statuses))})"
            params = list(statuses)
        rows = self._conn.execute(sql + " ORDER BY created_at DESC, rowid DESC", params)
        return [_proposal(r) for r in rows.fetchall()]

    def get_proposal(self, proposal_id: str) -> DomainProposal | None:
        row = self._conn.execute(
            f"SELECT {', '.join(_PROPOSAL_COLS)} FROM domain_proposals WHERE id = ?",
            (proposal_id,),
        ).fetchone()
        return _proposal(row) if row else None


def _domain_row(d: Domain) -> tuple[Any, ...]:
    centroid = None if d.centroid is None else np.asarray(d.centroid, np.float32).tobytes()
    return (d.id, d.name, centroid, d.member_count, json.dumps(d.top_terms, ensure_ascii=False),
            d.suggested_name, d.origin, ts(d.created_at), ts(d.updated_at), ts(d.renamed_at))


def _domain(row: tuple[Any, ...]) -> Domain:
    data = dict(zip(_DOMAIN_COLS, row))
    blob = data.pop("centroid")
    data["top_terms"] = json.loads(data["top_terms"])
    for name in ("created_at", "updated_at", "renamed_at"):
        data[name] = dt(data[name])
    centroid = None if blob is None else np.frombuffer(blob, dtype=np.float32).copy()
    return Domain(**data, centroid=centroid)


def _proposal(row: tuple[Any, ...]) -> DomainProposal:
    data = dict(zip(_PROPOSAL_COLS, row))
    for name in ("domain_ids", "evidence", "payload"):
        data[name] = json.loads(data[name])
    data["created_at"], data["decided_at"] = dt(data["created_at"]), dt(data["decided_at"])
    return DomainProposal(**data)
