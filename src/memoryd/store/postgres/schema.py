"""Versioned schema migrations of the PostgreSQL store: named, ordered, recorded.

Each migration is a function ``m<NNN>_<name>(cur)`` (in
:mod:`memoryd.store.postgres.migrations`) applied in its own transaction and recorded in ``schema_migrations``. :func:`migrate` holds a
session-level advisory lock while it works, so any number of processes may open
the same database at once: one migrates, the others wait and then find nothing
left to do.

Every table lives in one PostgreSQL schema (``memoryd`` unless the store URL says
``?schema=...``), so a memoryd store can share a database with other applications
and several stores can share one database. ``meta.app = 'memoryd'`` marks the
schema as ours; a schema holding other tables is refused.

The vector column starts without a dimension;
:func:`memoryd.store.postgres.vectors.set_vector_dims` fixes it when the store learns its
embedding model.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable

import psycopg
from psycopg import sql

from memoryd.errors import NotAMemorydStore, SchemaTooNew
from memoryd.store.postgres.migrations import (  # noqa: F401 - APP_MARKER re-exported
    APP_MARKER,
    m001_initial,
    m002_graph_intentions_keys,
    m003_vectors_inline,
    m004_ledger,
    m005_keywords_inline,
    m006_keyword_terms,
    m007_knowledge_graphs,
    m008_tasks_waits,
    m009_domains,
    m010_covering_term_index,
    m011_speakers,
    m012_instruction_topics,
    m013_room_for_state_updates,
)
from memoryd.store.postgres.vectors import ensure_vector_extension

DEFAULT_SCHEMA = "memoryd"


def lock_key(schema: str, purpose: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``purpose`` in ``schema``."""
    value = zlib.crc32(f"memoryd:{purpose}:{schema}".encode()) | (0x6D656D << 32)
    return value - (1 << 64) if value >= (1 << 63) else value


# Versions are assigned per capability; a gap is a migration another part of memoryd owns.
MIGRATIONS: list[tuple[int, str, Callable[[psycopg.Cursor[Any]], None]]] = [
    (1, "initial", m001_initial),
    (2, "graph_intentions_keys", m002_graph_intentions_keys),
    (3, "vectors_inline", m003_vectors_inline),
    (4, "ledger", m004_ledger),
    (5, "keywords_inline", m005_keywords_inline),
    (6, "keyword_terms", m006_keyword_terms),
    (7, "knowledge_graphs", m007_knowledge_graphs),
    (8, "tasks_waits", m008_tasks_waits),
    (9, "domains", m009_domains),
    (10, "covering_term_index", m010_covering_term_index),
    (11, "speakers", m011_speakers),
    (12, "instruction_topics", m012_instruction_topics),
    (13, "room_for_state_updates", m013_room_for_state_updates),
]
LATEST_VERSION = MIGRATIONS[-1][0]


def applied_version(conn: psycopg.Connection[Any], schema: str) -> int:
    """The highest applied migration in ``schema`` (0 when the schema is new)."""
    row = conn.execute(
        "SELECT to_regclass(%s)", (f'"{schema}".schema_migrations',)
    ).fetchone()
    if row is None or row[0] is None:
        return 0
    (version,) = conn.execute(
        sql.SQL("SELECT COALESCE(MAX(version), 0) FROM {}.schema_migrations").format(
            sql.Identifier(schema)
        )
    ).fetchone()  # type: ignore[misc]
    return int(version)


def _check_ours(conn: psycopg.Connection[Any], schema: str) -> None:
    tables = {
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        )
    }
    if not tables or tables == {"schema_migrations"}:
        return
    if "meta" not in tables:
        raise NotAMemorydStore(f"PostgreSQL schema {schema!r} holds tables that are not memoryd's")
    row = conn.execute(
        sql.SQL("SELECT value FROM {}.meta WHERE key = 'app'").format(sql.Identifier(schema))
    ).fetchone()
    if row is None or row[0] != APP_MARKER:
        raise NotAMemorydStore(f"PostgreSQL schema {schema!r} is not a memoryd store")


def migrate(conn: psycopg.Connection[Any], schema: str) -> int:
    """Create or upgrade the store in ``schema``; safe to run from many processes at once.

    ``conn`` must be in autocommit mode. Returns the schema version now applied.
    """
    conn.execute("SELECT pg_advisory_lock(%s)", (lock_key(schema, "migrate"),))
    try:
        ext_schema = ensure_vector_extension(conn)
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        _check_ours(conn, schema)
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {}.schema_migrations ("
                "version integer PRIMARY KEY, name text NOT NULL, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(sql.Identifier(schema))
        )
        current = applied_version(conn, schema)
        if current > LATEST_VERSION:
            raise SchemaTooNew(
                f"PostgreSQL schema {schema!r} has memoryd schema version {current}; this "
                f"memoryd knows up to {LATEST_VERSION}. Upgrade memoryd."
            )
        applied = {v for (v,) in conn.execute(
            sql.SQL("SELECT version FROM {}.schema_migrations").format(sql.Identifier(schema)))}
        for version, name, apply in MIGRATIONS:
            # By set, not by the highest number: a migration numbered below one already
            # applied (written alongside it) still runs once. The advisory lock serialises us.
            if version in applied:
                continue
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(
                    sql.SQL("SET LOCAL search_path TO {}, {}").format(
                        sql.Identifier(schema), sql.Identifier(ext_schema)
                    )
                )
                apply(cur)
                cur.execute(
                    sql.SQL("INSERT INTO {}.schema_migrations (version, name) VALUES (%s, %s)").format(
                        sql.Identifier(schema)
                    ),
                    (version, name),
                )
        return applied_version(conn, schema)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key(schema, "migrate"),))
