"""BM25 computed by memoryd itself, so that every backend ranks keywords the same way.

A store supplies, for one query, its candidates' term counts (only the query's terms are
needed) and the corpus statistics; this module does the arithmetic once, in Python:

    idf(t)  = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))          (never negative)
    score   = sum over query terms t in the memory of
              idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length))

FTS5's ``bm25()`` fixes k1 = 1.2 and b = 0.75; PostgreSQL's ``ts_rank`` is not BM25 at all.
``DEFAULT_K1``/``DEFAULT_B`` are chosen on three kinds of data together (BEAM, REALTALK chats,
agent memories; bench/results/recall_sets.md): the setting whose ranking falls least short
of each data set's best while beating both single sides on every one.

Besides the score, :func:`keyword_evidence` gives two numbers that mean the same thing on
any corpus and feed fusion and calibration: the idf-weighted share of the query's terms a
memory contains (``coverage``) and the score as a share of what a memory holding every
query term once, at average length, would get (``saturation``).

    >>> stats = CorpusStats(documents=3, average_length=4.0,
    ...                     document_frequency={"deploy": 1, "tuesdai": 1})
    >>> doc = Candidate("m1", length=5, term_frequency={"deploy": 1, "tuesdai": 1})
    >>> round(keyword_evidence(["deploy", "tuesdai"], [doc], stats)[0].coverage, 2)
    1.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_K1 = 2.0
DEFAULT_B = 1.0


@dataclass(frozen=True)
class CorpusStats:
    """What BM25 needs to know about the whole searchable corpus.

    ``documents`` is N (memories that have text), ``average_length`` their mean token
    count, ``document_frequency`` the number of memories holding each query term (terms
    absent from the mapping count as held by none).
    """

    documents: int
    average_length: float
    document_frequency: Mapping[str, int]


@dataclass(frozen=True)
class Candidate:
    """One memory a keyword query matched: its token count and query-term frequencies."""

    memory_id: str
    length: int
    term_frequency: Mapping[str, int]
    #: The topic of the standing instruction the memory states ("when I ask about Y"), read
    #: at write time (:mod:`memoryd.retrieval.instructions`); BM25 ignores it.
    topic: str | None = None


@dataclass(frozen=True)
class KeywordPool:
    """What a store hands back for one keyword query: the corpus statistics and the
    candidates (best first by the store's BM25), each with its query-term counts."""

    stats: CorpusStats
    candidates: list[Candidate]


@dataclass(frozen=True)
class KeywordEvidence:
    """BM25 score of one candidate plus its corpus-independent readings (both in [0, 1])."""

    memory_id: str
    score: float
    coverage: float
    saturation: float


def idf(term: str, stats: CorpusStats) -> float:
    """Inverse document frequency (the non-negative "BM25+" form Lucene uses)."""
    df = min(stats.document_frequency.get(term, 0), stats.documents)
    return math.log(1.0 + (stats.documents - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class Bm25Parameters:
    """BM25 for one query as ``Σ weight(t) · tf / (tf + constant + slope · length)``.

    The same arithmetic, in the same order, as the stores' SQL (memoryd.store.terms), so a
    score computed here equals the one a store ranked by, to the last bit for one term.
    """

    weights: dict[str, float]  # idf(t) · (k1 + 1)
    constant: float  # k1 · (1 - b)
    slope: float  # k1 · b / average length

    @classmethod
    def of(cls, terms: Sequence[str], stats: CorpusStats, *, k1: float = DEFAULT_K1,
           b: float = DEFAULT_B) -> Bm25Parameters:
        _check_parameters(k1, b)
        average = stats.average_length if stats.average_length > 0 else 1.0
        return cls({t: idf(t, stats) * (k1 + 1.0) for t in dict.fromkeys(terms)},
                   k1 * (1.0 - b), k1 * b / average)

    def score(self, candidate: Candidate) -> float:
        """BM25 of one candidate."""
        total = 0.0
        for term, weight in self.weights.items():
            tf = candidate.term_frequency.get(term, 0)
            if tf > 0:
                total += weight * tf / (tf + self.constant + self.slope * candidate.length)
        return total


def bm25_scores(
    terms: Sequence[str],
    candidates: Sequence[Candidate],
    stats: CorpusStats,
    *,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> list[float]:
    """BM25 score of each candidate for the query ``terms`` (distinct, stemmed)."""
    parameters = Bm25Parameters.of(terms, stats, k1=k1, b=b)
    return [parameters.score(cand) for cand in candidates]


def keyword_evidence(
    terms: Sequence[str],
    candidates: Sequence[Candidate],
    stats: CorpusStats,
    *,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> list[KeywordEvidence]:
    """BM25 score, idf-weighted query coverage and saturation of each candidate.

    ``coverage`` = idf of the query terms the memory holds / idf of all query terms;
    ``saturation`` = score / (score of an average-length memory holding each term once),
    capped at 1.
    """
    distinct = list(dict.fromkeys(terms))
    weights = {t: idf(t, stats) for t in distinct}
    total_idf = sum(weights.values())
    reference = total_idf  # tf = 1 at average length scores exactly idf per term
    scores = bm25_scores(distinct, candidates, stats, k1=k1, b=b)
    out = []
    for cand, score in zip(candidates, scores):
        held = sum(w for t, w in weights.items() if cand.term_frequency.get(t, 0) > 0)
        out.append(KeywordEvidence(
            memory_id=cand.memory_id,
            score=score,
            coverage=held / total_idf if total_idf > 0 else 0.0,
            saturation=min(1.0, score / reference) if reference > 0 else 0.0,
        ))
    return out


def _check_parameters(k1: float, b: float) -> None:
    if not (k1 >= 0 and math.isfinite(k1)):
        raise ValueError(f"BM25 k1 must be a finite number >= 0, got {k1!r}")
    if not 0.0 <= b <= 1.0:
        raise ValueError(f"BM25 b must be between 0 and 1, got {b!r}")
