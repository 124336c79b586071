"""The ranking of one query's candidates: a logistic model over readings of each candidate.

Every candidate of a hybrid search (found by the keyword side, the vector side or both) is
described by readings that mean the same thing on any corpus:

- ``keyword_rr``, ``vector_rr``: its reciprocal rank ``k / (k + rank)`` on each side (0 where
  that side did not find it);
- ``cosine``: its cosine similarity to the query (the embedding model's own scale);
- ``cosine_gap``: ``cosine`` minus the best cosine among this query's candidates (<= 0);
- ``coverage``: the idf-weighted share of the query's terms it contains (0 to 1);
- ``saturation``: its BM25 score over that of an average memory holding each query term
  once (0 to 1): how strongly, not just whether, the terms occur;
- ``keyword_lead``: ``saturation`` times its BM25 score over the best among the candidates.

A memory that is a conditional standing instruction ("Always X when I ask about Y") carries
one more reading, ``topic_cosine``: the cosine of the query to the topic Y
(:mod:`memoryd.retrieval.instructions`); it is 0 for every other memory.

A logistic model maps the readings to ``P(relevant)``, the hit's ``fused_score``: it orders
the candidates, and the near-tie reorder and the query cues work in its log-odds. As shipped
(:data:`DEFAULT_MODEL`) only the two reciprocal ranks weigh, alike: rank fusion, which held on
BEAM, REALTALK and agent memories where models weighing how strongly each side matched did not
(``python -m bench.recall.across``, bench/results/recall_sets.md). The hit's ``score`` is a
separate model, the answer score of :mod:`memoryd.retrieval.answer`.

    >>> first = CandidateFeatures(cosine=0.4, cosine_gap=0.0, coverage=1.0, saturation=1.0,
    ...     keyword_lead=1.0, keyword_rr=reciprocal_rank(1, 10), vector_rr=reciprocal_rank(1, 10))
    >>> from dataclasses import replace
    >>> tenth = replace(first, keyword_rr=0.0, vector_rr=reciprocal_rank(10, 10))
    >>> DEFAULT_MODEL.probability(first) > DEFAULT_MODEL.probability(tenth)
    True
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.retrieval.answer import DEFAULT_ANSWER_MODEL, AnswerModel, pair_readings
from memoryd.retrieval.bm25 import DEFAULT_B, DEFAULT_K1, Candidate, CorpusStats, keyword_evidence

FEATURES = ("cosine", "cosine_gap", "coverage", "saturation", "keyword_lead", "keyword_rr",
            "vector_rr")
#: The constant of the reciprocal ranks: ``k / (k + rank)`` (1/2 for the first, 1/3 next...).
DEFAULT_RANK_K = 1.0


@dataclass(frozen=True)
class CandidateFeatures:
    """The readings of one candidate (see the module docstring)."""

    cosine: float
    cosine_gap: float
    coverage: float
    saturation: float
    keyword_lead: float
    keyword_rr: float = 0.0
    vector_rr: float = 0.0
    # Not one of FEATURES: only conditional instructions have it (see the module docstring).
    topic_cosine: float = 0.0

    def as_tuple(self) -> tuple[float, ...]:
        return (self.cosine, self.cosine_gap, self.coverage, self.saturation, self.keyword_lead,
                self.keyword_rr, self.vector_rr)


def reciprocal_rank(rank: int | None, k: float = DEFAULT_RANK_K) -> float:
    """``k / (k + rank)`` for a 1-based rank on one side, 0 for a candidate that side did not
    find."""
    return k / (k + rank) if rank is not None else 0.0


def side_ranks(values: Sequence[float | None], limit: int | None = None) -> list[int | None]:
    """1-based competition ranks of one side's values, best first (equal values share a rank:
    1, 2, 2, 4, so two copies of a memory tie); None for a missing value and past ``limit``
    (the side's pool)."""
    descending = sorted(-v for v in values if v is not None)
    out: list[int | None] = []
    for v in values:
        rank = None if v is None else 1 + bisect.bisect_left(descending, -v)
        out.append(rank if rank is not None and (limit is None or rank <= limit) else None)
    return out


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
    rank_k: float = DEFAULT_RANK_K

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES):
            raise ValueError(f"expected {len(FEATURES)} weights ({', '.join(FEATURES)}), "
                             f"got {len(self.weights)}")

    def logit(self, features: CandidateFeatures) -> float:
        return (self.intercept + sum(w * x for w, x in zip(self.weights, features.as_tuple()))
                + self.topic_lift(features.topic_cosine))

    def logits(self, features: Sequence[CandidateFeatures]) -> tuple[list[float], list[float]]:
        """Each candidate's log-odds without its topic lift and with it (:meth:`logit`)."""
        plain: list[float] = []
        lifted: list[float] = []
        unlifted = self.topic_lift(0.0)
        for f in features:
            direct = self.intercept + sum(w * x for w, x in zip(self.weights, f.as_tuple()))
            plain.append(direct + unlifted)
            lifted.append(direct + self.topic_lift(f.topic_cosine))
        return plain, lifted

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
    ranks: tuple[Sequence[int | None], Sequence[int | None]] | None = None,
    rank_k: float = DEFAULT_RANK_K,
) -> list[CandidateFeatures]:
    """Features of each candidate of one query, from its per-candidate readings.

    ``cosines`` may hold None for a memory without a vector (it counts as 0).
    ``topic_cosines`` (optional) holds each candidate's instruction-topic cosine (0 for a
    memory that is no conditional instruction). ``ranks`` (optional) holds each candidate's
    1-based rank on the keyword side and on the vector side (None where that side did not
    find it). All sequences are aligned by candidate.
    """
    n = len(cosines)
    topics = list(topic_cosines) if topic_cosines is not None else [0.0] * n
    keyword_ranks, vector_ranks = ranks if ranks is not None else ([None] * n, [None] * n)
    if not (n == len(coverage) == len(saturation) == len(bm25) == len(topics)
            == len(keyword_ranks) == len(vector_ranks)):
        raise ValueError("cosines, coverage, saturation, bm25, topic_cosines and ranks must have "
                         "one value per candidate")
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
            keyword_rr=reciprocal_rank(kr, rank_k),
            vector_rr=reciprocal_rank(vr, rank_k),
            topic_cosine=t,
        )
        for c, cv, s, k, t, kr, vr in zip(cos, coverage, saturation, bm25, topics, keyword_ranks,
                                          vector_ranks)
    ]


