"""Domains on the write path and in bulk: classify new memories, re-classify changed ones,
and (re)assign every memory after the domains change.

On the write path classification is cheap: one matrix product of the new vectors with the
domains' centroids (:func:`memoryd.domains.assign.classify_many`), inside the write's own
transaction, so a structural change of the domains never interleaves with it. The centroid of
each new memory's best domain moves by a running mean. A caller limited to some domains
(:class:`~memoryd.engine.context.Access`) cannot write a memory that lands outside them.

Assignments are derived data (vector x centroids): they are written with
``store.domains.set_assignments``, which records no history.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from memoryd.domains import assign
from memoryd.engine.context import EngineContext
from memoryd.errors import Forbidden
from memoryd.models import Domain, Memory
from memoryd.store.base import Assignment

BATCH = 1000


@dataclass(frozen=True)
class DomainSet:
    """The store's domains as the classifier sees them (pure ids are the names memories
    carry) and the active threshold."""

    records: list[Domain]
    threshold: float
    pure: list[assign.Domain] = field(default_factory=list)

    @classmethod
    def of(cls, records: list[Domain], threshold: float) -> DomainSet:
        """The set for ``records`` (those without a centroid are left out)."""
        usable = [r for r in records if r.centroid is not None]
        return cls(usable, threshold, [as_pure(r) for r in usable])

    @property
    def dims(self) -> int | None:
        """The centroids' dimension (None without domains)."""
        return int(self.records[0].centroid.shape[0]) if self.records else None

    def fits(self, vectors: np.ndarray | None) -> bool:
        """Whether these domains can classify ``vectors`` (some domains, same dimension)."""
        return (vectors is not None and bool(self.records) and vectors.ndim == 2
                and vectors.shape[1] == self.dims)

    def by_name(self) -> dict[str, Domain]:
        """The records by name."""
        return {r.name: r for r in self.records}


def as_pure(record: Domain) -> assign.Domain:
    """A stored domain as :class:`memoryd.domains.assign.Domain` (its id is the name)."""
    return assign.Domain(id=record.name, label=record.name, centroid=record.centroid,
                         top_terms=tuple(record.top_terms), memory_count=record.member_count)


def current(ctx: EngineContext) -> DomainSet:
    """The store's domains and threshold right now."""
    threshold = ctx.store.domains.domain_threshold()
    return DomainSet.of(ctx.store.domains.list_domains(),
                        assign.DEFAULT_THRESHOLD if threshold is None else threshold)


def classify_new(ctx: EngineContext, memories: list[Memory],
                 vectors: np.ndarray | None) -> list[Memory]:
    """``memories`` with their domains and scores, checked against the caller's domains; the
    best domains' centroids move. Call inside the write's transaction, before inserting.

    Without domains yet (or with centroids of another model's dimension) memories stay
    unclassified.
    """
    found = current(ctx)
    if not found.fits(vectors):
        # Domains belong to one store: names an import brought along would point nowhere.
        out = [m.model_copy(update={"domains": [], "domain_scores": {}})
               if m.domains or m.domain_scores else m for m in memories]
        for memory in out:
            ctx.access.check_lands(memory)
        return out
    assert vectors is not None
    results = assign.classify_many(vectors, found.pure, found.threshold)
    out = [m.model_copy(update={"domains": r.domains, "domain_scores": r.scores})
           for m, r in zip(memories, results)]
    for memory in out:
        ctx.access.check_lands(memory)
    moved = _moved(found, vectors, [r.domains[0] for r in results if r.domains],
                   [i for i, r in enumerate(results) if r.domains], ctx)
    if moved:
        ctx.store.domains.save_domains(moved)
    return out


def _moved(found: DomainSet, vectors: np.ndarray, best: list[str], rows: list[int],
           ctx: EngineContext) -> list[Domain]:
    """The best domains after a running mean over their new members:
    ``(c * n + sum(v)) / (n + k)``, the batch form of :func:`assign.update_centroids`."""
    if not rows:
        return []
    units = vectors[rows] / np.linalg.norm(vectors[rows], axis=1, keepdims=True)
    by_name = found.by_name()
    now = ctx.clock()
    out = []
    for name in dict.fromkeys(best):
        members = units[[i for i, b in enumerate(best) if b == name]]
        record = by_name[name]
        n, k = record.member_count, len(members)
        centroid = (record.centroid * n + members.sum(axis=0)) / (n + k)
        out.append(record.model_copy(update={"centroid": centroid.astype(np.float32),
                                             "member_count": n + k, "updated_at": now}))
    return out


