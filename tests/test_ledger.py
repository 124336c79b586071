"""The hash-chained audit ledger on both backends: every change appends a chained entry,
tampering (edit, removal, reordering, re-hashing) is found and named, purge keeps the
entry without the content, and the chain survives backup/restore and migration."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from api_fixtures import LiveServer, module_server
from conftest import STORE_BACKENDS

from memoryd import ledger
from memoryd.engine import Engine
from memoryd.store.base import Actor, Store

KEY_ACTOR = Actor("key:ci", agent_id="agent-7", key_label="ci")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(params=STORE_BACKENDS)
def backend_mem(request: pytest.FixtureRequest, open_mem, tmp_path: Path) -> Engine:
    """An engine on a fresh store of each backend."""
    if request.param == "sqlite":
        return open_mem(f"sqlite:///{tmp_path / 'ledger.db'}")
    return open_mem(request.getfixturevalue("pg_database")())


def execute(store: Store, statement: str, params: tuple[Any, ...] = ()) -> None:
    """Raw SQL against the store's own tables (``?`` placeholders), as an intruder would."""
    with store.db.write() as tx:
        tx.execute(statement.replace("?", store.db.mark), params)


def entries(mem: Engine) -> list[ledger.LedgerEntry]:
    return mem.admin.ledger(limit=10_000)


def fill(mem: Engine, n: int = 5) -> list[str]:
    bound = mem.acting_as(KEY_ACTOR)
    return [bound.add(f"ledger fact number {i}: the build server runs job {i}", id=f"m{i}").id
            for i in range(n)]


# --------------------------------------------------------------------------- appending


def test_every_change_appends_a_chained_entry(backend_mem: Engine) -> None:
    mem = backend_mem
    assert mem.admin.ledger_head() is None and mem.admin.verify_ledger().ok
    a = mem.acting_as(KEY_ACTOR).add("The deploy script lives in ops/deploy.sh", id="a")
    mem.acting_as(Actor("cli")).add("The user prefers dark mode", id="b")
    mem.add("Temporary note about a flaky test", id="c")
    mem.acting_as(KEY_ACTOR).update("a", content="The deploy script lives in tools/deploy.sh")
    mem.promote("b", reason="useful")
    mem.acting_as(Actor("cli")).delete("c")
    mem.store.replace_vectors({"b": mem.store.vectors(["b"])["b"]}, mem.embedder.model_id)

    chain = entries(mem)
    history = mem.store.changes_since(0, limit=1000)
    # One entry per history row, in the same order.
    assert [(e.operation, e.memory_id) for e in chain] == [(h.operation, h.memory_id) for h in history]
    assert [e.seq for e in chain] == list(range(1, len(chain) + 1))
    assert chain[0].prev_hash == ledger.GENESIS_HASH
    assert all(e.prev_hash == p.hash for p, e in zip(chain, chain[1:]))
    by_op = {(e.operation, e.memory_id): e for e in chain}
    created = by_op[("create", "a")]
    assert created.content_sha256 == sha(a.content)
    assert (created.actor, created.agent_id, created.key_label) == ("key:ci", "agent-7", "ci")
    assert by_op[("update", "a")].content_sha256 == sha("The deploy script lives in tools/deploy.sh")
    assert by_op[("promote", "b")].content_sha256 == sha("The user prefers dark mode")
    assert by_op[("delete", "c")].content_sha256 == sha("Temporary note about a flaky test")
    assert by_op[("reembed", "b")].content_sha256 == sha("The user prefers dark mode")
    assert by_op[("create", "b")].key_label is None and by_op[("create", "b")].actor == "cli"

    report = mem.admin.verify_ledger()
    assert report.ok and report.broken is None
    assert report.entries == len(chain)
    assert (report.head_seq, report.head_hash) == (chain[-1].seq, chain[-1].hash)
    head = mem.admin.ledger_head()
    assert head is not None and head.hash == chain[-1].hash


def test_key_changes_are_ledgered(backend_mem: Engine) -> None:
    made = backend_mem.admin.create_key("deploy-bot", scopes=["read", "write"])
    backend_mem.admin.revoke_key(made.key.id)
    chain = entries(backend_mem)
    assert [(e.operation, e.key_label) for e in chain] == [
        ("key.create", "deploy-bot"), ("key.revoke", "deploy-bot")]
    assert chain[0].content_sha256 != chain[1].content_sha256
    assert made.secret not in repr(chain)
    assert backend_mem.admin.verify_ledger().ok