@dataclass(frozen=True)
class ScoredCandidate:
    """A candidate with its ranking probability, its answer score and the readings they came
    from. ``probability`` orders the candidates of one query; ``answer`` is the score a user
    reads (:mod:`memoryd.retrieval.answer`: the same for this pair on any store)."""

    memory_id: str
    probability: float
    cosine: float | None
    bm25: float
    coverage: float
    answer: float = 0.0


def relevance_scores(
    terms: Sequence[str],
    candidates: Sequence[Candidate],
    stats: CorpusStats,
    cosines: Sequence[float | None],
    *,
    topic_cosines: Sequence[float] | None = None,
    pool: int | None = None,
    instruction_gap: float = 0.0,
    model: RelevanceModel | None = None,
    answer_model: AnswerModel | None = None,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> list[ScoredCandidate]:
    """Fuse one query's candidates: best first by the ranking probability, each with its
    answer score.

    ``candidates`` is the union of the keyword and vector candidates, each with its
    query-term counts (empty for a memory holding none of the terms); ``cosines`` (and
    ``topic_cosines``, when given) are aligned with it. A candidate's rank on each side is its
    place by BM25 (among those holding a query term) and by cosine, up to ``pool`` (the number
    each side contributed); ``instruction_gap`` is passed to :func:`below_best_direct`. Ties
    are broken by cosine, then by input order.
    """
    if len(cosines) != len(candidates):
        raise ValueError("cosines must have one value per candidate")
    model = model or DEFAULT_MODEL
    answer_model = answer_model or DEFAULT_ANSWER_MODEL
    evidence = keyword_evidence(terms, candidates, stats, k1=k1, b=b)
    ranks = (side_ranks([e.score if e.score > 0 else None for e in evidence], pool),
             side_ranks(cosines, pool))
    features = candidate_features(cosines, [e.coverage for e in evidence],
                                  [e.saturation for e in evidence], [e.score for e in evidence],
                                  topic_cosines, ranks, model.rank_k)
    logits = below_best_direct(*model.logits(features), instruction_gap)
    scored = [
        ScoredCandidate(e.memory_id, _sigmoid(z), c, e.score, e.coverage,
                        answer_model.probability(pair_readings(c, e.coverage)))
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
    direct hit it would cost hit@1 on every question its topic covers.
    ``gap`` is the room a later near-tie reorder has (the search path's cognitive margin plus
    its query cues), so that reorder cannot carry it past either. A candidate that was already
    first on its own evidence (``plain``) keeps its place.
    """
    direct = [p for p, q in zip(plain, lifted) if q <= p]
    if len(direct) == len(lifted) or not direct:
        return list(lifted)
    # 1e-9: strictly below, and still so once mapped to a probability and lifted by ``gap``.
    ceiling = max(direct) - gap - 1e-9
    return [q if q <= p else max(p, min(q, ceiling)) for p, q in zip(plain, lifted)]


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


#: The ranking memoryd ships is rank fusion: the keyword side's and the vector side's
#: reciprocal ranks ``k / (k + rank)``, weighed alike, with k = 10. Fitted models that also
#: weigh how strongly each side matched (the first five features) rank better on the data
#: they were fitted on and worse on data of another kind (fitted on two of BEAM, REALTALK
#: and agent memories, scored on the third: bench/results/recall_sets.md); the reciprocal
#: ranks hold on all three. Only the intercept and the common weight are fitted
#: (``python -m bench.recall.across --refit``, all three data sets weighing alike), so that
#: the value is a probability on which the near-tie reorder and the query cues work in
#: log-odds. The instruction constants were fitted on BEAM with the earlier ranking and are
#: kept: re-checked through Engine.search on this ranking they gain BEAM hit@5 8/0 against
#: weight 0 and lose nothing anywhere; only BEAM holds such instructions, so no other data
#: set can choose between values (bench/results/recall_engine.md).
DEFAULT_MODEL = RelevanceModel(intercept=-6.5709, weights=(0.0, 0.0, 0.0, 0.0, 0.0, 3.3387, 3.3387),
                               instruction_weight=3.8648, instruction_floor=0.1, rank_k=10.0)
