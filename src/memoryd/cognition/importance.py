"""Importance of a new memory from content signals, without an LLM.

    score = base
          + w_novelty   * novelty              (1 - max similarity to the store, 0..1)
          + w_emphasis  * [emphasis words]     ("always", "never", "important", "must", ...)
          + w_explicit  * [explicit statement] ("I prefer", "my name is", "remember that", ...)
          + w_error     * [error or failure]   ("error", "failed", "exception", "crash", ...)
          + w_decision  * [decision]           ("we decided", "let's use", "chose", ...)

clamped to [0, 1]. Each bracket is 1 when the signal is present, else 0. With the
defaults a plain, already-known remark scores 0.25; a novel explicit preference 0.8.
When novelty is unknown it counts as 0.5.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ImportanceWeights:
    """Weights of the importance formula (see the module docstring)."""

    base: float = 0.25
    novelty: float = 0.25
    emphasis: float = 0.15
    explicit: float = 0.2
    error: float = 0.15
    decision: float = 0.15


@dataclass(frozen=True)
class ImportanceScore:
    """The score and the signals that made it."""

    score: float
    signals: dict[str, float] = field(default_factory=dict)


_EMPHASIS = re.compile(
    r"\b(always|never|important|importantly|critical|crucial|must|mustn't|essential|"
    r"remember|don't forget|do not forget|make sure|urgent|priority|required)\b", re.I)
_EXPLICIT = re.compile(
    r"\b(i (?:really )?(?:prefer|like|love|hate|dislike|want|need|use|am|work|live)|"
    r"my (?:name|favou?rite|preference|email|role|team|wife|husband|partner|birthday)|"
    r"remember (?:that|this)|note that|keep in mind|i'?m allergic|call me)\b", re.I)
_ERROR = re.compile(
    r"\b(error|errors|failed|failure|fails|exception|crash(?:ed|es)?|bug|broken|outage|"
    r"traceback|panic|timeout|timed out|segfault|incident)\b", re.I)
_DECISION = re.compile(
    r"\b(decided|decision|we(?:'ll| will) use|let'?s use|chose|chosen|going with|"
    r"switch(?:ed)? to|settled on|agreed)\b", re.I)


def importance_score(
    content: str, novelty: float | None = None, weights: ImportanceWeights = ImportanceWeights()
) -> ImportanceScore:
    """Score ``content`` in [0, 1] from its signals and its novelty against the store."""
    nov = 0.5 if novelty is None else min(max(novelty, 0.0), 1.0)
    signals = {
        "novelty": nov,
        "emphasis": 1.0 if _EMPHASIS.search(content) else 0.0,
        "explicit": 1.0 if _EXPLICIT.search(content) else 0.0,
        "error": 1.0 if _ERROR.search(content) else 0.0,
        "decision": 1.0 if _DECISION.search(content) else 0.0,
    }
    raw = weights.base + sum(getattr(weights, name) * value for name, value in signals.items())
    return ImportanceScore(score=round(min(max(raw, 0.0), 1.0), 4), signals=signals)
