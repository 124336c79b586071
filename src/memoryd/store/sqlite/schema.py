"""Versioned schema migrations of the SQLite store: named, ordered, recorded.

Each migration is a function ``m<NNN>_<name>(conn)`` (in
:mod:`memoryd.store.sqlite.migrations`); applied versions are kept in
``schema_migrations``. A store marks itself with ``meta.app = 'memoryd'`` so that
any other SQLite file is recognised and refused.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Callable

from memoryd.store.sqlite.migrations import (  # noqa: F401 - APP_MARKER re-exported
    APP_MARKER,
    m001_initial,
    m002_graph_intentions_keys,
    m003_ledger,
    m004_keyword_terms,
    m005_knowledge_graphs,
    m006_tasks_waits,
    m007_domains,
    m008_speakers,
    m009_instruction_topics,
)

# Versions are assigned per capability; a gap is a migration another part of memoryd owns.
MIGRATIONS: list[tuple[int, str, Callable[[sqlite3.Connection], None]]] = [
    (1, "initial", m001_initial),
    (2, "graph_intentions_keys", m002_graph_intentions_keys),
    (3, "ledger", m003_ledger),
    (4, "keyword_terms", m004_keyword_terms),
    (5, "knowledge_graphs", m005_knowledge_graphs),
    (6, "tasks_waits", m006_tasks_waits),
    (7, "domains", m007_domains),
    (8, "speakers", m008_speakers),
    (9, "instruction_topics", m009_instruction_topics),
]
LATEST_VERSION = MIGRATIONS[-1][0]


def applied_version(conn: sqlite3.Connection) -> int:
    """The highest applied migration (0 for a brand-new file)."""
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
    ).fetchone()
    if row is None:
        return 0
    (version,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(version)


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    """Every applied migration's version."""
    return {v for (v,) in conn.execute("SELECT version FROM schema_migrations")}


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every migration not recorded yet (also one numbered below the newest applied:
    numbers are handed out per capability), each in its own transaction; return the version."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    for version, name, apply in MIGRATIONS:
        # By set, not by the highest number: a migration numbered below one already applied
        # (written alongside it) still runs once.
        if version in applied_versions(conn):
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the lock.
            if version in applied_versions(conn):
                conn.execute("ROLLBACK")
                continue
            apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (version, name, time.time()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied_version(conn)
