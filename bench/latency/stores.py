"""Build benchmark stores from precomputed vectors (no re-embedding), through memoryd's own store."""

from __future__ import annotations

import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from bench.common import CACHE_DIR, Stopwatch

WORK_DIR = CACHE_DIR / "work"


def isolate_settings() -> None:
    """Make memoryd use its defaults: no user config file, no MEMORYD_* overrides."""
    for key in list(os.environ):
        if key.startswith("MEMORYD_"):
            del os.environ[key]
    os.environ["MEMORYD_CONFIG"] = str(CACHE_DIR / "no-such-config.toml")
    os.environ["MEMORYD_HOME"] = str(WORK_DIR / "home")


def store_url(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


def store_files(path: Path) -> list[Path]:
    """The db and its sidecar files (WAL, saved HNSW graph)."""
    names = [path.name + suffix for suffix in ("", "-wal", "-shm", ".hnsw.usearch", ".hnsw.json")]
    return [path.with_name(n) for n in names]


def remove_store(path: Path) -> None:
    for f in store_files(path):
        f.unlink(missing_ok=True)


def build_store(
    path: Path,
    corpus,
    vectors: np.ndarray,
    embedder,
    *,
    log: Callable[[str], None] = print,
    chunk: int = 5_000,
) -> dict[str, Any]:
    """Insert ``corpus`` with its precomputed vectors into a new store at ``path``.

    Memories are built exactly like ``Engine.add_many`` builds them (``Engine._build``),
    then written with ``store.insert`` in one transaction per chunk. Inserting runs with
    the HNSW graph disabled; the store is then reopened with default settings, which
    builds the graph on open (timed: this is what an open without a saved graph costs),
    and closed, which saves the graph next to the db (timed).
    """
    import memoryd
    from memoryd.engine.checks import build as build_memory
    from memoryd.models import NewMemory
    from memoryd.store.base import Actor

    remove_store(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"n": len(corpus)}
    mem = memoryd.open(store_url(path), embedder=embedder, hnsw_threshold=0)
    now = datetime.now(timezone.utc)
    actor = Actor("bench")
    with Stopwatch() as sw:
        for start in range(0, len(corpus), chunk):
            end = min(start + chunk, len(corpus))
            memories = [
                build_memory(mem.context, 
                    NewMemory(
                        id=f"bench-{i:07d}",
                        content=corpus.texts[i],
                        node_type=corpus.node_types[i],
                        tags=corpus.tags[i],
                        agent_id=corpus.agent_ids[i],
                        created_at=corpus.created_at[i],
                    ),
                    now,
                )
                for i in range(start, end)
            ]
            mem.store.insert(memories, vectors[start:end], actor)
    out["insert_seconds"] = round(sw.seconds, 2)
    out["insert_rate_per_s"] = round(len(corpus) / sw.seconds, 1)
    log(f"  inserted {len(corpus)} memories with precomputed vectors in {sw.seconds:.1f}s")
    with Stopwatch() as sw:
        mem.close()
    with Stopwatch() as sw:
        mem = memoryd.open(store_url(path), embedder=embedder)
    out["open_without_saved_graph_seconds"] = round(sw.seconds, 2)
    out["uses_hnsw"] = mem.store.vector_cache.index.uses_hnsw
    log(f"  reopened (graph built: {out['uses_hnsw']}) in {sw.seconds:.1f}s")
    with Stopwatch() as sw:
        mem.close()
    out["close_save_graph_seconds"] = round(sw.seconds, 2)
    out["db_bytes"] = path.stat().st_size
    graph = path.with_name(path.name + ".hnsw.usearch")
    out["graph_bytes"] = graph.stat().st_size if graph.exists() else 0
    return out


def copy_store(src: Path, dst: Path) -> None:
    remove_store(dst)
    for f, g in zip(store_files(src), store_files(dst)):
        if f.exists():
            shutil.copyfile(f, g)


def evict_from_page_cache(path: Path) -> bool:
    """Drop this store's files (only these) from the OS page cache; False if unsupported."""
    if not hasattr(os, "posix_fadvise"):
        return False
    for f in store_files(path):
        if f.exists():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    time.sleep(0.2)
    return True
