"""Backups carry a manifest and restore verifies it first, on both backends: a flipped,
truncated or forged backup is refused with a clear error and the live store is untouched."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from pathlib import Path

import pytest

from memoryd.backup_manifest import (
    MANIFEST_FORMAT,
    PG_DUMP_FORMAT,
    BackupRejected,
    manifest_path,
    verify_backup,
    write_manifest,
)
from memoryd.errors import NotAMemorydStore

TOPICS = ["sailing", "pottery", "astronomy", "cycling", "cheese"]


@pytest.fixture
def filled(backend, open_mem, store_url, request):
    url = store_url if backend == "sqlite" else request.getfixturevalue("pg_database")()
    mem = open_mem(url)
    mem.add_many([{"id": f"b{i}", "content": f"backup memory {i} about {t}"}
                  for i, t in enumerate(TOPICS)])
    return mem


def snapshot(mem) -> dict:
    """What must survive a refused restore unchanged."""
    return {
        "memories": {m.id: m.content for m in mem.store.iter_memories()},
        "history": [(h.seq, h.operation) for h in mem.history("b1")],
        "ledger_ok": mem.admin.verify_ledger().ok,
        "ledger_head": mem.admin.ledger_head().hash,
        "found": mem.search("telescopes and stars", mode="vector", limit=1)[0].memory.id,
    }


def flip_middle(path: Path, size: int = 4096, seed: int = 7) -> None:
    """Overwrite ``size`` bytes (at most a third of the file) in the middle with noise."""
    data = bytearray(path.read_bytes())
    size = min(size, len(data) // 3)
    start = len(data) // 2 - size // 2
    rng = random.Random(seed)
    data[start : start + size] = bytes(rng.randrange(256) for _ in range(size))
    path.write_bytes(bytes(data))


def truncate_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def forge_manifest(backup: Path) -> None:
    """Make the manifest describe the file as it is now (as if damaged before hashing)."""
    target = manifest_path(backup)
    manifest = json.loads(target.read_text())
    data = backup.read_bytes()
    manifest.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    target.write_text(json.dumps(manifest))


def test_backup_writes_a_manifest_that_describes_it(filled, backend, tmp_path) -> None:
    backup = filled.admin.backup(tmp_path / "backup.db")
    manifest = json.loads(manifest_path(backup).read_text())
    assert manifest["format"] == MANIFEST_FORMAT and manifest["version"] == 1
    assert manifest["backend"] == backend and manifest["file"] == "backup.db"
    assert manifest["size"] == backup.stat().st_size
    assert manifest["sha256"] == hashlib.sha256(backup.read_bytes()).hexdigest()
    assert manifest["tables"]["memories"] == 5
    assert manifest["tables"]["history"] == 5 and manifest["tables"]["ledger"] >= 5
    assert manifest["embedding_model"] == filled.embedder.model_id
    assert manifest["embedding_dims"] == filled.embedder.dims
    assert manifest["schema_version"] >= 1 and manifest["memoryd_version"]
    assert verify_backup(backup).tables == manifest["tables"]


def test_a_verified_backup_restores(filled, tmp_path) -> None:
    backup = filled.admin.backup(tmp_path / "backup.db")
    before = snapshot(filled)
    filled.add("written after the backup")
    filled.admin.restore(backup)
    assert {m.id for m in filled.store.iter_memories()} == set(before["memories"])


@pytest.mark.parametrize("damage", [flip_middle, truncate_half], ids=["flipped", "truncated"])
def test_a_damaged_backup_is_refused_and_the_store_is_untouched(
    filled, tmp_path, damage
) -> None:
    backup = filled.admin.backup(tmp_path / "backup.db")
    damage(backup)
    before = snapshot(filled)
    with pytest.raises(BackupRejected, match="not the file its manifest describes"):
        filled.admin.restore(backup)
    assert snapshot(filled) == before
    assert filled.store.health()["ok"] is True


@pytest.mark.parametrize("damage", [flip_middle, truncate_half], ids=["flipped", "truncated"])
def test_damage_behind_a_matching_manifest_fails_the_backups_own_check(
    filled, backend, tmp_path, damage
) -> None:
    """The second layer: SQLite's integrity check, or a full read of the gzip dump."""
    backup = filled.admin.backup(tmp_path / "backup.db")
    if backend == "sqlite" and damage is flip_middle:
        damage = overwrite_middle_page
    damage(backup)
    forge_manifest(backup)
    before = snapshot(filled)
    with pytest.raises(BackupRejected) as info:
        filled.admin.restore(backup)
    assert any(
        words in str(info.value)
        for words in ("integrity check", "damaged", "incomplete", "row counts differ")
    ), str(info.value)
    assert snapshot(filled) == before


