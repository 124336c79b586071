"""What a finished task leaves in memory: one memory saying what was done, what was
decided and what was learned, so that later searches find it.

>>> from datetime import datetime, timezone
>>> now = datetime(2025, 1, 1, tzinfo=timezone.utc)
>>> t = Task(id="t_1", name="Move CI", status="completed", created_at=now,
...          updated_at=now, plan=[PlanStep(text="port the jobs", done=True)])
>>> outcome_text(t, "CI runs on Actions", ["cache the venv"], [])
'Task "Move CI" completed: CI runs on Actions. Steps done: port the jobs. Learned: cache the venv.'
"""

from __future__ import annotations

from memoryd.models import PlanStep, Task, TaskMessage  # noqa: F401 - PlanStep in the doctest

MAX_DECISIONS = 5
MAX_STEPS = 12


def _sentence(text: str) -> str:
    text = " ".join(text.split()).rstrip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def outcome_text(task: Task, outcome: str | None, learned: list[str],
                 decisions: list[TaskMessage]) -> str:
    """The content of the memory a task leaves when it ends (``decisions`` newest first)."""
    parts = [f'Task "{task.name}" {task.status}' + (f": {_sentence(outcome)}" if outcome
                                                      else ".")]
    done = [s.text for s in task.plan if s.done]
    left = [s.text for s in task.plan if not s.done]
    if done:
        shown = "; ".join(" ".join(s.split()) for s in done[:MAX_STEPS])
        more = f" (and {len(done) - MAX_STEPS} more)" if len(done) > MAX_STEPS else ""
        parts.append(_sentence(f"Steps done: {shown}{more}"))
    if left and task.status == "failed":
        parts.append(_sentence("Not done: " + "; ".join(left[:MAX_STEPS])))
    if decisions:
        chosen = reversed(decisions[:MAX_DECISIONS])  # oldest first reads as a story
        parts.append(_sentence("Decided: " + "; ".join(" ".join(d.content.split())
                                                       for d in chosen)))
    if learned:
        parts.append(_sentence("Learned: " + "; ".join(" ".join(x.split()) for x in learned)))
    return " ".join(parts)
