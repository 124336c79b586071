"""The Engine: memoryd's core memory verbs, and its capabilities as attributes.

The CLI, the REST API and the MCP server are thin faces over these methods. Each method
validates its arguments and hands an :class:`EngineContext` to the procedure that does the
work (``memoryd.engine.memory.<module>``). The capabilities are facades reached as attributes:
``engine.kg`` (knowledge graphs), ``engine.domains``, ``engine.tasks`` (task memory and
intentions), ``engine.waits``, ``engine.codebase``, ``engine.views`` and ``engine.admin``;
the names they took from the Engine keep working, with a DeprecationWarning
(:mod:`memoryd.engine.moved`). ``engine.acting_as(actor, access)`` returns the same engine
acting for someone: their name in history, and only the memories they may see.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from memoryd.cognition import gating
from memoryd.cognition.extraction import Message
from memoryd.config import Settings
from memoryd.embed import Embedder
from memoryd.engine.admin import maintenance
from memoryd.engine.admin.facade import Admin
from memoryd.engine.memory.access_writer import AccessWriter
from memoryd.engine.checks import check_min_score, check_query, parse_filters
from memoryd.engine.codebase.facade import Codebase
from memoryd.engine.context import Access, Clock, EngineContext
from memoryd.engine.domains.auto import AutoDiscovery
from memoryd.engine.domains.discovery import discover as discover_domains
from memoryd.engine.domains.facade import Domains, reading
from memoryd.engine.kg.facade import KnowledgeGraphs
from memoryd.engine.kg.feed import visible_details
from memoryd.engine.memory import capture, feedback, ingest, links, recall, writes
from memoryd.engine.memory.search import SearchMode, SearchOptions, run_search
from memoryd.engine.moved import forward
from memoryd.engine.tasks.facade import Tasks
from memoryd.engine.views.facade import Views
from memoryd.engine.waits.facade import Waits
from memoryd.engine.waits.service import WaitService
from memoryd.errors import Forbidden, InvalidInput, MemoryNotFound
from memoryd.llm import ChatClient, client_from_settings
from memoryd.models import (
    Edge,
    HistoryEntry,
    IngestResult,
    Memory,
    Neighbourhood,
    NewMemory,
    SearchFilters,
    SearchHit,
    utcnow,
)
from memoryd.store.base import Actor, ListOrder, Store


class Engine:
    """A memory: a store plus an embedder plus the settings that tune them.

    Use :func:`memoryd.open` to make one. Usable as a context manager. The memory verbs are
    its methods; the capabilities are its attributes (``mem.kg``, ``mem.domains``,
    ``mem.tasks``, ``mem.waits``, ``mem.codebase``, ``mem.views``, ``mem.admin``).
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
        overrides = {
            name: value
            for name in ("reinforce", "update", "supersede", "merge")
            if (value := getattr(settings, f"gate_{name}")) is not None
        }
        self._ctx = EngineContext(store, embedder, settings, clock,
                                  gating.GatingParams(**overrides), accesses=AccessWriter(store))
        self._chat: ChatClient | None = client_from_settings(settings)
        maintenance.check_model(self._ctx, allow_model_mismatch)
        self._waits = WaitService(self._ctx)
        self._kg = KnowledgeGraphs(self._ctx)
        system = self._ctx.acting(Actor("domains"))
        self._auto = AutoDiscovery(
            enabled=settings.domains_auto, min_memories=settings.domains_min_memories,
            count=store.count, has_domains=lambda: bool(store.domains.list_domains()),
            discover=lambda: discover_domains(system), closing=self._ctx.closing)

    @classmethod
    def _bound(cls, ctx: EngineContext, chat: ChatClient | None, waits: WaitService,
               auto: AutoDiscovery, kg: KnowledgeGraphs) -> Engine:
        engine = cls.__new__(cls)
        engine._ctx, engine._chat, engine._waits, engine._auto = ctx, chat, waits, auto
        engine._kg = kg.acting(ctx)
        return engine

    def acting_as(self, actor: Actor | None = None, access: Access | None = None) -> Engine:
        """This engine acting for ``actor`` (recorded in history) with ``access`` (what it may
        see and change). The store, model and settings are shared.

        >>> bot = mem.acting_as(Actor("key:bot", agent_id="bot-1"), Access(agent_id="bot-1"))
        """
        return Engine._bound(self._ctx.acting(actor, access), self._chat, self._waits, self._auto,
                             self._kg)

    def labelled(self, agent_id: str | None) -> Engine:
        """This engine writing new memories as ``agent_id`` (a label; it widens no reads).

        A caller bound to an agent cannot write as another, and nobody but that agent's own
        key may write as an agent that an active key is bound to.
        """
        actor = self._ctx.actor
        if agent_id is None or agent_id == actor.agent_id:
            return self
        bound = self._ctx.access.agent_id
        if bound is not None:
            raise Forbidden(f"this key is bound to agent {bound!r}")
        if agent_id in self.admin.bound_agents():
            raise Forbidden(f"agent {agent_id!r} has a key of its own; act as it with that key")
        return self.acting_as(replace(actor, agent_id=agent_id))

    @property
    def settings(self) -> Settings:
        """The settings this engine runs with."""
        return self._ctx.settings

    @property
    def embedder(self) -> Embedder:
        """The embedding model."""
        return self._ctx.embedder

    @property
    def store(self) -> Store:
        """The raw store contract, for tests, benchmarks and maintenance tools. It bypasses
        this engine's access bindings: faces never use it (a boundary test checks)."""
        return self._ctx.store

    @property
    def context(self) -> EngineContext:
        """The context engine procedures run with (for benchmarks and tools)."""
        return self._ctx

    # --- capabilities ----------------------------------------------------
    @property
    def kg(self) -> KnowledgeGraphs:
        """The knowledge graphs: ``mem.kg.read(project=...)``, ``mem.kg.write(...)``, ...
        (one cache of the graphs read so far, shared by every caller of this engine)."""
        return self._kg

    @property
    def domains(self) -> Domains:
        """The domains: ``mem.domains.list()``, ``mem.domains.discover()``, ..."""
        return Domains(self._ctx)

    @property
    def tasks(self) -> Tasks:
        """Task memory and intentions: ``mem.tasks.register(...)``, ``mem.tasks.update(...)``,
        ``mem.tasks.set_intention(...)``, ..."""
        return Tasks(self._ctx, self._chat, self.waits)

    @property
    def waits(self) -> Waits:
        """Smart waits: ``mem.waits.watch(...)``, ``mem.waits.status(...)``, ..."""
        return Waits(self._ctx, self._waits)

    @property
    def codebase(self) -> Codebase:
        """Codebase memory: ``mem.codebase.remember_decision(...)``,
        ``mem.codebase.context(...)``."""
        return Codebase(self._ctx)

    @property
    def views(self) -> Views:
        """Read-only views: ``mem.views.changes(...)``, ``mem.views.overview()``, ..."""
        return Views(self._ctx)

    @property
    def admin(self) -> Admin:
        """Administration of the whole store: ``mem.admin.create_key(...)``,
        ``mem.admin.backup(...)``, ``mem.admin.consolidate()``, ..."""
        return Admin(self._ctx, self._auto)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the class does not have: the ones that moved to a
        # capability are forwarded there with a DeprecationWarning (memoryd.engine.moved).
        return forward(self, name)

    # --- lifecycle -------------------------------------------------------
    def close(self) -> None:
        """Stop the waits this process runs and a running domain discovery (at its next batch
        of memories; nothing of it is kept), write the searches' queued access recordings,
        then close the store (saving index caches)."""
        self._ctx.closing.set()
        self._waits.close()
        self._auto.join()
        if self._ctx.accesses is not None:
            self._ctx.accesses.close()
        self._ctx.store.close()

    def settle(self, timeout: float | None = None) -> None:
        """Wait for background work that writes started (the first domain discovery, the
        access recordings of the searches so far)."""
        self._auto.join(timeout)
        if self._ctx.accesses is not None:
            self._ctx.accesses.flush(timeout)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writes ----------------------------------------------------------
    def add(self, content: str, *, allow_secrets: bool = False, **fields: Any) -> Memory:
        """Store one memory as given (no gating) and return it.

        >>> mem.add("User prefers TypeScript", node_type="preference", tags=["lang"])
        """
        return self.add_many([{"content": content, **fields}], allow_secrets=allow_secrets)[0]

    def add_many(self, items: Iterable[NewMemory | Mapping[str, Any]], *,
                 batch_size: int | None = None, progress: Callable[[int], None] | None = None,
                 allow_secrets: bool = False) -> list[Memory]:
        """Store many memories, embedding them in batches; each batch is one transaction.
        A bad item fails the whole call with nothing stored."""
        stored = writes.add_many(self._ctx, items, batch_size=batch_size, progress=progress,
                                 allow_secrets=allow_secrets)
        self._auto.after_writes(len(stored))
        return stored

    def ingest(self, content: str, *, force_create: bool = False, allow_secrets: bool = False,
               **fields: Any) -> IngestResult:
        """Smart ingest: create, update, reinforce, supersede or merge, by prediction error.

        >>> mem.ingest("User moved to Berlin")   # supersedes "User lives in Paris"
        """
        return self.ingest_many([{"content": content, **fields}], force_create=force_create,
                                allow_secrets=allow_secrets)[0]

    def ingest_many(self, items: list[NewMemory | Mapping[str, Any]], *,
                    force_create: bool = False, allow_secrets: bool = False) -> list[IngestResult]:
        """Smart ingest of up to 50 items, in order."""
        results = ingest.ingest_many(self._ctx, items, force_create=force_create,
                                     allow_secrets=allow_secrets)
        self._auto.after_writes(sum(r.decision in ("create", "supersede") for r in results))
        return results

    def update(self, memory_id: str, *, allow_secrets: bool = False, **changes: Any) -> Memory:
        """Change fields of a memory; new content is re-embedded. Returns the new version."""
        return writes.update(self._ctx, memory_id, changes, allow_secrets)

    def delete(self, memory_id: str) -> None:
        """Delete a memory with its vector, keyword entry and edges (history keeps a tombstone)."""
        writes.delete(self._ctx, memory_id)

    def forget(self, *, memory_id: str | None = None,
               query: str | None = None) -> tuple[str | None, list[SearchHit]]:
        """Delete a memory by id, or the one memory that clearly matches ``query``; otherwise
        return the closest ones (deleting nothing)."""
        return writes.forget(self._ctx, memory_id, query,
                             lambda q, n: self.search(q, n, record_access=False))

    # --- reads -----------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        """One memory by id; raises MemoryNotFound."""
        return self._ctx.get(memory_id)

    def find(self, memory_id: str) -> Memory | None:
        """One memory by id, or None (for lookups where absence is not an error)."""
        return self._ctx.get_many([memory_id]).get(memory_id)

    def list(self, filters: SearchFilters | Mapping[str, Any] | None = None, *, limit: int = 50,
             offset: int = 0, order: ListOrder = "created_desc",
             **filter_kwargs: Any) -> list[Memory]:
        """Memories matching the filters, newest first, paged."""
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        if not isinstance(offset, int) or offset < 0:
            raise InvalidInput("offset must not be negative")
        parsed = reading(self._ctx, parse_filters(filters, **filter_kwargs))
        return self._ctx.store.list(parsed, now=self._ctx.clock(), limit=limit, offset=offset,
                                    order=order)

    def count(self, filters: SearchFilters | Mapping[str, Any] | None = None,
              **filter_kwargs: Any) -> int:
        """How many memories match the filters (among those this engine may see)."""
        parsed = reading(self._ctx, parse_filters(filters, **filter_kwargs))
        return self._ctx.store.count(parsed, now=self._ctx.clock())

    def history(self, memory_id: str) -> list[HistoryEntry]:
        """Every recorded change of a memory, oldest first (also after deletion)."""
        entries = self._ctx.store.history(memory_id)
        if not entries:
            raise MemoryNotFound(memory_id)
        if self._ctx.access.restricted:
            memory = self._ctx.store.get(memory_id)
            if memory is None or not self._ctx.access.allows(memory):
                raise MemoryNotFound(memory_id)
            return [e.model_copy(update={"details": visible_details(self._ctx, memory.scope,
                                                                     e.details)})
                    for e in entries]
        return entries

    def versions(self, memory_id: str) -> list[Memory]:
        """The memory followed by the chain of versions it superseded, newest first."""
        chain = [self.get(memory_id)]
        seen = {memory_id}
        while True:
            edges = [e for e in self._ctx.store.edges_of([chain[-1].id])
                     if e.edge_type == "supersedes" and e.source_id == chain[-1].id
                     and e.target_id not in seen]
            older = self._ctx.get_many([edges[0].target_id]) if edges else {}
            if not older:
                return chain
            chain.append(next(iter(older.values())))
            seen.add(chain[-1].id)

    def search(self, query: str, limit: int = 10, *, mode: SearchMode = "hybrid",
               filters: SearchFilters | Mapping[str, Any] | None = None,
               min_score: float | None = None, mmr: bool = False,
               mmr_lambda: float | None = None, query_vector: np.ndarray | None = None,
               cognitive: bool | None = None, associations: bool | None = None,
               record_access: bool = True, session_key: str | None = None,
               **filter_kwargs: Any) -> list[SearchHit]:
        """Hybrid search: keyword (BM25) and vector candidates, ranked by relevance, best first.

        ``hits[i].score`` is how likely the memory answers the query, in [0, 1], from the pair
        alone (the same on any store), so ``min_score`` drops what is unlikely to answer
        (``settings.recall_threshold`` is the level recall uses). ``keyword_rank``,
        ``keyword_score`` (memoryd's BM25) and ``semantic_similarity`` show where it came
        from; ``fused_score`` is what ranked it (the ranking's probability, or the RRF score
        with ``fusion = "rrf"``). ``mode="keyword"`` / ``"vector"`` rank by one side alone.
        Filters: timeframe, since, until, node_types, categories, tags, tags_mode, scope,
        agent_id, session_id, tiers, domains (any of), include_superseded. ``cognitive`` and
        ``associations`` default to the settings; ``record_access`` strengthens the returned
        memories a little, at most once per ``session_key``. ``query_vector`` skips embedding
        the query.

            >>> [h.memory.content for h in mem.search("when do we ship?", 3)]  # doctest: +SKIP
            ['Deploys go out on Tuesdays after standup']
        """
        check_query(query, limit, mode)
        check_min_score(min_score)
        s = self.settings
        loading = query_vector is None and not self.await_model()
        if loading:
            mode = "keyword"  # keyword_while_model_loads: answer now, not in a few seconds
        options = SearchOptions(
            limit=limit, mode=mode, min_score=min_score, mmr=mmr,
            mmr_lambda=s.mmr_lambda if mmr_lambda is None else mmr_lambda,
            cognitive=s.cognitive_ranking if cognitive is None else cognitive,
            associations=s.activation if associations is None else associations,
            record_access=record_access, session_key=session_key, embed_query=not loading,
        )
        filters = reading(self._ctx, parse_filters(filters, **filter_kwargs))
        return run_search(self._ctx, query, filters, options, query_vector)

    def recall(self, text: str, filters: SearchFilters | Mapping[str, Any] | None = None, *,
               token_budget: int | None = None, max_items: int | None = None,
               min_score: float | None = None, session_key: str | None = None) -> recall.Recalled:
        """The memories relevant to a prompt, formatted as a ``<system_memory>`` block.

        Only memories at least ``min_score`` likely relevant go in (default: the
        ``recall_threshold`` setting); the block is empty when none is.
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("give a prompt or a query")
        check_min_score(min_score)
        return recall.recall(self._ctx, text, reading(self._ctx, parse_filters(filters)),
                             token_budget=token_budget, max_items=max_items, min_score=min_score,
                             session_key=session_key)

    def stats(self) -> dict[str, Any]:
        """Store counts plus the embedder's state."""
        self._ctx.access.require_unrestricted("statistics")
        data = self._ctx.store.stats().model_dump()
        data["embedder"] = {"model_id": self.embedder.model_id, "dims": self.embedder.dims,
                            "loaded": self.embedder.loaded}
        return data

    @property
    def model_ready(self) -> bool:
        """False while searches answer from keywords alone because the model is still loading
        (only with ``keyword_while_model_loads``)."""
        return self.embedder.loaded or not self.settings.keyword_while_model_loads

    def await_model(self) -> bool:
        """:attr:`model_ready`, after waiting up to ``model_wait_seconds`` for a model that is
        still loading (the load starts now if nothing started it): a model that loads in half a
        second answers the first search by meaning, a slow one does not hold it up longer."""
        if self.model_ready:
            return True
        self.embedder.load_within(self.settings.model_wait_seconds)
        return self.model_ready

    def warm(self, *, writes: bool = True) -> None:
        """Load the embedding model now, so the first search does not wait for it; with
        ``writes``, also what embeds memories (the same, unless queries run a faster copy of
        the model, as the default embedder's do: docs/embeddings.md)."""
        self.embedder.embed_query("warm-up")
        if writes:
            self.embedder.embed(["warm-up"])

    # --- strength and feedback ----------------------------------------
    def promote(self, memory_id: str, *, reason: str | None = None) -> Memory:
        """"This helped / is correct": strengthen a memory (an FSRS Good review)."""
        return feedback.promote(self._ctx, memory_id, reason)

    def demote(self, memory_id: str, *, reason: str | None = None) -> Memory:
        """"Wrong / stale": weaken a memory (a lapse); it stays stored."""
        return feedback.demote(self._ctx, memory_id, reason)

    # --- links between memories -----------------------------------------
    def link(self, source_id: str, target_id: str, edge_type: str = "related",
             weight: float = 0.5, **kwargs: Any) -> Edge:
        """Create a typed, weighted edge between two memories."""
        return links.link(self._ctx, source_id, target_id, edge_type, weight, **kwargs)

    def explore(self, memory_id: str, depth: int = 2) -> Neighbourhood:
        """The memories within ``depth`` (1-3) hops of a memory."""
        return links.explore(self._ctx, memory_id, depth)

    # --- agent hooks ------------------------------------------------------
    def capture(self, messages: list[Message], session_key: str, *,
                scope: str | None = None) -> capture.CaptureResult:
        """Store what a finished turn taught (only messages after the session's watermark)."""
        result = capture.capture(self._ctx, messages, session_key, scope, self._chat)
        self._auto.after_writes(len(result.stored))
        return result

    def flush(self, messages: list[Message], session_key: str | None = None, *,
              scope: str | None = None) -> capture.CaptureResult:
        """Store what messages about to be compacted taught."""
        result = capture.flush(self._ctx, messages, session_key, scope, self._chat)
        self._auto.after_writes(len(result.stored))
        return result
