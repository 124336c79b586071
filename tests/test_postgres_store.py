"""What only the PostgreSQL store has: URLs and schemas, migrations, one-round-trip hybrid
search, ef_search, re-embedding to another dimension, logical backups, and opening it
through ``memoryd.open`` / ``MEMORYD_STORE_URL``. The shared contract is in
test_store_contract.py (run on both backends).
"""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest

import memoryd
from memoryd.errors import InvalidInput, NotAMemorydStore, SchemaTooNew, StoreError
from memoryd.models import Memory, SearchFilters
from memoryd.store.postgres import schema as postgres_schema
from memoryd.store.base import Actor
from memoryd.store.postgres import PostgresStore, split_url

NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
ALL = SearchFilters()
TEXTS = [
    "The user prefers TypeScript over JavaScript for frontend work",
    "Deployments run every Friday afternoon through the CI pipeline",
    "We decided to use PostgreSQL as the production database",
    "Alice is the maintainer of the billing service",
    "The office coffee machine is broken again",
    "Our PostgreSQL replicas lag behind during the Friday deployments",
    "TypeScript strict mode caught a null bug in the billing service",
]


def memory(text: str, **fields) -> Memory:
    return Memory(id=fields.pop("id", None) or str(uuid.uuid4()), content=text, created_at=NOW,
                  updated_at=NOW, **fields)


@pytest.fixture
def pg(pg_url: str, shared_embedder):
    store = PostgresStore(pg_url)
    store.set_embedding_model(shared_embedder.model_id, shared_embedder.dims)
    yield store
    store.close()


def test_split_url_keeps_libpq_parameters_and_takes_memoryds() -> None:
    conninfo, extra = split_url(
        "postgres://u:p@db.example/mem?sslmode=require&schema=team_a&pool_max=32&host=/run/pg"
    )
    assert conninfo == "postgresql://u:p@db.example/mem?sslmode=require&host=/run/pg"
    assert extra == {"schema": "team_a", "pool_max": "32"}


def test_schemas_keep_two_memories_apart_in_one_database(pg_url: str, embed) -> None:
    join = "&" if "?" in pg_url else "?"
    a = PostgresStore(f"{pg_url}{join}schema=team_a")
    b = PostgresStore(f"{pg_url}{join}schema=team_b&pool_max=2")
    try:
        for store in (a, b):
            store.set_embedding_model("m", 384)
        a.insert([memory("only in team a")], embed(["only in team a"]), Actor())
        assert (a.count(), b.count()) == (1, 0)
        assert b.keyword_search("team", ALL, now=NOW, limit=5) == []
        assert a.stats().url.endswith("schema=team_a")
    finally:
        a.close()
        b.close()


def test_a_foreign_schema_is_refused_and_a_newer_one_too(pg_database) -> None:
    url = pg_database(migrated=False)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA memoryd; CREATE TABLE memoryd.invoices (id int)")
    with pytest.raises(NotAMemorydStore):
        PostgresStore(url)
    newer = pg_database()
    with psycopg.connect(newer, autocommit=True) as conn:
        conn.execute("INSERT INTO memoryd.schema_migrations (version, name) VALUES (999, 'future')")
    with pytest.raises(SchemaTooNew):
        PostgresStore(newer)


def test_open_without_create_needs_an_existing_store(pg_database) -> None:
    with pytest.raises(NotAMemorydStore):
        PostgresStore(pg_database(migrated=False), create=False)


def test_unreachable_server_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot connect"):
        PostgresStore(f"postgresql://nobody@/nodb?host={tmp_path}&connect_timeout=2")


