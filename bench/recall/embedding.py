"""Embeddings for the benchmark: variant texts, one embedding pass per distinct text, reuse.

Every distinct text (message variants, long-message chunks, questions) is embedded once with
memoryd's own ``LocalEmbedder`` (all-MiniLM-L6-v2), globally sorted by length so batches pad
little. Stores get those vectors through :class:`PrecomputedEmbedder`, so ``Engine.add_many``
runs unchanged without embedding anything twice. An optional on-disk cache (outside the
project) makes re-runs cheap.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from memoryd.embed import DEFAULT_DIMS, DEFAULT_MODEL_ID, Embedder, LocalEmbedder

from .data import Message

#: MiniLM's window: 256 positions including [CLS] and [SEP].
WINDOW_TOKENS = 254
CONTEXT_CHARS = 300  # "a little" neighbouring context on each side
MAX_CHUNKS = 4  # long messages: at most this many windows (covers ~92% of all tokens here)

Log = Callable[[str], None]


def _quiet_transformers() -> None:
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
    except Exception:  # pragma: no cover - cosmetic only
        pass


def tokenizer():
    """The model's own (fast) tokenizer, loaded offline from the bundled files."""
    _quiet_transformers()
    from transformers import AutoTokenizer

    from memoryd.embed.local import bundled_model_path

    return AutoTokenizer.from_pretrained(str(bundled_model_path()))


# --------------------------------------------------------------------------- variant texts


def pretty_date(anchor: str | None) -> str | None:
    from .data import parse_anchor

    when = parse_anchor(anchor)
    return f"{when:%B} {when.day}, {when.year}" if when else None


def _clip(text: str, chars: int, *, tail: bool = False) -> str:
    """About ``chars`` characters of ``text`` cut at a word boundary (its end when ``tail``)."""
    text = " ".join(text.split())
    if len(text) <= chars:
        return text
    if tail:
        cut = text[-chars:]
        space = cut.find(" ")
        return "… " + (cut[space + 1 :] if 0 <= space < 40 else cut)
    cut = text[:chars]
    space = cut.rfind(" ")
    return (cut[:space] if space > chars - 40 else cut) + " …"


def date_text(msg: Message) -> str:
    """The date-prefix variant: ``[March 15, 2024] <content>`` (content alone without a date)."""
    date = pretty_date(msg.anchor)
    return f"[{date}] {msg.content}" if date else msg.content


def context_text(msg: Message, prev: Message | None, nxt: Message | None) -> str:
    """The neighbour variant: the message first, then a little of the previous/next message
    of the same session (the message comes first so truncation never drops it)."""
    parts = [msg.content]
    if prev is not None:
        parts.append(f"(previous, {prev.role}: {_clip(prev.content, CONTEXT_CHARS, tail=True)})")
    if nxt is not None:
        parts.append(f"(next, {nxt.role}: {_clip(nxt.content, CONTEXT_CHARS)})")
    return "\n\n".join(parts)


def neighbours(messages: Sequence[Message]) -> list[tuple[Message | None, Message | None]]:
    """(previous, next) message of the same session for each message."""
    out: list[tuple[Message | None, Message | None]] = []
    for i, m in enumerate(messages):
        prev = messages[i - 1] if i > 0 and messages[i - 1].session == m.session else None
        nxt = messages[i + 1] if i + 1 < len(messages) and messages[i + 1].session == m.session else None
        out.append((prev, nxt))
    return out


