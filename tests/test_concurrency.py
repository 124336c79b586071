"""Many agents, one memory: concurrent writer processes and a writer killed mid-batch.

On both backends (an SQLite file shared by processes; a PostgreSQL database):

* 8 processes add, update and search for a bounded time while a ninth follows the
  change feed. Afterwards every acknowledged write is present exactly once, the
  history has one 'create' per memory and one entry per acknowledged update, its
  sequence numbers are unique and increasing, and the follower saw every change
  (no change committed behind its back with a lower sequence number).
* A writer adding batches (memories + vectors + edges in one transaction) is killed
  with SIGKILL mid-batch. On reopening, the store is consistent and the
  interrupted batch is fully present or fully absent.

The vectors come from a tiny deterministic embedder: these tests count writes;
what the vectors mean does not matter. This file is also the worker script
(``python test_concurrency.py <role> ...``).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent
WORKERS = 8
DURATION_S = float(os.environ.get("MEMORYD_TEST_CONCURRENCY_SECONDS", "10"))
CRASH_BATCH = 300


# --------------------------------------------------------------------------- the worker side


def hash_embedder():
    """A deterministic 32-dim bag-of-words embedder (mechanics only, no meaning)."""
    from memoryd.embed.base import Embedder

    class HashEmbedder(Embedder):
        def __init__(self) -> None:
            super().__init__(model_id="test/hash-32", dims=32)

        def _embed_batch(self, texts: list[str]) -> np.ndarray:
            out = np.zeros((len(texts), 32), dtype=np.float32)
            for row, text in enumerate(texts):
                for word in text.lower().split():
                    h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
                    out[row, h % 32] += 1.0 if h & 1 << 20 else -1.0
                out[row, 0] += 0.01  # never all zeros
            return out

    return HashEmbedder()


def _wait_for(path: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit("no start signal")
        time.sleep(0.01)


def run_writer(url: str, worker: int, seconds: float, go: Path) -> None:
    """Add small batches, update some, search; print one ACK line per committed write."""
    import memoryd
    from memoryd.store.base import Actor

    mem = memoryd.open(url, embedder=hash_embedder())
    actor = Actor("writer", f"agent-{worker}")
    print("READY", flush=True)
    _wait_for(go)
    deadline = time.monotonic() + seconds
    n = searches = 0
    while time.monotonic() < deadline:
        batch = [
            {"id": f"w{worker}-{n + j}", "content": f"worker {worker} note {n + j} about topic{(n + j) % 17}",
             "tags": [f"w{worker}"]}
            for j in range(3)
        ]
        mem.acting_as(actor).add_many(batch)
        print("ACK " + " ".join(b["id"] for b in batch), flush=True)
        if n % 9 == 0:
            mem.acting_as(actor).update(f"w{worker}-{n}", importance=0.9)
            print(f"UPD w{worker}-{n}", flush=True)
        hits = mem.search(f"topic{n % 17} note", limit=5)
        searches += 1
        assert all(h.memory.id for h in hits)
        n += 3
    print(f"DONE {searches}", flush=True)
    mem.close()


def run_follower(url: str, seconds: float, go: Path) -> None:
    """Tail the change feed the whole time; print every sequence number seen."""
    from memoryd.config import Settings
    from memoryd.opening import open_store

    store = open_store(url, Settings())
    print("READY", flush=True)
    _wait_for(go)
    deadline = time.monotonic() + seconds + 5.0
    last = 0
    while time.monotonic() < deadline:
        for entry in store.changes_since(last, limit=500):
            if entry.seq <= last:
                raise SystemExit(f"feed went backwards: {entry.seq} after {last}")
            last = entry.seq
            print(f"SEQ {entry.seq}", flush=True)
        time.sleep(0.02)
    print("DONE", flush=True)
    store.close()


def run_crasher(url: str) -> None:
    """Add batches of memories + edges, each one transaction, until killed."""
    from memoryd.config import Settings
    from memoryd.models import Edge, Memory, utcnow
    from memoryd.opening import open_store
    from memoryd.store.base import Actor

    embedder = hash_embedder()
    store = open_store(url, Settings())
    if store.embedding_model is None:
        store.set_embedding_model(embedder.model_id, embedder.dims)
    batch = 0
    while True:
        now = utcnow()
        ids = [f"b{batch}-{j}" for j in range(CRASH_BATCH)]
        memories = [Memory(id=i, content=f"batch {batch} item {i}", created_at=now, updated_at=now)
                    for i in ids]
        vectors = embedder.embed([m.content for m in memories])
        edges = [Edge(source_id=a, target_id=b, edge_type="follows", weight=0.5, created_at=now)
                 for a, b in zip(ids, ids[1:])]
        print(f"BEGIN {batch}", flush=True)
        with store.transaction():
            store.insert(memories, vectors, Actor("crasher"))
            store.upsert_edges(edges)
        print(f"ACK {batch}", flush=True)
        batch += 1


# --------------------------------------------------------------------------- the test side


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return subprocess.Popen(
        [sys.executable, "-u", str(Path(__file__).resolve()), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def _read_until_ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "READY":
        raise AssertionError(f"worker did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    return request.getfixturevalue("pg_database")()


def _open(url: str):
    from memoryd.config import Settings
    from memoryd.opening import open_store

    return open_store(url, Settings())


@pytest.mark.slow
def test_many_writers_lose_nothing(shared_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    # Create the store first, so the schema and model are set before the race.
    _open(shared_url).close()
    writers = [_spawn("writer", shared_url, str(w), str(DURATION_S), str(go)) for w in range(WORKERS)]
    follower = _spawn("follower", shared_url, str(DURATION_S), str(go))
    for proc in [*writers, follower]:
        _read_until_ready(proc)
    go.touch()
    acked: list[str] = []
    updated: list[str] = []
    searches = 0
    for proc in writers:
        out, err = proc.communicate(timeout=DURATION_S + 240)
        assert proc.returncode == 0, err[-3000:]
        for line in out.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "ACK":
                acked.extend(rest.split())
            elif kind == "UPD":
                updated.append(rest)
            elif kind == "DONE":
                searches += int(rest)
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err[-3000:]
    seen = [int(line.split()[1]) for line in out.splitlines() if line.startswith("SEQ")]

    assert len(acked) >= WORKERS * 3 and searches >= WORKERS
    assert len(acked) == len(set(acked))
    store = _open(shared_url)
    try:
        present = [m.id for m in store.iter_memories()]
        assert sorted(present) == sorted(acked)  # every acknowledged write, exactly once
        history = store.changes_since(0, limit=10**6)
        seqs = [h.seq for h in history]
        assert seqs == sorted(set(seqs))
        creates = [h.memory_id for h in history if h.operation == "create"]
        updates = [h.memory_id for h in history if h.operation == "update"]
        assert sorted(creates) == sorted(acked)
        assert sorted(updates) == sorted(updated)
        assert len(history) == len(acked) + len(updated)
        # The follower, reading while writers committed, missed no change.
        assert seen == seqs
        # Each memory's own seq is its last change.
        last_change: dict[str, int] = {}
        for h in history:
            last_change[h.memory_id] = h.seq
        assert {m.id: m.seq for m in store.iter_memories()} == last_change
        assert store.stats().vectors == len(acked)
        _assert_ledger_matches_history(store, history)
    finally:
        store.close()
    (tmp_path / "summary.json").write_text(json.dumps(
        {"writes": len(acked), "updates": len(updated), "searches": searches, "seconds": DURATION_S}))


def _assert_ledger_matches_history(store: Any, history: list[Any]) -> None:
    """The ledger verifies and holds exactly one entry per history row, in the same order."""
    from memoryd.ledger import verify_chain

    entries = store.ledger_entries(0, limit=10**6)
    assert verify_chain(entries).ok
    assert [(e.operation, e.memory_id) for e in entries] == [
        (h.operation, h.memory_id) for h in history
    ]


def _check_consistent_pg(url: str) -> dict[str, int]:
    import psycopg

    from memoryd.store.postgres import split_url

    conninfo, _ = split_url(url)
    with psycopg.connect(conninfo) as conn:
        one: Callable[[str], Any] = lambda q: conn.execute(q).fetchone()[0]  # noqa: E731
        conn.execute("SET search_path TO memoryd, public")
        return {
            "memories": one("SELECT count(*) FROM memories"),
            "without_vector": one("SELECT count(*) FROM memories WHERE embedding IS NULL"),
            "without_keywords": one("SELECT count(*) FROM memories WHERE search_vec IS NULL "
                                    "OR NOT search_vec @@ to_tsquery('english', 'batch')"),
            "orphan_edges": one("SELECT count(*) FROM edges e WHERE NOT EXISTS "
                                "(SELECT 1 FROM memories m WHERE m.id = e.source_id) OR NOT EXISTS "
                                "(SELECT 1 FROM memories m WHERE m.id = e.target_id)"),
            "edges": one("SELECT count(*) FROM edges"),
            "without_create": one("SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM "
                                  "history h WHERE h.memory_id = m.id AND h.operation = 'create')"),
            "history_without_memory": one("SELECT count(*) FROM history h WHERE NOT EXISTS "
                                          "(SELECT 1 FROM memories m WHERE m.id = h.memory_id)"),
        }


@pytest.mark.slow
@pytest.mark.parametrize("kill_delay", [0.0, 0.05, 0.15])
def test_writer_killed_mid_batch_leaves_whole_batches(shared_url: str, kill_delay: float) -> None:
    proc = _spawn("crasher", shared_url)
    assert proc.stdout is not None
    acked: list[int] = []
    began = -1
    try:
        # Let two batches commit, then kill shortly after the third one begins.
        for line in proc.stdout:
            kind, _, number = line.strip().partition(" ")
            if kind == "ACK":
                acked.append(int(number))
            elif kind == "BEGIN":
                began = int(number)
                if began >= 2:
                    time.sleep(kill_delay)
                    break
        else:
            raise AssertionError(proc.stderr.read() if proc.stderr else "crasher exited")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    # What the writer said between our last read and its death.
    for line in proc.stdout.read().splitlines():
        kind, _, number = line.strip().partition(" ")
        if kind == "ACK":
            acked.append(int(number))
        elif kind == "BEGIN":
            began = int(number)
    store = _open(shared_url)  # reopen: SQLite recovers its WAL, PostgreSQL rolled back
    try:
        ids = {m.id for m in store.iter_memories()}
        per_batch: dict[int, int] = {}
        for memory_id in ids:
            batch = int(memory_id[1:].split("-")[0])
            per_batch[batch] = per_batch.get(batch, 0) + 1
        assert all(count == CRASH_BATCH for count in per_batch.values()), per_batch
        assert sorted(per_batch) == list(range(len(per_batch)))  # batches commit in order
        assert set(acked) <= set(per_batch) <= set(range(began + 1))
        edges = store.edges_of(sorted(ids))
        assert len(edges) == len(per_batch) * (CRASH_BATCH - 1)
        assert all(e.source_id in ids and e.target_id in ids for e in edges)
        history = store.changes_since(0, limit=10**6)
        assert sorted(h.memory_id for h in history) == sorted(ids)
        assert store.stats().vectors == len(ids)
        _assert_ledger_matches_history(store, history)
        # Still writable after the crash.
        store.bookkeeping.set_watermark("after-crash", 1)
    finally:
        store.close()
    if shared_url.startswith("sqlite"):
        from helpers.consistency import check_consistency

        counts = check_consistency(shared_url[len("sqlite://"):])
        assert counts["memories"] == len(ids)
    else:
        counts = _check_consistent_pg(shared_url)
        assert counts["memories"] == len(ids)
        assert counts["edges"] == len(per_batch) * (CRASH_BATCH - 1)
        for key in ("without_vector", "without_keywords", "orphan_edges", "without_create",
                    "history_without_memory"):
            assert counts[key] == 0, (key, counts)


def test_maintenance_lock_is_exclusive_across_connections(pg_url: str) -> None:
    from memoryd.store.postgres import PostgresStore

    a, b = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        with a.maintenance_lock("consolidate") as first:
            with b.maintenance_lock("consolidate") as second:
                assert (first, second) == (True, False)
            with b.maintenance_lock("other-job") as other:
                assert other is True
        with b.maintenance_lock("consolidate") as later:
            assert later is True
    finally:
        a.close()
        b.close()


def test_schema_migration_from_many_processes_at_once(pg_database) -> None:
    from memoryd.store.postgres.schema import LATEST_VERSION

    url = pg_database(migrated=False)
    code = (
        "import sys; from memoryd.store.postgres import PostgresStore; "
        "s = PostgresStore(sys.argv[1]); print(s.db.schema_version); s.close()"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, url], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0, err[-2000:]
        assert out.strip() == str(LATEST_VERSION)


if __name__ == "__main__":
    role, *rest = sys.argv[1:]
    if role == "writer":
        run_writer(rest[0], int(rest[1]), float(rest[2]), Path(rest[3]))
    elif role == "follower":
        run_follower(rest[0], float(rest[1]), Path(rest[2]))
    elif role == "crasher":
        run_crasher(rest[0])
    else:
        raise SystemExit(f"unknown role {role}")
