"""Stores as an older memoryd wrote them: some migrations applied, a few memories inserted
by hand, so that opening them with today's memoryd runs the rest (and their backfills)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from memoryd.store.postgres import schema as postgres_schema
from memoryd.store.sqlite import schema as sqlite_schema
from memoryd.store.postgres import PostgresStore
from memoryd.store.sqlite import SQLiteStore

NOW_TS = 1_760_000_000.0

#: One memory of an old store: id plus any memories columns (content, summary, tags, metadata).
OldRow = Mapping[str, Any]


def old_sqlite_store(path: Path, versions: Iterable[int], rows: list[OldRow]) -> None:
    """An SQLite store file with only the migrations ``versions`` applied, holding ``rows``."""
    wanted = set(versions)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at REAL NOT NULL)")
    for version, name, apply in sqlite_schema.MIGRATIONS:
        if version not in wanted:
            continue
        conn.execute("BEGIN")
        apply(conn)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, name, NOW_TS))
        conn.execute("COMMIT")
    for seq, row in enumerate(rows, start=1):
        columns = _columns(row)
        conn.execute(f"INSERT INTO memories ({', '.join(columns)}, node_type, created_at, "
                     f"updated_at, seq) VALUES ({', '.join('?' * len(columns))}, 'fact', ?, ?, ?)",
                     [*(_json(row[c]) if c in ("tags", "metadata") else row[c] for c in columns),
                      NOW_TS, NOW_TS, seq])
    conn.close()


def old_postgres_store(url: str, versions: Iterable[int], rows: list[OldRow]) -> None:
    """A PostgreSQL schema with only the migrations ``versions`` applied, holding ``rows``."""
    wanted = set(versions)
    with psycopg.connect(url, autocommit=True) as conn:
        ext = postgres_schema.ensure_vector_extension(conn)
        conn.execute("CREATE SCHEMA memoryd")
        conn.execute("CREATE TABLE memoryd.schema_migrations (version integer PRIMARY KEY, "
                     "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
        for version, name, apply in postgres_schema.MIGRATIONS:
            if version not in wanted:
                continue
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(sql.SQL("SET LOCAL search_path TO memoryd, {}").format(
                    sql.Identifier(ext)))
                apply(cur)
                cur.execute("INSERT INTO memoryd.schema_migrations (version, name) "
                            "VALUES (%s, %s)", (version, name))
        for seq, row in enumerate(rows, start=1):
            columns = _columns(row)
            conn.execute(f"INSERT INTO memoryd.memories ({', '.join(columns)}, node_type, "
                         f"created_at, updated_at, seq) VALUES ({', '.join(['%s'] * len(columns))}, "
                         "'fact', now(), now(), %s)",
                         [*(_json(row[c]) if c == "metadata" else row[c] for c in columns), seq])


@contextmanager
def sqlite_store_without(path: Path, version: int, rows: list[OldRow]) -> Iterator[SQLiteStore]:
    """An SQLite store written before migration ``version`` (every other one applied, ``rows``
    inserted by hand), opened by today's memoryd, which has applied ``version`` on opening."""
    old_sqlite_store(path, [v for v, _, _ in sqlite_schema.MIGRATIONS if v != version], rows)
    store = SQLiteStore(path)
    try:
        with sqlite3.connect(path) as conn:
            assert version in sqlite_schema.applied_versions(conn)
        yield store
    finally:
        store.close()


@contextmanager
def postgres_store_without(url: str, version: int, rows: list[OldRow]) -> Iterator[PostgresStore]:
    """:func:`sqlite_store_without` for a PostgreSQL database created without migrations."""
    old_postgres_store(url, [v for v, _, _ in postgres_schema.MIGRATIONS if v != version], rows)
    store = PostgresStore(url)
    try:
        with psycopg.connect(url) as conn:
            applied = {v for (v,) in conn.execute("SELECT version FROM memoryd.schema_migrations")}
        assert version in applied
        yield store
    finally:
        store.close()


def _columns(row: OldRow) -> list[str]:
    return [c for c in ("id", "content", "summary", "tags", "metadata") if c in row]


def _json(value: Any) -> str:
    return json.dumps(value)
