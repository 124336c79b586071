"""Stores made before memoryd kept its own keyword index get it when they are opened (SQLite
m004, PostgreSQL m006), built from every memory's text; ``memoryd migrate`` rebuilds it on
the target and verifies it against the source's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
from helpers import old_stores as stores
from helpers.keyword_index import assert_index_matches

from memoryd.migrate import copy_store
from memoryd.models import SearchFilters
from memoryd.store.sqlite import schema as sqlite_schema
from memoryd.store.postgres import PostgresStore
from memoryd.store.sqlite import SQLiteStore
from memoryd.store.terms import TOKENIZER_ID

OLD_ROWS = [
    {"id": "a", "content": "Deploys go out on Tuesdays after standup", "summary": None,
     "tags": ["ops"]},
    {"id": "b", "content": "The cat sat on the mat", "summary": "a pet story", "tags": []},
    {"id": "c", "content": "Painting the fence on Tuesday", "summary": None,
     "tags": ["chores", "garden"]},
]


def old_sqlite_store(path: Path, versions: tuple[int, ...] = (1, 2, 3)) -> None:
    """A store file as memoryd wrote it before m004 (migrations 1-3, unless ``versions`` says
    otherwise) and three memories."""
    stores.old_sqlite_store(path, versions, OLD_ROWS)


def old_postgres_store(url: str) -> None:
    """A schema as memoryd wrote it before m006: migrations 1-5 and three memories."""
    stores.old_postgres_store(url, range(1, 6), OLD_ROWS)


def check_backfilled(store) -> None:
    assert_index_matches(store)
    assert store.db.meta("keyword_tokenizer") == TOKENIZER_ID
    hits = store.keyword_search("tuesday", SearchFilters(include_superseded=True),
                                now=store.get("a").created_at, limit=5)
    assert {h.memory_id for h in hits} == {"a", "c"}
    assert [h.memory_id for h in store.keyword_search(
        "garden pet", SearchFilters(), now=store.get("a").created_at, limit=5)] != []


def test_sqlite_m004_builds_the_index_of_an_older_store(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_sqlite_store(path)
    store = SQLiteStore(path)
    try:
        assert store.db.schema_version >= 4
        check_backfilled(store)
    finally:
        store.close()


def test_a_migration_numbered_below_applied_ones_still_runs(tmp_path: Path) -> None:
    """Migrations written side by side get numbers out of order: a store that has 5-7 but
    not 4 gets 4 when it is opened."""
    path = tmp_path / "gap.db"
    with stores.sqlite_store_without(path, 4, OLD_ROWS) as store:
        check_backfilled(store)
        with sqlite3.connect(path) as conn:
            applied = [v for (v,) in conn.execute("SELECT version FROM schema_migrations")]
        assert sorted(applied) == [v for v, _, _ in sqlite_schema.MIGRATIONS]


def test_postgres_m006_builds_the_index_of_an_older_store(pg_database) -> None:
    url = pg_database(migrated=False)
    old_postgres_store(url)
    store = PostgresStore(url)
    try:
        assert store.db.schema_version >= 6
        check_backfilled(store)
    finally:
        store.close()


def test_migrate_rebuilds_and_verifies_the_index(tmp_path: Path, pg_url: str) -> None:
    path = tmp_path / "old.db"
    old_sqlite_store(path)
    source, target = SQLiteStore(path), PostgresStore(pg_url)
    try:
        report = copy_store(source, target)
        assert report.verified
        checked = {c.table: c for c in report.checks}
        assert checked["term_stats"].target_rows == checked["term_stats"].source_rows > 0
        assert checked["term_totals"].ok
        assert "term_stats" not in report.copied  # rebuilt, not copied
        assert_index_matches(target)
        # A target whose index went wrong is caught.
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE memoryd.term_stats SET df = df + 1 WHERE term = 'tuesdai'")
        from memoryd.migrate import verify_stores

        bad = {c.table: c.ok for c in verify_stores(source, target)}
        assert bad["term_stats"] is False and bad["memories"] is True
    finally:
        source.close()
        target.close()
