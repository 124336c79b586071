"""Smart ingest: prediction-error gating on every write.

The new content is embedded and compared with its nearest memories in the same scope that
the caller may see (top 5 by cosine similarity): a caller bound to an agent or scope never
reinforces, updates, supersedes or merges a memory outside its own. :func:`gating.decide` picks one of

* CREATE     nothing close enough: a new memory, linked to its near neighbours;
* REINFORCE  the same information again: the old memory is strengthened, nothing added;
* UPDATE     new detail about the same thing: merged into the old memory (re-embedded;
             the previous content stays in its history);
* SUPERSEDE  a correction or contradiction: a new memory; the old one gets
             ``valid_until`` and ``superseded_by`` and leaves default search results;
* MERGE      several near-duplicates of one agent and scope: folded into the closest one,
             the others superseded.

Each decision is written in one transaction; new and changed memories are classified into
domains in it. ``force_create`` skips the gate.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

import numpy as np

from memoryd.cognition import gating, scheduling
from memoryd.cognition.importance import importance_score
from memoryd.engine.checks import build, new_memory
from memoryd.engine.context import EngineContext
from memoryd.engine.domains.assign import (
    check_lands,
    classify_changed,
    classify_new,
    save_assignment,
)
from memoryd.engine.memory.links import session_edges
from memoryd.errors import InvalidInput
from memoryd.models import Edge, IngestResult, Memory, NewMemory

MAX_BATCH = 50
NEIGHBOURS = 5


def ingest_many(
    ctx: EngineContext,
    items: list[NewMemory | Mapping[str, Any]],
    *,
    force_create: bool = False,
    allow_secrets: bool = False,
) -> list[IngestResult]:
    """Gate up to 50 memories in order; each sees the ones before it. Every item is
    validated before any is written."""
    if not items:
        raise InvalidInput("no items to ingest")
    if len(items) > MAX_BATCH:
        raise InvalidInput(f"at most {MAX_BATCH} items per ingest call, got {len(items)}")
    explicit = [("importance" in item) if isinstance(item, Mapping) else
                ("importance" in item.model_fields_set) for item in items]
    news = [new_memory(ctx, item, allow_secrets) for item in items]
    vectors = ctx.embedder.embed([n.embed_text or n.content for n in news])
    check_lands(ctx, vectors)  # a caller limited to domains: refused before anything is written
    return [
        _ingest_one(ctx, new, vector, force_create, has_importance)
        for new, vector, has_importance in zip(news, vectors, explicit)
    ]


def _ingest_one(
    ctx: EngineContext,
    new: NewMemory,
    vector: np.ndarray,
    force_create: bool,
    has_importance: bool,
) -> IngestResult:
    now = ctx.clock()
    hits = ctx.store.vector_search(vector, ctx.filters(scope=new.scope), now=now,
                                   limit=NEIGHBOURS)
    stored = ctx.get_many([h.memory_id for h in hits])
    candidates = [gating.Candidate(h.memory_id, stored[h.memory_id].content, h.similarity)
                  for h in hits if h.memory_id in stored]
    top = candidates[0].similarity if candidates else None
    if not has_importance:
        novelty = 1.0 - max(0.0, top or 0.0)
        new = new.model_copy(update={"importance": importance_score(new.content, novelty).score})
    if force_create or not candidates:
        reason = "force_create" if force_create else "no similar memory"
        memory = _create(ctx, new, vector, candidates, now)
        return IngestResult(decision="create", memory_id=memory.id, similarity=top,
                            reason=reason, memory=memory)
    gate = gating.decide(new.content, candidates, ctx.gating)
    targets = [stored[i] for i in gate.target_ids if i in stored]
    if gate.decision == "merge" and not all(_kin(t, targets[0]) for t in targets):
        # A merge folds memories of one agent and scope only: a caller who sees several
        # agents' (an unbound key) must not carry one agent's text into a memory another
        # reads, nor hide an agent's memory behind one it cannot see. Decide again among
        # the closest target's own.
        kin = [c for c in candidates if _kin(stored[c.id], targets[0])]
        gate = gating.decide(new.content, kin, ctx.gating)
        targets = [stored[i] for i in gate.target_ids if i in stored]
    if gate.decision == "create" or not targets:
        memory = _create(ctx, new, vector, candidates, now)
        return IngestResult(decision="create", memory_id=memory.id, similarity=top,
                            reason=gate.reason, memory=memory)
    if gate.decision == "reinforce":
        memory = _reinforce(ctx, targets[0], new, gate.similarity, now)
        return IngestResult(decision="reinforce", memory_id=memory.id, similarity=gate.similarity,
                            reason=gate.reason, memory=memory)
    if gate.decision == "update":
        memory = _update(ctx, targets[0], new, gate.similarity, now)
        return IngestResult(decision="update", memory_id=memory.id, similarity=gate.similarity,
                            reason=gate.reason, memory=memory)
    if gate.decision == "supersede":
        memory = _supersede(ctx, targets[0], new, vector, candidates, now)
        return IngestResult(decision="supersede", memory_id=memory.id, similarity=gate.similarity,
                            superseded_id=targets[0].id, reason=gate.reason, memory=memory)
    memory, merged = _merge(ctx, targets, new, now)
    return IngestResult(decision="merge", memory_id=memory.id, similarity=gate.similarity,
                        merged_ids=merged, reason=gate.reason, memory=memory)


def _kin(memory: Memory, other: Memory) -> bool:
    """Whether two memories have the same scope and agent (a merge folds only those)."""
    return memory.scope == other.scope and memory.agent_id == other.agent_id


def _neighbour_edges(ctx: EngineContext, memory: Memory, candidates: list[gating.Candidate],
                     skip: set[str]) -> list[Edge]:
    settings = ctx.settings
    return [
        Edge(source_id=memory.id, target_id=c.id, edge_type="similar",
             weight=round(max(0.0, min(1.0, c.similarity)), 4), created_at=memory.created_at)
        for c in candidates
        if c.id not in skip and c.similarity >= settings.link_similarity
    ][: settings.link_max]


def _create(ctx: EngineContext, new: NewMemory, vector: np.ndarray,
            candidates: list[gating.Candidate], now: datetime,
            skip: set[str] | None = None) -> Memory:
    memory = build(ctx, new, now)
    with ctx.store.transaction():
        (memory,) = classify_new(ctx, [memory], vector[None, :])
        (memory,) = ctx.store.insert([memory], vector[None, :], ctx.actor)
        ctx.store.upsert_edges(_neighbour_edges(ctx, memory, candidates, skip or set())
                               + session_edges(ctx, [memory]))
    return memory


def _reinforce(ctx: EngineContext, target: Memory, new: NewMemory, similarity: float,
               now: datetime) -> Memory:
    state = scheduling.promote(target.state, now)
    ctx.store.update_states({target.id: state}, record="reinforce", actor=ctx.actor,
                            details={"content": new.content, "similarity": similarity})
    return ctx.get(target.id)


def _update(ctx: EngineContext, target: Memory, new: NewMemory, similarity: float,
            now: datetime) -> Memory:
    merged = gating.merge_contents(target.content, new.content, now)
    vector = ctx.embedder.embed([merged])[0]
    changes = {
        "content": merged,
        "updated_at": now,
        "tags": list(dict.fromkeys([*target.tags, *new.tags])),
        "importance": max(target.importance, new.importance),
    }
    classified = classify_changed(ctx, target.model_copy(update=changes), vector)
    with ctx.store.transaction():
        memory = ctx.store.update(
            target.id, changes, ctx.actor, vector=vector, operation="update",
            details={"previous_content": target.content, "added": new.content,
                     "similarity": similarity},
        )
        save_assignment(ctx, classified)
        ctx.store.update_states({target.id: scheduling.promote(target.state, now)})
    return ctx.get(memory.id)


def _supersede(ctx: EngineContext, old: Memory, new: NewMemory, vector: np.ndarray,
               candidates: list[gating.Candidate], now: datetime) -> Memory:
    with ctx.store.transaction():
        memory = _create(ctx, new, vector, candidates, now, skip={old.id})
        # The new content lives in the new memory's own history only, so that purging
        # the new memory erases it everywhere.
        ctx.store.update(old.id, {"valid_until": now, "superseded_by": memory.id}, ctx.actor,
                         operation="supersede", details={"by": memory.id})
        ctx.store.upsert_edges([Edge(source_id=memory.id, target_id=old.id,
                                        edge_type="supersedes", weight=1.0, created_at=now)])
    return memory


def _merge(ctx: EngineContext, targets: list[Memory], new: NewMemory,
           now: datetime) -> tuple[Memory, list[str]]:
    keeper, others = targets[0], targets[1:]
    content = keeper.content
    for other in others:
        content = gating.merge_contents(content, other.content, now)
    content = gating.merge_contents(content, new.content, now)
    vector = ctx.embedder.embed([content])[0]
    changes = {
        "content": content, "updated_at": now,
        "tags": list(dict.fromkeys([*keeper.tags, *new.tags,
                                    *(t for o in others for t in o.tags)])),
        "importance": max([keeper.importance, new.importance, *(o.importance for o in others)]),
    }
    classified = classify_changed(ctx, keeper.model_copy(update=changes), vector)
    with ctx.store.transaction():
        ctx.store.update(
            keeper.id, changes, ctx.actor, vector=vector, operation="merge",
            details={"previous_content": keeper.content, "merged": [o.id for o in others],
                     "added": new.content},
        )
        save_assignment(ctx, classified)
        for other in others:
            ctx.store.update(other.id, {"valid_until": now, "superseded_by": keeper.id},
                             ctx.actor, operation="merge", details={"into": keeper.id})
        ctx.store.upsert_edges([Edge(source_id=o.id, target_id=keeper.id,
                                        edge_type="merged_into", weight=1.0, created_at=now)
                                   for o in others])
        ctx.store.update_states({keeper.id: scheduling.promote(keeper.state, now)})
    return ctx.get(keeper.id), [o.id for o in others]
