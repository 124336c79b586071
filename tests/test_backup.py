"""Backup and restore round trips on real SQLite files."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import pytest
from helpers.consistency import check_consistency
from helpers.embedders import HashEmbedder

import memoryd
from memoryd.errors import ModelMismatch, NotAMemorydStore, StoreError


def ids(mem) -> set[str]:
    return {m.id for m in mem.store.iter_memories()}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def filled(mem):
    mem.add_many([{"id": f"b{i}", "content": f"backup memory {i} about {topic}"}
                  for i, topic in enumerate(["sailing", "pottery", "astronomy", "cycling", "cheese"])])
    return mem


def test_backup_is_a_consistent_memoryd_store(filled, tmp_path, shared_embedder) -> None:
    target = filled.admin.backup(tmp_path / "copies" / "backup.db")
    assert target.exists()
    counts = check_consistency(target)
    assert counts["memories"] == 5
    with memoryd.open(f"sqlite:///{target}", embedder=shared_embedder, create=False) as copy:
        assert ids(copy) == ids(filled)
        assert copy.search("stars and telescopes", mode="vector", limit=1)[0].memory.id == "b2"
        assert copy.history("b0")[0].operation == "create"
    # the original keeps working after the backup
    filled.add("written after the backup")
    assert filled.store.count() == 6


def test_backup_never_overwrites(filled, tmp_path) -> None:
    target = tmp_path / "backup.db"
    target.write_text("precious data")
    with pytest.raises(StoreError):
        filled.admin.backup(target)
    assert target.read_text() == "precious data"


def test_restore_round_trip(filled, tmp_path, store_path) -> None:
    backup = filled.admin.backup(tmp_path / "backup.db")
    before = {m.id: m.content for m in filled.store.iter_memories()}
    history_before = [h.operation for h in filled.history("b1")]
    late = filled.add("The harbour master retires in June")
    filled.update("b1", content="pottery glaze recipes changed")
    filled.delete("b3")
    filled.admin.restore(backup)
    assert {m.id: m.content for m in filled.store.iter_memories()} == before
    assert [h.operation for h in filled.history("b1")] == history_before
    assert filled.get("b3").content == before["b3"]
    # the vector index and the FTS index follow the restored table
    assert filled.search("bicycle rides", mode="vector", limit=1)[0].memory.id == "b3"
    assert late.id not in {h.memory.id for h in filled.search("harbour master retires", mode="vector")}
    assert filled.search("harbour", mode="keyword") == []
    assert filled.search("glaze", mode="keyword") == []
    check_consistency(store_path)
    # and it keeps working
    new = filled.add("after the restore: lighthouse keepers")
    assert filled.search("lighthouse", mode="keyword")[0].memory.id == new.id
    filled.close()
    with memoryd.open(f"sqlite:///{store_path}", embedder=filled.embedder) as again:
        assert ids(again) == set(before) | {new.id}


@pytest.mark.parametrize("kind", ["text", "foreign_sqlite", "missing", "empty_dir"])
def test_restore_refuses_non_memoryd_files(filled, tmp_path, kind: str) -> None:
    source = tmp_path / "source.db"
    if kind == "text":
        source.write_text("this is not a database\n" * 50)
    elif kind == "foreign_sqlite":
        conn = sqlite3.connect(source)
        conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
        conn.commit()
        conn.close()
    elif kind == "empty_dir":
        source.mkdir()
    with pytest.raises(NotAMemorydStore):
        filled.admin.restore(source)
    assert filled.store.count() == 5
    assert filled.search("astronomy", mode="keyword")[0].memory.id == "b2"


def test_restore_with_another_model_changes_nothing(filled, tmp_path) -> None:
    with memoryd.open(f"sqlite:///{tmp_path}/other.db", embedder=HashEmbedder()) as other:
        other.add("made by another model")
        backup = other.admin.backup(tmp_path / "other-backup.db")
    with pytest.raises(ModelMismatch):
        filled.admin.restore(backup)
    assert filled.store.count() == 5


def test_seq_keeps_increasing_across_restore(filled, tmp_path) -> None:
    backup = filled.admin.backup(tmp_path / "backup.db")
    for i in range(3):
        filled.add(f"post-backup memory {i}")
    high = filled.stats()["last_seq"]
    filled.admin.restore(backup)
    after = filled.add("first change after the restore")
    assert after.seq > high


def test_backup_while_another_engine_writes(filled, tmp_path, store_url, open_mem) -> None:
    writer = open_mem(store_url)
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for batch in range(8):
                writer.add_many([{"content": f"concurrent note {batch}-{i}"} for i in range(10)],
                                batch_size=10)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    copies = []
    for n in range(3):
        copies.append(filled.admin.backup(tmp_path / f"online-{n}.db"))
    thread.join(60)
    assert done.is_set() and not errors
    for copy in copies:
        counts = check_consistency(copy)
        assert (counts["memories"] - 5) % 10 == 0  # whole batches only
    assert filled.store.count() == 85


def test_other_engine_sees_vectors_written_after_a_restore(filled, tmp_path, store_url, open_mem) -> None:
    """An engine that stays open across another engine's restore keeps finding new vectors
    (its vector cache syncs by seq, so seq must not go backwards)."""
    backup = filled.admin.backup(tmp_path / "backup.db")
    filled.add_many([{"content": f"later memory {i}"} for i in range(5)])
    watcher = open_mem(store_url)
    assert watcher.search("later memory", mode="vector", limit=1)
    filled.admin.restore(backup)
    new = filled.add("The zeppelin hangar is in Friedrichshafen")
    hits = watcher.search("airship hangar", mode="vector", limit=1, cognitive=False,
                          associations=False)
    assert hits[0].memory.id == new.id
