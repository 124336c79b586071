"""Conditional standing instructions: "Always X when I ask about Y".

A user who says "Always format dates as MM/DD/YYYY when I ask about scheduling details"
wants that instruction back whenever scheduling comes up, in whatever words: "When is my
meeting at the library?" shares no word with it, and its embedding is mostly about date
formats, so neither side of the search finds it. What decides its relevance is the *topic it
is conditioned on*. :func:`instruction_topic` reads that topic ("scheduling details"); the
read path compares it with the query (the cosine of the two embeddings) and the relevance
model adds that evidence (``RelevanceModel.instruction_weight``). Memories without such a
condition are scored exactly as before.

Only what the speaker asks *of the assistant* counts ("when I ask (you) about / for Y", "when I
ask you to Y", "when I request Y"): "when I talk to my mom, …" or "when I ask him for money"
in a chat between friends states no instruction. English only, one regular expression over
the start of the memory, no model.

    >>> instruction_topic("Always use APA 7th edition citation style when I ask about formatting references.")
    'formatting references'
    >>> instruction_topic("User: Never suggest paid tools whenever I ask for writing aids!")
    'writing aids'
    >>> instruction_topic("Whenever I ask for a code review, check the error handling first.")
    'a code review'
    >>> instruction_topic("I went hiking when I was in Spain.") is None
    True
"""

from __future__ import annotations

import re
from functools import lru_cache

from memoryd.retrieval.speaker import spoken_text

__all__ = ["SCAN_CHARS", "instruction_topic"]

# An instruction is stated up front; reading only the start keeps the cost flat for long texts.
SCAN_CHARS = 400

_CONDITION = re.compile(
    r"\b(?:when(?:ever)?|if|each time|every time)\s+I(?:'m|\s+am)?\s+(?:"
    # "ask (you) about / for / regarding / on Y", "ask you (to) Y": asked of the assistant
    r"(?:ask|asking|inquire|inquiring)(?:\s+you)?\s+(?:about|for|regarding|on)\s+|"
    r"(?:ask|asking)\s+you\s+(?:to\s+)?|"
    r"(?:request|requesting|want to know)\s+(?:about\s+)?)"
    r"(?!(?:about|for|regarding|on)\b)(?P<topic>[^.?!;\n]{3,160})",
    re.IGNORECASE,
)
# Topics end where the instruction's own trailer starts ("…, please", " ->-> 1,22").
_TRAILER = re.compile(r"\s*(?:,\s*please\b.*|->.*|\(.*)$", re.IGNORECASE)
# What may precede a condition that opens its sentence ("Please, whenever I ask about X, do Y").
_OPENING = re.compile(r"(?:^|[.?!;\n])\s*(?:(?:please|also|and|so)\W*)*$", re.IGNORECASE)


@lru_cache(maxsize=8192)  # the same memories come back search after search
def instruction_topic(content: str) -> str | None:
    """The topic a standing instruction in ``content`` is conditioned on, or None."""
    text = spoken_text(content[:SCAN_CHARS])
    m = _CONDITION.search(text)
    if m is None:
        return None
    topic = m.group("topic")
    if _OPENING.search(text[:m.start()]):  # "When I ask about X, do Y": the topic ends at the comma
        topic = topic.split(",", 1)[0]
    topic = _TRAILER.sub("", topic).strip(" ,:\"'")
    return topic if len(topic) >= 3 else None