def token_counts(tok, texts: Sequence[str]) -> np.ndarray:
    """Word-piece counts without special tokens."""
    if not texts:
        return np.zeros(0, dtype=np.int64)
    ids = tok(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
    return np.array([len(x) for x in ids], dtype=np.int64)


def chunk_texts(tok, text: str, *, window: int = WINDOW_TOKENS, max_chunks: int = MAX_CHUNKS) -> list[str]:
    """``text`` cut into consecutive windows of ``window`` word pieces (at most ``max_chunks``).

    The first window is what plain truncation embeds anyway.
    """
    enc = tok(text, add_special_tokens=False, truncation=False, return_offsets_mapping=True)
    offsets = enc["offset_mapping"]
    if len(offsets) <= window:
        return [text]
    chunks = []
    for start in range(0, len(offsets), window):
        if len(chunks) >= max_chunks:
            break
        end = min(start + window, len(offsets)) - 1
        chunks.append(text[offsets[start][0] : offsets[end][1]])
    return chunks


# --------------------------------------------------------------------------- embedding


def _key(text: str) -> str:
    return hashlib.sha1(f"{DEFAULT_MODEL_ID}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


class VectorCache:
    """Optional on-disk cache of vectors by text hash (an SQLite file outside the project)."""

    def __init__(self, directory: Path | None) -> None:
        self.conn: sqlite3.Connection | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(directory / "vectors.sqlite")
            self.conn.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        if self.conn is None:
            return {}
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            rows = self.conn.execute(
                f"SELECT k, vec FROM v WHERE k IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
            out.update({k: np.frombuffer(b, dtype=np.float32) for k, b in rows})
        return out

    def put_many(self, items: Mapping[str, np.ndarray]) -> None:
        if self.conn is None or not items:
            return
        self.conn.executemany(
            "INSERT OR REPLACE INTO v (k, vec) VALUES (?, ?)",
            [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
        )
        self.conn.commit()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


class VectorTable:
    """Text to unit vector, filled by one length-sorted embedding pass over all needed texts."""

    def __init__(self, embedder: LocalEmbedder, cache: VectorCache, log: Log) -> None:
        self.embedder = embedder
        self.cache = cache
        self.log = log
        self.vectors: dict[str, np.ndarray] = {}
        self.embedded = 0
        self.from_cache = 0
        self.seconds = 0.0

    def __contains__(self, text: str) -> bool:
        return text in self.vectors

    def __getitem__(self, text: str) -> np.ndarray:
        return self.vectors[text]

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DEFAULT_DIMS), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)

    def ensure(self, texts: Iterable[str], label: str, *, step: int = 512) -> None:
        """Embed every text not yet known (cache first), longest first, printing progress."""
        todo = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if not todo:
            return
        keys = [_key(t) for t in todo]
        cached = self.cache.get_many(keys)
        rest = []
        for text, key in zip(todo, keys):
            if key in cached:
                self.vectors[text] = cached[key]
            else:
                rest.append(text)
        self.from_cache += len(todo) - len(rest)
        if not rest:
            self.log(f"  {label}: {len(todo)} texts, all from cache")
            return
        rest.sort(key=len, reverse=True)
        self.log(f"  {label}: embedding {len(rest)} texts ({len(todo) - len(rest)} cached)")
        started = time.perf_counter()
        for start in range(0, len(rest), step):
            batch = rest[start : start + step]
            vecs = self.embedder.embed(batch)
            new = dict(zip(batch, vecs))
            self.vectors.update(new)
            self.cache.put_many({_key(t): v for t, v in new.items()})
            done = start + len(batch)
            el = time.perf_counter() - started
            self.log(f"    {label}: {done}/{len(rest)} embedded, {el:.0f}s ({done / el:.0f}/s)")
        took = time.perf_counter() - started
        self.seconds += took
        self.embedded += len(rest)


class PrecomputedEmbedder(Embedder):
    """An Embedder that answers from a :class:`VectorTable` (same model id as the real one).

    Texts it has not seen are embedded by the real model and counted in ``misses``.
    """

    def __init__(self, table: VectorTable) -> None:
        super().__init__(model_id=DEFAULT_MODEL_ID, dims=DEFAULT_DIMS, batch_size=4096)
        self.table = table
        self.misses = 0

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.table]
        if missing:
            self.misses += len(missing)
            self.table.vectors.update(zip(missing, self.table.embedder.embed(missing)))
        return self.table.matrix(texts)