def test_purge_keeps_the_entry_but_not_the_content(backend_mem: Engine) -> None:
    mem = backend_mem
    secret = "The user's home address is 12 Example Lane"
    mem.acting_as(KEY_ACTOR).add(secret, id="p")
    mem.add("An unrelated fact about the CI cache", id="q")
    before = entries(mem)
    mem.acting_as(Actor("cli")).admin.purge("p")

    after = entries(mem)
    assert after[: len(before)] == before  # nothing rewritten
    purge = after[-1]
    assert (purge.operation, purge.memory_id, purge.content_sha256) == ("purge", "p", sha(secret))
    assert "Example Lane" not in repr(after)
    assert all("Example Lane" not in str(h.details) for h in mem.store.changes_since(0))
    assert mem.store.get("p") is None
    assert mem.admin.verify_ledger().ok


# --------------------------------------------------------------------------- tampering


def _swap(store: Store, a: int, b: int) -> None:
    execute(store, "UPDATE ledger SET seq = -1 WHERE seq = ?", (a,))
    execute(store, "UPDATE ledger SET seq = ? WHERE seq = ?", (a, b))
    execute(store, "UPDATE ledger SET seq = ? WHERE seq = -1", (b,))


def _rehash_edit(store: Store, seq: int, entry: ledger.LedgerEntry) -> None:
    # A careful intruder edits entry ``seq`` and recomputes its own hash.
    forged = ledger.entry_hash(entry.seq, entry.stamp, entry.operation, entry.memory_id,
                               sha("forged content"), entry.actor, entry.agent_id,
                               entry.key_label, entry.prev_hash)
    execute(store, "UPDATE ledger SET content_sha256 = ?, hash = ? WHERE seq = ?",
            (sha("forged content"), forged, seq))


TAMPERING: dict[str, tuple[Callable[[Store, list[ledger.LedgerEntry]], None], int, str]] = {
    "edited": (lambda s, c: execute(s, "UPDATE ledger SET agent_id = 'mallory' WHERE seq = 3"),
               3, "edited"),
    "edited-content-hash": (lambda s, c: execute(
        s, "UPDATE ledger SET content_sha256 = ? WHERE seq = 2", (sha("other"),)), 2, "edited"),
    "removed": (lambda s, c: execute(s, "DELETE FROM ledger WHERE seq = 3"), 4, "removed"),
    "removed-first": (lambda s, c: execute(s, "DELETE FROM ledger WHERE seq = 1"), 2, "removed"),
    "reordered": (lambda s, c: _swap(s, 2, 3), 2, "edited"),
    "re-hashed": (lambda s, c: _rehash_edit(s, 3, c[2]), 4, "removed"),
}


@pytest.mark.parametrize("case", list(TAMPERING))
def test_tampering_is_found_and_named(backend_mem: Engine, case: str) -> None:
    mem = backend_mem
    fill(mem, 5)
    chain = entries(mem)
    assert mem.admin.verify_ledger().ok
    tamper, broken_at, reason = TAMPERING[case]
    tamper(mem.store, chain)
    report = mem.admin.verify_ledger()
    assert not report.ok
    assert report.broken is not None and report.broken.seq == broken_at
    assert reason in report.broken.reason
    # The entries before the break verified.
    assert report.entries == len([e for e in entries(mem) if e.seq < broken_at])
    assert report.to_dict()["broken"]["seq"] == broken_at


def test_verify_streams_in_batches(backend_mem: Engine) -> None:
    fill(backend_mem, 7)
    seen: list[int] = []
    report = backend_mem.admin.verify_ledger(batch_size=3, progress=seen.append)
    assert report.ok and report.entries == 7 and seen == [3, 3, 1]


# --------------------------------------------------------------------------- upgrades, backup, migration


def _forget_the_ledger(store: Store) -> None:
    """Turn the store back into one written before the ledger existed."""
    for table in ("task_messages", "tasks", "wait_jobs"):  # from later migrations
        execute(store, f"DROP TABLE {table}")
    if store.backend == "sqlite":
        execute(store, "DROP TABLE ledger")
        execute(store, "DROP INDEX idx_history_at")
        execute(store, "DELETE FROM schema_migrations WHERE version = 3")
    else:
        execute(store, "DROP TABLE ledger")
        execute(store, "DROP INDEX history_at")
        execute(store, "DELETE FROM schema_migrations WHERE version = 4")


