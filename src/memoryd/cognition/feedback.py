"""Strength bookkeeping: the testing effect on retrieval, promote, demote and state reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.cognition import scheduling
from memoryd.models import Memory, MemoryStateReport, SearchHit
from memoryd.store.base import Actor

if TYPE_CHECKING:
    from memoryd.engine import Engine


def record_retrieval(engine: Engine, hits: list[SearchHit], session_key: str | None) -> None:
    """Strengthen retrieved memories a little: at most once per memory per session.

    Without a session key, :func:`scheduling.on_retrieved` treats retrievals close in
    time as one session. Access counts always advance. No history rows: retrieval is
    not a change to the memory's content.
    """
    if not hits:
        return
    now = engine.clock()
    ids = [h.memory.id for h in hits]
    fresh = engine.store.mark_accessed(session_key, ids, now) if session_key else set(ids)
    states = {
        h.memory.id: scheduling.on_retrieved(
            h.memory.state, now, session_key, h.memory.id not in fresh
        )
        for h in hits
    }
    engine.store.update_states(states)


def promote(engine: Engine, memory_id: str, reason: str | None, actor: Actor) -> Memory:
    """"This helped / is correct": an FSRS Good review plus storage strength."""
    memory = engine.get(memory_id)
    state = scheduling.promote(memory.state, engine.clock())
    engine.store.update_states(
        {memory_id: state}, record="promote", actor=actor, details={"reason": reason}
    )
    return engine.get(memory_id)


def demote(engine: Engine, memory_id: str, reason: str | None, actor: Actor) -> Memory:
    """"Wrong / stale": a lapse that cuts stability and strength (the memory stays)."""
    memory = engine.get(memory_id)
    state = scheduling.demote(memory.state, engine.clock())
    engine.store.update_states(
        {memory_id: state}, record="demote", actor=actor, details={"reason": reason}
    )
    return engine.get(memory_id)


def state_report(engine: Engine, memory_id: str) -> MemoryStateReport:
    """The memory's strengths, state and tier at the engine's current time."""
    memory = engine.get(memory_id)
    now, s = engine.clock(), memory.state
    return MemoryStateReport(
        id=memory.id,
        state=scheduling.memory_state(s, now),
        tier=memory.tier,
        retention=scheduling.retention_score(s, now),
        curve_retention=scheduling.curve_retention(s, now),
        retrieval_strength=scheduling.retrieval_strength_now(s, now),
        storage_strength=s.storage_strength,
        stability_days=s.stability,
        difficulty=s.difficulty,
        reps=s.reps,
        lapses=s.lapses,
        access_count=s.access_count,
        last_review=s.last_review,
        last_accessed=s.last_accessed,
    )
