"""Prediction-error gating: decide what a new memory does to the memories nearest it.

Given the new text and its nearest stored memories (cosine similarity, best first):

1. a candidate with similarity >= ``supersede`` whose text the new one contradicts or
   corrects (:mod:`contradiction`) -> SUPERSEDE it; contradiction wins over everything,
   because a correction is usually worded almost like the fact it corrects;
2. two or more candidates >= ``merge`` -> MERGE them (near-duplicates of each other);
3. the best candidate >= ``reinforce`` -> REINFORCE it (the same information again);
4. the best candidate >= ``update`` -> UPDATE it (new detail about the same thing);
5. otherwise CREATE.

Defaults are set on the labelled pairs in tests/data (bench/results/gating.md); Vestige
uses 0.92 / 0.75 / 0.70 / 0.675 on a different model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memoryd.cognition.contradiction import detect


@dataclass(frozen=True)
class GatingParams:
    """Similarity thresholds of the gate (cosine, all-MiniLM-L6-v2)."""

    reinforce: float = 0.92
    update: float = 0.80
    supersede: float = 0.55
    merge: float = 0.90


@dataclass(frozen=True)
class Candidate:
    """A stored memory near the new one."""

    id: str
    content: str
    similarity: float


@dataclass(frozen=True)
class GateDecision:
    """What to do, to which memories, and why."""

    decision: str
    target_ids: list[str]
    similarity: float | None
    reason: str


def decide(new_text: str, candidates: list[Candidate], params: GatingParams = GatingParams()) -> GateDecision:
    """Apply the rules of the module docstring."""
    ranked = sorted(candidates, key=lambda c: -c.similarity)
    if not ranked:
        return GateDecision("create", [], None, "no similar memory")
    top = ranked[0]
    for candidate in ranked:
        if candidate.similarity < params.supersede:
            break
        verdict = detect(candidate.content, new_text)
        if verdict.is_contradiction:
            return GateDecision("supersede", [candidate.id], candidate.similarity,
                                f"contradicts a memory ({verdict.kind}: {verdict.evidence})")
    close = [c for c in ranked if c.similarity >= params.merge]
    if len(close) >= 2:
        return GateDecision("merge", [c.id for c in close], top.similarity,
                            f"{len(close)} near-duplicates (similarity >= {params.merge})")
    if top.similarity >= params.reinforce:
        return GateDecision("reinforce", [top.id], top.similarity,
                            f"same information (similarity {top.similarity:.2f})")
    if top.similarity >= params.update:
        return GateDecision("update", [top.id], top.similarity,
                            f"new detail on a known memory (similarity {top.similarity:.2f})")
    return GateDecision("create", [], top.similarity,
                        f"nothing close enough (best similarity {top.similarity:.2f})")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _norm(sentence: str) -> str:
    return " ".join(re.findall(r"\w+", sentence.lower()))


def merge_contents(old: str, new: str, when: datetime) -> str:
    """``old`` plus the sentences of ``new`` it does not already contain, dated.

    >>> merge_contents("Uses Postgres.", "Uses Postgres. Runs on port 5433.", datetime(2026, 1, 2))
    'Uses Postgres.\\n[Updated 2026-01-02] Runs on port 5433.'
    """
    known = {_norm(s) for s in _sentences(old)}
    added = [s for s in _sentences(new) if _norm(s) and _norm(s) not in known]
    if not added:
        return old
    return f"{old}\n[Updated {when:%Y-%m-%d}] {' '.join(added)}"
