"""Whole-store maintenance: re-embedding, ledger verification, backup and restore."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from memoryd import backup_manifest
from memoryd.engine.context import EngineContext
from memoryd.errors import ModelMismatch
from memoryd.ledger import LedgerEntry, LedgerReport, verify_chain
from memoryd.models import Memory


def check_model(ctx: EngineContext, allow_mismatch: bool) -> None:
    """Refuse a store whose vectors another embedding model made (unless allowed)."""
    stored = ctx.store.embedding_model
    if stored is None:
        ctx.store.set_embedding_model(ctx.embedder.model_id, ctx.embedder.dims)
        return
    if stored == ctx.embedder.model_id:
        return
    if ctx.store.stats().vectors == 0:
        ctx.store.set_embedding_model(ctx.embedder.model_id, ctx.embedder.dims)
    elif not allow_mismatch:
        raise ModelMismatch(stored, ctx.embedder.model_id)


def reembed(ctx: EngineContext, *, batch_size: int = 256,
            progress: Callable[[int], None] | None = None) -> int:
    """Re-embed every memory with the configured embedder; returns how many."""
    ctx.access.require_unrestricted("re-embedding")
    total = 0
    batch: list[Memory] = []

    def flush() -> None:
        nonlocal total
        vectors = ctx.embedder.embed([m.content for m in batch])
        ctx.store.replace_vectors({m.id: v for m, v in zip(batch, vectors)},
                                  ctx.embedder.model_id)
        total += len(batch)
        if progress:
            progress(len(batch))
        batch.clear()

    for memory in ctx.store.iter_memories():
        batch.append(memory)
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    # Only now: an interrupted re-embed leaves the old model recorded, so the store keeps
    # refusing the new one until `memoryd reembed` completes.
    ctx.store.set_embedding_model(ctx.embedder.model_id, ctx.embedder.dims)
    return total


def verify_ledger(ctx: EngineContext, *, batch_size: int = 5000,
                  progress: Callable[[int], None] | None = None) -> LedgerReport:
    """Re-hash the whole ledger and report the first broken link, if any."""
    ctx.access.require_unrestricted("the audit ledger")

    def entries() -> Iterable[LedgerEntry]:
        after = 0
        while True:
            batch = ctx.store.ledger_entries(after=after, limit=batch_size)
            if not batch:
                return
            yield from batch
            after = batch[-1].seq
            if progress:
                progress(len(batch))

    return verify_chain(entries())


def backup(ctx: EngineContext, path: Path) -> Path:
    """Write a consistent copy of the store to ``path`` (the store stays online)."""
    ctx.access.require_unrestricted("backup")
    ctx.store.transfer.backup(path)
    backup_manifest.write_manifest(path)  # checksums and counts, checked by restore
    return path


def restore(ctx: EngineContext, path: Path) -> None:
    """Replace the store's contents with the backup at ``path``."""
    ctx.access.require_unrestricted("restore")
    backup_manifest.verify_backup(path)  # refuses before anything is replaced
    ctx.store.transfer.restore(path, expect_model=ctx.embedder.model_id)
    check_model(ctx, allow_mismatch=False)
