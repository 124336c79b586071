"""Prediction-error gating: what a new memory does to the memories nearest it.

Given the new text and its nearest stored memories (cosine similarity, best first):

1. SUPERSEDE: the most similar candidate with similarity >= ``supersede`` that the new text
   contradicts (:func:`memoryd.cognition.contradiction.detect`), both of them statements of
   at most ``supersede_max_clauses`` clauses. Contradiction wins over
   everything else, because a correction is usually worded almost like the fact it corrects
   ("... listens on port 5432" / "... on port 5433" score 0.98).
2. MERGE: two or more candidates >= ``merge``: the store already holds near-duplicates of
   this information; fold them into one.
3. UPDATE when the detector reports a *progression* of the best candidate (a later value of
   the same quantity, "coverage rose to 78%") at similarity >= ``supersede``: a changed
   value is new information however the rest is worded.
4. With the best candidate >= ``update``: REINFORCE if the new text brings nothing new,
   otherwise UPDATE. "Nothing new" is lexical:
   ``added`` = new content words not in the old (new names and values count three times)
   minus the old words the new one drops (paraphrases swap
   words, additions only add). REINFORCE when ``added < min_added_terms`` and the
   similarity is >= ``reinforce``, or when ``added <= 0`` at any similarity in the zone;
   UPDATE otherwise.
5. CREATE.

Thresholds were tuned on ``tests/data/ingest_pairs.jsonl`` plus BEAM conversations 1-10
(``tests/data/ingest_pairs_beam.jsonl``) with all-MiniLM-L6-v2 (``python -m bench.gating``;
results in ``bench/results/gating.md``, BEAM 11-20 held out). Vestige's values (0.92
reinforce, 0.75 update, 0.70 supersede, 0.675 merge) were the starting point: on this model
they send most changed facts to CREATE (a contradiction's median similarity is ~0.8, a
quarter are below 0.70), and similarity alone cannot tell a duplicate (median 0.90) from an
update (median 0.80), hence the lexical test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from memoryd.cognition.clauses import split_clauses
from memoryd.cognition.contradiction import Contradiction, content_terms, detect

__all__ = [
    "Candidate",
    "Decision",
    "GateDecision",
    "GatingParams",
    "added_terms",
    "decide",
    "merge_contents",
]

Decision = Literal["create", "update", "reinforce", "supersede", "merge"]
Detector = Callable[[str, str], Contradiction]


@dataclass(frozen=True)
class GatingParams:
    """Cosine-similarity thresholds of the gate (all-MiniLM-L6-v2) and the lexical test.

    reinforce: at or above, a candidate restated with fewer than ``min_added_terms`` new
        terms is REINFORCED (0.76). With the lexical test doing the work, any value from
        0.70 to 0.78 scores the same on the labelled pairs; 0.76 is the middle of that
        plateau (duplicates: median similarity 0.90, 10th percentile 0.78).
    update: the lowest similarity at which the new text counts as about the same memory
        (0.675; updates: median 0.80, 10th percentile 0.68; unrelated pairs on the same
        topic reach 0.67).
    supersede: the lowest similarity at which a detected contradiction supersedes (0.40;
        the tuning's floor, kept on purpose: the detector runs on up to five neighbours per
        write and below 0.40 they are mostly unrelated). Contradictions are often worded
        far apart ("lives in Paris" / "moved to Berlin": 0.51) and the detector, not the
        similarity, carries this decision (false alarms on unrelated pairs: 0-5%).
    merge: two or more candidates at or above it are merged (0.88: copies of the same
        fact, not just neighbours). Pairwise data cannot tune it; unit tests cover it.
    supersede_max_clauses: a text of more clauses than this (either side) neither
        supersedes nor is superseded (40). One contradicted clause does not make a long
        answer false as a whole, and the detector, run on every clause pair, fires on long
        texts by chance: written through smart ingest, BEAM chats (assistant turns have a
        median of 68 clauses) saw 481 of 794 messages (conversations 1-4) supersede a
        neighbour, 119 with this limit. The labelled
        contradictions have at most 31 clauses on the new side (median 2).
    min_added_terms: new terms the new text must add to be an UPDATE rather than a
        REINFORCE when its similarity is >= ``reinforce`` (3).
    heavy_term_weight: how much a new name or value counts (3): "... works as a data
        engineer at Spotify" adds one word but a whole new fact.
    """

    reinforce: float = 0.76
    update: float = 0.675
    supersede: float = 0.40
    merge: float = 0.88
    supersede_max_clauses: int = 40
    min_added_terms: int = 3
    heavy_term_weight: int = 3


@dataclass(frozen=True)
class Candidate:
    """A stored memory near the new one (``similarity`` is cosine, higher = closer)."""

    id: str
    content: str
    similarity: float


@dataclass(frozen=True)
class GateDecision:
    """What to do, to which memories, how close the best one was, and why."""

    decision: Decision
    target_ids: list[str] = field(default_factory=list)
    similarity: float | None = None
    reason: str = ""


def added_terms(old: str, new: str, heavy_weight: int = 3) -> int:
    """How much ``new`` adds to ``old``: new content words (names and values count
    ``heavy_weight`` times) minus the old content words it drops. <= 0 for a restatement."""
    old_terms, old_heavy = content_terms(old)
    new_terms, new_heavy = content_terms(new)
    added = new_terms - old_terms
    heavy = len((new_heavy - old_heavy) & added)
    return len(added) + (heavy_weight - 1) * heavy - len(old_terms - new_terms)


def _clause_count(text: str) -> int:
    return len(split_clauses(text))


def _restates(old: str, new: str) -> bool:
    """Whether every content term of ``new`` is already in ``old``."""
    return not (content_terms(new)[0] - content_terms(old)[0])


def decide(
    new_text: str,
    candidates: list[Candidate],
    params: GatingParams = GatingParams(),
    *,
    detector: Detector = detect,
) -> GateDecision:
    """Gate ``new_text`` against its nearest stored memories (rules in the module docstring).

    ``detector`` is the contradiction test (injectable so that benchmarks can cache it).
    """
    ranked = sorted(candidates, key=lambda c: -c.similarity)
    if not ranked:
        return GateDecision("create", [], None, "no similar memory")
    top = ranked[0]
    progression: Contradiction | None = None
    statement: bool | None = None  # counted once, and only if a candidate is close enough
    for candidate in ranked:
        if candidate.similarity < params.supersede:
            break
        if statement is None:
            statement = _clause_count(new_text) <= params.supersede_max_clauses
        if not statement:
            break
        if _clause_count(candidate.content) > params.supersede_max_clauses:
            continue
        verdict = detector(candidate.content, new_text)
        if verdict.is_contradiction:
            return GateDecision(
                "supersede", [candidate.id], candidate.similarity,
                f"contradicts a memory at similarity {candidate.similarity:.2f} "
                f"({verdict.kind}: {verdict.evidence})")
        if candidate is top and verdict.kind == "progression":
            progression = verdict
        if candidate is top and top.similarity >= params.reinforce and _restates(
                top.content, new_text):
            # The new text is already stored almost verbatim; weaker neighbours it
            # happens to disagree with are other memories, not what it corrects.
            break
    close = [c for c in ranked if c.similarity >= params.merge]
    if len(close) >= 2:
        return GateDecision(
            "merge", [c.id for c in close], top.similarity,
            f"{len(close)} near-duplicate memories (similarity >= {params.merge:.2f})")
    if progression is not None:
        return GateDecision(
            "update", [top.id], top.similarity,
            f"a later value of the same quantity (similarity {top.similarity:.2f}, "
            f"{progression.evidence})")
    if top.similarity >= params.update:
        added = added_terms(top.content, new_text, params.heavy_term_weight)
        if added <= 0 or (top.similarity >= params.reinforce and added < params.min_added_terms):
            return GateDecision(
                "reinforce", [top.id], top.similarity,
                f"same information (similarity {top.similarity:.2f}, {added} new terms)")
        return GateDecision(
            "update", [top.id], top.similarity,
            f"new detail on a known memory (similarity {top.similarity:.2f}, {added} new terms)")
    return GateDecision("create", [], top.similarity,
                        f"nothing close enough (best similarity {top.similarity:.2f})")


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_TAG = re.compile(r"^\[Updated \d{4}-\d{2}-\d{2}\]\s*")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _norm(sentence: str) -> str:
    return " ".join(re.findall(r"\w+", _TAG.sub("", sentence).lower()))


def merge_contents(old: str, new: str, when: datetime) -> str:
    """``old`` plus the sentences of ``new`` it does not already contain, dated.

    Sentences are compared after lower-casing and dropping punctuation (and earlier
    ``[Updated ...]`` tags), so repeating a sentence adds nothing; when nothing is new the
    old text comes back unchanged.

    >>> merge_contents("Uses Postgres.", "Uses Postgres. Runs on port 5433.", datetime(2026, 1, 2))
    'Uses Postgres.\\n[Updated 2026-01-02] Runs on port 5433.'
    """
    known = {_norm(s) for s in _sentences(old)}
    added: list[str] = []
    for sentence in _sentences(new):
        key = _norm(sentence)
        if key and key not in known:
            known.add(key)
            added.append(_TAG.sub("", sentence))
    if not added:
        return old
    return f"{old.rstrip()}\n[Updated {when:%Y-%m-%d}] {' '.join(added)}"