def overwrite_middle_page(path: Path) -> None:
    """Noise over one whole page in the middle (flipped bytes that land in row data are
    invisible to SQLite's checks; only the manifest's hash catches those)."""
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as conn:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    data = bytearray(path.read_bytes())
    page = (len(data) // page_size) // 2
    rng = random.Random(11)
    data[page * page_size : (page + 1) * page_size] = bytes(
        rng.randrange(256) for _ in range(page_size)
    )
    path.write_bytes(bytes(data))


def test_a_backup_without_a_manifest_is_refused(filled, tmp_path) -> None:
    backup = filled.admin.backup(tmp_path / "backup.db")
    manifest_path(backup).unlink()
    before = snapshot(filled)
    with pytest.raises(BackupRejected, match="has no manifest"):
        filled.admin.restore(backup)
    assert snapshot(filled) == before


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.update(format="something-else"),
        lambda m: m.update(version=99),
        lambda m: m.update(backend="postgresql" if m["backend"] == "sqlite" else "sqlite"),
        lambda m: m["tables"].update(memories=m["tables"]["memories"] + 1),
        lambda m: m.update(sha256="0" * 64),
        lambda m: m.update(size="many"),
    ],
    ids=["format", "newer", "backend", "counts", "hash", "garbage"],
)
def test_a_manifest_that_does_not_match_is_refused(filled, tmp_path, edit) -> None:
    backup = filled.admin.backup(tmp_path / "backup.db")
    target = manifest_path(backup)
    manifest = json.loads(target.read_text())
    edit(manifest)
    target.write_text(json.dumps(manifest))
    before = snapshot(filled)
    with pytest.raises(BackupRejected):
        filled.admin.restore(backup)
    assert snapshot(filled) == before


def test_an_unreadable_manifest_is_refused(filled, tmp_path) -> None:
    backup = filled.admin.backup(tmp_path / "backup.db")
    manifest_path(backup).write_bytes(b"\xff\xfe not json")
    with pytest.raises(BackupRejected, match="not a readable backup manifest"):
        filled.admin.restore(backup)


@pytest.mark.parametrize("kind", ["text", "foreign_sqlite", "foreign_gzip", "missing", "dir"])
def test_files_that_are_no_backup_at_all_are_named_so(tmp_path, kind) -> None:
    import gzip

    source = tmp_path / "source"
    if kind == "text":
        source.write_text("this is not a database\n" * 50)
    elif kind == "foreign_sqlite":
        with sqlite3.connect(source) as conn:
            conn.execute("CREATE TABLE customers (id INTEGER)")
        conn.close()
    elif kind == "foreign_gzip":
        with gzip.open(source, "wt") as handle:
            handle.write('{"hello": "world"}\n')
    elif kind == "dir":
        source.mkdir()
    with pytest.raises(NotAMemorydStore):
        verify_backup(source)
    with pytest.raises(NotAMemorydStore):
        write_manifest(source)


def test_a_backup_of_a_damaged_sqlite_store_gets_no_manifest(tmp_path, mem) -> None:
    """(A PostgreSQL dump is written row by row from a live server: no file to damage.)"""
    mem.add_many([{"content": f"memory {t}"} for t in TOPICS])
    backup = mem.admin.backup(tmp_path / "backup.db")
    manifest_path(backup).unlink()
    overwrite_middle_page(backup)
    with pytest.raises(BackupRejected, match="integrity check|damaged"):
        write_manifest(backup)
    assert not manifest_path(backup).exists()


def test_the_dump_format_matches_the_postgres_store() -> None:
    from memoryd.store.postgres.transfer import DUMP_FORMAT

    assert PG_DUMP_FORMAT == DUMP_FORMAT
