"""Prospective memory: intentions that fire at a time, in a context or on an event.

An intention belongs to the scope and agent of whoever set it; a caller bound to a scope or
agent sees and changes only its own."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from memoryd.cognition.globs import glob_match
from memoryd.engine.checks import screen, screen_fields
from memoryd.engine.context import EngineContext
from memoryd.errors import Forbidden, IntentionNotFound, InvalidInput, validation_message
from memoryd.models import Intention, IntentionTrigger, Priority

_PRIORITY_ORDER = {"critical": 0, "high": 1, "normal": 2, "low": 3}
_OPEN = ["active", "snoozed"]


class IntentionContext(BaseModel):
    """What the agent is doing now, matched against context and event triggers."""

    model_config = ConfigDict(extra="forbid")

    codebase: str | None = None
    files: list[str] = []
    topic: str | None = None
    text: str | None = None
    event: str | None = None


def set_intention(
    ctx: EngineContext,
    description: str,
    trigger: IntentionTrigger | Mapping[str, Any],
    *,
    priority: Priority = "normal",
    deadline: datetime | None = None,
) -> Intention:
    """Record an intention; a time trigger with ``in_minutes`` becomes an absolute due time."""
    if ctx.access.domains is not None:
        raise Forbidden("intentions belong to no domain; a key limited to domains cannot set "
                        "them")
    if not isinstance(description, str) or not description.strip():
        raise InvalidInput("description is empty")
    description = screen(ctx, description, False, "description")
    given = trigger.model_dump(exclude_none=True) if isinstance(trigger, BaseModel) else trigger
    trigger = screen_fields(ctx, {"trigger": dict(given)}, False)["trigger"]
    if priority not in _PRIORITY_ORDER:
        raise InvalidInput(f"priority must be one of {', '.join(_PRIORITY_ORDER)}")
    try:
        parsed = trigger if isinstance(trigger, IntentionTrigger) else IntentionTrigger.model_validate(
            dict(trigger)
        )
    except ValidationError as exc:
        raise InvalidInput(f"trigger: {validation_message(exc)}") from exc
    parsed = _matchable(parsed)
    now = ctx.clock()
    due = None
    if parsed.type == "time":
        due = parsed.at or now + timedelta(minutes=parsed.in_minutes or 0)
    intention = Intention(
        id=str(uuid.uuid4()),
        description=description.strip(),
        trigger=parsed,
        priority=priority,
        deadline=deadline,
        due_at=due,
        created_at=now,
        updated_at=now,
        agent_id=ctx.access.agent_id or ctx.actor.agent_id,
        scope=ctx.access.scope or "user",
    )
    ctx.store.work.save_intention(intention)
    return intention


def _matchable(trigger: IntentionTrigger) -> IntentionTrigger:
    """The trigger with its keys stripped; InvalidInput for one that could never fire (a blank
    event, codebase, file pattern or topic, a topic without a word)."""
    keys = {}
    for name in ("codebase", "file_pattern", "topic", "event"):
        value = getattr(trigger, name)
        if value is None:
            continue
        if not value.strip():
            raise InvalidInput(f"trigger.{name}: is blank (it would never match)")
        keys[name] = value.strip()
    if "topic" in keys and not re.search(r"\w", keys["topic"]):
        raise InvalidInput("trigger.topic: needs at least one word (it would never match)")
    return trigger.model_copy(update=keys)


def _mine(ctx: EngineContext, intentions: list[Intention]) -> list[Intention]:
    access = ctx.access
    if access.domains is not None:  # intentions belong to no domain: a domain key sees none
        return []
    return [i for i in intentions
            if (access.scope is None or i.scope == access.scope)
            and (access.agent_id is None or i.agent_id == access.agent_id)]


def check_intentions(
    ctx: EngineContext, context: IntentionContext | Mapping[str, Any] | None = None
) -> list[Intention]:
    """Open intentions that are due now or whose context/event trigger matches, by priority."""
    try:
        now_doing = context if isinstance(context, IntentionContext) else (
            IntentionContext.model_validate(dict(context or {})))
    except ValidationError as exc:
        raise InvalidInput(f"context: {validation_message(exc)}") from exc
    now = ctx.clock()
    stored = ctx.store.work.list_intentions(_OPEN)
    out = [i for i in _mine(ctx, stored) if _fires(i, now_doing, now)]
    return sorted(out, key=lambda i: (_PRIORITY_ORDER[i.priority], i.due_at or i.created_at))


def _fires(intention: Intention, ctx: IntentionContext, now: datetime) -> bool:
    if intention.snoozed_until is not None and intention.snoozed_until > now:
        return False
    if intention.deadline is not None and intention.deadline <= now:
        return True  # overdue: always surface
    trigger = intention.trigger
    if trigger.type == "time":
        return intention.due_at is not None and intention.due_at <= now
    if trigger.type == "event":
        return (ctx.event is not None
                and ctx.event.strip().lower() == (trigger.event or "").strip().lower())
    conditions = []
    if trigger.codebase:
        conditions.append(bool(ctx.codebase)
                          and ctx.codebase.strip().lower() == trigger.codebase.strip().lower())
    if trigger.file_pattern:
        conditions.append(any(glob_match(trigger.file_pattern, f) for f in ctx.files))
    if trigger.topic:
        conditions.append(_topic_match(trigger.topic, " ".join(filter(None, [ctx.topic, ctx.text]))))
    return bool(conditions) and all(conditions)


def _topic_match(topic: str, text: str) -> bool:
    words = set(re.findall(r"\w+", topic.lower()))
    have = set(re.findall(r"\w+", text.lower()))
    return bool(words) and words <= have


def update_intention(
    ctx: EngineContext,
    intention_id: str,
    status: Literal["complete", "snooze", "cancel"],
    *,
    snooze_minutes: float | None = None,
) -> Intention:
    """Complete, snooze (default 60 minutes) or cancel an intention."""
    intention = ctx.store.work.get_intention(intention_id)
    if intention is None or not _mine(ctx, [intention]):
        raise IntentionNotFound(intention_id)
    now = ctx.clock()
    if status == "complete":
        update: dict[str, Any] = {"status": "completed"}
    elif status == "cancel":
        update = {"status": "cancelled"}
    elif status == "snooze":
        minutes = 60.0 if snooze_minutes is None else snooze_minutes
        if minutes <= 0:
            raise InvalidInput("snooze_minutes must be positive")
        update = {"status": "snoozed", "snoozed_until": now + timedelta(minutes=minutes)}
    else:
        raise InvalidInput("status must be complete, snooze or cancel")
    updated = intention.model_copy(update={**update, "updated_at": now})
    ctx.store.work.save_intention(updated)
    return updated


def list_intentions(ctx: EngineContext, status: str | None = None) -> list[Intention]:
    """Intentions with a status (default: the open ones, active or snoozed)."""
    valid = {"active", "snoozed", "completed", "cancelled", "fired", "all"}
    if status is not None and status not in valid:
        raise InvalidInput(f"status must be one of {', '.join(sorted(valid))}")
    statuses = None if status == "all" else [status] if status else _OPEN
    return _mine(ctx, ctx.store.work.list_intentions(statuses))