def test_migrations_are_recorded(pg: PostgresStore) -> None:
    with psycopg.connect(split_url(pg.url)[0]) as conn:
        rows = conn.execute("SELECT version, name FROM memoryd.schema_migrations ORDER BY version").fetchall()
        indexes = {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'memoryd'")}
        (typmod, storage) = conn.execute(
            "SELECT atttypmod, attstorage FROM pg_attribute WHERE "
            "attrelid = 'memoryd.memories'::regclass AND attname = 'embedding'").fetchone()
    assert rows == [(v, n) for v, n, _ in postgres_schema.MIGRATIONS]
    assert {"memories_tags", "memories_embedding_hnsw", "memory_terms_pkey",
            "memory_terms_memory", "term_stats_pkey"} <= indexes
    assert typmod == 384  # vector(384): fixed by the embedding model
    assert storage == "m"  # kept in the row, not TOASTed
    assert pg.stats().schema_version == postgres_schema.LATEST_VERSION


def test_keyword_postings_are_read_from_the_index_alone(pg: PostgresStore) -> None:
    """tf and length live in the primary key's leaves, so scoring a term never visits the
    heap pages of the memories holding it."""
    with psycopg.connect(split_url(pg.url)[0]) as conn:
        (definition,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'memoryd' "
            "AND indexname = 'memory_terms_pkey'").fetchone()
    assert "(term, memory_rowid) INCLUDE (tf, length)" in definition


def test_state_updates_keep_each_row_on_its_page(pg: PostgresStore, embed) -> None:
    """Recording access rewrites the scheduling state of every hit: the updated copy of a row
    stays on its page (a heap-only update, no new entry in any index) because inserts leave
    room for it. On full pages every copy moves and the HNSW index grows."""
    texts = [f"{t} (note {i})" for i in range(6) for t in TEXTS]  # 42 rows of about 2 KB
    stored = pg.insert([memory(t) for t in texts], embed(texts), Actor())

    def pages() -> dict[str, int]:
        with psycopg.connect(split_url(pg.url)[0]) as conn:
            return {i: int(str(ctid).strip("()").split(",")[0]) for i, ctid in conn.execute(
                "SELECT id, ctid FROM memoryd.memories")}

    before = pages()
    assert len(set(before.values())) > 10  # the rows fill many pages
    for _ in range(2):
        current = pg.get_many([m.id for m in stored]).values()
        pg.update_states({m.id: m.state.model_copy(update={
            "access_count": 1 + m.state.access_count, "last_accessed": NOW}) for m in current})
    assert pages() == before
    assert {m.state.access_count for m in pg.get_many(list(before)).values()} == {2}
    with psycopg.connect(split_url(pg.url)[0]) as conn:
        (options,) = conn.execute("SELECT reloptions FROM pg_class WHERE oid = "
                                  "'memoryd.memories'::regclass").fetchone()
    assert options == ["fillfactor=70"]


def test_vector_search_returns_more_than_ef_search(pg_url: str, embed) -> None:
    store = PostgresStore(pg_url, ef_search=8)
    try:
        store.set_embedding_model("m", 384)
        texts = [f"memory number {i} about topic {i % 7}" for i in range(40)]
        store.insert([memory(t) for t in texts], embed(texts), Actor())
        hits = store.vector_search(embed(["topic 3"])[0], ALL, now=NOW, limit=30)
        assert len(hits) == 30
        assert [h.similarity for h in hits] == sorted((h.similarity for h in hits), reverse=True)
        filtered = store.vector_search(embed(["topic 3"])[0], SearchFilters(tags=["none"]), now=NOW, limit=5)
        assert filtered == []
    finally:
        store.close()


def test_reembed_to_another_dimension_switches_at_the_end(pg: PostgresStore, embed) -> None:
    stored = pg.insert([memory(t) for t in TEXTS[:3]], embed(TEXTS[:3]), Actor())
    small = {m.id: np.eye(8, dtype=np.float32)[i] for i, m in enumerate(stored)}
    pg.replace_vectors(small, "tiny-8")
    # Until the switch the old vectors still answer (the column is vector(384)).
    assert pg.vector_search(embed([TEXTS[0]])[0], ALL, now=NOW, limit=1)[0].memory_id == stored[0].id
    np.testing.assert_array_equal(pg.vectors([stored[1].id])[stored[1].id], small[stored[1].id])
    pg.set_embedding_model("tiny-8", 8)
    assert (pg.embedding_model, pg.embedding_dims) == ("tiny-8", 8)
    assert pg.stats().vectors == 3
    hit = pg.vector_search(np.eye(8, dtype=np.float32)[2], ALL, now=NOW, limit=1)[0]
    assert hit.memory_id == stored[2].id and hit.similarity == pytest.approx(1.0)
    with pytest.raises(StoreError):
        pg.insert([memory("wrong size")], embed(["wrong size"]), Actor())


def test_backup_is_a_logical_dump_and_other_files_are_refused(pg: PostgresStore, embed, tmp_path: Path) -> None:
    pg.insert([memory(t) for t in TEXTS[:2]], embed(TEXTS[:2]), Actor())
    target = tmp_path / "b.jsonl.gz"
    pg.transfer.backup(target)
    with gzip.open(target, "rt") as handle:
        header = json.loads(handle.readline())
        tables = {json.loads(line)["table"] for line in handle}
    assert header["format"] == "memoryd-postgres-dump" and header["embedding_dims"] == "384"
    assert {"memories", "history"} <= tables
    bogus = tmp_path / "not-a-dump.db"
    bogus.write_bytes(b"SQLite format 3\x00")
    with pytest.raises(StoreError, match="not a memoryd PostgreSQL backup"):
        pg.transfer.restore(bogus)
    assert pg.count() == 2


def test_content_postgres_cannot_hold_is_refused_before_the_database(pg: PostgresStore, embed) -> None:
    """NUL is refused as invalid input on both backends (one rule), before any row is written."""
    with pytest.raises(InvalidInput):
        pg.insert([memory("nul \x00 byte")], embed(["nul byte"]), Actor())
    assert pg.count() == 0 and pg.stats().last_seq == 0


def test_memoryd_open_and_env_url_select_postgres(pg_url: str, shared_embedder, monkeypatch) -> None:
    with memoryd.open(pg_url, embedder=shared_embedder) as mem:
        assert mem.store.backend == "postgresql"
        mem.add("We decided to use PostgreSQL as the production database", tags=["db"])
        mem.add("The office coffee machine is broken again")
        hits = mem.search("which database in production", limit=2)
        assert hits[0].memory.content.startswith("We decided")
        assert hits[0].keyword_rank is not None and hits[0].semantic_rank is not None
    monkeypatch.setenv("MEMORYD_STORE_URL", pg_url)
    with memoryd.open(embedder=shared_embedder) as mem:
        assert mem.store.backend == "postgresql" and mem.store.count() == 2
        assert mem.stats()["memories"] == 2


def test_cli_reads_memoryd_store_url(pg_url: str, run_cli, cli_env) -> None:
    env = dict(cli_env, MEMORYD_STORE_URL=pg_url)
    done = run_cli("migrate-schema", env=env)
    assert done.returncode == 0, done.stderr
    assert "schema version" in done.stdout and "postgresql://" in done.stdout
