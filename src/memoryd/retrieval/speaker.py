"""Who said it: the speaker a query asks about, and the speaker of a memory.

"What did I say about the trip?", "how did you recommend structuring it?", "what did Caroline
tell you about the adoption agency?" ask about what one party of a conversation said. The
search path lifts memories spoken by that party (see cognition.ranking: a lift only reorders
hits of close relevance, so a wrong parse never costs recall).

Only statements *about past speech* count ("did you suggest", "I mentioned"); a request
("what would you suggest?", "can you recommend…") names no speaker. English only, a few
regular expressions, no model.

A memory's speaker comes from its metadata (``speaker``, ``role`` or ``author``; chat imports
store the turn's role) or from a ``Name:`` prefix of its content (what ``/capture`` writes:
"User: …", "Assistant: …"). "user"/"human" and "assistant"/"ai"/"bot" are folded to ``user``
and ``assistant``; other names are compared case-insensitively.

    >>> query_speaker("Where did I say I met Laura?")
    'user'
    >>> query_speaker("What approach did you recommend for the resume?")
    'assistant'
    >>> query_speaker("What would you suggest for dinner?") is None
    True
    >>> query_speaker("What did Caroline say about the adoption agency?")
    'caroline'
    >>> memory_speaker("Assistant: Use a token bucket.", {})
    'assistant'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

USER = "user"
ASSISTANT = "assistant"
_ALIASES = {"user": USER, "human": USER, "me": USER, "assistant": ASSISTANT, "ai": ASSISTANT,
            "bot": ASSISTANT, "agent": ASSISTANT, "model": ASSISTANT}
_METADATA_KEYS = ("speaker", "role", "author")

_PAST = (r"said|mentioned|told|asked|shared|wrote|described|noted|brought up|suggested|"
         r"recommended|proposed|advised|explained")
_BASE = (r"say|said|mention(?:ed)?|tell|told|ask(?:ed)?|share(?:d)?|write|wrote|describe(?:d)?|"
         r"note(?:d)?|bring up|brought up|suggest(?:ed)?|recommend(?:ed)?|propose(?:d)?|"
         r"advise(?:d)?|explain(?:ed)?")
_PARTY = r"i|you|the user|the assistant"
# "did I say", "have you suggested", "had the user mentioned"
_ASKED = re.compile(rf"\b(?:did|have|has|had)\s+({_PARTY})\s+(?:ever\s+|just\s+|already\s+)?"
                    rf"(?:{_BASE})\b")
# "I mentioned", "the options you recommended" (not "would you suggest": no past tense)
_STATED = re.compile(rf"\b({_PARTY})\s+(?:(?:have|had)\s+)?(?:{_PAST})\b")
_NAME = r"[A-Z][a-z]+(?:\s[A-Z][a-z]+)?"
_NAMED_ASKED = re.compile(rf"\b(?:did|has|had)\s+({_NAME})\s+(?:ever\s+)?(?:{_BASE})\b")
_NAMED_STATED = re.compile(rf"\b({_NAME})\s+(?:{_PAST})\b")
_NOT_NAMES = frozenset({"i", "you", "what", "when", "where", "which", "who", "why", "how", "the",
                        "that", "this", "it", "he", "she", "we", "they", "someone", "anyone",
                        "user", "assistant", "did", "have", "had", "has"})
_PREFIX = re.compile(r"^\s*\[?([A-Za-z][\w.' -]{0,31}?)\]?\s*:\s")


def query_speaker(query: str) -> str | None:
    """The party whose past words the query asks about: ``user``, ``assistant``, a
    case-folded name, or None when the query names no speaker."""
    folded = " ".join(query.casefold().split())
    # The question's own verb ("did you suggest … after I mentioned …") before a clause.
    for rx in (_ASKED, _STATED):
        m = rx.search(folded)
        if m:
            return _party(m.group(1))
    text = " ".join(query.split())
    for rx in (_NAMED_ASKED, _NAMED_STATED):
        for m in rx.finditer(text):
            words = m.group(1).casefold().split()
            if m.start(1) == 0 and len(words) > 1:
                words = words[1:]  # "Something Jon mentioned": capitalised for the sentence
            if words[0] not in _NOT_NAMES:
                return normalise(" ".join(words))
    return None


def memory_speaker(content: str, metadata: Mapping[str, Any]) -> str | None:
    """Who said the memory: its metadata's speaker/role/author, else a ``Name:`` prefix."""
    for key in _METADATA_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return normalise(value)
    m = _PREFIX.match(content)
    return normalise(m.group(1)) if m else None


def spoken_text(content: str) -> str:
    """The content without a leading ``Name:`` prefix ("User: Always…" → "Always…")."""
    m = _PREFIX.match(content)
    return content[m.end():] if m else content


def normalise(speaker: str) -> str:
    """``user``/``assistant`` for their aliases, else the case-folded, space-collapsed name."""
    name = " ".join(speaker.casefold().split())
    return _ALIASES.get(name, name)


def same_speaker(asked: str, said: str | None) -> bool:
    """Whether a memory said by ``said`` answers a query about ``asked``: the same party, or
    one name within the other ("caroline" and "caroline smith", "smith" and "caroline smith")."""
    if said is None:
        return False
    if said == asked or USER in (said, asked) or ASSISTANT in (said, asked):
        return said == asked
    a, b = set(asked.split()), set(said.split())
    return a <= b or b <= a


def _party(word: str) -> str:
    return USER if word in ("i", "the user") else ASSISTANT
