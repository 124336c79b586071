"""Domains in the PostgreSQL store: the statement that assigns memories to domains, in one
statement for any number of memories (the rest of ``store.domains`` is
:mod:`memoryd.store.domains`, the same on both backends). A memory's ``domains`` is a text
array, filtered through its GIN index."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memoryd.store.domains import Assignment
from memoryd.store.postgres.codec import dumps

_ASSIGN = (
    "UPDATE memories m SET domains = ARRAY(SELECT jsonb_array_elements_text(v.d)), "
    "domain_scores = v.s FROM jsonb_to_recordset(%s) AS v(id text, d jsonb, s jsonb) "
    "WHERE m.id = v.id"
)


def assign(cur: psycopg.Cursor[Any], assignments: dict[str, Assignment]) -> int:
    """Set the ``domains`` and ``domain_scores`` of memories; how many of them exist."""
    records = [{"id": i, "d": list(d), "s": s} for i, (d, s) in assignments.items()]
    cur.execute(_ASSIGN, (Jsonb(records, dumps=dumps),))
    return max(cur.rowcount, 0)
