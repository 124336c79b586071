"""Low-level checks of a SQLite memoryd store, read straight from the file with sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def connect(path: Path | str) -> sqlite3.Connection:
    """A plain sqlite3 connection to a store file (no memoryd code involved)."""
    conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def table_counts(path: Path | str) -> dict[str, int]:
    """Row counts of the tables that must agree with each other."""
    conn = connect(path)
    try:
        one = lambda sql: int(conn.execute(sql).fetchone()[0])
        return {
            "memories": one("SELECT count(*) FROM memories"),
            "vectors": one("SELECT count(*) FROM memory_vectors"),
            # External-content FTS5: count(*) on memories_fts reads the content
            # table; the docsize shadow table has one row per *indexed* document.
            "fts_docs": one("SELECT count(*) FROM memories_fts_docsize"),
            "history_creates": one("SELECT count(*) FROM history WHERE operation = 'create'"),
            "history": one("SELECT count(*) FROM history"),
        }
    finally:
        conn.close()


def check_consistency(path: Path | str) -> dict[str, Any]:
    """Assert that the store file is internally consistent; return its counts.

    * SQLite's own integrity check passes;
    * the FTS5 index matches the ``memories`` content table exactly
      (``integrity-check`` with rank 1 compares against the external content);
    * every memory has exactly one vector row and one FTS document, and no
      vector row or FTS document is orphaned;
    * every memory has a 'create' history entry.
    """
    conn = connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)")
        missing_vec = conn.execute(
            "SELECT count(*) FROM memories m LEFT JOIN memory_vectors v "
            "ON v.memory_rowid = m.rowid WHERE v.memory_rowid IS NULL"
        ).fetchone()[0]
        orphan_vec = conn.execute(
            "SELECT count(*) FROM memory_vectors v LEFT JOIN memories m "
            "ON v.memory_rowid = m.rowid WHERE m.rowid IS NULL"
        ).fetchone()[0]
        missing_fts = conn.execute(
            "SELECT count(*) FROM memories m LEFT JOIN memories_fts_docsize d "
            "ON d.id = m.rowid WHERE d.id IS NULL"
        ).fetchone()[0]
        orphan_fts = conn.execute(
            "SELECT count(*) FROM memories_fts_docsize d LEFT JOIN memories m "
            "ON d.id = m.rowid WHERE m.rowid IS NULL"
        ).fetchone()[0]
        no_history = conn.execute(
            "SELECT count(*) FROM memories m WHERE NOT EXISTS "
            "(SELECT 1 FROM history h WHERE h.memory_id = m.id AND h.operation = 'create')"
        ).fetchone()[0]
    finally:
        conn.close()
    assert (missing_vec, orphan_vec) == (0, 0), "memories and vectors disagree"
    assert (missing_fts, orphan_fts) == (0, 0), "memories and the FTS index disagree"
    assert no_history == 0, "a memory has no 'create' history entry"
    counts = table_counts(path)
    assert counts["memories"] == counts["vectors"] == counts["fts_docs"]
    return counts
