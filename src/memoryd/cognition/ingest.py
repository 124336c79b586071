"""Smart ingest: prediction-error gating on every write.

The new content is embedded and compared with its nearest memories in the same scope
(top 5 by cosine similarity). :func:`gating.decide` picks one of

* CREATE     nothing close enough: a new memory, linked to its near neighbours;
* REINFORCE  the same information again: the old memory is strengthened, nothing added;
* UPDATE     new detail about the same thing: merged into the old memory (re-embedded;
             the previous content stays in its history);
* SUPERSEDE  a correction or contradiction: a new memory; the old one gets
             ``valid_until`` and ``superseded_by`` and leaves default search results;
* MERGE      several near-duplicates: folded into the closest one, the others superseded.

Each decision is written in one transaction. ``force_create`` skips the gate.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from memoryd.cognition import gating, scheduling
from memoryd.cognition.graph import session_edges
from memoryd.cognition.importance import importance_score
from memoryd.errors import InvalidInput
from memoryd.models import Edge, IngestResult, Memory, NewMemory, SearchFilters
from memoryd.store.base import Actor

if TYPE_CHECKING:
    from memoryd.engine import Engine

MAX_BATCH = 50
NEIGHBOURS = 5


def ingest(
    engine: Engine,
    item: NewMemory | Mapping[str, Any],
    *,
    force_create: bool = False,
    allow_secrets: bool = False,
    actor: Actor | None = None,
) -> IngestResult:
    """Gate one memory (see the module docstring)."""
    return ingest_many(engine, [item], force_create=force_create, allow_secrets=allow_secrets,
                       actor=actor)[0]


def ingest_many(
    engine: Engine,
    items: list[NewMemory | Mapping[str, Any]],
    *,
    force_create: bool = False,
    allow_secrets: bool = False,
    actor: Actor | None = None,
) -> list[IngestResult]:
    """Gate up to 50 memories in order; each sees the ones before it. Every item is
    validated before any is written."""
    if not items:
        raise InvalidInput("no items to ingest")
    if len(items) > MAX_BATCH:
        raise InvalidInput(f"at most {MAX_BATCH} items per ingest call, got {len(items)}")
    explicit = [("importance" in item) if isinstance(item, Mapping) else
                ("importance" in item.model_fields_set) for item in items]
    actor = actor or Actor()
    news = [engine.attribute(engine._new_memory(item, allow_secrets), actor) for item in items]
    vectors = engine.embedder.embed([n.embed_text or n.content for n in news])
    return [
        _ingest_one(engine, new, vector, force_create, has_importance, actor)
        for new, vector, has_importance in zip(news, vectors, explicit)
    ]


def _ingest_one(
    engine: Engine,
    new: NewMemory,
    vector: np.ndarray,
    force_create: bool,
    has_importance: bool,
    actor: Actor,
) -> IngestResult:
    now = engine.clock()
    hits = engine.store.vector_search(vector, SearchFilters(scope=new.scope), now=now,
                                      limit=NEIGHBOURS)
    stored = engine.store.get_many([h.memory_id for h in hits])
    candidates = [gating.Candidate(h.memory_id, stored[h.memory_id].content, h.similarity)
                  for h in hits if h.memory_id in stored]
    top = candidates[0].similarity if candidates else None
    if not has_importance:
        novelty = 1.0 - max(0.0, top or 0.0)
        new = new.model_copy(update={"importance": importance_score(new.content, novelty).score})
    if force_create or not candidates:
        reason = "force_create" if force_create else "no similar memory"
        memory = _create(engine, new, vector, candidates, now, actor)
        return IngestResult(decision="create", memory_id=memory.id, similarity=top,
                            reason=reason, memory=memory)
    gate = gating.decide(new.content, candidates, engine.gating_params)
    targets = [stored[i] for i in gate.target_ids if i in stored]
    if gate.decision == "create" or not targets:
        memory = _create(engine, new, vector, candidates, now, actor)
        return IngestResult(decision="create", memory_id=memory.id, similarity=top,
                            reason=gate.reason, memory=memory)
    if gate.decision == "reinforce":
        memory = _reinforce(engine, targets[0], new, gate.similarity, now, actor)
        return IngestResult(decision="reinforce", memory_id=memory.id, similarity=gate.similarity,
                            reason=gate.reason, memory=memory)
    if gate.decision == "update":
        memory = _update(engine, targets[0], new, gate.similarity, now, actor)
        return IngestResult(decision="update", memory_id=memory.id, similarity=gate.similarity,
                            reason=gate.reason, memory=memory)
    if gate.decision == "supersede":
        memory = _supersede(engine, targets[0], new, vector, candidates, now, actor)
        return IngestResult(decision="supersede", memory_id=memory.id, similarity=gate.similarity,
                            superseded_id=targets[0].id, reason=gate.reason, memory=memory)
    memory, merged = _merge(engine, targets, new, now, actor)
    return IngestResult(decision="merge", memory_id=memory.id, similarity=gate.similarity,
                        merged_ids=merged, reason=gate.reason, memory=memory)


def _neighbour_edges(engine: Engine, memory: Memory, candidates: list[gating.Candidate],
                     skip: set[str]) -> list[Edge]:
    settings = engine.settings
    return [
        Edge(source_id=memory.id, target_id=c.id, edge_type="similar",
             weight=round(max(0.0, min(1.0, c.similarity)), 4), created_at=memory.created_at)
        for c in candidates
        if c.id not in skip and c.similarity >= settings.link_similarity
    ][: settings.link_max]


def _create(engine: Engine, new: NewMemory, vector: np.ndarray,
            candidates: list[gating.Candidate], now: datetime, actor: Actor,
            skip: set[str] | None = None) -> Memory:
    memory = engine._build(new, now)
    with engine.store.transaction():
        (memory,) = engine.store.insert([memory], vector[None, :], actor)
        engine.store.upsert_edges(_neighbour_edges(engine, memory, candidates, skip or set())
                                  + session_edges(engine, [memory]))
    return memory


def _reinforce(engine: Engine, target: Memory, new: NewMemory, similarity: float,
               now: datetime, actor: Actor) -> Memory:
    state = scheduling.promote(target.state, now)
    engine.store.update_states({target.id: state}, record="reinforce", actor=actor,
                               details={"content": new.content, "similarity": similarity})
    return engine.get(target.id)


def _update(engine: Engine, target: Memory, new: NewMemory, similarity: float,
            now: datetime, actor: Actor) -> Memory:
    merged = gating.merge_contents(target.content, new.content, now)
    vector = engine.embedder.embed([merged])[0]
    changes = {
        "content": merged,
        "updated_at": now,
        "tags": list(dict.fromkeys([*target.tags, *new.tags])),
        "importance": max(target.importance, new.importance),
    }
    with engine.store.transaction():
        memory = engine.store.update(
            target.id, changes, actor, vector=vector, operation="update",
            details={"previous_content": target.content, "added": new.content,
                     "similarity": similarity},
        )
        engine.store.update_states({target.id: scheduling.promote(target.state, now)})
    return engine.get(memory.id)


def _supersede(engine: Engine, old: Memory, new: NewMemory, vector: np.ndarray,
               candidates: list[gating.Candidate], now: datetime, actor: Actor) -> Memory:
    with engine.store.transaction():
        memory = _create(engine, new, vector, candidates, now, actor, skip={old.id})
        # The new content lives in the new memory's own history only, so that purging
        # the new memory erases it everywhere.
        engine.store.update(old.id, {"valid_until": now, "superseded_by": memory.id}, actor,
                            operation="supersede", details={"by": memory.id})
        engine.store.upsert_edges([Edge(source_id=memory.id, target_id=old.id,
                                        edge_type="supersedes", weight=1.0, created_at=now)])
    return memory


def _merge(engine: Engine, targets: list[Memory], new: NewMemory, now: datetime,
           actor: Actor) -> tuple[Memory, list[str]]:
    keeper, others = targets[0], targets[1:]
    content = keeper.content
    for other in others:
        content = gating.merge_contents(content, other.content, now)
    content = gating.merge_contents(content, new.content, now)
    vector = engine.embedder.embed([content])[0]
    with engine.store.transaction():
        engine.store.update(
            keeper.id,
            {"content": content, "updated_at": now,
             "tags": list(dict.fromkeys([*keeper.tags, *new.tags, *(t for o in others for t in o.tags)])),
             "importance": max([keeper.importance, new.importance, *(o.importance for o in others)])},
            actor, vector=vector, operation="merge",
            details={"previous_content": keeper.content, "merged": [o.id for o in others],
                     "added": new.content},
        )
        for other in others:
            engine.store.update(other.id, {"valid_until": now, "superseded_by": keeper.id}, actor,
                                operation="merge", details={"into": keeper.id})
        engine.store.upsert_edges([Edge(source_id=o.id, target_id=keeper.id,
                                        edge_type="merged_into", weight=1.0, created_at=now)
                                   for o in others])
        engine.store.update_states({keeper.id: scheduling.promote(keeper.state, now)})
    return engine.get(keeper.id), [o.id for o in others]
