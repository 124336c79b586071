"""Per-query readings of the three data sets, and the candidate pools the search path builds.

A :class:`Asked` is one query against one store with everything the rankers need: the
cosine of the query to every memory and the query terms' counts in every memory that holds
one. :func:`pool` builds what ``Engine.search`` builds from it (the best ``size`` of each
side, every candidate described by both sides through memoryd's own modules) for given
BM25 constants, with the ranking model's features and the answer model's readings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bench.recall.candidates import TermIndex, TermMatch, bm25, match, ranked
from bench.recall.data import Conversation
from bench.recall.embedding import VectorTable
from bench.recall.negatives import UNRELATED_QUERIES
from memoryd.retrieval.answer import pair_readings
from memoryd.retrieval.bm25 import Candidate, CorpusStats, keyword_evidence
from memoryd.retrieval.relevance import DEFAULT_RANK_K, FEATURES, candidate_features, side_ranks
from memoryd.retrieval.tokens import Tokenizer

POOL = 50
TOKENIZER = Tokenizer("porter")


@dataclass
class Store:
    """One store of a data set: its texts, term index and vectors."""

    dataset: str
    number: int
    texts: list[str]
    index: TermIndex
    vectors: np.ndarray  # (n, 384)
    sessions: list[int]


@dataclass
class Asked:
    """One query against one store."""

    dataset: str
    store: int
    kind: str  # answerable, abstention or unrelated
    ability: str
    text: str
    evidence: list[int]  # memory positions
    cosines: np.ndarray  # per memory
    match: TermMatch
    terms: list[str]


@dataclass
class Pool:
    """The candidate pool of one query for one set of BM25 constants."""

    docs: np.ndarray
    x: np.ndarray  # ranking features (len(docs), len(FEATURES))
    answer: np.ndarray  # answer-model readings (len(docs), len(ANSWER_READINGS))
    labels: np.ndarray  # 1 = evidence


def build_store(dataset: str, conv: Conversation, table: VectorTable,
                texts: Callable[[Conversation], list[str]] | None = None,
                vector_texts: Callable[[Conversation], list[str]] | None = None) -> Store:
    """A store of ``conv``; ``texts`` / ``vector_texts`` give each memory's keyword / vector
    text (default: the memory itself)."""
    words = texts(conv) if texts else [m.content for m in conv.messages]
    embedded = vector_texts(conv) if vector_texts else [m.content for m in conv.messages]
    return Store(dataset, conv.number, [m.content for m in conv.messages],
                 TermIndex.build(words, TOKENIZER), table.matrix(embedded),
                 [m.session for m in conv.messages])


def asks(store: Store, conv: Conversation, table: VectorTable, *, unrelated: bool = True
         ) -> list[Asked]:
    """Every question of ``conv`` (answerable and abstention) and, when ``unrelated``, the
    bench's general-knowledge questions, against ``store``."""
    out = []
    items = [("answerable" if q.evidence else "abstention", q.ability, q.question, q.evidence)
             for q in conv.questions]
    if unrelated:
        items += [("unrelated", "unrelated", t, []) for t in UNRELATED_QUERIES]
    pos = {m.id: i for i, m in enumerate(conv.messages)}
    for kind, ability, text, evidence in items:
        terms = TOKENIZER.query_terms(text)
        out.append(Asked(store.dataset, store.number, kind, ability, text,
                         [pos[e] for e in evidence if e in pos], store.vectors @ table[text],
                         match(store.index, terms), terms))
    return out


def keyword_order(a: Asked, store: Store, k1: float, b: float) -> np.ndarray:
    """Memories holding a query term, by memoryd's BM25."""
    return ranked(a.match.docs, bm25(store.index, a.match, k1, b))


def vector_order(a: Asked) -> np.ndarray:
    """Every memory by cosine (ties by position)."""
    return np.lexsort((np.arange(len(a.cosines)), -a.cosines))


def pool(a: Asked, store: Store, k1: float, b: float, size: int = POOL,
         rank_k: float = DEFAULT_RANK_K) -> Pool:
    """The union of the best ``size`` of each side, described as the search path does."""
    kw = keyword_order(a, store, k1, b)[:size]
    vec = vector_order(a)[:size]
    docs = np.asarray(list(dict.fromkeys([*kw.tolist(), *vec.tolist()])), dtype=np.int64)
    m = a.match
    row_of = {int(d): r for r, d in enumerate(m.docs)}
    stats = CorpusStats(len(store.index.terms), store.index.average,
                        {t: int(df) for t, df in zip(m.terms, m.df)})
    cands = []
    for d in docs.tolist():
        r = row_of.get(d)
        tf = {t: int(m.tf[r, j]) for j, t in enumerate(m.terms) if r is not None and m.tf[r, j] > 0}
        cands.append(Candidate(str(d), int(store.index.lengths[d]), tf))
    ev = keyword_evidence(m.terms, cands, stats, k1=k1, b=b)
    cos = [float(a.cosines[d]) for d in docs.tolist()]
    ranks = (side_ranks([e.score if e.score > 0 else None for e in ev], size),
             side_ranks(cos, size))
    feats = candidate_features(cos, [e.coverage for e in ev], [e.saturation for e in ev],
                               [e.score for e in ev], None, ranks, rank_k)
    x = np.asarray([f.as_tuple() for f in feats], dtype=np.float64).reshape(-1, len(FEATURES))
    answer = np.asarray([pair_readings(c, e.coverage) for c, e in zip(cos, ev)],
                        dtype=np.float64)
    gold = set(a.evidence)
    return Pool(docs, x, answer, np.asarray([d in gold for d in docs.tolist()], dtype=np.int8))
