"""Vectors of every message and question, embedded once (cached under bench/.cache/recall,
shared with the recall bench: the same model and the same keys)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.ingest.data import Chat
from bench.recall.embedding import VectorCache, VectorTable

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / "bench" / ".cache" / "recall"


def vector_table(chats: list[Chat], log: Callable[[str], None],
                 cache_dir: Path | None = CACHE_DIR) -> VectorTable:
    """A table holding the vector of every item and question of ``chats``."""
    from memoryd.embed import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.load()
    table = VectorTable(embedder, VectorCache(cache_dir), log)
    table.ensure([q.text for c in chats for q in c.questions], "questions")
    table.ensure([i["content"] for c in chats for i in c.items], "messages")
    return table
