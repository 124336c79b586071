"""Prediction-error gating: what a new memory does to the memories nearest it.

The gate never loses a fact: it folds the new text into a stored memory only when the new
text adds nothing to it (REINFORCE) or keeps all of it and adds detail (UPDATE), and it
hides a stored memory only when the new text replaces the one thing that differs between
them (SUPERSEDE; the old memory stays in history). Everything else is a new memory: a
duplicate costs little, a lost fact costs a wrong answer.

Given the new text and its nearest stored memories (cosine similarity, best first), each
candidate is read against the new text by :func:`memoryd.cognition.novelty.compare`, and:

1. SUPERSEDE the closest candidate that the new text changes, when both are statements of at
   most ``supersede_max_clauses`` clauses by the same speaker (no question, two or more
   units each):
   * one value replaced in a kept frame (a number, unit, date, time, name, identifier,
     quantifier, ...: "... runs on port 5432" / "... listens on port 5433") at similarity
     >= ``changed_value``; nothing else of the old text may be left out, nothing inserted
     before the changed value (a trailing "... after the redesign" is fine), its subject
     kept, and at most one other word swapped (only at similarity >= ``swap_similarity``
     or when the new text says that something changed, "now", "moved", "increased");
   * or, at similarity >= ``supersede``: the whole old text said again with words that end
     it ("... now that Marcus left", "Bazel was dropped"); or a contradiction
     (:func:`memoryd.cognition.contradiction.detect`: a negation flip, an antonym, an
     explicit correction, a change marker; or an ordered pair turned round, "tabs over
     spaces" / "spaces over tabs") that leaves at most a third of the old text's words
     unsaid (a memory holding other facts is not hidden for one of them), adds at most
     ``max_said_more`` units (or as many as the old text has) and replaces no value unless it
     says so ("moved", "now", "actually": "the freeze starts on December 18"
     / "... ends on January 5" are two facts).
2. MERGE two or more candidates at similarity >= ``merge`` that state the same thing as the
   new text and as each other (each restates the other).
3. REINFORCE the closest candidate at similarity >= ``reinforce`` that the new text
   restates: no value, name, identifier or negation it lacks, at most ``max_added_words``
   plain words it lacks and no word put in place of another, the same speaker.
4. UPDATE the closest candidate at similarity >= ``update`` that the new text elaborates:
   every unit of the old text kept, something added, the same speaker and polarity, and
   the new text a statement.
5. CREATE otherwise.

Thresholds are fitted on part of ``tests/data/gate_pairs.jsonl`` (split by topic) with
all-MiniLM-L6-v2 and reported on the rest (``python -m bench.gating``; results in
``bench/results/gating.md``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from memoryd.cognition.contradiction import Contradiction, are_opposites, detect
from memoryd.cognition.novelty import Comparison, compare, family

__all__ = [
    "Candidate",
    "Decision",
    "GateDecision",
    "GatingParams",
    "decide",
    "elaborates",
    "merge_contents",
    "restates",
]

Decision = Literal["create", "update", "reinforce", "supersede", "merge"]
Detector = Callable[[str, str], Contradiction]
Comparer = Callable[[str, str], Comparison]
# Detector verdicts the gate accepts as they are; a changed value or name must also pass the
# frame test (changes_one_value), which the detector's looser slot test does not check.
_CONTRADICTION_KINDS = frozenset({"negation", "antonym", "correction", "change_marker"})
_SUBJECT_FAMILIES = frozenset({"name", "identifier"})


@dataclass(frozen=True)
class GatingParams:
    """Cosine-similarity thresholds of the gate (all-MiniLM-L6-v2) and its lexical limits.

    reinforce: lowest similarity at which a restatement is REINFORCED.
    update: lowest similarity at which an elaboration UPDATES its memory.
    supersede: lowest similarity at which a detected contradiction SUPERSEDES.
    merge: lowest similarity of the two or more copies a MERGE folds.
    changed_value: lowest similarity at which one replaced value in a kept frame SUPERSEDES.
    swap_similarity: at or above it, a changed value's frame may swap one other word
        ("runs" -> "listens").
    supersede_max_clauses: a text of more clauses than this (either side) neither
        supersedes nor is superseded: one contradicted clause does not make a long text
        false, and chat turns are long and mostly distinct statements.
    max_added_words: plain words a restatement may add ("The CI runs tests" / "The CI runs
        the tests again" adds none; "... runs unit tests" adds one).
    max_unsaid_share: share of the old text's units a contradiction may leave unsaid.
    max_said_more: new units a contradiction may add (or as many as the old text has, if
        more): a long text that mentions the old one is no correction of it.
    """

    reinforce: float = 0.65
    update: float = 0.60
    supersede: float = 0.40
    merge: float = 0.88
    changed_value: float = 0.35
    swap_similarity: float = 0.85
    supersede_max_clauses: int = 4
    max_added_words: int = 1
    max_unsaid_share: float = 0.34
    max_said_more: int = 4


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


def restates(c: Comparison, max_added_words: int = 1) -> bool:
    """Whether the new text of ``c`` adds nothing to the old one (and says no change: "The
    library dropped support for Python 2" does not restate "The library supports Python 2")."""
    if not c.same_speaker or not c.same_polarity or c.reversed or c.swapped \
            or (c.new.marked and not c.old.marked):
        return False
    if any(kind != "word" for kind, _ in c.added):
        return False
    return len(c.added) <= max_added_words


def elaborates(c: Comparison) -> bool:
    """Whether the new text of ``c`` keeps all of the old one and adds to it."""
    return (c.same_speaker and c.same_polarity and not c.reversed and not c.dropped
            and bool(c.added) and len(c.old.units) >= 2)


def changes_one_value(c: Comparison, similarity: float, params: GatingParams) -> bool:
    """Whether the new text of ``c`` is the old statement with one value replaced."""
    frame = c.frame
    if frame is None or frame.inserted or frame.values_moved or frame.head_changed \
            or not c.same_polarity or any(are_opposites(a, b) for a, b in frame.swaps):
        return False
    if frame.start == 0 and c.changed & _SUBJECT_FAMILIES:
        return False  # a new name or identifier up front is another subject ("Bob ...")
    # One other word may change: swapped at high similarity ("runs" -> "listens"), or
    # swapped or left out when the new text says that something changed ("written in Go
    # 1.22" -> "upgraded to Go 1.23").
    allowed = 1 if c.new.marked or similarity >= params.swap_similarity else 0
    left_out = frame.dropped if c.new.marked else frame.dropped * 2
    return frame.swapped + left_out <= allowed


def _unsaid(c: Comparison) -> int:
    """Distinct units of the old text the new one leaves out (a replaced value is not left
    out)."""
    new_units = set(c.new.units)
    new_families = {family(kind) for kind, _ in new_units if kind != "word"}
    return len({u for u in c.old.units if u not in new_units
                and (u[0] == "word" or family(u[0]) not in new_families)})


def _statements(c: Comparison, params: GatingParams) -> bool:
    """Whether both texts are statements one may correct: the same speaker, short, no
    question, and at least two units each ("Hey Kate!" states nothing)."""
    return (c.same_speaker and max(c.old.clauses, c.new.clauses) <= params.supersede_max_clauses
            and not c.old.asks and not c.new.asks
            and len(set(c.old.units)) >= 2 and len(set(c.new.units)) >= 2)


def _conflict(candidate: Candidate, new_text: str, c: Comparison, params: GatingParams,
              detector: Detector) -> str | None:
    """Why the new text supersedes ``candidate`` (None when it does not)."""
    sim = candidate.similarity
    if not _statements(c, params):
        return None
    if sim >= params.changed_value and changes_one_value(c, sim, params):
        old = sorted(v for k, v in c.dropped if k != "word")
        new = sorted(v for k, v in c.added if k != "word")
        return f"changed value ({', '.join(sorted(c.changed))}: {old} -> {new})"
    if sim < params.supersede:
        return None
    if c.new.ends and not c.old.ends and elaborates(c):
        # Everything the memory said, and that it changed ("... now that Marcus left",
        # "... now; Bazel was dropped"): the new memory replaces it and loses nothing.
        return f"says that it changed, keeping all it said ({', '.join(v for _, v in c.added[:4])})"
    old_units = len(set(c.old.units))
    if _unsaid(c) > max(1, int(params.max_unsaid_share * old_units)):
        return None
    if len(set(c.added)) > max(params.max_said_more, old_units):
        return None  # a long text that mentions the old one is not its correction
    if c.reversed:
        return "an ordered pair turned round"
    verdict = detector(candidate.content, new_text)
    if not verdict.is_contradiction:
        return None
    # A value the new text replaces without saying so makes it another statement ("The
    # freeze starts on December 18" / "... ends on January 5"), unless it says that
    # something changed ("moved", "now") or corrects the old one ("actually").
    said = c.new.marked or verdict.kind == "correction"
    if c.changed and not said:
        return None
    # A changed value or name found by the detector's looser slot test counts only when the
    # new text says that something changed.
    if verdict.kind in _CONTRADICTION_KINDS or c.new.marked:
        return f"{verdict.kind}: {verdict.evidence}"
    return None


def decide(
    new_text: str,
    candidates: list[Candidate],
    params: GatingParams = GatingParams(),
    *,
    detector: Detector = detect,
    comparer: Comparer = compare,
) -> GateDecision:
    """Gate ``new_text`` against its nearest stored memories (rules in the module docstring).

    ``detector`` (the contradiction test) and ``comparer`` (:func:`novelty.compare`) are
    injectable so that benchmarks can cache them.
    """
    ranked = sorted(candidates, key=lambda c: -c.similarity)
    if not ranked:
        return GateDecision("create", [], None, "no similar memory")
    top = ranked[0]
    floor = min(params.supersede, params.changed_value, params.reinforce, params.update,
                params.merge)
    compared = [(c, comparer(c.content, new_text)) for c in ranked if c.similarity >= floor]
    repeat = bool(compared) and compared[0][0].similarity >= params.reinforce \
        and not compared[0][1].added and restates(compared[0][1], 0)
    # A repeat of the closest memory reinforces it: the weaker neighbours it happens to
    # disagree with are other memories, not what it corrects.
    for candidate, c in ([] if repeat else compared):
        why = _conflict(candidate, new_text, c, params, detector)
        if why:
            return GateDecision("supersede", [candidate.id], candidate.similarity,
                                f"changes a memory at similarity {candidate.similarity:.2f} "
                                f"({why})")
    copies = [cand for cand, c in compared if cand.similarity >= params.merge
              and restates(c, params.max_added_words)
              and restates(comparer(new_text, cand.content), params.max_added_words)]
    if len(copies) >= 2:
        return GateDecision(
            "merge", [c.id for c in copies], top.similarity,
            f"{len(copies)} copies of the same statement (similarity >= {params.merge:.2f})")
    for candidate, c in compared:
        if candidate.similarity >= params.reinforce and restates(c, params.max_added_words):
            return GateDecision("reinforce", [candidate.id], candidate.similarity,
                                f"nothing new (similarity {candidate.similarity:.2f}, "
                                f"{len(c.added)} new words)")
    for candidate, c in compared:
        if candidate.similarity >= params.update and elaborates(c) \
                and c.new.clauses <= params.supersede_max_clauses:
            added = ", ".join(v for _, v in c.added[:6])
            return GateDecision("update", [candidate.id], candidate.similarity,
                                f"new detail on a memory it keeps whole (similarity "
                                f"{candidate.similarity:.2f}, adds {added})")
    return GateDecision("create", [], top.similarity, _create_reason(top, compared))


def _create_reason(top: Candidate, compared: list[tuple[Candidate, Comparison]]) -> str:
    if not compared:
        return f"nothing close enough (best similarity {top.similarity:.2f})"
    c = compared[0][1]
    if c.changed:
        return (f"a different statement on a close memory (similarity {top.similarity:.2f}; "
                f"changes {', '.join(sorted(c.changed))} but not as one value of the same "
                "statement): kept as a new memory")
    added = ", ".join(v for _, v in c.added[:4]) or "nothing"
    return (f"a different statement on a close memory (similarity {top.similarity:.2f}, "
            f"adds {added}): kept as a new memory")


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
