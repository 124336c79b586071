"""Per-query candidate data for the ranking bench: term matrices, cosines, FTS5 baseline.

For every query against one conversation this keeps what a store would hand the search
path (candidates' query-term counts, lengths, document frequencies, cosines) so that every
ranking variant (BM25 k1/b grid, stemming, vector contexts, fusion, calibration) is a cheap
function of it.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from bench.recall.corpus import Corpus
from memoryd.retrieval.tokens import Tokenizer
from memoryd.retrieval.fts import match_expression

#: Query kinds: BEAM questions with evidence, BEAM abstention questions, questions of a
#: conversation of another category, and general-knowledge questions of our own.
KINDS = ("answerable", "abstention", "foreign", "unrelated")


@dataclass
class TermIndex:
    """One conversation tokenised with one tokenizer: term counts, lengths, df."""

    terms: list[Counter[str]]
    lengths: np.ndarray
    df: Counter[str]
    average: float

    @classmethod
    def build(cls, texts: list[str], tokenizer: Tokenizer) -> "TermIndex":
        terms = [tokenizer.term_counts(t) for t in texts]
        df: Counter[str] = Counter()
        for t in terms:
            df.update(t.keys())
        lengths = np.asarray([sum(t.values()) for t in terms], dtype=np.float64)
        return cls(terms, lengths, df, float(lengths.mean()) if len(lengths) else 1.0)


@dataclass
class TermMatch:
    """A query against one :class:`TermIndex`: matching docs and their tf per query term."""

    terms: list[str]
    docs: np.ndarray  # doc positions holding at least one query term
    tf: np.ndarray  # (len(docs), len(terms))
    df: np.ndarray  # (len(terms),)


@dataclass
class Query:
    """One query against one conversation, with every reading the rankers need."""

    conv: int
    kind: str
    ability: str
    text: str
    evidence: list[int]  # doc positions
    groups: dict[str, list[int]]
    cosines: dict[str, np.ndarray]  # vector context -> cosine per doc
    matches: dict[str, TermMatch] = field(default_factory=dict)  # stemming -> match
    fts5: list[int] = field(default_factory=list)  # memoryd's shipped keyword ranking


def match(index: TermIndex, terms: list[str]) -> TermMatch:
    """Docs of ``index`` holding any of ``terms``, with the tf matrix."""
    rows = [i for i, t in enumerate(index.terms) if any(term in t for term in terms)]
    tf = np.zeros((len(rows), len(terms)), dtype=np.float64)
    for r, i in enumerate(rows):
        counts = index.terms[i]
        for j, term in enumerate(terms):
            tf[r, j] = counts.get(term, 0)
    df = np.asarray([index.df.get(t, 0) for t in terms], dtype=np.float64)
    return TermMatch(terms, np.asarray(rows, dtype=np.int64), tf, df)


def bm25(index: TermIndex, m: TermMatch, k1: float, b: float, *, idf: str = "lucene") -> np.ndarray:
    """BM25 of each matching doc (aligned with ``m.docs``); ``idf`` "lucene" or "fts5"."""
    if len(m.docs) == 0:
        return np.zeros(0)
    n = len(index.terms)
    if idf == "fts5":
        weights = np.log((n - m.df + 0.5) / (m.df + 0.5))
        weights = np.where(weights > 0, weights, 1e-6)
    else:
        weights = np.log1p((n - m.df + 0.5) / (m.df + 0.5))
    norm = k1 * (1 - b + b * index.lengths[m.docs] / index.average)
    return (weights[None, :] * m.tf * (k1 + 1) / (m.tf + norm[:, None])).sum(axis=1)


def ranked(docs: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Doc positions by descending score, ties by position (FTS5 and numpy agree)."""
    order = np.lexsort((docs, -scores))
    return docs[order]


class Fts5Baseline:
    """memoryd's shipped keyword ranking: a real FTS5 table with the store's tokenizer."""

    def __init__(self, texts: list[str]) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE f USING fts5(content, summary, tags, "
                          "tokenize='porter unicode61 remove_diacritics 2')")
        self.conn.executemany("INSERT INTO f(rowid, content, summary, tags) VALUES (?, ?, NULL, '[]')",
                              [(i + 1, t) for i, t in enumerate(texts)])

    def rank(self, text: str, limit: int = 200) -> list[int]:
        expression = match_expression(text)
        if expression is None:
            return []
        rows = self.conn.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f, 1.0, 0.5, 0.5) "
                                 "LIMIT ?", (expression, limit)).fetchall()
        return [r[0] - 1 for r in rows]

    def close(self) -> None:
        self.conn.close()


def build_queries(corpus: Corpus, texts: list[str], indexes: dict[str, TermIndex],
                  tokenizers: dict[str, Tokenizer], table, asks: list[tuple[str, str, object]]
                  ) -> list[Query]:
    """Queries for one conversation. ``asks`` holds (kind, text, beam.Question or None)."""
    pos = {mid: i for i, mid in enumerate(corpus.ids)}
    fts = Fts5Baseline(texts)
    out = []
    for kind, text, q in asks:
        vec = table[text]
        evidence = [pos[str(i)] for i in (q.evidence if q is not None else []) if str(i) in pos]
        groups = ({k: [pos[str(i)] for i in v if str(i) in pos] for k, v in q.evidence_groups.items()}
                  if q is not None else {})
        query = Query(conv=corpus.number, kind=kind, ability=q.ability if q is not None else kind,
                      text=text, evidence=evidence, groups=groups,
                      cosines={name: mat @ vec for name, mat in corpus.vectors.items()})
        for name, index in indexes.items():
            query.matches[name] = match(index, tokenizers[name].query_terms(text))
        query.fts5 = fts.rank(text)
        out.append(query)
    fts.close()
    return out

