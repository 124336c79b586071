"""Domains in the SQLite store: the statement that assigns memories to domains (the rest of
``store.domains`` is :mod:`memoryd.store.domains`, the same on both backends).

``memory_domains`` (one row per memory and domain) is kept by triggers on ``memories``
(see ``m007_domains``), so assignments written here are filterable at once.
"""

from __future__ import annotations

import json
import sqlite3

from memoryd.store.domains import Assignment


def assign(conn: sqlite3.Connection, assignments: dict[str, Assignment]) -> int:
    """Set the ``domains`` and ``domain_scores`` (JSON text) of memories; how many exist."""
    changed = 0
    for memory_id, (domains, scores) in assignments.items():
        cur = conn.execute(
            "UPDATE memories SET domains = ?, domain_scores = ? WHERE id = ?",
            (json.dumps(list(domains), ensure_ascii=False),
             json.dumps(scores, ensure_ascii=False, sort_keys=True), memory_id),
        )
        changed += cur.rowcount
    return changed
