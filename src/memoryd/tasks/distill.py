"""The running summary of a task, written as a ``distilled`` message every few messages.

The default is extractive and local: the task's progress, its current and next steps,
the open blockers, the decisions and the latest messages, added in that order of
importance until a token budget is full. :func:`distill_prompt` instead builds the
messages for an OpenAI-compatible chat model (off by default), whose reply is cut to the
same budget by :func:`fit_to_budget`.

>>> from datetime import datetime, timezone
>>> now = datetime(2025, 1, 1, tzinfo=timezone.utc)
>>> t = Task(id="t_1", name="Ship 2.0", created_at=now, updated_at=now,
...          plan=[PlanStep(text="build", done=True), PlanStep(text="deploy")])
>>> extractive_summary(t, digest(t, []), budget=60, count=lambda s: len(s.split()))
'Ship 2.0 (active): 1 of 2 steps done. Now on step 2: deploy.'
"""

from __future__ import annotations

from collections.abc import Callable

from memoryd.models import PlanStep, Task, TaskMessage
from memoryd.tasks.digest import Digest, digest  # noqa: F401 - digest is used in the doctest

Count = Callable[[str], int]
ITEM_CHARS = 240
_ELLIPSIS = "…"

SYSTEM_PROMPT = (
    "You keep the running summary of a long task for the agent working on it. In at most "
    "{words} words of plain text, say: the current step, what is blocking it (if anything), "
    "what was decided, and the latest progress. Keep names, numbers, paths and error "
    "messages exact. Use only what the task record below says."
)


def _one_line(text: str, chars: int = ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + _ELLIPSIS


def fit_to_budget(text: str, budget: int, count: Count) -> str:
    """``text`` cut (at a word, with an ellipsis) so that ``count`` gives at most ``budget``."""
    if count(text) <= budget:
        return text
    words = text.split()
    low, high = 0, len(words)
    while low < high:  # the most words that fit, by bisection
        middle = (low + high + 1) // 2
        if count(" ".join(words[:middle]) + _ELLIPSIS) <= budget:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]) + _ELLIPSIS if low else ""


def _header(task: Task, d: Digest) -> list[str]:
    lines = [f"{task.name} ({task.status}): {d.progress}."]
    if d.current_step is not None and d.current_index is not None:
        lines.append(f"Now on step {d.current_index + 1}: {_one_line(d.current_step)}.")
    if d.next_steps:
        lines.append("Next: " + "; ".join(_one_line(s, 80) for s in d.next_steps) + ".")
    return lines


def _sections(d: Digest) -> list[tuple[str, list[str]]]:
    listed = {m.id for m in d.blockers} | {m.id for m in d.decisions}
    return [("Blocked", [_one_line(m.content).rstrip(".") for m in d.blockers]),
            ("Decided", [_one_line(m.content).rstrip(".") for m in d.decisions]),
            ("Latest", [_one_line(m.content).rstrip(".") for m in d.recent
                        if m.id not in listed])]


def extractive_summary(task: Task, d: Digest, *, budget: int, count: Count) -> str:
    """The summary in order of importance — progress and steps, then blockers, decisions
    and the latest messages (newest first) — as much as fits ``budget`` tokens; the first
    piece that does not fit is cut to the room left."""
    out = ""
    for line in _header(task, d):
        if count((out + " " + line).strip()) > budget:
            return (out + " " + fit_to_budget(line, budget - count(out) - 1, count)).strip()
        out = (out + " " + line).strip()
    for label, items in _sections(d):
        body: list[str] = []
        for item in items:
            head = f"{out} {label}: " + "".join(f"{b}; " for b in body)
            if count(head + item + ".") <= budget:
                body.append(item)
                continue
            cut = fit_to_budget(item, budget - count(head) - 1, count)
            if cut:
                body.append(cut)
            return f"{out} {label}: {'; '.join(body)}." if body else out
        if body:
            out = f"{out} {label}: {'; '.join(body)}."
    return out


def _plan_lines(plan: list[PlanStep]) -> list[str]:
    return [f"[{'x' if s.done else ' '}] {i}. {_one_line(s.text, 200)}"
            for i, s in enumerate(plan, 1)]


def distill_prompt(task: Task, previous: str | None, messages: list[TaskMessage], *,
                   budget: int) -> list[dict[str, str]]:
    """Chat messages asking a model for the running summary. ``messages``: the task's
    messages since the previous summary, oldest first."""
    parts = [f"Task: {task.name} ({task.status})"]
    if task.plan:
        parts.append("Plan:\n" + "\n".join(_plan_lines(task.plan)))
    if previous:
        parts.append("Previous summary:\n" + previous)
    if messages:
        parts.append("New messages (oldest first):\n" + "\n".join(
            f"- [{m.role}/{m.kind}] {_one_line(m.content, 1000)}" for m in messages))
    words = max(20, budget * 3 // 4)
    return [{"role": "system", "content": SYSTEM_PROMPT.format(words=words)},
            {"role": "user", "content": "\n\n".join(parts)}]
