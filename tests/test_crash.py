"""Crash consistency: SIGKILL a writer process in the middle of a JSONL import.

Afterwards the store opens, every memory has exactly one vector row and one FTS entry
(FTS5 'integrity-check' against the content table), only whole batches are present,
search works, and re-running the import completes it without duplicates.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.consistency import check_consistency


WRITER = Path(__file__).resolve().parent / "helpers" / "writer.py"
TOPICS = ["gardening", "chess", "rust", "baking", "sailing", "jazz", "taxes", "hiking", "cameras",
          "poetry", "football", "databases", "coffee", "trains", "volcanoes", "knitting"]


def make_jsonl(path: Path, n: int) -> list[str]:
    ids = []
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            memory_id = f"crash-{i:05d}"
            ids.append(memory_id)
            topic = TOPICS[i % len(TOPICS)]
            fh.write(json.dumps({"id": memory_id, "content": f"Note {i} on {topic}: item {i * 7 % 101}",
                                 "tags": [topic]}) + "\n")
    return ids


def committed_count(path: Path) -> int:
    """Memories committed so far, read by a separate plain sqlite3 connection."""
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute("SELECT count(*) FROM history WHERE operation = 'create'").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:  # schema not created yet, or briefly locked
        return 0


def start_writer(store: Path, jsonl: Path, batch: int, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("MEMORYD_") and not k.startswith("MEMORYD_TEST_"))}
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(store), str(jsonl), str(batch), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL


def wait_for(condition, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"writer exited early ({proc.returncode}):\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("writer made no progress in time")
        time.sleep(0.02)


def test_kill_writer_after_some_batches(tmp_path, open_mem) -> None:
    total, batch = 1000, 100
    jsonl = tmp_path / "big.jsonl"
    ids = make_jsonl(jsonl, total)
    store = tmp_path / "m.db"
    proc = start_writer(store, jsonl, batch)
    try:
        wait_for(lambda: committed_count(store) >= 2 * batch, proc)
    finally:
        if proc.poll() is None:
            kill(proc)
    counts = check_consistency(store)
    done = counts["memories"]
    assert done % batch == 0, f"{done} memories: a batch was half-written"
    assert 2 * batch <= done < total, "the writer must die mid-import"
    assert counts["history_creates"] == done

    mem = open_mem(f"sqlite:///{store}")
    assert mem.store.count() == done
    hit = mem.search("Note 5 on jazz", limit=1)[0]
    assert hit.memory.id == "crash-00005"
    report = mem.admin.import_jsonl(jsonl, batch_size=250)
    assert (report.imported, report.skipped_existing, report.errors) == (total - done, done, [])
    assert sorted(m.id for m in mem.store.iter_memories()) == ids
    counts = check_consistency(store)
    assert counts["memories"] == counts["history_creates"] == total
    assert mem.search("Note 999 on volcanoes", mode="keyword", limit=1)[0].memory.id == "crash-00999"


def test_kill_writer_inside_an_open_transaction(tmp_path, open_mem) -> None:
    total, batch = 300, 100
    jsonl = tmp_path / "in.jsonl"
    ids = make_jsonl(jsonl, total)
    store = tmp_path / "m.db"
    ready = tmp_path / "ready"
    proc = start_writer(store, jsonl, batch, "--hang-in-batch", "3", "--ready-file", str(ready))
    try:
        wait_for(ready.exists, proc)
        assert committed_count(store) == 2 * batch  # batch 3 is written but not committed
    finally:
        if proc.poll() is None:
            kill(proc)
    counts = check_consistency(store)
    assert counts["memories"] == 2 * batch
    assert counts["history"] >= counts["history_creates"] == 2 * batch

    mem = open_mem(f"sqlite:///{store}")
    assert {m.id for m in mem.store.iter_memories()} == set(ids[: 2 * batch])
    assert mem.search("Note 250 on volcanoes", mode="keyword", limit=1)[0].memory.id != "crash-00250"
    report = mem.admin.import_jsonl(jsonl)
    assert (report.imported, report.skipped_existing) == (batch, 2 * batch)
    assert sorted(m.id for m in mem.store.iter_memories()) == ids
    check_consistency(store)
