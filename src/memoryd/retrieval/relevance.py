"""Fusion and calibration in one step: the probability that a candidate is relevant.

Every candidate of a hybrid search (found by the keyword side, the vector side or both)
is described by five numbers that mean the same thing on any corpus:

- ``cosine``: its cosine similarity to the query (the embedding model's own scale);
- ``cosine_gap``: ``cosine`` minus the best cosine among this query's candidates (<= 0):
  how far below this query's best vector match it sits;
- ``coverage``: the idf-weighted share of the query's terms it contains (0 to 1);
- ``saturation``: its BM25 score over that of an average memory holding each query term
  once (0 to 1): how strongly, not just whether, the terms occur;
- ``keyword_lead``: ``saturation`` times its BM25 score over the best among the candidates
  (0 to 1): how close to this query's best keyword match it is, counted only as far as the
  match is strong in absolute terms (the best of a weak list does not get full marks).

A memory that is a conditional standing instruction ("Always X when I ask about Y") carries
one more reading, ``topic_cosine``: the cosine of the query to the topic Y
(:mod:`memoryd.retrieval.instructions`); it is 0 for every other memory, so they are scored by
the five alone.

A logistic model maps them to ``P(relevant)``. Ranking by that probability *is* the
fusion: unlike rank fusion (RRF), it keeps how strongly each side matched, so a memory
that holds every rare word of the query outranks vague semantic neighbours on data where
words decide (names, dates, chit-chat), while paraphrases with no shared word still rank
by meaning. The same probability is the hit's ``score``: comparable across queries and
stores, so ``min_score`` and the recall threshold mean "likely relevant".

The coefficients in :data:`DEFAULT_MODEL` are fitted on BEAM (see the comment there);
``python -m bench.recall.ranking --refit`` fits them again and prints the constants.

    >>> p = DEFAULT_MODEL.probability(CandidateFeatures(cosine=0.05, cosine_gap=0.0,
    ...     coverage=0.0, saturation=0.0, keyword_lead=0.0))
    >>> p < DEFAULT_RECALL_THRESHOLD
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memoryd.retrieval.bm25 import DEFAULT_B, DEFAULT_K1, Candidate, CorpusStats, keyword_evidence

FEATURES = ("cosine", "cosine_gap", "coverage", "saturation", "keyword_lead")


@dataclass(frozen=True)
class CandidateFeatures:
    """The five readings of one candidate (see the module docstring)."""

    cosine: float
    cosine_gap: float
    coverage: float
    saturation: float
    keyword_lead: float
    # Not one of FEATURES: only conditional instructions have it (see the module docstring).
    topic_cosine: float = 0.0

    def as_tuple(self) -> tuple[float, ...]:
        return (self.cosine, self.cosine_gap, self.coverage, self.saturation, self.keyword_lead)


@dataclass(frozen=True)
class RelevanceModel:
    """A logistic model over :data:`FEATURES`: ``sigmoid(intercept + weights · features)``,
    plus a conditional instruction's topic lift: ``instruction_weight`` times how far its
    ``topic_cosine`` exceeds ``instruction_floor`` (below the floor the query is not about
    the topic, and the instruction is scored like any memory)."""

    intercept: float
    weights: tuple[float, ...]
    instruction_weight: float = 0.0
    instruction_floor: float = 0.0

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES):
            raise ValueError(f"expected {len(FEATURES)} weights ({', '.join(FEATURES)}), "
                             f"got {len(self.weights)}")

    def logit(self, features: CandidateFeatures) -> float:
        return (self.intercept + sum(w * x for w, x in zip(self.weights, features.as_tuple()))
                + self.topic_lift(features.topic_cosine))

    def topic_lift(self, topic_cosine: float) -> float:
        """The log-odds a conditional instruction gains from its topic reading (>= 0)."""
        return self.instruction_weight * max(0.0, topic_cosine - self.instruction_floor)

    def probability(self, features: CandidateFeatures) -> float:
        """P(relevant) in (0, 1)."""
        return _sigmoid(self.logit(features))


def candidate_features(
    cosines: Sequence[float | None],
    coverage: Sequence[float],
    saturation: Sequence[float],
    bm25: Sequence[float],
    topic_cosines: Sequence[float] | None = None,
) -> list[CandidateFeatures]:
    """Features of each candidate of one query, from its per-candidate readings.

    ``cosines`` may hold None for a memory without a vector (it counts as 0).
    ``topic_cosines`` (optional) holds each candidate's instruction-topic cosine (0 for a
    memory that is no conditional instruction). All sequences are aligned by candidate.
    """
    topics = list(topic_cosines) if topic_cosines is not None else [0.0] * len(cosines)
    if not (len(cosines) == len(coverage) == len(saturation) == len(bm25) == len(topics)):
        raise ValueError("cosines, coverage, saturation, bm25 and topic_cosines must have one "
                         "value per candidate")
    cos = [c if c is not None else 0.0 for c in cosines]
    best_cos = max(cos, default=0.0)
    best_bm25 = max(bm25, default=0.0)
    return [
        CandidateFeatures(
            cosine=c,
            cosine_gap=c - best_cos,
            coverage=cv,
            saturation=s,
            keyword_lead=(k / best_bm25) * s if best_bm25 > 0 else 0.0,
            topic_cosine=t,
        )
        for c, cv, s, k, t in zip(cos, coverage, saturation, bm25, topics)
    ]


@dataclass(frozen=True)
class ScoredCandidate:
    """A candidate with its relevance probability and the readings it came from."""

    memory_id: str
    probability: float
    cosine: float | None
    bm25: float
    coverage: float


def relevance_scores(
    terms: Sequence[str],
    candidates: Sequence[Candidate],
    stats: CorpusStats,
    cosines: Sequence[float | None],
    *,
    topic_cosines: Sequence[float] | None = None,
    instruction_gap: float = 0.0,
    model: RelevanceModel | None = None,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> list[ScoredCandidate]:
    """Fuse and calibrate one query's candidates: best first by P(relevant).

    ``candidates`` is the union of the keyword and vector candidates, each with its
    query-term counts (empty for a memory holding none of the terms); ``cosines`` (and
    ``topic_cosines``, when given) are aligned with it; ``instruction_gap`` is passed to
    :func:`below_best_direct`. Ties are broken by cosine, then by input order.
    """
    if len(cosines) != len(candidates):
        raise ValueError("cosines must have one value per candidate")
    model = model or DEFAULT_MODEL
    evidence = keyword_evidence(terms, candidates, stats, k1=k1, b=b)
    features = candidate_features(cosines, [e.coverage for e in evidence],
                                  [e.saturation for e in evidence], [e.score for e in evidence],
                                  topic_cosines)
    logits = below_best_direct([model.logit(replace(f, topic_cosine=0.0)) for f in features],
                               [model.logit(f) for f in features], instruction_gap)
    scored = [
        ScoredCandidate(e.memory_id, _sigmoid(z), c, e.score, e.coverage)
        for e, z, c in zip(evidence, logits, cosines)
    ]
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].probability,
                                                      -(scored[i].cosine or 0.0), i))
    return [scored[i] for i in order]


def below_best_direct(plain: Sequence[float], lifted: Sequence[float], gap: float = 0.0
                      ) -> list[float]:
    """``lifted`` log-odds, except that a candidate lifted by its instruction topic stays at
    least ``gap`` below the best candidate that was not lifted (strictly below when 0).

    An instruction that applies to the query ("Always give dates as MM/DD/YYYY when I ask
    about scheduling") belongs next to the answer, not in place of it: lifted above the best
    direct hit it would cost hit@1 on every question its topic covers (bench/recall/instructions.py).
    ``gap`` is the room a later near-tie reorder has (the search path's cognitive margin plus
    its query cues), so that reorder cannot carry it past either. A candidate that was already
    first on its own evidence (``plain``) keeps its place.
    """
    direct = [p for p, q in zip(plain, lifted) if q <= p]
    if len(direct) == len(lifted) or not direct:
        return list(lifted)
    # 1e-9: strictly below, and still so once mapped to a probability.
    ceiling = max(direct) - max(gap, 1e-9)
    return [q if q <= p else max(p, min(q, ceiling)) for p, q in zip(plain, lifted)]


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


#: Fitted by ``python -m bench.recall.ranking --refit`` on all 20 BEAM development
#: conversations (5,084 messages; per conversation its own questions, the first question of
#: each ability from the conversation ten apart, and 32 general-knowledge questions, the
#: last two kinds as negatives): logistic regression with weights >= 0 over every candidate
#: of each query's pool (top 50 of each side; 83,412 pairs, 786 of them BEAM evidence).
#: Held-out (fitted on 10 conversations, scored on the other 10, both ways): Brier 0.0081
#: over all pairs, 0.029 over the returned top 10; reliability table in
#: bench/results/recall.md. Weights in FEATURES order; coverage comes out at 0 on BEAM.
#: The instruction constants are fitted afterwards with those five held fixed (the floor from
#: 0, 0.1, ..., 0.5 by ranking, the weight by log loss; bench/recall/instructions.py), so they
#: change nothing for memories that state no conditional instruction.
DEFAULT_MODEL = RelevanceModel(intercept=-6.6983, weights=(5.2309, 2.114, 0.0, 0.2173, 3.0322),
                               instruction_weight=3.8648, instruction_floor=0.1)

#: The recall threshold. BEAM marks one to a few evidence messages per question among many
#: on the same topic, so probabilities of true hits are low (median best evidence ~0.2).
#: 0.003 keeps every evidence hit of the held-out top 10 and empties the recall block for
#: about half of the unrelated questions; a higher threshold would also drop paraphrases
#: that share no word with the memory and that MiniLM rates near 0.2 ("when do we ship?" vs
#: "Deploys go out on Tuesdays after standup": cosine 0.21, probability 0.004).
DEFAULT_RECALL_THRESHOLD = 0.003
