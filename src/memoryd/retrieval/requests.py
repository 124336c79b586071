"""Whether a query asks the assistant for advice or action, not about the past.

"How would you suggest I break up my editing sessions?", "Can you recommend some books?",
"Show me how to add a login page" are requests: what the user prefers, and the standing
instructions they gave ("Always include version numbers when I ask about libraries"), are
the memories that should shape the answer, so the search path lifts them a little (a bounded
near-tie reorder; see cognition.ranking). Questions about the past ("what did I say…", "how
many times did I…", "when did…", "summarise what we discussed") are not requests: they look
for what happened, and a preference has no special claim there.

    >>> asks_for_advice("How would you suggest I organise my day?")
    True
    >>> asks_for_advice("How many times did I mention my cover letter?")
    False
    >>> asks_for_advice("Can you summarize what we discussed about the budget?")
    False
"""

from __future__ import annotations

import re

from memoryd.retrieval.speaker import query_speaker

_REQUEST = re.compile(
    r"\b(?:can|could|would|will) you\b|\bhow (?:should|do|can|could|would|might) (?:i|we)\b|"
    r"\bwhat (?:should|can|could) (?:i|we)\b|\b(?:suggest|recommend|advise|advice|ideas|tips|"
    r"help me|show me|tell me about|explain)\b|"
    r"^(?:please\s+)?(?:give|show|tell|help|suggest|recommend|write|draft|plan)\b")
# Questions about what happened or was said, and requests to recount it.
_ABOUT_THE_PAST = re.compile(
    r"\b(?:did|have|had) (?:i|we|you)\b|\bhow many\b|\bin (?:what|which) order\b|"
    r"\bwhen did\b|\bsummar|\brecap\b|\boverview\b|\bso far\b")


def asks_for_advice(query: str) -> bool:
    """Whether ``query`` asks for advice or action rather than about the past."""
    folded = " ".join(query.casefold().split())
    if not _REQUEST.search(folded) or _ABOUT_THE_PAST.search(folded):
        return False
    return query_speaker(query) is None
