"""The Engine: every memoryd operation, written once.

The CLI, the REST API and the MCP server are thin faces over these methods. The
engine validates input, embeds text, asks the store for candidates, fuses and
ranks them, and records who changed what.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Mapping

import numpy as np
from pydantic import ValidationError

from memoryd.config import Settings
from memoryd.embed import Embedder
from memoryd.errors import (
    ContentTooLarge,
    EmptyContent,
    InvalidFilter,
    InvalidInput,
    MemoryNotFound,
    ModelMismatch,
)
from memoryd.models import (
    HistoryEntry,
    Memory,
    MemoryPatch,
    NewMemory,
    SchedulingState,
    SearchFilters,
    SearchHit,
    utcnow,
)
from memoryd.retrieval.fusion import Fused, reciprocal_rank_fusion
from memoryd.retrieval.mmr import mmr_order
from memoryd.store.base import Actor, ListOrder, Store

SearchMode = Literal["hybrid", "keyword", "vector"]
Clock = Callable[[], datetime]
_FILTER_NAMES = set(SearchFilters.model_fields)


def validation_message(exc: ValidationError) -> str:
    """A one-line, field-naming summary of a pydantic validation error."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "input"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class Engine:
    """A memory: a store plus an embedder plus the settings that tune them.

    Use :func:`memoryd.open` to make one. Usable as a context manager.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: Settings,
        *,
        clock: Clock = utcnow,
        allow_model_mismatch: bool = False,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self._check_model(allow_model_mismatch)

    # --- lifecycle -------------------------------------------------------
    def close(self) -> None:
        """Close the store (saving index caches)."""
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_model(self, allow_mismatch: bool) -> None:
        stored = self.store.embedding_model
        if stored is None:
            self.store.set_embedding_model(self.embedder.model_id, self.embedder.dims)
            return
        if stored == self.embedder.model_id:
            return
        has_vectors = self.store.stats().vectors > 0
        if not has_vectors:
            self.store.set_embedding_model(self.embedder.model_id, self.embedder.dims)
        elif not allow_mismatch:
            raise ModelMismatch(stored, self.embedder.model_id)

    # --- validation ------------------------------------------------------
    def _check_content(self, content: Any) -> str:
        if not isinstance(content, str):
            raise InvalidInput(f"content must be a string, not {type(content).__name__}")
        if not content.strip():
            raise EmptyContent("content is empty")
        size = len(content.encode("utf-8"))
        limit = self.settings.max_content_bytes
        if size > limit:
            raise ContentTooLarge(
                f"content is {size} bytes; the limit is {limit} bytes "
                "(set MEMORYD_MAX_CONTENT_BYTES to change it)"
            )
        return content

    def _new_memory(self, item: NewMemory | Mapping[str, Any]) -> NewMemory:
        if isinstance(item, NewMemory):
            new = item
        else:
            try:
                new = NewMemory.model_validate(dict(item))
            except ValidationError as exc:
                raise InvalidInput(validation_message(exc)) from exc
        self._check_content(new.content)
        return new

    def _build(self, new: NewMemory, now: datetime) -> Memory:
        created = new.created_at or now
        fields = new.model_dump(exclude={"content", "created_at", "id", "embed_text"})
        return Memory(
            id=new.id or str(uuid.uuid4()),
            content=new.content,
            created_at=created,
            updated_at=created,
            embedding_model=self.embedder.model_id,
            state=SchedulingState(last_review=created),
            **fields,
        )

    @staticmethod
    def _filters(filters: SearchFilters | Mapping[str, Any] | None, **kwargs: Any) -> SearchFilters:
        given = {k: v for k, v in kwargs.items() if v is not None}
        if isinstance(filters, SearchFilters):
            data = filters.model_dump(exclude_unset=True)
        else:
            data = dict(filters or {})
        unknown = set(data) - _FILTER_NAMES
        if unknown:
            raise InvalidFilter(
                f"unknown filter(s): {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(_FILTER_NAMES))}"
            )
        data.update(given)
        try:
            return SearchFilters.model_validate(data)
        except ValidationError as exc:
            raise InvalidFilter(validation_message(exc)) from exc

    # --- writes ----------------------------------------------------------
    def add(
        self,
        content: str,
        *,
        actor: Actor | None = None,
        **fields: Any,
    ) -> Memory:
        """Store one memory as given (no gating) and return it.

        >>> mem.add("User prefers TypeScript", node_type="preference", tags=["lang"])
        """
        return self.add_many([{"content": content, **fields}], actor=actor)[0]

    def add_many(
        self,
        items: Iterable[NewMemory | Mapping[str, Any]],
        *,
        actor: Actor | None = None,
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[Memory]:
        """Store many memories, embedding them in batches; each batch is one transaction.

        Every item is validated before anything is written, so a bad item fails
        the whole call with nothing stored.
        """
        news = [self._new_memory(item) for item in items]
        batch = batch_size or self.settings.embed_batch_size * 4
        out: list[Memory] = []
        for start in range(0, len(news), batch):
            chunk = news[start : start + batch]
            now = self.clock()
            vectors = self.embedder.embed([n.embed_text or n.content for n in chunk])
            memories = [self._build(n, now) for n in chunk]
            out.extend(self.store.insert(memories, vectors, actor or Actor()))
            if progress:
                progress(len(chunk))
        return out

    def update(self, memory_id: str, *, actor: Actor | None = None, **changes: Any) -> Memory:
        """Change fields of a memory; new content is re-embedded. Returns the new version."""
        try:
            patch = MemoryPatch.model_validate(changes)
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from exc
        data = patch.model_dump(exclude_unset=True)
        if not data:
            raise InvalidInput("nothing to update: pass at least one field")
        vector = None
        if "content" in data:
            self._check_content(data["content"])
            vector = self.embedder.embed([data["content"]])[0]
        self.get(memory_id)
        data["updated_at"] = self.clock()
        return self.store.update(memory_id, data, actor or Actor(), vector=vector)

    def delete(self, memory_id: str, *, actor: Actor | None = None) -> None:
        """Delete a memory with its vector, keyword entry and edges (history keeps a tombstone)."""
        self.store.delete(memory_id, actor or Actor())

    # --- reads -----------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        """One memory by id; raises MemoryNotFound."""
        memory = self.store.get(memory_id)
        if memory is None:
            raise MemoryNotFound(memory_id)
        return memory

    def list(
        self,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        order: ListOrder = "created_desc",
        **filter_kwargs: Any,
    ) -> list[Memory]:
        """Memories matching the filters, newest first, paged."""
        if limit < 1 or limit > 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        if offset < 0:
            raise InvalidInput("offset must not be negative")
        parsed = self._filters(filters, **filter_kwargs)
        return self.store.list(parsed, now=self.clock(), limit=limit, offset=offset, order=order)

    def history(self, memory_id: str) -> list[HistoryEntry]:
        """Every recorded change of a memory, oldest first (also after deletion)."""
        entries = self.store.history(memory_id)
        if not entries:
            raise MemoryNotFound(memory_id)
        return entries

    def search(
        self,
        query: str,
        limit: int = 10,
        *,
        mode: SearchMode = "hybrid",
        filters: SearchFilters | Mapping[str, Any] | None = None,
        min_score: float | None = None,
        mmr: bool = False,
        mmr_lambda: float | None = None,
        query_vector: np.ndarray | None = None,
        **filter_kwargs: Any,
    ) -> list[SearchHit]:
        """Hybrid search: BM25 and vector candidates fused by RRF, best first.

        ``hits[i].score`` is the fused score scaled to [0, 1] (1 = first in every
        list); ``keyword_rank``/``semantic_similarity`` show where it came from.
        Filters: timeframe, since, until, node_types, categories, tags, tags_mode,
        scope, agent_id, session_id, tiers, include_superseded. ``query_vector``
        skips embedding the query (callers that already have its vector).
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty")
        if limit < 1 or limit > 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        if mode not in ("hybrid", "keyword", "vector"):
            raise InvalidInput("mode must be hybrid, keyword or vector")
        parsed = self._filters(filters, **filter_kwargs)
        fused = self._candidates(query, parsed, limit, mode, query_vector)
        memories = self.store.get_many([f.memory_id for f in fused])
        hits = [
            SearchHit(
                memory=memories[f.memory_id],
                score=f.fused,
                fused_score=f.fused,
                keyword_rank=f.keyword_rank,
                keyword_score=f.keyword_score,
                semantic_rank=f.semantic_rank,
                semantic_similarity=f.semantic_similarity,
            )
            for f in fused
            if f.memory_id in memories
        ]
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        if mmr and len(hits) > 1:
            hits = self._diversify(hits, limit, mmr_lambda)
        return hits[:limit]

    def _candidates(
        self,
        query: str,
        filters: SearchFilters,
        limit: int,
        mode: SearchMode,
        query_vector: np.ndarray | None = None,
    ) -> list[Fused]:
        pool = max(self.settings.candidate_pool, limit * 3)
        now = self.clock()
        keyword = (
            self.store.keyword_search(query, filters, now=now, limit=pool)
            if mode != "vector"
            else []
        )
        vector = []
        if mode != "keyword":
            qvec = self.embedder.embed([query])[0] if query_vector is None else query_vector
            vector = self.store.vector_search(qvec, filters, now=now, limit=pool)
        return reciprocal_rank_fusion(
            keyword,
            vector,
            k=self.settings.rrf_k,
            keyword_weight=self.settings.keyword_weight if mode == "hybrid" else 1.0,
            vector_weight=self.settings.vector_weight if mode == "hybrid" else 1.0,
        )

    def _diversify(self, hits: list[SearchHit], limit: int, lam: float | None) -> list[SearchHit]:
        vectors = self.store.vectors([h.memory.id for h in hits])
        dims = self.embedder.dims
        matrix = np.stack([vectors.get(h.memory.id, np.zeros(dims, np.float32)) for h in hits])
        order = mmr_order(
            [h.score for h in hits],
            matrix,
            lam=self.settings.mmr_lambda if lam is None else lam,
            limit=limit,
        )
        return [hits[i] for i in order]

    def stats(self) -> dict[str, Any]:
        """Store counts plus the embedder's state."""
        data = self.store.stats().model_dump()
        data["embedder"] = {
            "model_id": self.embedder.model_id,
            "dims": self.embedder.dims,
            "loaded": self.embedder.loaded,
        }
        return data

    # --- maintenance -----------------------------------------------------
    def backup(self, path: str | Path) -> Path:
        """Write a consistent copy of the store to ``path`` (the store stays online)."""
        target = Path(path)
        self.store.backup(target)
        return target

    def restore(self, path: str | Path) -> None:
        """Replace the store's contents with the backup at ``path``."""
        self.store.restore(Path(path))
        self._check_model(allow_mismatch=False)

    def reembed(
        self, *, batch_size: int = 256, progress: Callable[[int], None] | None = None
    ) -> int:
        """Re-embed every memory with the configured embedder; returns how many."""
        total = 0
        batch: list[Memory] = []

        def flush() -> None:
            nonlocal total
            vectors = self.embedder.embed([m.content for m in batch])
            self.store.replace_vectors(
                {m.id: v for m, v in zip(batch, vectors)}, self.embedder.model_id
            )
            total += len(batch)
            if progress:
                progress(len(batch))
            batch.clear()

        for memory in self.store.iter_memories():
            batch.append(memory)
            if len(batch) >= batch_size:
                flush()
        if batch:
            flush()
        # Only now: an interrupted re-embed leaves the old model recorded, so the
        # store keeps refusing the new one until `memoryd reembed` completes.
        self.store.set_embedding_model(self.embedder.model_id, self.embedder.dims)
        return total