def test_an_older_store_starts_its_ledger_with_a_baseline(backend_mem: Engine, open_mem) -> None:
    mem = backend_mem
    fill(mem, 4)
    url = mem.store.url
    _forget_the_ledger(mem.store)
    mem.close()
    reopened = open_mem(url)
    chain = entries(reopened)
    assert len(chain) == 1 and chain[0].operation == ledger.BASELINE_OPERATION
    pairs = sorted((m.id, m.content) for m in reopened.store.iter_memories())
    assert chain[0].content_sha256 == ledger.baseline_digest(pairs)
    reopened.add("A change after the upgrade", id="later")
    assert [e.operation for e in entries(reopened)] == [ledger.BASELINE_OPERATION, "create"]
    assert reopened.admin.verify_ledger().ok


def test_backup_and_restore_keep_a_verifiable_chain(backend_mem: Engine, tmp_path: Path) -> None:
    mem = backend_mem
    fill(mem, 3)
    at_backup = entries(mem)
    target = tmp_path / ("backup.db" if mem.store.backend == "sqlite" else "backup.jsonl.gz")
    mem.admin.backup(target)
    mem.add("Written after the backup", id="late")
    mem.admin.restore(target)
    chain = entries(mem)
    assert chain[: len(at_backup)] == at_backup
    assert [e.operation for e in chain[len(at_backup):]] == ["restore"]
    assert mem.admin.verify_ledger().ok


def test_migration_copies_the_chain_both_ways(open_mem, tmp_path: Path, pg_url: str) -> None:
    from memoryd.migrate import copy_store
    from memoryd.store.postgres import PostgresStore

    source = open_mem(f"sqlite:///{tmp_path / 'src.db'}")
    fill(source, 4)
    source.admin.purge("m1")
    target = PostgresStore(pg_url)
    try:
        report = copy_store(source.store, target)
        assert report.verified and report.copied["ledger"] == len(entries(source))
        assert target.ledger_entries(0, 1000) == entries(source)
    finally:
        target.close()
    pg_mem = open_mem(pg_url)
    pg_mem.add("A change on the new backend", id="pg-new")
    assert pg_mem.admin.verify_ledger().ok
    home = open_mem(f"sqlite:///{tmp_path / 'home.db'}")
    assert copy_store(pg_mem.store, home.store).verified
    assert entries(home) == entries(pg_mem) and home.admin.verify_ledger().ok


# --------------------------------------------------------------------------- interfaces


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


def test_rest_records_the_key_label_and_verifies(live_server: LiveServer) -> None:
    with live_server.client("writer", agent="agent-rest") as writer, \
            live_server.client("admin") as admin, live_server.client("reader") as reader:
        created = writer.post("/api/v1/memories", json={"content": "REST ledger check: port 8443"})
        assert created.status_code == 201, created.text
        memory_id = created.json()["id"]
        page = admin.get("/api/v1/ledger", params={"limit": 1000})
        assert page.status_code == 200, page.text
        mine = [e for e in page.json()["entries"] if e["memory_id"] == memory_id]
        assert [(e["operation"], e["key_label"], e["agent_id"]) for e in mine] == [
            ("create", "writer", "agent-rest")]
        assert mine[0]["content_sha256"] == sha("REST ledger check: port 8443")
        verified = admin.get("/api/v1/ledger/verify").json()
        assert verified["ok"] is True and verified["broken"] is None
        assert verified["head_seq"] == page.json()["entries"][-1]["seq"]
        assert reader.get("/api/v1/ledger/verify").status_code == 403
        assert writer.get("/api/v1/ledger").status_code == 403
        assert admin.get("/api/v1/ledger", params={"limit": 0}).status_code == 422


def test_cli_verify_head_and_show(run_cli, cli_env, shared_embedder) -> None:
    import json

    import memoryd

    path = Path(cli_env["MEMORYD_HOME"]) / "memoryd.db"
    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder) as mem:
        fill(mem, 4)
        last = entries(mem)[-1]
    result = run_cli("ledger", "verify")
    assert result.returncode == 0, result.stderr
    assert "ledger ok" in result.stdout and "4 entries" in result.stdout
    head = run_cli("ledger", "head")
    assert head.stdout.split() == [str(last.seq), last.hash]
    shown = [json.loads(line) for line in run_cli("ledger", "show", "--after", "2").stdout.splitlines()]
    assert [e["seq"] for e in shown] == [3, 4]

    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder) as mem:
        execute(mem.store, "DELETE FROM ledger WHERE seq = 2")
    broken = run_cli("ledger", "verify")
    assert broken.returncode == 1
    flat = " ".join((broken.stdout + broken.stderr).split())
    assert "broken at entry 3" in flat and "removed" in flat and "Traceback" not in flat
    as_json = json.loads(run_cli("ledger", "verify", "--json").stdout)
    assert as_json["ok"] is False and as_json["broken"]["seq"] == 3
