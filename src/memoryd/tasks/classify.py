"""Which kind a task message is when the agent did not say: a decision, a blocker,
progress, or a plain note.

The rules are deliberately few and readable; an agent that knows better passes ``kind``
itself. A decision wins over everything ("switched to X because Y failed" is a
decision); progress wins over a blocker ("fixed the failing test" moved the task on),
unless it is negated ("not done yet", "still isn't working").

>>> classify_message("CI is blocked waiting for the staging credentials")
'blocker'
>>> classify_message("Fixed the flaky login test")
'progress'
>>> classify_message("The build is not done yet")
'note'
"""

from __future__ import annotations

import re

_DECISION = re.compile(
    r"\b(decided|decide to|decision|we(?:'ll| will| are going to) (?:use|go with|keep|drop)|"
    r"going with|chose|chosen|choosing|opted|settled on|agreed to|switch(?:ed|ing)? to|"
    r"instead of)\b", re.I)
_PROGRESS = re.compile(
    r"\b(done|finished|complete[ds]?|fixed|resolved|works now|working now|passe[sd]|passing|"
    r"green|succeeded|merged|deployed|unblocked|shipped|landed|released)\b", re.I)
_BLOCKER = re.compile(
    r"\b(blocked|blocker|blocking|stuck|waiting (?:on|for)|cannot|can't|can not|unable|"
    r"fail(?:s|ed|ing|ure)?|errors?|broken|denied|missing|timed? ?out|crash(?:ed|es|ing)?|"
    r"not working|doesn't work|does not work|isn't working)\b", re.I)
# A progress word right after one of these is not progress ("not done", "never merged").
_NEGATED = re.compile(r"(?:\bnot|n't|\bnever|\bno longer|\byet to be)\s+(?:\w+\s+)?$", re.I)


def _progress(text: str) -> bool:
    for match in _PROGRESS.finditer(text):
        if not _NEGATED.search(text[: match.start()]):
            return True
    return False


def classify_message(text: str) -> str:
    """``decision``, ``progress``, ``blocker`` or ``note`` for a message's text."""
    if _DECISION.search(text):
        return "decision"
    if _progress(text):
        return "progress"
    if _BLOCKER.search(text):
        return "blocker"
    return "note"
