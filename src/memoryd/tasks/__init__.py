"""Task memory, the pure part: which kind a message is, where a task stands (its step,
what blocks it, what was decided), and its running summary, extractive or as a prompt for
a chat model. Functions of their arguments only: no engine, no store.

>>> classify_message("Decided to use PostgreSQL for the queue")
'decision'
"""

from __future__ import annotations

from memoryd.tasks.classify import classify_message
from memoryd.tasks.digest import Digest, digest, open_blockers
from memoryd.tasks.distill import (
    distill_prompt,
    extractive_summary,
    fit_to_budget,
)
from memoryd.tasks.outcome import outcome_text

__all__ = [
    "Digest",
    "classify_message",
    "digest",
    "distill_prompt",
    "extractive_summary",
    "fit_to_budget",
    "open_blockers",
    "outcome_text",
]
