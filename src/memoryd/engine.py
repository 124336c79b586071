"""The Engine: every memoryd operation, written once.

The CLI, the REST API and the MCP server are thin faces over these methods. The
engine validates input, embeds text, asks the store for candidates, fuses and
ranks them, and records who changed what.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
from pydantic import ValidationError

from memoryd import backup_manifest
from memoryd.config import Settings
from memoryd.embed import Embedder
from memoryd.errors import (
    ContentTooLarge,
    EmptyContent,
    InvalidFilter,
    InvalidInput,
    MemoryNotFound,
    ModelMismatch,
    SecretDetected,
)
from memoryd.cognition import (
    consolidation,
    feedback,
    gating,
    graph,
    ingest,
    intentions,
    scheduling,
    secrets,
)
from memoryd.cognition.importance import ImportanceScore, importance_score
from memoryd.cognition import codebase as codebase_memory
from memoryd.ledger import LedgerEntry, LedgerReport, verify_chain
from memoryd.models import (
    CodebaseContext,
    ConsolidationReport,
    Edge,
    GcReport,
    HistoryEntry,
    IngestResult,
    Intention,
    IntentionTrigger,
    Memory,
    MemoryPatch,
    MemoryStateReport,
    Neighbourhood,
    NewMemory,
    RestoredMemory,
    SearchFilters,
    SearchHit,
    utcnow,
)
from memoryd.retrieval.search import SearchMode, SearchOptions, run_search
from memoryd.store.base import Actor, ListOrder, Store

Clock = Callable[[], datetime]
_FILTER_NAMES = set(SearchFilters.model_fields)


def validation_message(exc: ValidationError) -> str:
    """A one-line, field-naming summary of a pydantic validation error."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "input"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _utf8(text: str, what: str) -> bytes:
    """``text`` as UTF-8, or InvalidInput (lone surrogates from JSON cannot be stored)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode (unpaired surrogate at {exc.start})") from exc


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
        overrides = {
            name: value
            for name in ("reinforce", "update", "supersede", "merge")
            if (value := getattr(settings, f"gate_{name}")) is not None
        }
        self.gating_params = gating.GatingParams(**overrides)
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
        size = len(_utf8(content, "content"))
        limit = self.settings.max_content_bytes
        if size > limit:
            raise ContentTooLarge(
                f"content is {size} bytes; the limit is {limit} bytes "
                "(set MEMORYD_MAX_CONTENT_BYTES to change it)"
            )
        return content

    def _screen(self, content: str, allow_secrets: bool) -> str:
        """Apply secret scanning to content about to be stored (refuse, redact or allow)."""
        mode = self.settings.secrets_mode
        if allow_secrets or mode == "allow":
            return content
        findings = secrets.scan(content)
        if not findings:
            return content
        if mode == "redact":
            return secrets.redact(content, findings)
        raise SecretDetected(list(dict.fromkeys(f.kind for f in findings)))

    @staticmethod
    def attribute(new: NewMemory, actor: Actor | None) -> NewMemory:
        """Record the acting agent on a memory that names none."""
        if actor is not None and actor.agent_id and not new.agent_id:
            return new.model_copy(update={"agent_id": actor.agent_id})
        return new

    def _new_memory(
        self, item: NewMemory | Mapping[str, Any], allow_secrets: bool = False
    ) -> NewMemory:
        if isinstance(item, NewMemory):
            new = item
        else:
            try:
                new = NewMemory.model_validate(dict(item))
            except ValidationError as exc:
                raise InvalidInput(validation_message(exc)) from exc
        self._check_content(new.content)
        screened = self._screen(new.content, allow_secrets)
        if screened != new.content:
            new = new.model_copy(update={"content": screened, "embed_text": None})
        return new

    def _build(self, new: NewMemory, now: datetime) -> Memory:
        created = new.created_at or now
        fields = new.model_dump(include=set(NewMemory.model_fields)
                                - {"content", "created_at", "id", "embed_text"})
        memory = Memory(
            id=new.id or str(uuid.uuid4()),
            content=new.content,
            created_at=created,
            updated_at=created,
            embedding_model=self.embedder.model_id,
            state=scheduling.initial_state(new.importance, created),
            **fields,
        )
        if isinstance(new, RestoredMemory):
            memory = memory.model_copy(update=new.restored_fields())
        return memory

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
        allow_secrets: bool = False,
        **fields: Any,
    ) -> Memory:
        """Store one memory as given (no gating) and return it.

        >>> mem.add("User prefers TypeScript", node_type="preference", tags=["lang"])
        """
        return self.add_many(
            [{"content": content, **fields}], actor=actor, allow_secrets=allow_secrets
        )[0]

    def add_many(
        self,
        items: Iterable[NewMemory | Mapping[str, Any]],
        *,
        actor: Actor | None = None,
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
        allow_secrets: bool = False,
    ) -> list[Memory]:
        """Store many memories, embedding them in batches; each batch is one transaction.

        Every item is validated (and scanned for secrets) before anything is written,
        so a bad item fails the whole call with nothing stored. Consecutive memories
        of one session are linked by ``follows`` edges.
        """
        news = [self.attribute(self._new_memory(item, allow_secrets), actor) for item in items]
        batch = batch_size or self.settings.embed_batch_size * 4
        out: list[Memory] = []
        for start in range(0, len(news), batch):
            chunk = news[start : start + batch]
            now = self.clock()
            vectors = self.embedder.embed([n.embed_text or n.content for n in chunk])
            memories = [self._build(n, now) for n in chunk]
            with self.store.transaction():
                stored = self.store.insert(memories, vectors, actor or Actor())
                self.store.upsert_edges(graph.session_edges(self, stored))
            out.extend(stored)
            if progress:
                progress(len(chunk))
        return out

    def ingest(
        self,
        content: str,
        *,
        force_create: bool = False,
        allow_secrets: bool = False,
        actor: Actor | None = None,
        **fields: Any,
    ) -> IngestResult:
        """Smart ingest: create, update, reinforce, supersede or merge, by prediction error.

        >>> mem.ingest("User moved to Berlin")   # supersedes "User lives in Paris"
        """
        return ingest.ingest(self, {"content": content, **fields}, force_create=force_create,
                             allow_secrets=allow_secrets, actor=actor)

    def ingest_many(
        self,
        items: list[NewMemory | Mapping[str, Any]],
        *,
        force_create: bool = False,
        allow_secrets: bool = False,
        actor: Actor | None = None,
    ) -> list[IngestResult]:
        """Smart ingest of up to 50 items, in order."""
        return ingest.ingest_many(self, items, force_create=force_create,
                                  allow_secrets=allow_secrets, actor=actor)

    def importance_score(self, content: str) -> ImportanceScore:
        """Importance of ``content`` from its signals and its novelty against the store."""
        self._check_content(content)
        vector = self.embedder.embed([content])[0]
        hits = self.store.vector_search(vector, SearchFilters(), now=self.clock(), limit=1)
        novelty = 1.0 - max(0.0, hits[0].similarity) if hits else 1.0
        return importance_score(content, novelty)

    def update(
        self,
        memory_id: str,
        *,
        actor: Actor | None = None,
        allow_secrets: bool = False,
        **changes: Any,
    ) -> Memory:
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
            data["content"] = self._screen(data["content"], allow_secrets)
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
        cognitive: bool | None = None,
        associations: bool | None = None,
        record_access: bool = True,
        session_key: str | None = None,
        **filter_kwargs: Any,
    ) -> list[SearchHit]:
        """Hybrid search: BM25 and vector candidates fused by RRF, re-ranked, best first.

        ``hits[i].score`` is in [0, 1]; ``fused_score`` is the RRF part (1 = first in
        every list) and ``keyword_rank``/``semantic_similarity`` show where it came from.
        Filters: timeframe, since, until, node_types, categories, tags, tags_mode,
        scope, agent_id, session_id, tiers, include_superseded. ``cognitive`` and
        ``associations`` default to the settings; ``record_access`` strengthens the
        returned memories a little, at most once per ``session_key``. ``query_vector``
        skips embedding the query.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty")
        _utf8(query, "query")
        if not isinstance(limit, int) or limit < 1 or limit > 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        if mode not in ("hybrid", "keyword", "vector"):
            raise InvalidInput("mode must be hybrid, keyword or vector")
        parsed = self._filters(filters, **filter_kwargs)
        options = SearchOptions(
            limit=limit,
            mode=mode,
            min_score=min_score,
            mmr=mmr,
            mmr_lambda=self.settings.mmr_lambda if mmr_lambda is None else mmr_lambda,
            cognitive=self.settings.cognitive_ranking if cognitive is None else cognitive,
            associations=self.settings.activation if associations is None else associations,
            record_access=record_access,
            session_key=session_key,
        )
        return run_search(self, query, parsed, options, query_vector)

    def stats(self) -> dict[str, Any]:
        """Store counts plus the embedder's state."""
        data = self.store.stats().model_dump()
        data["embedder"] = {
            "model_id": self.embedder.model_id,
            "dims": self.embedder.dims,
            "loaded": self.embedder.loaded,
        }
        return data

    # --- strength and feedback ----------------------------------------
    def promote(self, memory_id: str, *, reason: str | None = None,
                actor: Actor | None = None) -> Memory:
        """"This helped / is correct": strengthen a memory (an FSRS Good review)."""
        return feedback.promote(self, memory_id, reason, actor or Actor())

    def demote(self, memory_id: str, *, reason: str | None = None,
               actor: Actor | None = None) -> Memory:
        """"Wrong / stale": weaken a memory (a lapse); it stays stored."""
        return feedback.demote(self, memory_id, reason, actor or Actor())

    def memory_state(self, memory_id: str) -> MemoryStateReport:
        """Retention, strengths, state (active/dormant/silent/unavailable) and tier."""
        return feedback.state_report(self, memory_id)

    def changelog(self, memory_id: str) -> list[HistoryEntry]:
        """The version history of a memory (same as :meth:`history`)."""
        return self.history(memory_id)

    def versions(self, memory_id: str) -> list[Memory]:
        """The memory followed by the chain of versions it superseded, newest first."""
        chain = [self.get(memory_id)]
        seen = {memory_id}
        while True:
            edges = [e for e in self.store.edges_of([chain[-1].id])
                     if e.edge_type == "supersedes" and e.source_id == chain[-1].id
                     and e.target_id not in seen]
            if not edges:
                return chain
            older = self.store.get(edges[0].target_id)
            if older is None:
                return chain
            chain.append(older)
            seen.add(older.id)

    # --- graph -------------------------------------------------------------
    def link(self, source_id: str, target_id: str, edge_type: str = "related",
             weight: float = 0.5, **kwargs: Any) -> Edge:
        """Create a typed, weighted edge between two memories."""
        return graph.link(self, source_id, target_id, edge_type, weight, **kwargs)

    def explore(self, memory_id: str, depth: int = 2) -> Neighbourhood:
        """The memories within ``depth`` (1-3) hops of a memory."""
        return graph.explore(self, memory_id, depth)

    # --- consolidation and forgetting ----------------------------------
    def consolidate(self, *, dry_run: bool = False) -> ConsolidationReport:
        """Re-tier, merge near-duplicates, link recent memories; never deletes."""
        return consolidation.consolidate(self, dry_run=dry_run)

    def gc(self, *, min_retention: float = 0.1, max_age_days: float | None = None,
           dry_run: bool = True, actor: Actor | None = None) -> GcReport:
        """Delete (or, by default, just list) memories whose retention fell below a floor."""
        return consolidation.gc(self, min_retention=min_retention, max_age_days=max_age_days,
                                dry_run=dry_run, actor=actor)

    def purge(self, memory_id: str, *, actor: Actor | None = None) -> None:
        """Remove a memory for good, scrubbing its content from history too."""
        consolidation.purge(self, memory_id, actor=actor)

    # --- prospective and codebase memory --------------------------------
    def set_intention(self, description: str, trigger: IntentionTrigger | Mapping[str, Any],
                      **kwargs: Any) -> Intention:
        """Remember to do something at a time, in a context or on an event."""
        return intentions.set_intention(self, description, trigger, **kwargs)

    def check_intentions(self, context: Mapping[str, Any] | None = None) -> list[Intention]:
        """Intentions due now or matching the context (codebase, files, topic, text, event)."""
        return intentions.check_intentions(self, context)

    def update_intention(self, intention_id: str, status: str, *,
                         snooze_minutes: float | None = None) -> Intention:
        """Complete, snooze or cancel an intention."""
        return intentions.update_intention(self, intention_id, status,  # type: ignore[arg-type]
                                           snooze_minutes=snooze_minutes)

    def list_intentions(self, status: str | None = None) -> list[Intention]:
        """Intentions by status (default: active and snoozed)."""
        return intentions.list_intentions(self, status)

    def remember_pattern(self, name: str, description: str, files: list[str] | None,
                         codebase: str, *, actor: Actor | None = None) -> Memory:
        """Record a code pattern of a codebase."""
        return codebase_memory.remember_pattern(self, name, description, files, codebase,
                                                actor=actor)

    def remember_decision(self, decision: str, rationale: str | None,
                          alternatives: list[str] | None, files: list[str] | None,
                          codebase: str, *, actor: Actor | None = None) -> Memory:
        """Record an architectural decision with its rationale and alternatives."""
        return codebase_memory.remember_decision(self, decision, rationale, alternatives, files,
                                                 codebase, actor=actor)

    def codebase_context(self, codebase: str, files: list[str] | None = None,
                         limit: int = 10) -> CodebaseContext:
        """Patterns, decisions and intentions that touch the given files of a codebase."""
        return codebase_memory.codebase_context(self, codebase, files, limit)

    # --- audit ledger ----------------------------------------------------
    def ledger(self, *, after: int = 0, limit: int = 100) -> list[LedgerEntry]:
        """Ledger entries after position ``after``, oldest first."""
        return self.store.ledger_entries(after=after, limit=limit)

    def ledger_head(self) -> LedgerEntry | None:
        """The newest ledger entry: keep its hash elsewhere to detect a cut-off chain."""
        return self.store.ledger_head()

    def verify_ledger(
        self, *, batch_size: int = 5000, progress: Callable[[int], None] | None = None
    ) -> LedgerReport:
        """Re-hash the whole ledger and report the first broken link, if any."""

        def entries() -> Iterable[LedgerEntry]:
            after = 0
            while True:
                batch = self.store.ledger_entries(after=after, limit=batch_size)
                if not batch:
                    return
                yield from batch
                after = batch[-1].seq
                if progress:
                    progress(len(batch))

        return verify_chain(entries())

    def journal(self, day: date, *, tz: tzinfo | None = None) -> str:
        """What was learned, changed and forgotten on ``day``, as Markdown.

        The day runs from midnight to midnight in ``tz`` (default: this machine's local
        time zone). Purged memories appear by id only.
        """
        from memoryd.journal import journal_markdown

        return journal_markdown(self.store, day, tz)

    # --- maintenance -----------------------------------------------------
    def backup(self, path: str | Path) -> Path:
        """Write a consistent copy of the store to ``path`` (the store stays online)."""
        target = Path(path)
        self.store.backup(target)
        backup_manifest.write_manifest(target)  # checksums and counts, checked by restore
        return target

    def restore(self, path: str | Path) -> None:
        """Replace the store's contents with the backup at ``path``."""
        backup_manifest.verify_backup(Path(path))  # refuses before anything is replaced
        self.store.restore(Path(path), expect_model=self.embedder.model_id)
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
