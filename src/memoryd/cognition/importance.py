"""Importance of a new memory from its content (no model, no store access).

Signals, each in [0, 1]:

* ``emphasis``: "always", "never", "important", "remember", "must", "critical", "don't
  forget", ... (0.6 for one, +0.2 per further one, at most 1; "not important" does not count).
* ``explicit``: a first-person statement about the user: "I prefer", "my name is", "remember
  that", "I decided", "I'm allergic", "call me", "I always/never", ... (1 if any).
* ``error``: an error or failure event: "error", "failed", "exception", "crash", "bug",
  "traceback", "segfault", "timeout", "regression", ... (0.6 / +0.2 each, at most 1).
* ``decision``: a decision or commitment: "we decided", "let's go with", "chose", "the plan
  is", "agreed", "switched to", "from now on", ... (1 if any).
* ``specificity``: concrete detail (numbers, versions, dates, paths, URLs, identifiers,
  capitalised names): 0.25 per kind present, at most 1.
* ``novelty``: passed in by the caller, ``1 - max cosine similarity`` to the existing memories
  (1 for an empty store); omitted when None.

Formula (weights in :class:`ImportanceWeights`): the positive signals combine as a noisy-OR,
so each one adds a share of what is left and the result never exceeds 1::

    evidence = 1 - prod(1 - w_k * s_k)
    score    = base + (1 - base) * evidence
    score   *= trivial_factor   if the content is chit-chat ("ok thanks", < 3 words)

With the defaults and novelty 1, a plain new fact scores ~0.45-0.5 (the model default of
0.5), an explicit preference, a decision or a failure ~0.65-0.85, and "ok thanks" ~0.1-0.2; these land in the Hard / Good /
Easy bands of :func:`memoryd.cognition.scheduling.initial_rating`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

__all__ = ["ImportanceScore", "ImportanceWeights", "importance_score"]


@dataclass(frozen=True)
class ImportanceWeights:
    """Weights of the importance formula (see the module docstring).

    base: importance of content with no signal at all (0.2: it was worth writing down).
    emphasis / explicit / error / decision: 0.35 / 0.5 / 0.45 / 0.45. A user's own statement
        about themselves is the strongest content signal (it is what agents are asked to
        remember); decisions and failures next (an agent that forgets a failure repeats
        it); emphasis words are strong but often incidental.
    specificity: 0.15, a small nudge for concrete details.
    novelty: 0.3; a near-duplicate adds nothing (gating reinforces it instead).
    trivial_factor: 0.5, multiplier for chit-chat and fragments.
    """

    base: float = 0.2
    emphasis: float = 0.35
    explicit: float = 0.5
    error: float = 0.45
    decision: float = 0.45
    specificity: float = 0.15
    novelty: float = 0.3
    trivial_factor: float = 0.5


DEFAULT_WEIGHTS = ImportanceWeights()


@dataclass(frozen=True)
class ImportanceScore:
    """An importance in [0, 1], the signal values it came from and the phrases that fired."""

    score: float
    signals: dict[str, float]
    reasons: tuple[str, ...] = field(default=())


def _words(*phrases: str) -> re.Pattern[str]:
    return re.compile(r"(?i)\b(?:" + "|".join(phrases) + r")\b")


_EMPHASIS = _words(
    r"always",
    r"never",
    r"important(?:ly)?",
    r"remember",
    r"must(?:n'?t)?",
    r"critical(?:ly)?",
    r"crucial",
    r"essential",
    r"vital",
    r"mandatory",
    r"required",
    r"do ?n[o']t forget",
    r"make sure",
    r"under no circumstances",
    r"top priority",
    r"urgent(?:ly)?",
    r"note to self",
    r"keep in mind",
    r"warning",
)
_NEGATED_EMPHASIS = re.compile(
    r"(?i)\b(?:not|isn'?t|wasn'?t|aren'?t|hardly|less|un)\s+"
    r"(?:very\s+|that\s+|so\s+|really\s+)?(?:important|critical|crucial|essential|required|urgent)\b"
)
_EXPLICIT = _words(
    r"i (?:really |strongly |usually |generally )?(?:prefer|like|love|hate|dislike|want|need|"
    r"use|avoid|always|never|decided|chose|am allergic|'m allergic|work at|work for|work on|"
    r"live in|moved to)",
    r"i'?m (?:a|an|the|allergic|based|vegetarian|vegan|left-handed|colou?r ?blind)",
    r"i am (?:a|an|the|based|vegetarian|vegan)",
    r"my (?:name|email|birthday|wife|husband|partner|son|daughter|team|manager|boss|company|"
    r"role|job|title|favou?rite|preference|timezone|time zone|address|phone|pronouns?|goal)"
    r"(?:'?s)?(?: \w+)? (?:is|are|was)",
    r"call me",
    r"remember (?:that|this|me)",
    r"please remember",
    r"for future reference",
    r"from now on",
    r"going forward",
    r"in (?:the )?future,? (?:please|always|never|use|don'?t)",
)
_ERROR = _words(
    r"errors?",
    r"fail(?:s|ed|ing|ure|ures)?",
    r"exceptions?",
    r"crash(?:es|ed|ing)?",
    r"bugs?",
    r"traceback",
    r"stack ?trace",
    r"segfault",
    r"segmentation fault",
    r"panic(?:ked|s)?",
    r"time[ds]? ?out",
    r"timeouts?",
    r"broken",
    r"regressions?",
    r"outage",
    r"incident",
    r"deadlock",
    r"leak(?:s|ed|ing)?",
    r"oom",
    r"out of memory",
    r"corrupt(?:ed|ion)?",
    r"(?:4|5)\d\d (?:error|response|status)",
    r"[A-Z][a-z]+(?:Error|Exception)",
)
_DECISION = _words(
    r"(?:we|i|they|team) (?:have |'ve )?(?:decided|agreed|chose|chosen|picked|settled on|opted)",
    r"decided (?:to|on|that)",
    r"decision(?: is| was|:)",
    r"let'?s (?:go with|use|stick with|switch)",
    r"going (?:to go )?with",
    r"we(?:'ll| will) use",
    r"the plan is",
    r"switch(?:ed|ing)? (?:to|from)",
    r"migrat(?:e|ed|ing) (?:to|from)",
    r"(?:approved|rejected|ruled out|deprecated|standardi[sz]ed on)",
    r"from now on",
    r"instead of",
    r"rather than",
)
_SPECIFIC = (
    ("number", re.compile(r"\b\d+(?:[.,]\d+)*\s?(?:%|ms|s|kb|mb|gb|tb|px|x|k)?\b", re.I)),
    ("version", re.compile(r"\bv?\d+\.\d+(?:\.\d+)*\b")),
    (
        "date",
        re.compile(
            r"\b(?:\d{4}-\d{2}-\d{2}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
            r"\.? \d{1,2}|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
            re.I,
        ),
    ),
    (
        "path_or_url",
        re.compile(r"(?:https?://\S+|(?:~|\.{1,2})?/[\w.\-]+/[\w.\-/]+|\b\w+\.(?:py|ts|js|rs|go|"
                   r"md|json|toml|yaml|yml|sql|sh|cfg|ini)\b)"),
    ),
    ("identifier", re.compile(r"`[^`]+`|\b[a-z]+_[a-z_]+\b|\b[a-z]+[A-Z][A-Za-z]+\b")),
    # A capitalised word that does not start a sentence: a name or a product (PostgreSQL).
    ("name", re.compile(r"(?<![.!?:]\s)(?<!^)(?<![\w'])[A-Z][a-z][A-Za-z0-9]*\b")),
)
_TRIVIAL = re.compile(
    r"(?i)^\W*(?:ok(?:ay)?|k|sure|thanks?(?: you)?|thx|ty|cool|nice|great|got it|yes|no|yep|"
    r"nope|hi|hello|hey|bye|lol|hmm+|ah|oh|right|perfect|awesome|sounds good|will do|done|"
    r"np|no problem|you'?re welcome)(?:[\s,.!]+(?:ok(?:ay)?|thanks?(?: you)?|thx|cool|great|"
    r"got it|so much|a lot|man|mate|!+))*\W*$"
)


def _count_signal(matches: list[str]) -> float:
    if not matches:
        return 0.0
    return min(1.0, 0.6 + 0.2 * (len(matches) - 1))


def importance_score(
    content: str,
    novelty: float | None = None,
    weights: ImportanceWeights = DEFAULT_WEIGHTS,
) -> ImportanceScore:
    """Score how important ``content`` is to remember, in [0, 1].

    ``novelty`` is ``1 - max similarity`` to the existing memories (clamped to [0, 1]); pass
    1.0 for an empty store and None when unknown (the novelty term is then left out).
    """
    text = content.strip()
    reasons: list[str] = []

    negated = {m.span() for m in _NEGATED_EMPHASIS.finditer(text)}
    emphasis_hits = [
        m.group(0)
        for m in _EMPHASIS.finditer(text)
        if not any(start <= m.start() < end for start, end in negated)
    ]
    explicit_hits = [m.group(0) for m in _EXPLICIT.finditer(text)]
    error_hits = [m.group(0) for m in _ERROR.finditer(text)]
    decision_hits = [m.group(0) for m in _DECISION.finditer(text)]
    specific_kinds = [kind for kind, pattern in _SPECIFIC if pattern.search(text)]
    words = re.findall(r"\w+", text)
    trivial = bool(_TRIVIAL.match(text)) or len(words) < 3

    signals: dict[str, float] = {
        "emphasis": _count_signal(emphasis_hits),
        "explicit": 1.0 if explicit_hits else 0.0,
        "error": _count_signal(error_hits),
        "decision": 1.0 if decision_hits else 0.0,
        "specificity": min(1.0, 0.25 * len(specific_kinds)),
    }
    if novelty is not None:
        if math.isnan(novelty):
            raise ValueError("novelty must be a number in [0, 1]")
        signals["novelty"] = min(max(novelty, 0.0), 1.0)
    reasons.extend(f"emphasis:{h.lower()}" for h in emphasis_hits)
    reasons.extend(f"explicit:{h.lower()}" for h in explicit_hits)
    reasons.extend(f"error:{h.lower()}" for h in error_hits)
    reasons.extend(f"decision:{h.lower()}" for h in decision_hits)
    reasons.extend(f"specific:{k}" for k in specific_kinds)

    remaining = 1.0
    for name, value in signals.items():
        remaining *= 1.0 - getattr(weights, name) * value
    score = weights.base + (1.0 - weights.base) * (1.0 - remaining)
    if trivial:
        score *= weights.trivial_factor
        reasons.append("trivial")
    signals["trivial"] = 1.0 if trivial else 0.0
    return ImportanceScore(score=min(max(score, 0.0), 1.0), signals=signals, reasons=tuple(reasons))
