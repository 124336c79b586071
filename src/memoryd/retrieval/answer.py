"""The score a user reads: how likely a memory answers the query, the same on any store.

The ranking model (:mod:`memoryd.retrieval.relevance`) orders one query's candidates by
readings that are relative to the store (idf, BM25 against the best of this query's
candidates, cosine below this query's best). Those order well, but a probability built from
them carries the store's size and its corpus's base rate: on a five-memory store every
value was tiny. The answer model is separate and reads only the pair itself:

- ``cosine``: the query's cosine to the memory (the embedding model's own scale);
- ``coverage``: the share of the query's content words (stopwords dropped, stemmed) the
  memory holds, each word weighted by its idf (:func:`memoryd.retrieval.bm25.keyword_evidence`):
  a share from 0 to 1, so it does not grow with the number of memories, and a rare word of the
  question counts more than a common one ("service", "use").

Neither looks at other candidates, and neither grows with the store: a memory that shares no
word with the query scores exactly the same alone in a store as among a million, and one that
does moves only as far as the weights of its words do. (Unweighted shares were measured too:
they let one generic word lift a memory, and score worse held out on two of the three data
sets; bench/results/recall_sets.md.) A logistic model maps the readings to ``P(answers)``; it
is fitted on (query, memory) pairs sampled at a fixed ratio (see :data:`DEFAULT_ANSWER_MODEL`),
so its intercept is that ratio's, not a corpus's base rate.

    >>> DEFAULT_ANSWER_MODEL.probability(pair_readings(0.8, 1.0)) > 0.8
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: The readings of one (query, memory) pair, in this order.
ANSWER_READINGS = ("cosine", "coverage")


def pair_readings(cosine: float | None, coverage: float) -> tuple[float, float]:
    """(cosine, coverage) of one pair; a memory without a vector has cosine 0."""
    return (cosine if cosine is not None else 0.0, coverage)


@dataclass(frozen=True)
class AnswerModel:
    """``sigmoid(intercept + weights · readings)`` over :data:`ANSWER_READINGS`."""

    intercept: float
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.weights) != len(ANSWER_READINGS):
            raise ValueError(f"expected {len(ANSWER_READINGS)} weights "
                             f"({', '.join(ANSWER_READINGS)}), got {len(self.weights)}")

    def logit(self, readings: Sequence[float]) -> float:
        return self.intercept + sum(w * x for w, x in zip(self.weights, readings))

    def probability(self, readings: Sequence[float]) -> float:
        """P(the memory answers the query) in (0, 1)."""
        z = self.logit(readings)
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


#: Fitted by ``python -m bench.recall.across --refit`` on the fixed-ratio sample of all three
#: data sets (BEAM, REALTALK, agent memories; every answerable question's answers weigh 1,
#: the other memories of its store 1 in all): weighted logistic regression, weights >= 0.
#: Fitted on two data sets and checked on the third, the Brier score on that sample is 0.18
#: (BEAM), 0.13 (REALTALK) and 0.09 (agent memories); reliability tables in
#: bench/results/recall_sets.md.
DEFAULT_ANSWER_MODEL = AnswerModel(intercept=-2.9802, weights=(6.98, 4.0616))

#: The default recall threshold: a hit at least this likely to answer goes into recall
#: blocks and the hooks' context, MCP ``search`` lists it, ``memory_recall`` and the OpenClaw
#: plugin keep it, and tier widening counts it. Chosen as the largest threshold that keeps,
#: on every data set held out, at least 95% of the answerable questions whose answer is in
#: the top 10 (agent memories decide it; bench/results/recall_sets.md). MiniLM rates a
#: paraphrase that shares no word with the memory low ("when do we ship?" and "Deploys go out
#: on Tuesdays after standup": cosine 0.21, score 0.18) and a question about something else
#: lower still ("What's the capital of France?" against developer notes: cosine 0.07, 0.08).
DEFAULT_RECALL_THRESHOLD = 0.17
