"""Rankers of the ranking bench: keyword (BM25 variants), vector, RRF, relevance fusion.

Each ranker maps a :class:`Query` to doc positions, best first. The relevance pipeline
computes its features through memoryd's own modules (``memoryd.retrieval.bm25`` and
``memoryd.retrieval.relevance``), so the bench measures the code that ships.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.recall.candidates import Query, TermIndex, bm25, ranked
from memoryd.retrieval.bm25 import Candidate, CorpusStats, keyword_evidence
from memoryd.retrieval.relevance import FEATURES, RelevanceModel, candidate_features


@dataclass(frozen=True)
class KeywordConfig:
    """How the keyword side ranks: stemming, BM25 k1/b, idf form."""

    stemming: str = "porter"
    k1: float = 5.0
    b: float = 1.0
    idf: str = "lucene"


def keyword_ranking(q: Query, indexes: dict[str, TermIndex], cfg: KeywordConfig) -> np.ndarray:
    """Doc positions holding a query term, by BM25 (``cfg``)."""
    m = q.matches[cfg.stemming]
    return ranked(m.docs, bm25(indexes[cfg.stemming], m, cfg.k1, cfg.b, idf=cfg.idf))


def vector_ranking(q: Query, context: str = "plain") -> np.ndarray:
    """Every doc position by cosine (ties by position)."""
    cos = q.cosines[context]
    return np.lexsort((np.arange(len(cos)), -cos))


def rrf(keyword: np.ndarray | list[int], vector: np.ndarray, *, k: int, wk: float = 1.0,
        wv: float = 1.0, pool: int = 50) -> list[int]:
    """memoryd's RRF: weight / (k + rank) per list over the top ``pool`` of each."""
    scores: dict[int, float] = {}
    for rank, d in enumerate(list(keyword)[:pool], start=1):
        scores[int(d)] = scores.get(int(d), 0.0) + wk / (k + rank)
    for rank, d in enumerate(vector[:pool], start=1):
        scores[int(d)] = scores.get(int(d), 0.0) + wv / (k + rank)
    return sorted(scores, key=lambda d: -scores[d])


@dataclass
class Pool:
    """The union candidate pool of one query with its feature matrix."""

    docs: np.ndarray
    x: np.ndarray  # (len(docs), len(FEATURES))
    labels: np.ndarray  # 1 = evidence


def candidate_pool(q: Query, indexes: dict[str, TermIndex], cfg: KeywordConfig,
                   context: str = "plain", pool: int = 50) -> Pool:
    """Top ``pool`` of each side, described by memoryd's relevance features."""
    kw = keyword_ranking(q, indexes, cfg)[:pool]
    vec = vector_ranking(q, context)[:pool]
    docs = np.asarray(list(dict.fromkeys([*kw.tolist(), *vec.tolist()])), dtype=np.int64)
    index = indexes[cfg.stemming]
    m = q.matches[cfg.stemming]
    row_of = {int(d): r for r, d in enumerate(m.docs)}
    stats = CorpusStats(len(index.terms), index.average,
                        {t: int(df) for t, df in zip(m.terms, m.df)})
    cands = []
    for d in docs.tolist():
        r = row_of.get(d)
        tf = {t: int(m.tf[r, j]) for j, t in enumerate(m.terms) if r is not None and m.tf[r, j] > 0}
        cands.append(Candidate(str(d), int(index.lengths[d]), tf))
    ev = keyword_evidence(m.terms, cands, stats, k1=cfg.k1, b=cfg.b)
    feats = candidate_features([float(q.cosines[context][d]) for d in docs.tolist()],
                               [e.coverage for e in ev], [e.saturation for e in ev],
                               [e.score for e in ev])
    x = np.asarray([f.as_tuple() for f in feats], dtype=np.float64).reshape(-1, len(FEATURES))
    gold = set(q.evidence)
    return Pool(docs, x, np.asarray([1 if d in gold else 0 for d in docs.tolist()], dtype=np.int8))


def probabilities(model: RelevanceModel, x: np.ndarray) -> np.ndarray:
    """P(relevant) per row (vectorised :meth:`RelevanceModel.probability`)."""
    w = np.asarray(model.weights, dtype=np.float64)
    z = model.intercept + x @ w
    return 1.0 / (1.0 + np.exp(-z))


def by_probability(p: Pool, prob: np.ndarray) -> list[int]:
    """Pool docs by descending probability, ties by cosine then position."""
    order = np.lexsort((p.docs, -p.x[:, 0], -prob))
    return p.docs[order].tolist()
