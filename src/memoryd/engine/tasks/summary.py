"""The running summary of a task, kept as ``distilled`` messages.

After every ``task_summary_every`` agent or system messages (and on demand) a new summary
is written, within ``task_summary_tokens`` tokens. By default it is extractive and local
(:func:`memoryd.tasks.extractive_summary`); with ``task_distiller = "llm"`` the configured
OpenAI-compatible chat model writes it from the previous summary and the new messages,
and the extractive summary stands in when the model fails (the message's ``via`` says so).
"""

from __future__ import annotations

from memoryd.engine.context import EngineContext
from memoryd.errors import ChatError
from memoryd.graph.tokens import get_counter
from memoryd.llm import ChatClient
from memoryd.models import Task, TaskMessage
from memoryd.tasks import digest, distill_prompt, extractive_summary, fit_to_budget

WORK_ROLES = ["agent", "system"]
CONTEXT = 50  # messages the extractive summary reads
PROMPT_MESSAGES = 50  # new messages a model sees at most


def latest_summary(ctx: EngineContext, task_id: str) -> TaskMessage | None:
    """The newest distilled message of a task."""
    found = ctx.store.work.task_messages(task_id, roles=["distilled"], limit=1)
    return found[0] if found else None


def _extractive(ctx: EngineContext, task: Task) -> str:
    store = ctx.store
    history = store.work.task_messages(task.id, roles=WORK_ROLES, limit=CONTEXT)
    decisions = store.work.task_messages(task.id, roles=WORK_ROLES, kinds=["decision"], limit=10)
    return extractive_summary(task, digest(task, history, decisions),
                              budget=ctx.settings.task_summary_tokens, count=get_counter().count)


def _by_model(ctx: EngineContext, task: Task, chat: ChatClient, previous: TaskMessage | None,
              news: list[TaskMessage]) -> str:
    budget = ctx.settings.task_summary_tokens
    prompt = distill_prompt(task, previous.content if previous else None,
                            news[-PROMPT_MESSAGES:], budget=budget)
    text = " ".join(chat.complete(prompt, max_tokens=budget * 2).split())
    if not text:
        raise ChatError("the model returned an empty summary")
    return fit_to_budget(text, budget, get_counter().count)


def refresh_summary(ctx: EngineContext, task: Task, chat: ChatClient | None, *,
                    force: bool) -> TaskMessage | None:
    """Write a new summary when ``task_summary_every`` messages arrived since the last one
    (or at once with ``force``); returns it, or the current one when nothing was due."""
    previous = latest_summary(ctx, task.id)
    after = previous.id if previous else 0
    pending = ctx.store.work.count_task_messages(task.id, after=after, roles=WORK_ROLES)
    if pending < ctx.settings.task_summary_every and not (force and (pending or not previous)):
        return previous
    news = ctx.store.work.task_messages(task.id, after=after, roles=WORK_ROLES,
                                   limit=PROMPT_MESSAGES)[::-1]
    via = "extractive"
    if ctx.settings.task_distiller == "llm" and chat is not None:
        try:
            text, via = _by_model(ctx, task, chat, previous, news), "llm"
        except ChatError as exc:
            text, via = _extractive(ctx, task), f"extractive (the model failed: {exc})"[:300]
    else:
        text = _extractive(ctx, task)
    message = TaskMessage(task_id=task.id, role="distilled", kind="note", content=text,
                          created_at=ctx.clock(),
                          metadata={"via": via, "covers": news[-1].id if news else 0})
    return ctx.store.work.add_task_message(message)
