"""Strength bookkeeping: promote, demote and state reports (the testing effect on retrieval
is :mod:`memoryd.engine.memory.access_writer`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memoryd.cognition import scheduling
from memoryd.cognition.states import memory_state
from memoryd.engine.checks import screen
from memoryd.engine.context import EngineContext
from memoryd.models import Memory, MemoryStateReport, SchedulingState


def promote(ctx: EngineContext, memory_id: str, reason: str | None) -> Memory:
    """"This helped / is correct": an FSRS Good review plus storage strength."""
    return _review(ctx, memory_id, reason, scheduling.promote, "promote")


def demote(ctx: EngineContext, memory_id: str, reason: str | None) -> Memory:
    """"Wrong / stale": a lapse that cuts stability and strength (the memory stays)."""
    return _review(ctx, memory_id, reason, scheduling.demote, "demote")


def _review(ctx: EngineContext, memory_id: str, reason: str | None,
            review: Callable[[SchedulingState, datetime], SchedulingState],
            record: str) -> Memory:
    """Apply a manual review to the memory's state, recorded in its history with the reason
    (screened for secrets like any stored text)."""
    reason = screen(ctx, reason, False, "reason") if reason else reason
    state = review(ctx.get(memory_id).state, ctx.clock())
    ctx.store.update_states(
        {memory_id: state}, record=record, actor=ctx.actor, details={"reason": reason}
    )
    return ctx.get(memory_id)


def state_report(ctx: EngineContext, memory_id: str) -> MemoryStateReport:
    """The memory's strengths, state and tier at the engine's current time."""
    memory = ctx.get(memory_id)
    now, s = ctx.clock(), memory.state
    return MemoryStateReport(
        id=memory.id,
        state=memory_state(s, now),
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