def check_lands(ctx: EngineContext, vectors: np.ndarray) -> None:
    """Forbidden, before anything is written, when a caller limited to some domains would
    write a memory (one per row of ``vectors``) that lands outside them."""
    if ctx.access.domains is None:
        return
    found = current(ctx)
    if not found.fits(vectors):
        raise Forbidden("this key may only write memories in its domains, and this store "
                        "classifies none yet")
    for result in assign.classify_many(vectors, found.pure, found.threshold):
        ctx.access.check_lands(Memory(id="-", content="-", created_at=ctx.clock(),
                                      updated_at=ctx.clock(), domains=result.domains))


def classify_changed(ctx: EngineContext, memory: Memory, vector: np.ndarray) -> Memory:
    """``memory`` (already changed, with a new vector) with new domains and scores, checked
    against the caller's domains. Nothing is written; centroids stay (it was counted)."""
    found = current(ctx)
    if not found.fits(vector[None, :]):
        ctx.access.check_lands(memory)
        return memory
    result = assign.classify(vector, found.pure, found.threshold)
    changed = memory.model_copy(update={"domains": result.domains,
                                        "domain_scores": result.scores})
    ctx.access.check_lands(changed)
    return changed


def save_assignment(ctx: EngineContext, memory: Memory) -> None:
    """Write one memory's domains and scores (as :func:`classify_changed` made them)."""
    ctx.store.domains.set_assignments({memory.id: (memory.domains, memory.domain_scores)})


def batches(ctx: EngineContext, size: int = BATCH
            ) -> Iterator[tuple[list[Memory], np.ndarray | None, list[Memory]]]:
    """Every memory, ``size`` at a time: those with a vector, their vectors (None when none
    has one), and those without a vector. InterruptedError once the engine is closing."""
    chunk: list[Memory] = []
    for memory in ctx.store.iter_memories(batch_size=size):
        chunk.append(memory)
        if len(chunk) == size:
            _check_open(ctx)
            yield _with_vectors(ctx, chunk)
            chunk = []
    if chunk:
        _check_open(ctx)
        yield _with_vectors(ctx, chunk)
    _check_open(ctx)  # a pass the close cut short is never taken for a whole one


def _check_open(ctx: EngineContext) -> None:
    if ctx.closing.is_set():
        raise InterruptedError("the engine is closing")


def _with_vectors(ctx: EngineContext, chunk: list[Memory]
                  ) -> tuple[list[Memory], np.ndarray | None, list[Memory]]:
    vectors = ctx.store.vectors([m.id for m in chunk])
    kept = [m for m in chunk if m.id in vectors]
    missing = [m for m in chunk if m.id not in vectors]
    return kept, (np.stack([vectors[m.id] for m in kept]) if kept else None), missing


def reassign_all(ctx: EngineContext, found: DomainSet) -> Counter[str]:
    """Score every memory against ``found`` and write its domains and scores; returns how many
    memories have each domain as their best. Memories without a vector of the centroids'
    dimension become unclassified."""
    best: Counter[str] = Counter()
    for memories, vectors, missing in batches(ctx):
        cleared = {m.id: ([], {}) for m in missing if m.domains or m.domain_scores}
        if not found.fits(vectors):
            cleared.update({m.id: ([], {}) for m in memories})
        else:
            assert vectors is not None
            results = assign.classify_many(vectors, found.pure, found.threshold)
            ctx.store.domains.set_assignments({m.id: (r.domains, r.scores)
                                       for m, r in zip(memories, results)})
            best.update(r.domains[0] for r in results if r.domains)
        if cleared:
            ctx.store.domains.set_assignments(cleared)  # type: ignore[arg-type]
    return best


def rewrite_all(ctx: EngineContext, change: Callable[[Memory], Assignment | None]) -> Counter[str]:
    """Apply ``change`` (None: unchanged) to every memory's assignment without re-scoring;
    returns how many memories have each domain as their best afterwards."""
    best: Counter[str] = Counter()
    pending: dict[str, Assignment] = {}
    for memory in ctx.store.iter_memories(batch_size=BATCH):
        new = change(memory)
        domains = memory.domains if new is None else new[0]
        if new is not None and (new[0], new[1]) != (memory.domains, memory.domain_scores):
            pending[memory.id] = new
        if domains:
            best[domains[0]] += 1
        if len(pending) >= BATCH:
            ctx.store.domains.set_assignments(pending)
            pending = {}
    if pending:
        ctx.store.domains.set_assignments(pending)
    return best


def with_counts(records: list[Domain], best: Counter[str], ctx: EngineContext) -> list[Domain]:
    """``records`` with ``member_count`` set from ``best`` (by name)."""
    now = ctx.clock()
    return [r.model_copy(update={"member_count": best.get(r.name, 0), "updated_at": now})
            for r in records]
