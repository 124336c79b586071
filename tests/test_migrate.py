"""`memoryd migrate`: SQLite <-> PostgreSQL copies that keep everything, resume, and verify.

Real stores on both sides (a temp SQLite file, a fresh PostgreSQL database) and
real vectors from the shared model.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from memoryd.engine import Engine
from memoryd.errors import StoreError
from memoryd.migrate import copy_store, verify_stores
from memoryd.models import ApiKey, Edge, Intention, IntentionTrigger, SchedulingState
from memoryd.store.base import Actor, Store
from memoryd.store.postgres import PostgresStore
from memoryd.store.postgres.schema import LATEST_VERSION
from memoryd.store.sqlite import SQLiteStore

T0 = datetime(2025, 3, 1, 9, 30, 15, 123456, tzinfo=timezone.utc)
TEXTS = [
    "The user prefers TypeScript over JavaScript for frontend work",
    "Deployments run every Friday afternoon through the CI pipeline",
    "We decided to use PostgreSQL as the production database",
    "Alice is the maintainer of the billing service",
    "The office coffee machine is broken again",
    "Bob moved the staging cluster to Frankfurt in April",
    "Use ruff instead of flake8 for linting Python code",
    "The API rate limit is 600 requests per minute per key",
]


def fill(mem: Engine) -> list[str]:
    """Write one of everything a store keeps; returns the ids of the live memories."""
    made = mem.acting_as(Actor("seed", "agent-0")).add_many(
        [
            {"content": text, "tags": [f"t{i % 3}", "seed"], "created_at": T0 + timedelta(hours=i),
             "node_type": "fact" if i % 2 else "decision", "metadata": {"n": i, "ü": [1.5, None]},
             "agent_id": f"agent-{i % 2}", "scope": "project:demo" if i % 3 == 0 else "user"}
            for i, text in enumerate(TEXTS)
        ],
    )
    ids = [m.id for m in made]
    mem.acting_as(Actor("editor")).update(ids[0], content="The user now prefers Rust over TypeScript")
    mem.update(ids[1], superseded_by=ids[0], importance=0.2)
    mem.acting_as(Actor("cleaner")).delete(ids[4])
    store = mem.store
    store.update_states(
        {ids[2]: SchedulingState(stability=12.5, difficulty=3.25, reps=4, lapses=1,
                                 last_review=T0, access_count=9, last_accessed=T0)},
        record="review", actor=Actor("sched"),
    )
    store.upsert_edges([
        Edge(source_id=ids[0], target_id=ids[1], edge_type="supersedes", weight=0.9, created_at=T0),
        Edge(source_id=ids[2], target_id=ids[3], edge_type="related", weight=0.25, created_at=T0,
             valid_until=T0 + timedelta(days=3), metadata={"why": "same team"}),
    ])
    store.work.save_intention(Intention(
        id="int-1", description="remind about the release", created_at=T0, updated_at=T0,
        trigger=IntentionTrigger(type="context", topic="release"), priority="high",
    ))
    store.keys.save_key(ApiKey(id="key-1", label="laptop", prefix="mk_abc", key_hash="h" * 64,
                          scopes=["read", "write"], created_at=T0, last_used=T0))
    store.mark_accessed("session-1", [ids[2], ids[3]], T0)
    store.bookkeeping.set_watermark("capture:session-1", 42)
    store.bookkeeping.save_report("consolidation", {"merged": 3, "when": "nightly"}, T0)
    return [i for n, i in enumerate(ids) if n != 4]


@pytest.fixture
def sqlite_mem(open_mem: Callable[..., Engine], tmp_path: Path) -> Engine:
    mem = open_mem(f"sqlite:///{tmp_path / 'source.db'}")
    fill(mem)
    return mem


def snapshot(store: Store) -> dict[str, object]:
    """Everything observable through the contract, for comparing two stores."""
    memories = {m.id: m.model_dump() for m in store.iter_memories()}
    ids = list(memories)
    return {
        "memories": memories,
        "vectors": {k: v.tolist() for k, v in store.vectors(ids).items()},
        "history": [h.model_dump() for h in store.changes_since(0, limit=10_000)],
        "edges": sorted((e.model_dump_json() for e in store.edges_of(ids))),
        "intentions": [i.model_dump() for i in store.work.list_intentions()],
        "keys": [k.model_dump() for k in store.keys.list_keys()],
        "watermark": store.bookkeeping.get_watermark("capture:session-1"),
        "reports": store.bookkeeping.list_reports("consolidation"),
        "model": (store.embedding_model, store.embedding_dims),
    }


def test_sqlite_to_postgres_keeps_everything(sqlite_mem: Engine, pg_url: str, open_mem) -> None:
    target = PostgresStore(pg_url)
    try:
        report = copy_store(sqlite_mem.store, target, batch_size=3)
        assert report.verified, report.checks
        assert report.copied["memories"] == len(TEXTS) - 1
        assert report.copied["history"] == sqlite_mem.store.stats().last_seq
        assert snapshot(target) == snapshot(sqlite_mem.store)
        # A new write continues the change sequence after the copied history.
        last = target.stats().last_seq
        [m] = target.insert([next(target.iter_memories()).model_copy(update={"id": "new"})], None, Actor())
        assert m.seq == last + 1
    finally:
        target.close()
    # The copy searches like the original: same hits, same order (vectors were not re-made).
    pg_mem = open_mem(pg_url)
    for query in ("which database for production", "linting tools", "rate limit per key"):
        want = [h.memory.id for h in sqlite_mem.search(query, limit=5, mode="vector")]
        got = [h.memory.id for h in pg_mem.search(query, limit=5, mode="vector")]
        assert got == want
    assert pg_mem.search("PostgreSQL production", limit=3, mode="keyword")[0].memory.content == TEXTS[2]


def test_rerun_copies_nothing_twice(sqlite_mem: Engine, pg_url: str) -> None:
    target = PostgresStore(pg_url)
    try:
        first = copy_store(sqlite_mem.store, target)
        again = copy_store(sqlite_mem.store, target)
        assert again.resumed and again.verified
        assert set(again.copied.values()) == {0}
        assert sum(first.copied.values()) > 0
        assert target.count() == sqlite_mem.store.count()
    finally:
        target.close()


def test_interrupted_copy_resumes(sqlite_mem: Engine, pg_url: str) -> None:
    target = PostgresStore(pg_url)
    seen: list[str] = []

    def crash_after_two_batches(table: str, n: int, total: int | None) -> None:
        seen.append(table)
        if table == "history" and seen.count("history") == 2:
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            copy_store(sqlite_mem.store, target, batch_size=2, progress=crash_after_two_batches)
        assert target.count() == sqlite_mem.store.count()  # memories done, history half-way
        assert 0 < len(target.changes_since(0)) < len(sqlite_mem.store.changes_since(0))
        report = copy_store(sqlite_mem.store, target, batch_size=2)
        assert report.resumed and report.verified
        assert report.copied["memories"] == 0  # resumed after them
        assert snapshot(target) == snapshot(sqlite_mem.store)
    finally:
        target.close()


def test_refuses_a_target_that_holds_other_memories(sqlite_mem: Engine, pg_url: str, embed) -> None:
    target = PostgresStore(pg_url)
    try:
        target.set_embedding_model(sqlite_mem.store.embedding_model, 384)
        other = next(sqlite_mem.store.iter_memories()).model_copy(update={"id": "someone-elses"})
        target.insert([other], embed([other.content]), Actor())
        with pytest.raises(StoreError, match="already holds memories"):
            copy_store(sqlite_mem.store, target)
        assert target.count() == 1
    finally:
        target.close()


def test_postgres_back_to_sqlite(sqlite_mem: Engine, pg_url: str, tmp_path: Path, open_mem) -> None:
    middle = PostgresStore(pg_url)
    home = SQLiteStore(tmp_path / "home.db")
    try:
        assert copy_store(sqlite_mem.store, middle).verified
        report = copy_store(middle, home, batch_size=4)
        assert report.verified, report.checks
        assert snapshot(home) == snapshot(sqlite_mem.store)
    finally:
        middle.close()
        home.close()
    # The SQLite copy's vector index was rebuilt: vector search finds the copied memories.
    back = open_mem(f"sqlite:///{tmp_path / 'home.db'}")
    query = "which database for production"
    want = [h.memory.id for h in sqlite_mem.search(query, limit=5, mode="vector")]
    assert [h.memory.id for h in back.search(query, limit=5, mode="vector")] == want


def test_verification_detects_a_changed_row(sqlite_mem: Engine, pg_url: str) -> None:
    target = PostgresStore(pg_url)
    try:
        assert copy_store(sqlite_mem.store, target).verified
        some = next(target.iter_memories())
        target.update_states({some.id: some.state.model_copy(update={"reps": 99})})
        vec = target.vectors([some.id])[some.id]
        checks = {c.table: c for c in verify_stores(sqlite_mem.store, target)}
        assert not checks["memories"].ok
        assert checks["memories"].source_rows == checks["memories"].target_rows
        assert all(c.ok for t, c in checks.items() if t != "memories")
        assert np.isfinite(vec).all()
    finally:
        target.close()


def test_cli_migrate_and_migrate_schema(sqlite_mem: Engine, pg_url: str, run_cli, tmp_path: Path) -> None:
    source_url = sqlite_mem.store.url
    sqlite_mem.close()
    done = run_cli("migrate", "--from", source_url, "--to", pg_url)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "verified" in done.stdout
    for table in ("memories", "history", "edges", "api_keys"):
        assert table in done.stdout
    again = run_cli("migrate", "--from", source_url, "--to", pg_url)
    assert again.returncode == 0, again.stderr + again.stdout
    assert "resumed" in again.stdout and "memories 0" in again.stdout
    schema = run_cli("--store", pg_url, "migrate-schema")
    assert schema.returncode == 0, schema.stderr
    assert f"schema version {LATEST_VERSION}" in schema.stdout
    back = tmp_path / "back.db"
    home = run_cli("migrate", "--from", pg_url, "--to", f"sqlite:///{back}")
    assert home.returncode == 0, home.stderr + home.stdout
    store = SQLiteStore(back, create=False)
    try:
        assert store.count() == len(TEXTS) - 1
    finally:
        store.close()


def test_migrate_from_a_missing_store_fails_cleanly(run_cli, tmp_path: Path, pg_url: str) -> None:
    done = run_cli("migrate", "--from", f"sqlite:///{tmp_path / 'nope.db'}", "--to", pg_url)
    assert done.returncode != 0
    assert "no memoryd store" in (done.stderr + done.stdout)
